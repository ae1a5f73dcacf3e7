//! The decision codes every policy records, one spelling per meaning.
//!
//! A decision's code is what `elasticsim review` aligns two policies' runs by, what the
//! trace and the reports show, and what `docs/policies.md` lists: one enum shared by every
//! policy keeps a policy from spelling an existing meaning anew. Which codes a policy
//! records, for which request and with what meaning in that policy, is its declaration
//! (`declaration.rs`).

/// What an allocator decided, as a stable short code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DecisionCode {
    /// `assign-no`: should-assign-work answers false (`safe`: with the reason, nothing changes).
    AssignNo,
    /// `assign-yes`: should-assign-work answers true.
    AssignYes,
    /// `claim`: an idle pod is claimed for the job (rule 1), so no new pod is created.
    Claim,
    /// `claim-failed`: the claim write failed, so a pod is created instead.
    ClaimFailed,
    /// `claim-lost`: the idle pod was deleted or changed since the list: not reused (rule 2).
    ClaimLost,
    /// `complete-delete`: job-completion without reuse: the agent is disabled and the pod deleted.
    CompleteDelete,
    /// `complete-idle`: job-completion with reuse: the pod is kept idle for the next job.
    CompleteIdle,
    /// `complete-stale`: job-completion for a job other than the one the pod runs now (it came
    /// after the next assignment): nothing changes.
    CompleteStale,
    /// `complete-unknown`: job-completion for a pod not in the plugin's map.
    CompleteUnknown,
    /// `create`: a new pod is created for the job.
    Create,
    /// `create-failed`: creating the pod failed.
    CreateFailed,
    /// `delete-failed`: a pod delete failed.
    DeleteFailed,
    /// `disable-old`: server-ping disables an idle, missing or lost agent whose pod is past ART.
    DisableOld,
    /// `evict`: should-assign-work answers false and drops the pod from the plugin's map.
    Evict,
    /// `first-use-refresh`: a process's first request for a cluster profile lists its pods first.
    FirstUseRefresh,
    /// `idle-since`: server-ping writes idle-since on a pod seen idle without one (rule 3).
    IdleSince,
    /// `ping-aborted`: a pod delete failed during server-ping: the rest of the ping is skipped.
    PingAborted,
    /// `ping-list-failed`: server-ping could not list pods: no cleanup this ping.
    PingListFailed,
    /// `queued`: create-agent waits for the cluster lock: another create-agent is in progress.
    Queued,
    /// `reap-disabled`: the pod's agent is disabled at the server: the pod is deleted.
    ReapDisabled,
    /// `reap-failed`: the pod is Failed or Succeeded: it can never serve.
    ReapFailed,
    /// `reap-idle`: server-ping deletes an idle pod.
    ReapIdle,
    /// `reap-lost`: the pod's agent lost contact with the server: disabled and deleted.
    ReapLost,
    /// `reap-missing`: server-ping disables and deletes an agent whose pod is gone.
    ReapMissing,
    /// `reap-orphan`: a pod of an older server process never registered: deleted at once (rule 7).
    ReapOrphan,
    /// `reap-restarted`: the pod's container restarted: disabled and deleted (rule 8).
    ReapRestarted,
    /// `reap-retry`: a pod being deleted is deleted again.
    ReapRetry,
    /// `reap-unregistered`: server-ping deletes a pod that never registered within ART.
    ReapUnregistered,
    /// `refresh-failed`: listing pods failed; the stale pod map is kept.
    RefreshFailed,
    /// `skip-assigned`: no pod: the job already has an agent (or was assigned while deciding).
    SkipAssigned,
    /// `skip-deleting`: the job's own pod could not be deleted yet: no replacement for now.
    SkipDeleting,
    /// `skip-error`: listing pods failed: no decision for this request, the server resends.
    SkipError,
    /// `skip-existing`: no pod: one already exists for this job.
    SkipExisting,
    /// `skip-limit`: no pod: the pod limit (`pending_pods_count`) is reached.
    SkipLimit,
    /// `skip-max-pods`: no pod: `max_pods` pods exist.
    SkipMaxPods,
    /// `skip-turn`: an older job a limit turned away goes first (`safe`); this job's own pod
    /// follows while room remains.
    SkipTurn,
    /// `skip-reuse`: no pod: one labelled for the job, or an Idle, Running, hash-equal one, exists.
    SkipReuse,
    /// `wait-delete`: the job's pod is being deleted: the decision waits for the delete.
    WaitDelete,
}

impl DecisionCode {
    /// Every code, in the order of their spellings.
    pub const ALL: [DecisionCode; 38] = [
        DecisionCode::AssignNo,
        DecisionCode::AssignYes,
        DecisionCode::Claim,
        DecisionCode::ClaimFailed,
        DecisionCode::ClaimLost,
        DecisionCode::CompleteDelete,
        DecisionCode::CompleteIdle,
        DecisionCode::CompleteStale,
        DecisionCode::CompleteUnknown,
        DecisionCode::Create,
        DecisionCode::CreateFailed,
        DecisionCode::DeleteFailed,
        DecisionCode::DisableOld,
        DecisionCode::Evict,
        DecisionCode::FirstUseRefresh,
        DecisionCode::IdleSince,
        DecisionCode::PingAborted,
        DecisionCode::PingListFailed,
        DecisionCode::Queued,
        DecisionCode::ReapDisabled,
        DecisionCode::ReapFailed,
        DecisionCode::ReapIdle,
        DecisionCode::ReapLost,
        DecisionCode::ReapMissing,
        DecisionCode::ReapOrphan,
        DecisionCode::ReapRestarted,
        DecisionCode::ReapRetry,
        DecisionCode::ReapUnregistered,
        DecisionCode::RefreshFailed,
        DecisionCode::SkipAssigned,
        DecisionCode::SkipDeleting,
        DecisionCode::SkipError,
        DecisionCode::SkipExisting,
        DecisionCode::SkipLimit,
        DecisionCode::SkipMaxPods,
        DecisionCode::SkipReuse,
        DecisionCode::SkipTurn,
        DecisionCode::WaitDelete,
    ];

    /// The code as the trace, the reports and the docs spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            DecisionCode::AssignNo => "assign-no",
            DecisionCode::AssignYes => "assign-yes",
            DecisionCode::Claim => "claim",
            DecisionCode::ClaimFailed => "claim-failed",
            DecisionCode::ClaimLost => "claim-lost",
            DecisionCode::CompleteDelete => "complete-delete",
            DecisionCode::CompleteIdle => "complete-idle",
            DecisionCode::CompleteStale => "complete-stale",
            DecisionCode::CompleteUnknown => "complete-unknown",
            DecisionCode::Create => "create",
            DecisionCode::CreateFailed => "create-failed",
            DecisionCode::DeleteFailed => "delete-failed",
            DecisionCode::DisableOld => "disable-old",
            DecisionCode::Evict => "evict",
            DecisionCode::FirstUseRefresh => "first-use-refresh",
            DecisionCode::IdleSince => "idle-since",
            DecisionCode::PingAborted => "ping-aborted",
            DecisionCode::PingListFailed => "ping-list-failed",
            DecisionCode::Queued => "queued",
            DecisionCode::ReapDisabled => "reap-disabled",
            DecisionCode::ReapFailed => "reap-failed",
            DecisionCode::ReapIdle => "reap-idle",
            DecisionCode::ReapLost => "reap-lost",
            DecisionCode::ReapMissing => "reap-missing",
            DecisionCode::ReapOrphan => "reap-orphan",
            DecisionCode::ReapRestarted => "reap-restarted",
            DecisionCode::ReapRetry => "reap-retry",
            DecisionCode::ReapUnregistered => "reap-unregistered",
            DecisionCode::RefreshFailed => "refresh-failed",
            DecisionCode::SkipAssigned => "skip-assigned",
            DecisionCode::SkipDeleting => "skip-deleting",
            DecisionCode::SkipError => "skip-error",
            DecisionCode::SkipExisting => "skip-existing",
            DecisionCode::SkipLimit => "skip-limit",
            DecisionCode::SkipMaxPods => "skip-max-pods",
            DecisionCode::SkipReuse => "skip-reuse",
            DecisionCode::SkipTurn => "skip-turn",
            DecisionCode::WaitDelete => "wait-delete",
        }
    }

    /// The code spelled `text`, if there is one (a trace read back names codes as text).
    pub fn parse(text: &str) -> Option<DecisionCode> {
        DecisionCode::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
    }
}

#[cfg(test)]
mod tests {
    use super::DecisionCode;
    use std::collections::BTreeSet;

    #[test]
    fn every_code_has_its_own_spelling_and_reads_back() {
        let spellings: BTreeSet<&str> = DecisionCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            spellings.len(),
            DecisionCode::ALL.len(),
            "one spelling per code"
        );
        for code in DecisionCode::ALL {
            assert_eq!(DecisionCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(DecisionCode::parse("no-such-code"), None);
        // One meaning, one spelling: job-completion keeping a pod idle was `mark-idle` in
        // pr355 and `complete-idle` in safe; safe's server-ping noting idle-since was
        // `idle-mark`.
        for old in ["mark-idle", "idle-mark"] {
            assert_eq!(DecisionCode::parse(old), None, "{old}");
        }
    }

    #[test]
    fn all_lists_the_codes_in_spelling_order() {
        let spellings: Vec<&str> = DecisionCode::ALL.iter().map(|c| c.as_str()).collect();
        let mut sorted = spellings.clone();
        sorted.sort_unstable();
        assert_eq!(spellings, sorted);
    }
}
