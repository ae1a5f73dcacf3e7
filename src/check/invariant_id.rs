//! Invariant ids: the one list of what the monitors judge (`docs/invariants.md` describes
//! each). Scenarios (`[invariants] disable`/`require`), reports, shards and regression lists
//! name them by [`InvariantId::name`]; reading one back parses it into the enum, so an
//! unknown id is an error where it is read, and no id is kept as free text.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// One invariant, by its stable id. Ids compare and sort by name (the order reports list
/// them in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvariantId {
    /// `job-wait-bound`.
    JobWaitBound,
    /// `no-cross-config-reuse`.
    NoCrossConfigReuse,
    /// `one-job-per-agent`.
    OneJobPerAgent,
    /// `no-work-to-disabled`.
    NoWorkToDisabled,
    /// `pending-limit`.
    PendingLimit,
    /// `one-pod-per-job`.
    OnePodPerJob,
    /// `no-kill-while-building`.
    NoKillWhileBuilding,
    /// `idle-timeout`.
    IdleTimeout,
    /// `no-orphan-pods`.
    NoOrphanPods,
    /// `all-jobs-complete`.
    AllJobsComplete,
    /// `no-lost-job`.
    NoLostJob,
    /// `reuse-happens`.
    ReuseHappens,
    /// `restart-recovers`.
    RestartRecovers,
    /// `no-assign-while-cancelling`.
    NoAssignWhileCancelling,
    /// `bounded-requests`.
    BoundedRequests,
    /// `lease-cas`.
    LeaseCas,
    /// `single-leader-acting`.
    SingleLeaderActing,
    /// `leader-grounded`.
    LeaderGrounded,
    /// `leader-only`.
    LeaderOnly,
    /// `no-duplicate-module`.
    NoDuplicateModule,
    /// `config-fresh`.
    ConfigFresh,
    /// `election-iff-demand`.
    ElectionIffDemand,
    /// `failover-bound`.
    FailoverBound,
    /// `rejoin-after-outage`.
    RejoinAfterOutage,
    /// `runner-progress`.
    RunnerProgress,
}

impl InvariantId {
    /// Every id, in `docs/invariants.md` order: the elastic-agent ones, then the leader ones.
    pub(crate) const ALL: [InvariantId; 25] = [
        InvariantId::JobWaitBound,
        InvariantId::NoCrossConfigReuse,
        InvariantId::OneJobPerAgent,
        InvariantId::NoWorkToDisabled,
        InvariantId::PendingLimit,
        InvariantId::OnePodPerJob,
        InvariantId::NoKillWhileBuilding,
        InvariantId::IdleTimeout,
        InvariantId::NoOrphanPods,
        InvariantId::AllJobsComplete,
        InvariantId::NoLostJob,
        InvariantId::ReuseHappens,
        InvariantId::RestartRecovers,
        InvariantId::NoAssignWhileCancelling,
        InvariantId::BoundedRequests,
        InvariantId::LeaseCas,
        InvariantId::SingleLeaderActing,
        InvariantId::LeaderGrounded,
        InvariantId::LeaderOnly,
        InvariantId::NoDuplicateModule,
        InvariantId::ConfigFresh,
        InvariantId::ElectionIffDemand,
        InvariantId::FailoverBound,
        InvariantId::RejoinAfterOutage,
        InvariantId::RunnerProgress,
    ];

    /// The id as docs, scenarios and reports write it.
    pub const fn name(self) -> &'static str {
        match self {
            InvariantId::JobWaitBound => "job-wait-bound",
            InvariantId::NoCrossConfigReuse => "no-cross-config-reuse",
            InvariantId::OneJobPerAgent => "one-job-per-agent",
            InvariantId::NoWorkToDisabled => "no-work-to-disabled",
            InvariantId::PendingLimit => "pending-limit",
            InvariantId::OnePodPerJob => "one-pod-per-job",
            InvariantId::NoKillWhileBuilding => "no-kill-while-building",
            InvariantId::IdleTimeout => "idle-timeout",
            InvariantId::NoOrphanPods => "no-orphan-pods",
            InvariantId::AllJobsComplete => "all-jobs-complete",
            InvariantId::NoLostJob => "no-lost-job",
            InvariantId::ReuseHappens => "reuse-happens",
            InvariantId::RestartRecovers => "restart-recovers",
            InvariantId::NoAssignWhileCancelling => "no-assign-while-cancelling",
            InvariantId::BoundedRequests => "bounded-requests",
            InvariantId::LeaseCas => "lease-cas",
            InvariantId::SingleLeaderActing => "single-leader-acting",
            InvariantId::LeaderGrounded => "leader-grounded",
            InvariantId::LeaderOnly => "leader-only",
            InvariantId::NoDuplicateModule => "no-duplicate-module",
            InvariantId::ConfigFresh => "config-fresh",
            InvariantId::ElectionIffDemand => "election-iff-demand",
            InvariantId::FailoverBound => "failover-bound",
            InvariantId::RejoinAfterOutage => "rejoin-after-outage",
            InvariantId::RunnerProgress => "runner-progress",
        }
    }

    /// The id named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<InvariantId> {
        InvariantId::ALL.into_iter().find(|id| id.name() == name)
    }

    /// The names of `ids`, joined by `separator` (how reports list them).
    pub fn join(ids: &[InvariantId], separator: &str) -> String {
        let names: Vec<&str> = ids.iter().map(|id| id.name()).collect();
        names.join(separator)
    }

    /// The `sometimes` invariants: the only ones `[invariants] require` changes.
    pub(crate) const fn is_sometimes(self) -> bool {
        matches!(
            self,
            InvariantId::ReuseHappens | InvariantId::RestartRecovers
        )
    }
}

impl Ord for InvariantId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for InvariantId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for InvariantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl Serialize for InvariantId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// `--invariant ID` on the command line: an unknown id is refused by clap (exit 2), listing
/// the valid ones.
impl clap::ValueEnum for InvariantId {
    fn value_variants<'a>() -> &'a [Self] {
        &InvariantId::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

/// Read back from the harness's own files: an unknown id is an error.
impl<'de> Deserialize<'de> for InvariantId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        InvariantId::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown invariant id {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::InvariantId;

    #[test]
    fn ids_read_back_by_name_and_sort_as_their_names() {
        for id in InvariantId::ALL {
            assert_eq!(InvariantId::from_name(id.name()), Some(id));
            let json = serde_json::to_string(&id).expect("a name");
            assert_eq!(serde_json::from_str::<InvariantId>(&json).ok(), Some(id));
        }
        let mut sorted = InvariantId::ALL.to_vec();
        sorted.sort();
        let names: Vec<&str> = sorted.iter().map(|id| id.name()).collect();
        let mut by_name = names.clone();
        by_name.sort_unstable();
        assert_eq!(names, by_name);
        let unknown = serde_json::from_str::<InvariantId>("\"job-wait\"");
        assert!(unknown.is_err_and(|e| e.to_string().contains("unknown invariant id")));
    }
}
