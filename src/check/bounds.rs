//! The numbers the elastic-agent monitors judge against (the run takes them from the
//! scenario, so the monitors do not depend on its format).

use super::capacity::CapacityBounds;
use super::late_kill::LateKillBounds;
use super::wait_budget::WaitBounds;

/// Bounds for the elastic-agent monitors (`docs/invariants.md` names: ART, PING, IDLE, LOST).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// `[invariants] max_job_wait`: a scheduled job instance must be assigned within this.
    pub max_job_wait_ms: u64,
    /// `[plugin] pending_pods_count`: pods not Running when the allocator creates one must
    /// number fewer than this.
    pub pending_pods_count: u32,
    /// ART: a pod must register (or be deleted) within ART + PING of its creation.
    pub auto_register_timeout_ms: u64,
    /// PING: the server's ping period, the slack every plugin-side timeout is allowed.
    pub server_ping_interval_ms: u64,
    /// IDLE: an idle reusable pod lives at least this long, and at most IDLE + PING.
    pub idle_timeout_ms: u64,
    /// The time a ping's own Kubernetes calls may take (`cluster_request_timeout`): a
    /// delete decided at the last ping before a deadline lands that much later.
    pub call_slack_ms: u64,
    /// LOST: the server's agent connection timeout (kept for monitors that judge lost agents).
    pub agent_connection_timeout_ms: u64,
    /// True only when the policy reuses agents and reuse is switched on (the world decides).
    /// It turns `idle-timeout` and `reuse-happens` on and `one-pod-per-job` off.
    pub reuse_enabled: bool,
    /// True when the policy enforces an idle timeout (`idle-timeout` is judged only then;
    /// otherwise the run reports it not applicable with the idle pod-seconds it measured).
    pub idle_timeout_enforced: bool,
    /// The cluster's node slots and how long a lost node takes to be replaced: the capacity
    /// fault budget.
    pub capacity: CapacityBounds,
    /// The server's resend period: the job-wait budgets.
    pub(crate) wait: WaitBounds,
    /// Build times and server timeouts: the late-kill budget of `all-jobs-complete`.
    pub(crate) late_kill: LateKillBounds,
}

impl Bounds {
    /// ART + PING (+ the ping's call time): how long a pod may stay unregistered.
    pub(crate) fn registration_deadline_ms(&self) -> u64 {
        self.auto_register_timeout_ms
            .saturating_add(self.server_ping_interval_ms)
            .saturating_add(self.call_slack_ms)
    }

    /// IDLE + PING (+ the ping's call time): how long an idle reusable pod may live.
    pub(crate) fn idle_deadline_ms(&self) -> u64 {
        self.idle_timeout_ms
            .saturating_add(self.server_ping_interval_ms)
            .saturating_add(self.call_slack_ms)
    }
}
