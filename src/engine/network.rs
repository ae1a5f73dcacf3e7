//! Network partitions between node groups.
//!
//! Every node belongs to one or more groups, given as a bit mask ("gocd", "kube-api",
//! "agents", "replicas", "replica-N"). A partition between masks A and B drops every message
//! from a node in A to a node in B and back, for as long as it lasts. Latency is drawn by the
//! caller from its own stream; this type only answers "does this message get through".

/// A set of node groups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct GroupMask(pub u64);

impl GroupMask {
    /// True if the two sets share a group.
    pub(crate) const fn intersects(self, other: GroupMask) -> bool {
        self.0 & other.0 != 0
    }

    /// Every group of either set.
    #[must_use]
    pub(crate) const fn union(self, other: GroupMask) -> GroupMask {
        GroupMask(self.0 | other.0)
    }
}

/// Active partitions, each with an id so that overlapping ones heal independently.
#[derive(Debug, Default)]
pub(crate) struct Partitions {
    active: Vec<(u32, GroupMask, GroupMask)>,
}

impl Partitions {
    /// Start partition `id` between `a` and `b`.
    pub(crate) fn start(&mut self, id: u32, a: GroupMask, b: GroupMask) {
        self.active.push((id, a, b));
    }

    /// Heal partition `id`.
    pub(crate) fn heal(&mut self, id: u32) {
        self.active.retain(|(active, _, _)| *active != id);
    }

    /// Heal every partition (end of the safety phase).
    pub(crate) fn heal_all(&mut self) {
        self.active.clear();
    }

    /// True if a message from a node in `from` reaches a node in `to`.
    pub(crate) fn connected(&self, from: GroupMask, to: GroupMask) -> bool {
        !self.active.iter().any(|(_, a, b)| {
            (from.intersects(*a) && to.intersects(*b)) || (from.intersects(*b) && to.intersects(*a))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{GroupMask, Partitions};

    #[test]
    fn a_partition_cuts_both_directions_until_healed() {
        let gocd = GroupMask(1);
        let api = GroupMask(2);
        let agents = GroupMask(4);
        let mut partitions = Partitions::default();
        partitions.start(1, gocd, api);
        assert!(!partitions.connected(gocd, api));
        assert!(!partitions.connected(api, gocd));
        assert!(partitions.connected(agents, api));
        partitions.heal(1);
        assert!(partitions.connected(gocd, api));
    }
}
