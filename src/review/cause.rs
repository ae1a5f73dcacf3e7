//! The first screen's plain words: each row's verdict and its cause in one sentence built from
//! the decision codes of the divergence that explains it, and the invariants in words a
//! maintainer who never saw the harness can read.

use super::ScenarioReview;
use super::summary::Cluster;
use crate::allocator::DecisionCode;
use crate::check::InvariantId;
use crate::scenario::Plugin;

/// `breaks` (the candidate alone breaks an invariant), `both break` (it breaks nothing the
/// base keeps, but both fail some runs), `diverges` (it decides differently, both pass) or
/// `same`.
pub(crate) fn verdict_word(review: &ScenarioReview) -> &'static str {
    if !review.new_violations.is_empty() {
        "breaks"
    } else if review.base_failed > 0 && review.candidate_failed > 0 {
        "both break"
    } else if !review.first_divergences.is_empty() {
        "diverges"
    } else {
        "same"
    }
}

/// What a policy does when it records `code`, as a verb phrase (the request is said apart).
fn deed(code: DecisionCode) -> &'static str {
    match code {
        DecisionCode::AssignNo => "answers false",
        DecisionCode::AssignYes => "answers true",
        DecisionCode::Evict => "answers false and drops the pod from its map",
        DecisionCode::Claim => "claims an idle pod for the job instead of creating one",
        DecisionCode::ClaimFailed => "fails to claim an idle pod",
        DecisionCode::ClaimLost => "loses a pod it had claimed for the job",
        DecisionCode::CompleteDelete => "deletes the pod",
        DecisionCode::CompleteIdle => "keeps the pod, marked idle, for the next job",
        DecisionCode::CompleteStale => "ignores a job-completion for a job the pod no longer runs",
        DecisionCode::CompleteUnknown => "finds no pod for the agent",
        DecisionCode::Create => "creates a pod",
        DecisionCode::CreateFailed => "fails to create a pod",
        DecisionCode::DeleteFailed => "fails to delete a pod",
        DecisionCode::DisableOld => "disables agents older than the auto-register timeout",
        DecisionCode::FirstUseRefresh => "lists the cluster's pods on first use",
        DecisionCode::IdleSince => "starts an idle pod's idle clock",
        DecisionCode::PingAborted => "stops half-way",
        DecisionCode::PingListFailed => "cannot list the pods",
        DecisionCode::Queued => "waits behind another request",
        DecisionCode::ReapDisabled => "deletes the pods of disabled agents",
        DecisionCode::ReapFailed => "fails to delete a pod",
        DecisionCode::ReapIdle => "deletes a pod idle past the idle timeout",
        DecisionCode::ReapLost => "deletes the pod of an agent that lost contact",
        DecisionCode::ReapMissing => "forgets a pod that is gone",
        DecisionCode::ReapOrphan => "deletes a pod no agent belongs to",
        DecisionCode::ReapRestarted => "deletes a pod whose container restarted",
        DecisionCode::ReapRetry => "retries a deletion",
        DecisionCode::ReapUnregistered => "deletes a pod whose agent never registered",
        DecisionCode::RefreshFailed => "cannot list the pods",
        DecisionCode::SkipAssigned => "creates no pod: the job is assigned already",
        DecisionCode::SkipDeleting => "creates no pod while one is being deleted",
        DecisionCode::SkipError => "creates no pod after an error",
        DecisionCode::SkipExisting => "creates no pod: one labelled for the job exists",
        DecisionCode::SkipLimit => "creates no pod: its pod limit is reached",
        DecisionCode::SkipMaxPods => "creates no pod: the cap on all pods is reached",
        DecisionCode::SkipReuse => {
            "creates no pod because an idle pod with the same profile exists, without checking \
             that this pod's agent can take the job"
        }
        DecisionCode::SkipTurn => "creates no pod: another request's turn",
        DecisionCode::WaitDelete => "waits for a deletion to finish",
    }
}

/// `code`'s deed, or the code itself when it is not a decision code.
fn deed_of(code: &str) -> String {
    DecisionCode::parse(code).map_or_else(|| format!("decides `{code}`"), |c| deed(c).to_owned())
}

/// A policy in plain words, for readers who never saw the harness: `upstream` is the plugin's
/// master branch, `pr355` the pull request.
pub(crate) fn policy_words(name: &str) -> String {
    let Some(policy) = crate::allocator::Policy::from_name(name) else {
        return name.to_owned();
    };
    let words = match policy {
        crate::allocator::Policy::Upstream => "the plugin's master branch",
        crate::allocator::Policy::Pr355 => "pull request #355",
        crate::allocator::Policy::Safe => "the proposed design",
    };
    words.to_owned()
}

/// An invariant in plain words, as what went wrong (a leader invariant, which review never
/// judges, by its id's words).
pub(crate) fn invariant_words(id: InvariantId) -> String {
    let words = match id {
        InvariantId::JobWaitBound => "jobs wait for an agent longer than allowed",
        InvariantId::NoCrossConfigReuse => "a pod runs a job of another configuration",
        InvariantId::OneJobPerAgent => "an agent gets two jobs at once",
        InvariantId::NoWorkToDisabled => "a disabled agent gets a job",
        InvariantId::PendingLimit => "more pods are pending than the limit",
        InvariantId::OnePodPerJob => "a job gets more than one pod",
        InvariantId::NoKillWhileBuilding => "a pod is killed while it builds",
        InvariantId::IdleTimeout => "idle pods outlive the idle timeout",
        InvariantId::NoOrphanPods => "pods are left behind",
        InvariantId::AllJobsComplete => "jobs never finish",
        InvariantId::NoLostJob => "a job is lost",
        InvariantId::ReuseHappens => "no pod is ever reused",
        InvariantId::RestartRecovers => "a restarted server never recovers",
        InvariantId::NoAssignWhileCancelling => "a job goes to an agent still cancelling",
        InvariantId::BoundedRequests => "the server floods the plugin with requests",
        InvariantId::LeaseCas
        | InvariantId::SingleLeaderActing
        | InvariantId::LeaderGrounded
        | InvariantId::LeaderOnly
        | InvariantId::NoDuplicateModule
        | InvariantId::ConfigFresh
        | InvariantId::ElectionIffDemand
        | InvariantId::FailoverBound
        | InvariantId::RejoinAfterOutage
        | InvariantId::RunnerProgress => return id.name().replace('-', " "),
    };
    words.to_owned()
}

/// How much a candidate decision can explain a break: dropping what it knows, or withholding
/// a pod, before anything else.
fn weight(code: &str) -> u8 {
    match DecisionCode::parse(code) {
        Some(DecisionCode::Evict) => 3,
        Some(DecisionCode::SkipReuse | DecisionCode::SkipLimit | DecisionCode::SkipExisting) => 2,
        _ => 0,
    }
}

/// The cluster that explains a row: among the candidate's divergences it does not declare as
/// intended (else among all), the one on most seeds, a dropped pod or a withheld pod first.
fn explaining(review: &ScenarioReview) -> Option<&Cluster> {
    // The first of the best (clusters come most seeds first, then smallest example seed).
    let rank = |cluster: &&Cluster| {
        let weight = weight(&cluster.candidate_code);
        (std::cmp::Reverse(cluster.seeds), std::cmp::Reverse(weight))
    };
    let unintended = (review.clusters.iter())
        .filter(|cluster| cluster.example.intended.is_none())
        .min_by_key(rank);
    unintended.or_else(|| review.clusters.iter().min_by_key(rank))
}

/// Why the row's decision differs, from a setting's default: the pod limit of 10.
fn default_setting(cluster: &Cluster, review: &ScenarioReview) -> Option<String> {
    let limit = DecisionCode::parse(&cluster.candidate_code)? == DecisionCode::SkipLimit;
    let default = Plugin::default().pending_pods_count;
    (limit && review.pending_pods_count == default).then(|| {
        format!(
            "; this comes from a default setting, the limit of {default} pods (pending_pods_count)"
        )
    })
}

/// The row's cause in one sentence: at which request the candidate does what instead of what
/// the base does, whether that is the intended change, and what it breaks.
pub(crate) fn cause_sentence(review: &ScenarioReview, base: &str, candidate: &str) -> String {
    let Some(cluster) = explaining(review) else {
        return format!("{candidate} decides exactly as {base} on every run");
    };
    let mut sentence = format!(
        "at {}, {candidate} {} where {base} {}",
        cluster.example.request,
        deed_of(&cluster.candidate_code),
        deed_of(&cluster.base_code)
    );
    if cluster.example.intended.is_some() {
        sentence.push_str(" (the intended change)");
    }
    if let Some(note) = default_setting(cluster, review) {
        sentence.push_str(&note);
    }
    let broken: Vec<String> = (review.new_violations.iter())
        .map(|(id, seeds)| {
            format!(
                "{} ({} of {} runs)",
                invariant_words(*id),
                seeds.len(),
                review.seeds
            )
        })
        .collect();
    if !broken.is_empty() {
        sentence.push_str(&format!(", so {}", broken.join(" and ")));
    } else if review.base_failed > 0 && review.candidate_failed > 0 {
        sentence.push_str(&format!(
            "; both fail some runs ({base} {}, {candidate} {} of {})",
            review.base_failed, review.candidate_failed, review.seeds
        ));
    }
    sentence
}

#[cfg(test)]
mod tests {
    use super::invariant_words;
    use crate::check::InvariantId;

    #[test]
    fn invariants_read_as_plain_words() {
        assert_eq!(
            invariant_words(InvariantId::JobWaitBound),
            "jobs wait for an agent longer than allowed"
        );
        assert_eq!(invariant_words(InvariantId::LeaseCas), "lease cas");
    }
}
