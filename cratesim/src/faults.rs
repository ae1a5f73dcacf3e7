//! The scenario's `[[faults]]`, as a lease-crate run injects them. The kinds are the leader
//! scenarios' (`docs/scenario-format.md`); a kind a crate run cannot inject is refused when
//! the scenario is read (exit 2), never silently skipped.

use elasticsim::scenario::{
    FaultKind, LeaderFault, NetworkFault, OutageMode, ReplicaRef, Scenario, replica_group,
};

/// One fault a crate run injects.
#[derive(Clone, Debug, PartialEq)]
pub enum CrateFault {
    /// A partition between replicas and `kube-api`.
    CutOff {
        /// Which replicas: `None` for all of them.
        replicas: Option<ReplicaRef>,
        /// How long.
        for_ms: u64,
    },
    /// An API outage.
    Outage {
        /// How long.
        for_ms: u64,
        /// Fail or hang.
        mode: OutageMode,
    },
    /// A crash (`graceful = false`) or a graceful stop, and a restart after `downtime_ms`.
    Down {
        /// Which replica.
        replica: ReplicaRef,
        /// How long it stays down.
        downtime_ms: u64,
        /// `replica_stop` rather than `replica_crash`.
        graceful: bool,
    },
}

impl CrateFault {
    /// The fault's kind name in the records.
    pub fn name(&self) -> &'static str {
        match self {
            CrateFault::CutOff { .. } => "partition",
            CrateFault::Outage { .. } => "api_outage",
            CrateFault::Down {
                graceful: false, ..
            } => "replica_crash",
            CrateFault::Down { graceful: true, .. } => "replica_stop",
        }
    }
}

/// The scenario's faults, in order, as crate faults (with their start times), or what makes
/// the scenario one a crate run cannot take.
pub fn crate_faults(scenario: &Scenario) -> Result<Vec<(u64, CrateFault)>, String> {
    if scenario.swarm.enabled {
        return Err("[swarm] is not available in a lease_crate run: list [[faults]]".to_owned());
    }
    let mut faults = Vec::new();
    for (index, fault) in scenario.faults.iter().enumerate() {
        let refuse = |why: &str| format!("faults[{index}]: {why}");
        let crate_fault = match &fault.kind {
            FaultKind::Network(NetworkFault::Partition { between, for_ms }) => CrateFault::CutOff {
                replicas: cut_off_side(between).map_err(|why| refuse(&why))?,
                for_ms: *for_ms,
            },
            FaultKind::Network(NetworkFault::ApiOutage { for_ms, mode }) => CrateFault::Outage {
                for_ms: *for_ms,
                mode: *mode,
            },
            FaultKind::Leader(LeaderFault::ReplicaCrash {
                replica,
                downtime_ms,
            }) => CrateFault::Down {
                replica: *replica,
                downtime_ms: *downtime_ms,
                graceful: false,
            },
            FaultKind::Leader(LeaderFault::ReplicaStop {
                replica,
                downtime_ms,
            }) => CrateFault::Down {
                replica: *replica,
                downtime_ms: *downtime_ms,
                graceful: true,
            },
            FaultKind::Elastic(_)
            | FaultKind::Leader(
                LeaderFault::ReplicaPause { .. }
                | LeaderFault::ClockDrift { .. }
                | LeaderFault::LeaseDelete
                | LeaderFault::CallbackDelay { .. },
            ) => {
                return Err(refuse(
                    "a lease_crate run injects partition (replicas | kube-api), api_outage, \
                     replica_crash and replica_stop only",
                ));
            }
        };
        faults.push((fault.at_ms, crate_fault));
    }
    Ok(faults)
}

/// The replica side of a partition with `kube-api`: one replica, the leader, or all.
fn cut_off_side(between: &[String; 2]) -> Result<Option<ReplicaRef>, String> {
    let other = match between {
        [a, b] if a == "kube-api" => b,
        [a, b] if b == "kube-api" => a,
        _ => return Err("a lease_crate run partitions replicas from kube-api only".to_owned()),
    };
    match other.as_str() {
        "replicas" => Ok(None),
        "leader" => Ok(Some(ReplicaRef::Leader)),
        name => replica_group(name)
            .map(|index| Some(ReplicaRef::Index(index)))
            .ok_or_else(|| format!("{name:?} is not a replica group")),
    }
}
