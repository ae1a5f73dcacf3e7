//! The vocabulary of fault kinds: one enum, and for each kind its `kind` name, the keys it
//! takes, whether it needs `[leader]` and whether the default `[swarm] kinds` lists it. Every
//! table here is an exhaustive match, and so is every match over fault kinds elsewhere (the
//! parser, the writer, the world, the swarm, the shrinker): a new kind is a compile error at
//! each place that must decide what it does, never a run-time panic or a silent skip.

/// One fault kind, without its parameters ([`super::FaultKind`] carries those).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultType {
    /// `server_crash`
    ServerCrash,
    /// `pod_delete`
    PodDelete,
    /// `container_restart`
    ContainerRestart,
    /// `partition`
    Partition,
    /// `api_outage`
    ApiOutage,
    /// `profile_edit`
    ProfileEdit,
    /// `cluster_profile_edit`
    ClusterProfileEdit,
    /// `node_loss`
    NodeLoss,
    /// `burst`
    Burst,
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
    /// `pod_fail`
    PodFail,
    /// `replica_stop`
    ReplicaStop,
    /// `job_cancel`
    JobCancel,
    /// `node_add`
    NodeAdd,
}

impl FaultType {
    /// Every kind, in the order error messages list the valid ones.
    pub const ALL: [FaultType; 18] = [
        FaultType::ServerCrash,
        FaultType::PodDelete,
        FaultType::ContainerRestart,
        FaultType::Partition,
        FaultType::ApiOutage,
        FaultType::ProfileEdit,
        FaultType::ClusterProfileEdit,
        FaultType::NodeLoss,
        FaultType::Burst,
        FaultType::ReplicaCrash,
        FaultType::ReplicaPause,
        FaultType::ClockDrift,
        FaultType::LeaseDelete,
        FaultType::CallbackDelay,
        FaultType::PodFail,
        FaultType::ReplicaStop,
        FaultType::JobCancel,
        FaultType::NodeAdd,
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
            FaultType::ServerCrash => "server_crash",
            FaultType::PodDelete => "pod_delete",
            FaultType::ContainerRestart => "container_restart",
            FaultType::Partition => "partition",
            FaultType::ApiOutage => "api_outage",
            FaultType::ProfileEdit => "profile_edit",
            FaultType::ClusterProfileEdit => "cluster_profile_edit",
            FaultType::NodeLoss => "node_loss",
            FaultType::Burst => "burst",
            FaultType::ReplicaCrash => "replica_crash",
            FaultType::ReplicaPause => "replica_pause",
            FaultType::ClockDrift => "clock_drift",
            FaultType::LeaseDelete => "lease_delete",
            FaultType::CallbackDelay => "callback_delay",
            FaultType::PodFail => "pod_fail",
            FaultType::ReplicaStop => "replica_stop",
            FaultType::JobCancel => "job_cancel",
            FaultType::NodeAdd => "node_add",
        }
    }

    /// The kind named `name`; `None` for anything else.
    pub fn from_name(name: &str) -> Option<FaultType> {
        FaultType::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The keys a fault of this kind accepts besides `at` and `kind`.
    pub const fn keys(self) -> &'static [&'static str] {
        match self {
            FaultType::ServerCrash => &["downtime"],
            FaultType::PodDelete | FaultType::ContainerRestart | FaultType::PodFail => {
                &["target", "count"]
            }
            FaultType::Partition => &["between", "for"],
            FaultType::ApiOutage => &["for", "mode"],
            FaultType::ProfileEdit => &["profile", "set"],
            FaultType::ClusterProfileEdit => &["set"],
            FaultType::NodeLoss => &["count", "replace_after"],
            FaultType::NodeAdd => &["count"],
            FaultType::JobCancel => &["target", "count"],
            FaultType::Burst => &["count", "spread", "profile", "runtime"],
            FaultType::ReplicaCrash | FaultType::ReplicaStop => &["replica", "downtime"],
            FaultType::ReplicaPause => &["replica", "for"],
            FaultType::ClockDrift => &["replica", "rate"],
            FaultType::CallbackDelay => &["replica", "delay"],
            FaultType::LeaseDelete => &[],
        }
    }

    /// True for the kinds that act on `[leader]` replicas or their Lease.
    pub const fn needs_leader(self) -> bool {
        match self {
            FaultType::ReplicaCrash
            | FaultType::ReplicaStop
            | FaultType::ReplicaPause
            | FaultType::ClockDrift
            | FaultType::LeaseDelete
            | FaultType::CallbackDelay => true,
            FaultType::ServerCrash
            | FaultType::PodDelete
            | FaultType::ContainerRestart
            | FaultType::PodFail
            | FaultType::Partition
            | FaultType::ApiOutage
            | FaultType::ProfileEdit
            | FaultType::ClusterProfileEdit
            | FaultType::NodeLoss
            | FaultType::NodeAdd
            | FaultType::JobCancel
            | FaultType::Burst => false,
        }
    }

    /// True for the kinds `[swarm] kinds` lists when the scenario gives none. A new kind
    /// stays out: adding one here changes what every default swarm draws, hence its
    /// fingerprints.
    pub const fn in_default_swarm(self) -> bool {
        match self {
            FaultType::ServerCrash
            | FaultType::PodDelete
            | FaultType::ContainerRestart
            | FaultType::Partition
            | FaultType::ApiOutage => true,
            FaultType::PodFail
            | FaultType::ProfileEdit
            | FaultType::ClusterProfileEdit
            | FaultType::NodeLoss
            | FaultType::NodeAdd
            | FaultType::JobCancel
            | FaultType::Burst
            | FaultType::ReplicaCrash
            | FaultType::ReplicaStop
            | FaultType::ReplicaPause
            | FaultType::ClockDrift
            | FaultType::LeaseDelete
            | FaultType::CallbackDelay => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FaultType;

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
        assert!(!FaultType::ServerCrash.keys().contains(&"replica"));
        assert!(FaultType::LeaseDelete.keys().is_empty());
    }
}
