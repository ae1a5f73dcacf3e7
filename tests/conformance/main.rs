//! Conformance: the real plugin's own unit tests, ported to the allocator interface.
//!
//! One module per real test class, one Rust test per real test, named after it (snake case).
//! Every test opens with a comment naming its origin — repository, file, test and version —
//! and what it asserts. Each case runs against every policy it applies to; where `safe`
//! deliberately differs, the test asserts `safe`'s documented outcome and says why
//! (`docs/policies.md`, `docs/fidelity.md`).
//!
//! Versions ported:
//! * master: gocd/kubernetes-elastic-agents `master` at 8128178;
//! * PR #355: brandonvin/kubernetes-elastic-agents branch `add-option-to-enable-agent-reuse`
//!   at 816a2cc (`refs/pull/355/head` of the upstream repository).
//!
//! All cases drive the allocator through `elasticsim::allocator::testkit`.

mod job_completion_request_executor_test;
mod kit;
mod kubernetes_agent_instances_test;
mod server_ping_request_executor_test;
mod should_assign_work_request_executor_test;
mod side_by_side;
