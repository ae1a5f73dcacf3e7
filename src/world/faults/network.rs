//! The faults of the network and the Kubernetes API: partitions and API outages.

use super::super::Sink;
use super::super::build::{World, groups};
use super::{Lasting, Started};
use crate::engine::{GroupMask, SimTime};
use crate::scenario::{NetworkFault, OutageMode, replica_group};

impl World {
    /// A partition or an outage starts; it lasts its `for`.
    pub(super) fn start_network_fault(
        &mut self,
        now: SimTime,
        index: usize,
        fault: &NetworkFault,
    ) -> Started {
        let (target, for_ms) = match fault {
            NetworkFault::Partition { between, for_ms } => {
                (self.start_partition(now, index, between), *for_ms)
            }
            NetworkFault::ApiOutage { for_ms, mode } => (self.start_outage(*mode), *for_ms),
        };
        Started::Acting {
            target,
            lasting: Lasting::For(for_ms),
        }
    }

    /// A partition heals, an outage ends.
    pub(super) fn end_network_fault(
        &mut self,
        now: SimTime,
        index: usize,
        fault: &NetworkFault,
        sink: &mut dyn Sink,
    ) {
        match fault {
            NetworkFault::Partition { .. } => {
                self.partitions.heal(index as u32);
                self.partitions_changed(now);
            }
            NetworkFault::ApiOutage { .. } => self.end_outage(now, sink),
        }
    }

    /// `partition`: the two groups stop reaching each other. Returns `a|b`.
    fn start_partition(&mut self, now: SimTime, index: usize, between: &[String; 2]) -> String {
        let a = self.group_mask(&between[0]);
        let b = self.group_mask(&between[1]);
        self.partitions.start(index as u32, a, b);
        self.partitions_changed(now);
        format!("{}|{}", between[0], between[1])
    }

    /// `api_outage`: every call fails or hangs from now on. Returns the mode.
    fn start_outage(&mut self, mode: OutageMode) -> String {
        self.outage = Some(mode);
        match mode {
            OutageMode::Error => "error",
            OutageMode::Hang => "hang",
        }
        .to_owned()
    }

    fn group_mask(&self, group: &str) -> GroupMask {
        match group {
            "gocd" => groups::GOCD,
            "kube-api" => groups::KUBE_API,
            "agents" => groups::AGENTS,
            "replicas" => groups::REPLICAS,
            "leader" => self.leader_mask(),
            other => replica_group(other).map_or(GroupMask(0), groups::replica),
        }
    }
}
