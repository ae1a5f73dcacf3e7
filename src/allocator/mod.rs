//! The elastic-agent allocator: the plugin's decision logic as a pure state machine.
//!
//! This module is written to be read on its own, without the simulator. It imports nothing
//! from `crate::engine`, `crate::kube`, `crate::gocd` or `crate::world`; it speaks
//!
//! * the elastic-agent extension v5 messages ([`messages`]) that the GoCD server sends it,
//! * the plugin's synchronous callbacks into the server ([`ServerApi`]: list, disable and
//!   delete agents), which the real server serves in-process,
//! * Kubernetes API calls ([`crate::resources::KubeRequest`]), which it *issues* and whose
//!   answers come back later through [`Allocator::handle_kube`], so that handlers interleave
//!   exactly as the real plugin's threads do.
//!
//! Three policies live side by side ([`Policy`]): `upstream` (the plugin's master branch),
//! `pr355` (the agent-reuse pull request as proposed, defects included) and `safe` (reuse
//! that keeps every invariant). `docs/policies.md` describes them.
//!
//! Call order, for whoever drives an allocator:
//! 1. `handle_request` for every create-agent, job-completion and server-ping; the request is
//!    finished when its id appears in [`Outbox::finished`] (the server's thread is busy until
//!    then);
//! 2. `handle_kube` with the result of every call in [`Outbox::calls`], exactly once each;
//! 3. `should_assign_work` synchronously, inside the agent's get-work.

mod decision_code;
pub(crate) mod declaration;
pub(crate) mod messages;
pub mod pod_spec;
pub(crate) mod settings;

mod hash;
mod instances;
mod plugin_core;
mod plugin_ping;
mod pr355;
mod refresh;
mod safe;
mod upstream;

pub use decision_code::DecisionCode;
pub(crate) use declaration::{Declaration, RequestKind};
/// What docs/review.md's policy recipe (`declaration/tests/recipe.rs`) names besides.
#[cfg(test)]
pub(crate) use declaration::{DeclaredCode, Intent};
pub(crate) use hash::{ConfigHashMemo, pr355_config_hash};
pub(crate) use messages::AgentList;
pub use messages::{
    AgentMetadata, AgentState, BuildState, ConfigState, CreateAgentRequest, JobCompletionRequest,
    JobIdentifier, ServerPingRequest, ShouldAssignWorkRequest,
};
pub(crate) use safe::SAFE_ABLATIONS;
pub use settings::ClusterProfile;

use crate::resources::{KubeRequest, KubeResult, StringMap};
use std::sync::Arc;

/// Which allocator runs inside the plugin. The one list of policies: the command line
/// (`clap::ValueEnum`), the scenario parser and the plots take it from here.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// The plugin's master branch: one pod per job, no reuse.
    Upstream,
    /// Agent reuse as proposed in gocd/kubernetes-elastic-agents#355, defects included.
    Pr355,
    /// Our allocator: reuse that keeps every invariant.
    Safe,
}

impl Policy {
    /// Every policy, in the order reports list them.
    pub const ALL: [Policy; 3] = [Policy::Upstream, Policy::Pr355, Policy::Safe];

    /// The names of [`Policy::ALL`], in its order.
    pub(crate) const NAMES: [&'static str; 3] = [
        Policy::ALL[0].name(),
        Policy::ALL[1].name(),
        Policy::ALL[2].name(),
    ];

    /// The name used in scenarios, flags and report paths.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Upstream => "upstream",
            Policy::Pr355 => "pr355",
            Policy::Safe => "safe",
        }
    }

    /// Whether the policy enforces the cluster profile's idle timeout on reusable pods. PR
    /// #355 has none (brandonvin/kubernetes-elastic-agents `add-option-to-enable-agent-reuse`,
    /// `ServerPingRequestExecutor`: an idle pod goes only when it is older than the
    /// auto-register timeout since its creation), so `idle-timeout` does not apply to it.
    pub(crate) fn has_idle_timeout(self) -> bool {
        match self {
            Policy::Upstream | Policy::Pr355 => false,
            Policy::Safe => true,
        }
    }

    /// What the policy declares about its decisions: codes, requests, intended differences.
    pub(crate) fn declaration(self) -> &'static Declaration {
        match self {
            Policy::Upstream => &upstream::UPSTREAM,
            Policy::Pr355 => &pr355::PR355,
            Policy::Safe => &safe::SAFE,
        }
    }

    /// Parse a policy name; `None` for anything else.
    pub(crate) fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Identifies one server→plugin request (one busy server thread), chosen by the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// Identifies one Kubernetes call, chosen by the allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

/// A server→plugin request that may take Kubernetes round trips to finish.
#[derive(Clone, Debug, PartialEq)]
pub enum PluginRequest {
    /// The server needs an agent for a job that has none (`create-agent`).
    CreateAgent(CreateAgentRequest),
    /// A job an elastic agent ran has completed (`job-completion`).
    JobCompletion(JobCompletionRequest),
    /// The server's periodic call to let the plugin clean up (`server-ping`).
    ServerPing(ServerPingRequest),
}

/// The processor API the plugin calls back into the server with
/// (`go.processor.elastic-agents.*`). Served synchronously, in-process, as in the real server.
pub trait ServerApi {
    /// Every elastic agent of this plugin, including Missing and LostContact ones.
    fn list_agents(&mut self) -> Vec<AgentMetadata>;
    /// The same agents as a shared listing: the same answer as `list_agents`, handed over
    /// in O(1) by a server that keeps its listing up to date, and comparable with an earlier
    /// listing (`Listing::changed_names`) so a policy can look at the agents that changed
    /// only. The default builds it from `list_agents` (every agent then counts as changed).
    fn agent_listing(&mut self) -> AgentList {
        self.list_agents().into_iter().map(Arc::new).collect()
    }
    /// Disable agents; unknown ids are skipped.
    fn disable_agents(&mut self, agent_ids: &[String]);
    /// Delete agents (soft delete, no validation: works even while Building).
    fn delete_agents(&mut self, agent_ids: &[String]);
}

/// Something the allocator decided, for the trace and for violation reports ("what the
/// allocator said each time it was asked").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The job the decision is about, if any (`job_identifier.job_id`).
    pub job_id: Option<u64>,
    /// The pod the decision is about, if any.
    pub pod: Option<String>,
    /// A stable short code (`create`, `skip-limit`, `claim`, `assign-yes`, `reap-idle`, …).
    pub code: DecisionCode,
    /// One sentence, like the plugin's console log line.
    pub text: String,
}

/// Everything that can happen to an allocator: the one input of [`Allocator::handle`].
#[derive(Clone, Debug)]
pub enum AllocatorInput<'a> {
    /// A create-agent, job-completion or server-ping request arrives on server thread `id`.
    Request {
        /// The server thread the request occupies until the allocator finishes it.
        id: RequestId,
        /// The request.
        request: PluginRequest,
    },
    /// The answer to one of this allocator's Kubernetes calls.
    Kube {
        /// The call, as the allocator numbered it.
        call: CallId,
        /// What the API server answered.
        result: KubeResult,
    },
    /// Inside an agent's get-work, before the first should-assign-work naming this cluster
    /// profile: may it be answered now? The answer goes to [`Outbox::answer`].
    ReadyToAssign {
        /// The get-work, held under this id if the answer is no.
        id: RequestId,
        /// The cluster profile the should-assign-work will name.
        cluster_profile_properties: &'a StringMap,
    },
    /// should-assign-work, answered synchronously in [`Outbox::answer`].
    ShouldAssignWork(&'a ShouldAssignWorkRequest),
}

/// Everything an allocator asks of the world in one step. Drained by the caller after every
/// call into the allocator.
#[derive(Debug, Default)]
pub struct Outbox {
    /// The synchronous answer of a `ReadyToAssign` or `ShouldAssignWork` input.
    pub answer: Option<bool>,
    /// Kubernetes calls to issue; answer each with `handle_kube`.
    pub calls: Vec<(CallId, KubeRequest)>,
    /// Requests that are done (their server thread is free again).
    pub finished: Vec<RequestId>,
    /// Decisions, in order.
    pub decisions: Vec<Decision>,
}

impl Outbox {
    /// True when nothing is waiting to be drained.
    pub fn is_empty(&self) -> bool {
        self.answer.is_none()
            && self.calls.is_empty()
            && self.finished.is_empty()
            && self.decisions.is_empty()
    }

    /// Record a decision.
    pub(crate) fn decide(
        &mut self,
        job_id: Option<u64>,
        pod: Option<&str>,
        code: DecisionCode,
        text: String,
    ) {
        debug_assert!(!text.is_empty(), "a decision says why ({code:?})");
        debug_assert!(
            pod.is_none_or(|pod| !pod.is_empty()),
            "a decision's pod has a name"
        );
        self.decisions.push(Decision {
            job_id,
            pod: pod.map(str::to_owned),
            code,
            text,
        });
    }
}

/// The plugin's decision logic. One instance lives as long as one server process: a server
/// crash drops it, and the restarted server builds a new one (nothing is persisted, as in the
/// real plugin).
pub trait Allocator {
    /// Which policy this is.
    fn policy(&self) -> Policy;

    /// What the policy declares about its decisions (`elasticsim review` reads it).
    fn declaration(&self) -> &'static Declaration {
        self.policy().declaration()
    }

    /// The one entry point, in the component shape every model has (`docs/architecture.md`,
    /// "One component shape"): one input at `now_ms`, what the allocator asks for in `out`.
    /// Unlike the other components it gets the server's processor API, `server`, because
    /// that API is synchronous in GoCD: the plugin reads back what it just wrote within one
    /// call (upstream's server-ping disables agents, then lists them to reap the disabled
    /// ones). It has no timers of its own: it acts when asked.
    fn handle(
        &mut self,
        now_ms: u64,
        input: AllocatorInput<'_>,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        match input {
            AllocatorInput::Request { id, request } => {
                self.handle_request(now_ms, id, request, server, out);
            }
            AllocatorInput::Kube { call, result } => {
                self.handle_kube(now_ms, call, result, server, out);
            }
            AllocatorInput::ReadyToAssign {
                id,
                cluster_profile_properties,
            } => {
                debug_assert!(out.answer.is_none(), "one synchronous answer per input");
                out.answer =
                    Some(self.ready_to_assign(now_ms, id, cluster_profile_properties, out));
            }
            AllocatorInput::ShouldAssignWork(request) => {
                debug_assert!(out.answer.is_none(), "one synchronous answer per input");
                out.answer = Some(self.should_assign_work(now_ms, request, server, out));
            }
        }
    }

    /// A create-agent, job-completion or server-ping request arrives.
    fn handle_request(
        &mut self,
        now_ms: u64,
        id: RequestId,
        request: PluginRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    );

    /// The answer to one of this allocator's Kubernetes calls.
    fn handle_kube(
        &mut self,
        now_ms: u64,
        call: CallId,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    );

    /// Asked by the server inside an agent's get-work before the first should-assign-work
    /// that names this cluster profile. True when should-assign-work can be answered now.
    /// When the real plugin would list pods first (`getAgentInstancesFor` on the first use of
    /// a cluster profile in this process, a synchronous list inside the server's get-work),
    /// the allocator issues that listing, answers false, and finishes request `id` once the
    /// listing is applied: the server holds the get-work until then and starts it again.
    /// Policies that always answer from what they hold keep the default, true.
    fn ready_to_assign(
        &mut self,
        _now_ms: u64,
        _id: RequestId,
        _cluster_profile_properties: &StringMap,
        _out: &mut Outbox,
    ) -> bool {
        true
    }

    /// should-assign-work, answered synchronously inside an agent's get-work.
    fn should_assign_work(
        &mut self,
        now_ms: u64,
        request: &ShouldAssignWorkRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) -> bool;
}

impl<T: Allocator + ?Sized> Allocator for Box<T> {
    fn policy(&self) -> Policy {
        (**self).policy()
    }

    fn handle_request(
        &mut self,
        now_ms: u64,
        id: RequestId,
        request: PluginRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        (**self).handle_request(now_ms, id, request, server, out);
    }

    fn handle_kube(
        &mut self,
        now_ms: u64,
        call: CallId,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        (**self).handle_kube(now_ms, call, result, server, out);
    }

    fn ready_to_assign(
        &mut self,
        now_ms: u64,
        id: RequestId,
        cluster_profile_properties: &StringMap,
        out: &mut Outbox,
    ) -> bool {
        (**self).ready_to_assign(now_ms, id, cluster_profile_properties, out)
    }

    fn should_assign_work(
        &mut self,
        now_ms: u64,
        request: &ShouldAssignWorkRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) -> bool {
        (**self).should_assign_work(now_ms, request, server, out)
    }
}

/// Build an allocator for one server process. `process_id` is drawn by the caller once per
/// process start: pod names embed it (so names never repeat across restarts), and `pr355`
/// uses it where the JVM's per-process randomness shows (`Map.of` iteration order).
pub(crate) fn new_allocator(policy: Policy, process_id: u64) -> Box<dyn Allocator> {
    match policy {
        Policy::Upstream => Box::new(upstream::Upstream::new(process_id)),
        Policy::Pr355 => Box::new(pr355::Pr355::new(process_id)),
        Policy::Safe => Box::new(safe::Safe::new(process_id)),
    }
}

/// [`new_allocator`] with named rules switched off: only `safe` has rules to switch
/// ([`SAFE_ABLATIONS`]); the other policies ignore `ablations`.
pub(crate) fn new_allocator_ablated(
    policy: Policy,
    process_id: u64,
    ablations: &crate::ablation::Ablations,
) -> Box<dyn Allocator> {
    match policy {
        Policy::Safe if !ablations.is_empty() => {
            Box::new(safe::Safe::with_ablations(process_id, ablations.clone()))
        }
        Policy::Upstream | Policy::Pr355 | Policy::Safe => new_allocator(policy, process_id),
    }
}

#[cfg(test)]
mod tests {
    use super::Policy;
    use clap::ValueEnum;

    #[test]
    fn the_command_line_lists_every_policy_by_its_name_in_order() {
        let listed: Vec<Policy> = Policy::value_variants().to_vec();
        assert_eq!(
            listed,
            Policy::ALL,
            "ALL is every variant, in declaration order"
        );
        for policy in Policy::ALL {
            let value = policy.to_possible_value().expect("no policy is hidden");
            assert_eq!(value.get_name(), policy.name());
            assert_eq!(Policy::from_name(policy.name()), Some(policy));
            let json = serde_json::to_string(&policy).expect("a name");
            assert_eq!(
                json,
                format!("{:?}", policy.name()),
                "serde names it as flags do"
            );
        }
        let names: Vec<&str> = Policy::ALL.iter().map(|policy| policy.name()).collect();
        assert_eq!(Policy::NAMES.to_vec(), names);
    }
}
