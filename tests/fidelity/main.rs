//! Fidelity: the models of the GoCD server, the plugin and Kubernetes behave as the real code
//! does (`docs/fidelity.md` names the code each behaviour follows), each shown on a small
//! scenario whose records are kept.
//!
//! One of the four test binaries, one per axis (`docs/architecture.md`, "Tests"): `commands`,
//! `fidelity` (this one), `conformance` and `claims`.

#[path = "../common/mod.rs"]
mod common;

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
