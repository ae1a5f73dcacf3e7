//! One defect, one count: the hazard behind each leader violation (`docs/policies.md`,
//! "Hazards"), named from what the records show at the moment the invariant broke.
//!
//! A leader monitor's violation message ends with `[H<n>]` when the monitor can name the
//! defect that made it; [`hazard_of`] reads the tag back, so summaries and sweep tables can
//! group violations by defect ("agentk-head: one defect, H8, in three scenarios"). A
//! violation outside the fault budget (`expected`) names none: no defect is needed to explain
//! it.

use super::view::LeaderView;
use crate::check::{InvariantId, Violation};
use crate::leader::Variant;

/// The defects of the leader-module runners and of client-go's elector the model reproduces,
/// as `docs/policies.md` ("Hazards") numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hazard {
    /// #398: after a lost term agentk-v1's wrapper unregisters for good; the election stops.
    H1,
    /// agentk-v1 before `9eaf1658`: the runner starts the last-iterated module in every
    /// goroutine, one module twice and another never.
    H2,
    /// client-go v0.34+: the release refreshes the version but judges the cached record and
    /// can wipe the next holder's Lease.
    H3,
    /// OnStartedLeading carries no term: a late one starts modules outside its term.
    H4,
    /// agentk v2 to HEAD: runner and wrapper block on each other's unbuffered sends.
    H5,
    /// agentk v2 to HEAD: a re-started module gets the configuration captured at
    /// registration.
    H6,
    /// Modules stop only on OnStoppedLeading, which client-go calls after `release()`: a
    /// lost term's modules run on through the release.
    H8,
    /// agentk-v1: the last module's unregistration cancels the elector in the step that only
    /// cancels the module, so the Lease is released while the module still stops (a graceful
    /// stop, or the last runnable configuration gone).
    H9,
    /// agentk-v1 with the shipped modules (ctx ignored): after a lost term the runner blocks
    /// in `holder.wait()`, no elector runs and the old module acts on.
    H10,
}

impl Hazard {
    /// Every hazard, in number order.
    pub(crate) const ALL: [Hazard; 9] = [
        Hazard::H1,
        Hazard::H2,
        Hazard::H3,
        Hazard::H4,
        Hazard::H5,
        Hazard::H6,
        Hazard::H8,
        Hazard::H9,
        Hazard::H10,
    ];

    /// `H1` … `H10`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Hazard::H1 => "H1",
            Hazard::H2 => "H2",
            Hazard::H3 => "H3",
            Hazard::H4 => "H4",
            Hazard::H5 => "H5",
            Hazard::H6 => "H6",
            Hazard::H8 => "H8",
            Hazard::H9 => "H9",
            Hazard::H10 => "H10",
        }
    }

    /// One line: the defect.
    pub(crate) fn what(self) -> &'static str {
        match self {
            Hazard::H1 => "the election stops for good after a lost term (#398)",
            Hazard::H2 => "one module started twice, another never (range variable, 9eaf1658)",
            Hazard::H3 => "the release judges a cached record and wipes the next holder's Lease",
            Hazard::H4 => "a late OnStartedLeading starts modules outside its term",
            Hazard::H5 => "runner and wrapper blocked on each other's sends",
            Hazard::H6 => "a restarted module gets the configuration captured at registration",
            Hazard::H8 => "modules stop only after the release (OnStoppedLeading)",
            Hazard::H9 => "the last unregistration releases while the module still stops",
            Hazard::H10 => "the runner blocks in holder.wait() behind modules that ignore ctx",
        }
    }

    /// The hazard a tag names (`H8`), if any.
    pub(crate) fn from_name(name: &str) -> Option<Hazard> {
        Hazard::ALL.into_iter().find(|hazard| hazard.name() == name)
    }
}

/// The hazard a violation's message names (its trailing `[H<n>]`), if any.
pub fn hazard_of(violation: &Violation) -> Option<Hazard> {
    let tag = violation.message.trim_end().strip_suffix(']')?;
    let start = tag.rfind('[')?;
    Hazard::from_name(&tag[start + 1..])
}

/// `message [H<n>]` when the hazard is known.
pub(super) fn tagged(message: String, hazard: Option<Hazard>) -> String {
    match hazard {
        Some(hazard) => format!("{message} [{}]", hazard.name()),
        None => message,
    }
}

/// The hazard behind a violation of `invariant` involving `replicas`, judged on the view
/// right after the record that broke it. `None` when the records do not point at one defect.
pub(super) fn attribute(
    invariant: InvariantId,
    view: &LeaderView,
    replicas: &[u32],
    message: &str,
) -> Option<Hazard> {
    let variant = view.bounds?.variant;
    let blocked = replicas
        .iter()
        .filter_map(|replica| view.replicas.get(replica))
        .any(|replica| replica.blocked_in.is_some())
        || (invariant == InvariantId::FailoverBound
            && view.replicas.values().any(|r| r.blocked_in.is_some()));
    let runner_blocked = match variant {
        Variant::AgentkV1 => Hazard::H10,
        Variant::AgentkV2 | Variant::AgentkHead | Variant::AgentkHeadNoRelease | Variant::Fixed => {
            Hazard::H5
        }
    };
    let named = named_hazard(invariant, message);
    if named.is_some() {
        return named;
    }
    if blocked {
        return Some(runner_blocked);
    }
    view_hazard(invariant, view, replicas, variant)
}

/// What a violation of `invariant` names alone, whatever else the view shows.
fn named_hazard(invariant: InvariantId, message: &str) -> Option<Hazard> {
    match invariant {
        InvariantId::NoDuplicateModule => Some(Hazard::H2),
        InvariantId::LeaseCas => Some(Hazard::H3),
        InvariantId::ConfigFresh => Some(Hazard::H6),
        InvariantId::LeaderOnly => (message.contains("OnStartedLeading")
            || message.contains("believes"))
        .then_some(Hazard::H4),
        InvariantId::SingleLeaderActing
        | InvariantId::LeaderGrounded
        | InvariantId::RunnerProgress
        | InvariantId::ElectionIffDemand
        | InvariantId::RejoinAfterOutage
        | InvariantId::FailoverBound
        | InvariantId::JobWaitBound
        | InvariantId::NoCrossConfigReuse
        | InvariantId::OneJobPerAgent
        | InvariantId::NoWorkToDisabled
        | InvariantId::PendingLimit
        | InvariantId::OnePodPerJob
        | InvariantId::NoKillWhileBuilding
        | InvariantId::IdleTimeout
        | InvariantId::NoOrphanPods
        | InvariantId::AllJobsComplete
        | InvariantId::NoLostJob
        | InvariantId::ReuseHappens
        | InvariantId::RestartRecovers
        | InvariantId::NoAssignWhileCancelling
        | InvariantId::BoundedRequests => None,
    }
}

/// The hazard the view shows behind a violation of `invariant` (no runner blocked).
fn view_hazard(
    invariant: InvariantId,
    view: &LeaderView,
    replicas: &[u32],
    variant: Variant,
) -> Option<Hazard> {
    match invariant {
        InvariantId::SingleLeaderActing | InvariantId::LeaderGrounded => {
            overlap_hazard(view, replicas, variant)
        }
        InvariantId::RunnerProgress => match variant {
            Variant::AgentkV1 => Some(Hazard::H2),
            Variant::AgentkV2
            | Variant::AgentkHead
            | Variant::AgentkHeadNoRelease
            | Variant::Fixed => Some(Hazard::H6),
        },
        InvariantId::ElectionIffDemand | InvariantId::RejoinAfterOutage => Some(Hazard::H1),
        InvariantId::LeaderOnly
        | InvariantId::NoDuplicateModule
        | InvariantId::LeaseCas
        | InvariantId::ConfigFresh
        | InvariantId::FailoverBound
        | InvariantId::JobWaitBound
        | InvariantId::NoCrossConfigReuse
        | InvariantId::OneJobPerAgent
        | InvariantId::NoWorkToDisabled
        | InvariantId::PendingLimit
        | InvariantId::OnePodPerJob
        | InvariantId::NoKillWhileBuilding
        | InvariantId::IdleTimeout
        | InvariantId::NoOrphanPods
        | InvariantId::AllJobsComplete
        | InvariantId::NoLostJob
        | InvariantId::ReuseHappens
        | InvariantId::RestartRecovers
        | InvariantId::NoAssignWhileCancelling
        | InvariantId::BoundedRequests => None,
    }
}

/// Why a replica acts without the Lease: in agentk-v1, it released the Lease of a term it
/// still held (the release came within RD of its last renewal: nothing was lost) while its
/// modules ran (H9); otherwise its modules outlive a lost term until OnStoppedLeading (H8).
fn overlap_hazard(view: &LeaderView, replicas: &[u32], variant: Variant) -> Option<Hazard> {
    let renew_deadline_ms = view.bounds?.renew_deadline_ms;
    let voluntary = view
        .released_while_acting(replicas)
        .and_then(|(replica, released_ms)| {
            let held_ms = view.replicas.get(&replica)?.last_held_ms?;
            Some(released_ms < held_ms + renew_deadline_ms)
        })
        .unwrap_or(false);
    match variant {
        Variant::AgentkV1 if voluntary => Some(Hazard::H9),
        Variant::AgentkV1
        | Variant::AgentkV2
        | Variant::AgentkHead
        | Variant::AgentkHeadNoRelease
        | Variant::Fixed => Some(Hazard::H8),
    }
}

/// The failing violations grouped by the hazard they name, one line each, hazards in number
/// order: `H8 (modules stop only after the release): leader-grounded, single-leader-acting`;
/// violations that name none come last as `unattributed: …`. Empty when nothing failed.
pub fn hazard_lines(violations: &[Violation]) -> Vec<String> {
    let mut groups: std::collections::BTreeMap<Option<Hazard>, Vec<InvariantId>> =
        std::collections::BTreeMap::new();
    for violation in violations.iter().filter(|violation| !violation.expected) {
        let ids = groups.entry(hazard_of(violation)).or_default();
        if !ids.contains(&violation.id) {
            ids.push(violation.id);
        }
    }
    let mut lines: Vec<String> = groups
        .iter()
        .filter_map(|(hazard, ids)| {
            let hazard = (*hazard)?;
            let mut ids = ids.clone();
            ids.sort_unstable();
            Some(format!(
                "{} ({}): {}",
                hazard.name(),
                hazard.what(),
                InvariantId::join(&ids, ", ")
            ))
        })
        .collect();
    if let Some(ids) = groups.get(&None) {
        let mut ids = ids.clone();
        ids.sort_unstable();
        lines.push(format!("unattributed: {}", InvariantId::join(&ids, ", ")));
    }
    lines
}

/// `one defect, H8` / `2 defects, H2 and H8` / `no named defect` over failing violations.
pub fn defect_count_text(violations: &[Violation]) -> String {
    let mut hazards: Vec<Hazard> = violations
        .iter()
        .filter(|violation| !violation.expected)
        .filter_map(hazard_of)
        .collect();
    hazards.sort_unstable();
    hazards.dedup();
    let names: Vec<&str> = hazards.iter().map(|hazard| hazard.name()).collect();
    match names.as_slice() {
        [] => "no named defect".to_string(),
        [one] => format!("one defect, {one}"),
        [init @ .., last] => format!("{} defects, {} and {last}", names.len(), init.join(", ")),
    }
}
