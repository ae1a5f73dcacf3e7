//! What the caller knows about a run that records do not say: identity, verdict, timing,
//! violations and the reproduce command.

use crate::ablation::Ablations;
use crate::allocator::Policy;
use crate::check::{InvariantId, Kind, Violation};
use crate::leader::Variant;
use serde::Serialize;

/// Everything about a run besides the collector's rows. Filled by the run driver.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunInfo {
    /// Scenario name (the `name` key of the scenario file).
    pub scenario: String,
    /// The seed the run's randomness was drawn from.
    pub seed: u64,
    /// The allocator policy the run used (e.g. `upstream`, `safe`).
    pub policy: Policy,
    /// Leader-election variant, when the scenario has a `[leader]` section.
    pub variant: Option<Variant>,
    /// Binary version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// `"pass"` or `"fail"`.
    pub verdict: String,
    /// `None`, `"safety"`, `"liveness"` or `"both"` (see [`classify`]).
    pub failure_class: Option<String>,
    /// Hex SHA-256 of the trace.
    pub fingerprint: String,
    /// Records processed.
    pub events: u64,
    /// Simulated time at the end of the run.
    pub sim_ms: u64,
    /// Wall-clock seconds the run took (measured by the caller, outside the simulation).
    pub wall_s: f64,
    /// The exact command that reproduces this run.
    pub reproduce: String,
    /// Violations that make the run fail.
    pub violations: Vec<Violation>,
    /// Violations outside the fault budget: reported, labelled expected, not failures.
    pub expected_violations: Vec<Violation>,
    /// Coverage of `sometimes` invariants: (id, whether it happened).
    pub sometimes: Vec<(InvariantId, bool)>,
    /// Invariants not judged because the policy lacks the setting they bound: (id, why).
    /// The report adds the measured figure (`idle-timeout`: idle pod-seconds).
    pub not_applicable: Vec<(InvariantId, String)>,
    /// What the swarm drew for this seed (empty without swarm).
    pub drawn: Vec<String>,
    /// The scenario's `max_job_wait` bound.
    pub max_job_wait_ms: u64,
    /// Rules or fixes switched off (`--ablate`); absent from `summary.json` when empty.
    #[serde(skip_serializing_if = "Ablations::is_empty")]
    pub ablations: Ablations,
}

impl RunInfo {
    /// A leader-election run (the scenario has `[leader]`): reports name its variant and
    /// leader metrics instead of the allocator policy and elastic-agent metrics.
    pub(crate) fn is_leader_run(&self) -> bool {
        self.variant.is_some()
    }
}

/// Verdict and failure class for a run's failing violations: `("pass", None)` when there are
/// none; otherwise `"fail"` with `"safety"` (only `always` invariants broke), `"liveness"`
/// (only `eventually`/required `sometimes`) or `"both"`.
pub(crate) fn classify(violations: &[Violation]) -> (&'static str, Option<&'static str>) {
    let safety = violations
        .iter()
        .any(|violation| violation.kind == Kind::Always);
    let liveness = violations
        .iter()
        .any(|violation| violation.kind != Kind::Always);
    match (safety, liveness) {
        (false, false) => ("pass", None),
        (true, false) => ("fail", Some("safety")),
        (false, true) => ("fail", Some("liveness")),
        (true, true) => ("fail", Some("both")),
    }
}
