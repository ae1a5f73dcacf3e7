//! What `safe` declares about its decisions (see `allocator::declaration`).

use super::super::DecisionCode;
use super::super::declaration::{Declaration, DeclaredCode, Intent, RequestKind, code};

const CREATE_CODES: &[DeclaredCode] = &[
    code(
        DecisionCode::Create,
        RequestKind::CreateAgent,
        "no pod can take the job: create one",
    ),
    code(
        DecisionCode::SkipLimit,
        RequestKind::CreateAgent,
        "pending_pods_count pods are not Running yet: no pod; the server resends later",
    ),
    code(
        DecisionCode::SkipTurn,
        RequestKind::CreateAgent,
        "an older job the limit turned away takes the room: its pod is made instead",
    ),
    code(
        DecisionCode::SkipMaxPods,
        RequestKind::CreateAgent,
        "the profile's pod count is at its maximum: no pod",
    ),
    code(
        DecisionCode::SkipExisting,
        RequestKind::CreateAgent,
        "a pod for the job exists: no second pod",
    ),
    code(
        DecisionCode::SkipAssigned,
        RequestKind::CreateAgent,
        "the job already has an agent: no pod",
    ),
    code(
        DecisionCode::SkipDeleting,
        RequestKind::CreateAgent,
        "the job's pod is being deleted: no pod now",
    ),
    code(
        DecisionCode::SkipError,
        RequestKind::CreateAgent,
        "the pod listing failed: no pod; the server resends later",
    ),
    code(
        DecisionCode::WaitDelete,
        RequestKind::CreateAgent,
        "the job's pod is being deleted: waiting for it",
    ),
    code(
        DecisionCode::Claim,
        RequestKind::CreateAgent,
        "[reuse] an idle, reusable pod of the same config is claimed for the job",
    ),
    code(
        DecisionCode::ClaimLost,
        RequestKind::Step,
        "[reuse] the claim lost a race on the pod's resourceVersion",
    ),
    code(
        DecisionCode::ClaimFailed,
        RequestKind::Step,
        "[reuse] the claim's write failed",
    ),
    code(
        DecisionCode::CreateFailed,
        RequestKind::Step,
        "the API server refused the pod create",
    ),
];

const ASSIGN_CODES: &[DeclaredCode] = &[
    code(
        DecisionCode::AssignYes,
        RequestKind::ShouldAssignWork,
        "the pod was created or claimed for the job, or is idle, reusable and config-equal",
    ),
    code(
        DecisionCode::AssignNo,
        RequestKind::ShouldAssignWork,
        "the pod cannot take the job; nothing else changes",
    ),
    code(
        DecisionCode::CompleteIdle,
        RequestKind::JobCompletion,
        "[reuse] the job finished: the pod is kept idle for the next job",
    ),
    code(
        DecisionCode::CompleteDelete,
        RequestKind::JobCompletion,
        "the job finished: disable the agent, delete its pod and the agent",
    ),
    code(
        DecisionCode::CompleteStale,
        RequestKind::JobCompletion,
        "an earlier job of a pod that runs another job now finished: nothing changes",
    ),
    code(
        DecisionCode::DeleteFailed,
        RequestKind::Step,
        "a pod delete failed",
    ),
];

const PING_CODES: &[DeclaredCode] = &[
    code(
        DecisionCode::PingListFailed,
        RequestKind::ServerPing,
        "the pod listing failed: nothing reaped this ping",
    ),
    code(
        DecisionCode::IdleSince,
        RequestKind::ServerPing,
        "[reuse] a pod became idle and reusable",
    ),
    code(
        DecisionCode::ReapMissing,
        RequestKind::ServerPing,
        "an agent without a pod is deleted",
    ),
    code(
        DecisionCode::ReapRetry,
        RequestKind::ServerPing,
        "a pod being deleted: delete retried",
    ),
    code(
        DecisionCode::ReapFailed,
        RequestKind::ServerPing,
        "a Failed or Succeeded pod is deleted",
    ),
    code(
        DecisionCode::ReapRestarted,
        RequestKind::ServerPing,
        "a pod whose container restarted is deleted",
    ),
    code(
        DecisionCode::ReapOrphan,
        RequestKind::ServerPing,
        "a pod of an earlier server process that never registered is deleted",
    ),
    code(
        DecisionCode::ReapUnregistered,
        RequestKind::ServerPing,
        "a pod did not register within auto_register_timeout: deleted",
    ),
    code(
        DecisionCode::ReapDisabled,
        RequestKind::ServerPing,
        "a disabled agent's pod is deleted",
    ),
    code(
        DecisionCode::ReapLost,
        RequestKind::ServerPing,
        "a LostContact agent's pod is deleted",
    ),
    code(
        DecisionCode::ReapIdle,
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
            instead_of: &[DecisionCode::Create],
            code: DecisionCode::Claim,
            reuse: Some(true),
            why: "agent reuse: an idle pod of the same config is claimed, no new pod",
        },
        Intent {
            instead_of: &[DecisionCode::Create, DecisionCode::SkipLimit],
            code: DecisionCode::SkipAssigned,
            reuse: Some(true),
            why: "agent reuse: the job was given to an idle pod before its own was made",
        },
        Intent {
            instead_of: &[DecisionCode::AssignNo],
            code: DecisionCode::AssignYes,
            reuse: Some(true),
            why: "agent reuse: an idle, config-equal pod takes the job",
        },
        Intent {
            instead_of: &[DecisionCode::CompleteDelete],
            code: DecisionCode::CompleteIdle,
            reuse: Some(true),
            why: "agent reuse: a finished pod is kept for the next job",
        },
    ],
};
