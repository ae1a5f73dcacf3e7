//! What `safe` declares about its decisions (see `allocator::declaration`).

use super::super::declaration::{DecisionCode, Declaration, Intent, RequestKind, code};

const CREATE_CODES: &[DecisionCode] = &[
    code(
        "create",
        RequestKind::CreateAgent,
        "no pod can take the job: create one",
    ),
    code(
        "skip-limit",
        RequestKind::CreateAgent,
        "pending_pods_count pods are not Running yet: no pod; the server resends later",
    ),
    code(
        "skip-max-pods",
        RequestKind::CreateAgent,
        "the profile's pod count is at its maximum: no pod",
    ),
    code(
        "skip-existing",
        RequestKind::CreateAgent,
        "a pod for the job exists: no second pod",
    ),
    code(
        "skip-assigned",
        RequestKind::CreateAgent,
        "the job already has an agent: no pod",
    ),
    code(
        "skip-deleting",
        RequestKind::CreateAgent,
        "the job's pod is being deleted: no pod now",
    ),
    code(
        "skip-error",
        RequestKind::CreateAgent,
        "the pod listing failed: no pod; the server resends later",
    ),
    code(
        "wait-delete",
        RequestKind::CreateAgent,
        "the job's pod is being deleted: waiting for it",
    ),
    code(
        "claim",
        RequestKind::CreateAgent,
        "[reuse] an idle, reusable pod of the same config is claimed for the job",
    ),
    code(
        "claim-lost",
        RequestKind::Step,
        "[reuse] the claim lost a race on the pod's resourceVersion",
    ),
    code(
        "claim-failed",
        RequestKind::Step,
        "[reuse] the claim's write failed",
    ),
    code(
        "create-failed",
        RequestKind::Step,
        "the API server refused the pod create",
    ),
];

const ASSIGN_CODES: &[DecisionCode] = &[
    code(
        "assign-yes",
        RequestKind::ShouldAssignWork,
        "the pod was created or claimed for the job, or is idle, reusable and config-equal",
    ),
    code(
        "assign-no",
        RequestKind::ShouldAssignWork,
        "the pod cannot take the job; nothing else changes",
    ),
    code(
        "complete-idle",
        RequestKind::JobCompletion,
        "[reuse] the job finished: the pod is kept idle for the next job",
    ),
    code(
        "complete-delete",
        RequestKind::JobCompletion,
        "the job finished: disable the agent, delete its pod and the agent",
    ),
    code("delete-failed", RequestKind::Step, "a pod delete failed"),
];

const PING_CODES: &[DecisionCode] = &[
    code(
        "ping-list-failed",
        RequestKind::ServerPing,
        "the pod listing failed: nothing reaped this ping",
    ),
    code(
        "idle-mark",
        RequestKind::ServerPing,
        "[reuse] a pod became idle and reusable",
    ),
    code(
        "reap-missing",
        RequestKind::ServerPing,
        "an agent without a pod is deleted",
    ),
    code(
        "reap-retry",
        RequestKind::ServerPing,
        "a pod being deleted: delete retried",
    ),
    code(
        "reap-failed",
        RequestKind::ServerPing,
        "a Failed or Succeeded pod is deleted",
    ),
    code(
        "reap-restarted",
        RequestKind::ServerPing,
        "a pod whose container restarted is deleted",
    ),
    code(
        "reap-orphan",
        RequestKind::ServerPing,
        "a pod of an earlier server process that never registered is deleted",
    ),
    code(
        "reap-unregistered",
        RequestKind::ServerPing,
        "a pod did not register within auto_register_timeout: deleted",
    ),
    code(
        "reap-disabled",
        RequestKind::ServerPing,
        "a disabled agent's pod is deleted",
    ),
    code(
        "reap-lost",
        RequestKind::ServerPing,
        "a LostContact agent's pod is deleted",
    ),
    code(
        "reap-idle",
        RequestKind::ServerPing,
        "an agent idle past idle_timeout (since its last job) is retired",
    ),
];

/// What `safe` declares: reuse that keeps every invariant, so its intended differences from
/// the master branch all need reuse on.
pub(in crate::allocator) const SAFE: Declaration = Declaration {
    codes: &[CREATE_CODES, ASSIGN_CODES, PING_CODES],
    assign_rule: "recorded for every answer (assign-yes, assign-no)",
    intents: &[
        Intent {
            instead_of: &["create"],
            code: "claim",
            reuse: Some(true),
            why: "agent reuse: an idle pod of the same config is claimed, no new pod",
        },
        Intent {
            instead_of: &["create", "skip-limit"],
            code: "skip-assigned",
            reuse: Some(true),
            why: "agent reuse: the job was given to an idle pod before its own was made",
        },
        Intent {
            instead_of: &["assign-no"],
            code: "assign-yes",
            reuse: Some(true),
            why: "agent reuse: an idle, config-equal pod takes the job",
        },
        Intent {
            instead_of: &["complete-delete"],
            code: "complete-idle",
            reuse: Some(true),
            why: "agent reuse: a finished pod is kept for the next job",
        },
    ],
};
