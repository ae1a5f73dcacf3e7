//! Conformance: the real projects' own tests, ported: the plugin's unit tests to the allocator
//! interface (the modules named after a real test class), and client-go's and agentk's
//! leader-election tests to the leader model (`leader`, whose file names what it ports).
//!
//! One of the four test binaries, one per axis (`docs/architecture.md`, "Tests"): `commands`,
//! `fidelity`, `conformance` (this one) and `claims`.
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
//! All cases drive the allocator through `elasticsim::testkit`, whose cluster is the
//! simulator's own API server and kubelets (`kube::KubeApi`): a deleted pod whose container
//! runs stays listed, Terminating, for its grace period, as in Kubernetes.
//!
//! Real tests of the ported classes left out, each with its reason (master 8128178):
//! * `KubernetesAgentInstancesIntegrationTest`:
//!   `shouldCreateKubernetesPodWithContainerSpecification`, `…WithPrivilegedMod`,
//!   `…WithResourcesLimitSpecificationOnGoCDAgentContainer` — the model's pod has no
//!   container spec (pull policy, security context, limits), which no policy reads;
//!   `…WithTimeStamp` — the creation timestamp is set by the API server, not the plugin;
//!   the seven `usingPodYamlConfigurations_…` and seven `usingRemoteFile_…` tests — the
//!   model writes only the `properties` pod spec (the YAML and remote-file specs add the
//!   user's own labels, annotations, containers and env, which no policy reads);
//!   `…ContainingEnvironmentVariables` is ported for the auto-register variables only (the
//!   profile's `Environment` variables `ENV1`/`ENV2` are not modelled).
//! * `CreateAgentRequestExecutorTest`: both tests ported; their console-log lines are not
//!   modelled (the server's job console), the decisions stand for them.
//! * `KubernetesAgentInstancesTest`: every test ported (the three
//!   `…AndCacheCreatedInstance` tests differ only in `PodSpecType`, which changes the pod
//!   body, not a decision).

mod create_agent_request_executor_test;
mod job_completion_request_executor_test;
mod kit;
mod kubernetes_agent_instances_integration_test;
mod kubernetes_agent_instances_test;
mod leader;
mod server_ping_request_executor_test;
mod should_assign_work_request_executor_test;
mod side_by_side;
