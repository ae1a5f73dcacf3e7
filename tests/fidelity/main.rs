//! Fidelity: the models of the GoCD server, the plugin and Kubernetes behave as the real code
//! does (`docs/fidelity.md` names the code each behaviour follows), each shown on a small
//! scenario whose records are kept.
//!
//! One of the four test binaries, one per axis (`docs/architecture.md`, "Tests"): `commands`,
//! `fidelity` (this one), `conformance` and `claims`.

#[path = "../common/mod.rs"]
mod common;

/// The go-agent's boot: the pod runs, no agent is registered, and everything that waits for a
/// registration sees it.
mod agent_boot;
/// `cluster_profile_edit`: old pods become foreign to `pr355` and, for pod-shaping fields, to
/// `safe`.
mod cluster_profile_edit;
/// Server crashes and agent restarts: builds kept, auto-register keys lost, registration
/// refused.
mod faults;
/// Terminating pods, lost and replaced nodes, cancelled builds, as Kubernetes does them.
mod kube;
/// The server's, the plugin's and Kubernetes' timings.
mod timings;
/// Environments belong to jobs: one profile serves two environments, and a job goes only to
/// an agent of its own.
mod two_environments;
