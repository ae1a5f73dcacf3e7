//! Nodes and epochs: a crash bumps a node's epoch, and every timer or message addressed to an
//! older epoch is dropped when it comes due.

/// A simulated process (GoCD server, API server, one agent container, one replica).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// A node's incarnation: bumped by every crash or restart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Epoch(pub u32);

/// Epoch and liveness of every node.
#[derive(Debug, Default)]
pub struct Nodes {
    epochs: Vec<Epoch>,
    up: Vec<bool>,
}

impl Nodes {
    /// Add a node, up, at epoch 0.
    pub fn add(&mut self) -> NodeId {
        let id = NodeId(u32::try_from(self.epochs.len()).expect("fewer than 2^32 nodes"));
        self.epochs.push(Epoch(0));
        self.up.push(true);
        id
    }

    /// The node's current incarnation.
    pub fn epoch(&self, node: NodeId) -> Epoch {
        self.epochs[node.0 as usize]
    }

    /// False while the node is crashed (between a crash and its restart).
    pub(crate) fn is_up(&self, node: NodeId) -> bool {
        self.up[node.0 as usize]
    }

    /// True if an event stamped `epoch` for `node` is still current.
    pub fn is_current(&self, node: NodeId, epoch: Epoch) -> bool {
        self.is_up(node) && self.epoch(node) == epoch
    }

    /// Crash: the node goes down and everything addressed to its old epoch is void.
    pub fn crash(&mut self, node: NodeId) {
        let index = node.0 as usize;
        self.epochs[index].0 += 1;
        self.up[index] = false;
    }

    /// Restart after a crash, in a fresh epoch.
    pub fn restart(&mut self, node: NodeId) -> Epoch {
        let index = node.0 as usize;
        assert!(!self.up[index], "restart of a node that is up");
        self.epochs[index].0 += 1;
        self.up[index] = true;
        self.epochs[index]
    }
}

#[cfg(test)]
mod tests {
    use super::Nodes;

    #[test]
    fn a_crash_voids_events_of_the_old_epoch() {
        let mut nodes = Nodes::default();
        let node = nodes.add();
        let old = nodes.epoch(node);
        nodes.crash(node);
        assert!(!nodes.is_current(node, old));
        let new = nodes.restart(node);
        assert!(nodes.is_current(node, new));
        assert!(!nodes.is_current(node, old));
    }
}
