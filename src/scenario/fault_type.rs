//! The vocabulary of fault kinds, nested by owner: the elastic-agent side (server, pods,
//! profiles, nodes, jobs), the network and API both sides use, and the `[leader]` replicas.
//! For each kind: its `kind` name, the keys it takes, and whether the default `[swarm] kinds`
//! lists it. Every table here is an exhaustive match, and so is every match over fault kinds
//! elsewhere (the parser, the writer, the world, the swarm, the shrinker): a new kind is a
//! compile error at each place that must decide what it does, and a place that handles one
//! owner's kinds takes that owner's enum, so no run-time split can miss.

use std::cmp::Ordering;

/// One fault kind, without its parameters ([`super::FaultKind`] carries those).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultType {
    /// A fault of the GoCD server, its pods, profiles, nodes or jobs.
    Elastic(ElasticKind),
    /// A fault of the network or the Kubernetes API, whoever uses them.
    Network(NetworkKind),
    /// A fault of the `[leader]` replicas or their Lease (needs `[leader]`).
    Leader(LeaderKind),
}

/// The kinds of [`FaultType::Elastic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElasticKind {
    /// `server_crash`
    ServerCrash,
    /// `pod_delete`
    PodDelete,
    /// `container_restart`
    ContainerRestart,
    /// `pod_fail`
    PodFail,
    /// `profile_edit`
    ProfileEdit,
    /// `cluster_profile_edit`
    ClusterProfileEdit,
    /// `node_loss`
    NodeLoss,
    /// `node_add`
    NodeAdd,
    /// `job_cancel`
    JobCancel,
    /// `burst`
    Burst,
}

/// The kinds of [`FaultType::Network`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NetworkKind {
    /// `partition`
    Partition,
    /// `api_outage`
    ApiOutage,
}

/// The kinds of [`FaultType::Leader`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeaderKind {
    /// `replica_crash`
    ReplicaCrash,
    /// `replica_pause`
    ReplicaPause,
    /// `clock_drift`
    ClockDrift,
    /// `lease_delete`
    LeaseDelete,
    /// `callback_delay`
    CallbackDelay,
    /// `replica_stop`
    ReplicaStop,
}

impl FaultType {
    /// Every kind, in the order error messages list the valid ones (the order kinds were
    /// added in, not by owner).
    pub const ALL: [FaultType; 18] = [
        FaultType::Elastic(ElasticKind::ServerCrash),
        FaultType::Elastic(ElasticKind::PodDelete),
        FaultType::Elastic(ElasticKind::ContainerRestart),
        FaultType::Network(NetworkKind::Partition),
        FaultType::Network(NetworkKind::ApiOutage),
        FaultType::Elastic(ElasticKind::ProfileEdit),
        FaultType::Elastic(ElasticKind::ClusterProfileEdit),
        FaultType::Elastic(ElasticKind::NodeLoss),
        FaultType::Elastic(ElasticKind::Burst),
        FaultType::Leader(LeaderKind::ReplicaCrash),
        FaultType::Leader(LeaderKind::ReplicaPause),
        FaultType::Leader(LeaderKind::ClockDrift),
        FaultType::Leader(LeaderKind::LeaseDelete),
        FaultType::Leader(LeaderKind::CallbackDelay),
        FaultType::Elastic(ElasticKind::PodFail),
        FaultType::Leader(LeaderKind::ReplicaStop),
        FaultType::Elastic(ElasticKind::JobCancel),
        FaultType::Elastic(ElasticKind::NodeAdd),
    ];

    /// The names of [`FaultType::ALL`], in its order.
    pub const NAMES: [&'static str; 18] = {
        let mut names = [""; 18];
        let mut index = 0;
        while index < names.len() {
            names[index] = FaultType::ALL[index].name();
            index += 1;
        }
        names
    };

    /// The `kind` string of the scenario format.
    pub const fn name(self) -> &'static str {
        match self {
            FaultType::Elastic(kind) => kind.name(),
            FaultType::Network(kind) => kind.name(),
            FaultType::Leader(kind) => kind.name(),
        }
    }

    /// The kind named `name`; `None` for anything else.
    pub(crate) fn from_name(name: &str) -> Option<FaultType> {
        FaultType::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The keys a fault of this kind accepts besides `at` and `kind`.
    pub const fn keys(self) -> &'static [&'static str] {
        match self {
            FaultType::Elastic(kind) => kind.keys(),
            FaultType::Network(NetworkKind::Partition) => &["between", "for"],
            FaultType::Network(NetworkKind::ApiOutage) => &["for", "mode"],
            FaultType::Leader(kind) => kind.keys(),
        }
    }

    /// True for the kinds that act on `[leader]` replicas or their Lease.
    pub const fn needs_leader(self) -> bool {
        matches!(self, FaultType::Leader(_))
    }

    /// True for the kinds `[swarm] kinds` lists when the scenario gives none. A new kind
    /// stays out: adding one here changes what every default swarm draws, hence its
    /// fingerprints.
    pub const fn in_default_swarm(self) -> bool {
        match self {
            FaultType::Elastic(kind) => kind.in_default_swarm(),
            FaultType::Network(NetworkKind::Partition | NetworkKind::ApiOutage) => true,
            FaultType::Leader(_) => false,
        }
    }

    /// The position in [`FaultType::ALL`], which orders kinds.
    fn position(self) -> usize {
        let position = FaultType::ALL.iter().position(|kind| *kind == self);
        position.expect("ALL lists every kind")
    }
}

/// Kinds sort as [`FaultType::ALL`] lists them (as the flat enum they were once did).
impl Ord for FaultType {
    fn cmp(&self, other: &Self) -> Ordering {
        self.position().cmp(&other.position())
    }
}

impl PartialOrd for FaultType {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl ElasticKind {
    /// The `kind` string of the scenario format.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            ElasticKind::ServerCrash => "server_crash",
            ElasticKind::PodDelete => "pod_delete",
            ElasticKind::ContainerRestart => "container_restart",
            ElasticKind::PodFail => "pod_fail",
            ElasticKind::ProfileEdit => "profile_edit",
            ElasticKind::ClusterProfileEdit => "cluster_profile_edit",
            ElasticKind::NodeLoss => "node_loss",
            ElasticKind::NodeAdd => "node_add",
            ElasticKind::JobCancel => "job_cancel",
            ElasticKind::Burst => "burst",
        }
    }

    const fn keys(self) -> &'static [&'static str] {
        match self {
            ElasticKind::ServerCrash => &["downtime"],
            ElasticKind::PodDelete | ElasticKind::ContainerRestart | ElasticKind::PodFail => {
                &["target", "count"]
            }
            ElasticKind::ProfileEdit => &["profile", "set"],
            ElasticKind::ClusterProfileEdit => &["set"],
            ElasticKind::NodeLoss => &["count", "replace_after"],
            ElasticKind::NodeAdd => &["count"],
            ElasticKind::JobCancel => &["target", "count"],
            ElasticKind::Burst => &["count", "spread", "profile", "runtime"],
        }
    }

    const fn in_default_swarm(self) -> bool {
        match self {
            ElasticKind::ServerCrash | ElasticKind::PodDelete | ElasticKind::ContainerRestart => {
                true
            }
            ElasticKind::PodFail
            | ElasticKind::ProfileEdit
            | ElasticKind::ClusterProfileEdit
            | ElasticKind::NodeLoss
            | ElasticKind::NodeAdd
            | ElasticKind::JobCancel
            | ElasticKind::Burst => false,
        }
    }
}

impl NetworkKind {
    /// The `kind` string of the scenario format.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            NetworkKind::Partition => "partition",
            NetworkKind::ApiOutage => "api_outage",
        }
    }
}

impl LeaderKind {
    /// The `kind` string of the scenario format.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            LeaderKind::ReplicaCrash => "replica_crash",
            LeaderKind::ReplicaPause => "replica_pause",
            LeaderKind::ClockDrift => "clock_drift",
            LeaderKind::LeaseDelete => "lease_delete",
            LeaderKind::CallbackDelay => "callback_delay",
            LeaderKind::ReplicaStop => "replica_stop",
        }
    }

    const fn keys(self) -> &'static [&'static str] {
        match self {
            LeaderKind::ReplicaCrash | LeaderKind::ReplicaStop => &["replica", "downtime"],
            LeaderKind::ReplicaPause => &["replica", "for"],
            LeaderKind::ClockDrift => &["replica", "rate"],
            LeaderKind::CallbackDelay => &["replica", "delay"],
            LeaderKind::LeaseDelete => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ElasticKind, FaultType, LeaderKind, NetworkKind};

    #[test]
    fn every_kind_is_listed_once_and_found_by_its_name() {
        for (index, kind) in FaultType::ALL.into_iter().enumerate() {
            assert_eq!(FaultType::NAMES[index], kind.name());
            assert_eq!(FaultType::from_name(kind.name()), Some(kind));
            assert_eq!(
                FaultType::ALL
                    .iter()
                    .filter(|other| **other == kind)
                    .count(),
                1,
                "{kind:?} twice in ALL"
            );
        }
        assert_eq!(FaultType::from_name("lease"), None);
        let leader: Vec<&str> = FaultType::ALL
            .into_iter()
            .filter(|kind| kind.needs_leader())
            .map(FaultType::name)
            .collect();
        assert_eq!(
            leader,
            [
                "replica_crash",
                "replica_pause",
                "clock_drift",
                "lease_delete",
                "callback_delay",
                "replica_stop"
            ]
        );
        let server_crash = FaultType::Elastic(ElasticKind::ServerCrash);
        assert!(!server_crash.keys().contains(&"replica"));
        assert!(FaultType::Leader(LeaderKind::LeaseDelete).keys().is_empty());
    }

    #[test]
    fn kinds_sort_in_the_order_all_lists_them() {
        let mut sorted = FaultType::ALL.to_vec();
        sorted.sort();
        assert_eq!(sorted, FaultType::ALL);
        let partition = FaultType::Network(NetworkKind::Partition);
        let pod_fail = FaultType::Elastic(ElasticKind::PodFail);
        assert!(partition < pod_fail, "ALL lists partition before pod_fail");
    }
}
