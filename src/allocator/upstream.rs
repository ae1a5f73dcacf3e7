//! Policy `upstream`: the plugin's master branch, one pod per job, no reuse (`docs/policies.md`).
//!
//! * create-agent, one at a time per cluster profile: list pods, then create iff fewer than
//!   `pending_pods_count` listed pods are not Running and no listed pod carries this job id;
//! * should-assign-work: true iff the pod was created for that job;
//! * job-completion: disable the agent, delete the pod, delete the agent;
//! * server-ping: refresh, then the cleanup in `plugin_ping`.

use super::DecisionCode;
use super::declaration::{Declaration, DeclaredCode, RequestKind, code};
use super::instances::{PluginAgentState, PodMap, PodState};
use super::plugin_core::{CORE_CODES, CompletionAction, CreateContext, Plugin, Rules};
use super::plugin_ping::PING_CODES;
use super::{
    ClusterProfile, CreateAgentRequest, JobCompletionRequest, Outbox, Policy,
    ShouldAssignWorkRequest, pod_spec,
};
use crate::resources::PodTemplate;

/// The master branch's decisions.
pub(super) struct UpstreamRules;

/// The master branch's plugin.
pub(super) type Upstream = Plugin<UpstreamRules>;

impl Upstream {
    pub(super) fn new(process_id: u64) -> Self {
        Plugin::with_rules(UpstreamRules, process_id)
    }
}

impl Rules for UpstreamRules {
    const POLICY: Policy = Policy::Upstream;
    const REFRESH_BEFORE_CREATE: bool = true;

    fn decide_create(&self, context: &CreateContext<'_>, out: &mut Outbox) -> bool {
        let job_id = context.request.job_identifier.job_id;
        let limit = context.profile.pending_pods_count;
        let pending = context
            .pods
            .values()
            .filter(|pod| pod.pod_state == PodState::Pending);
        let pending_count = pending.count();
        if pending_count >= limit as usize {
            let text = format!(
                "pod limit reached: {pending_count} pods not Running (pending_pods_count = \
                 {limit}); not creating, the server resends create-agent when the job starves"
            );
            out.decide(Some(job_id), None, DecisionCode::SkipLimit, text);
            return false;
        }
        if let Some(existing) = context.pods.values().find(|pod| pod.job_id == Some(job_id)) {
            let text = format!(
                "pod {} already exists for job {job_id}: not creating another",
                existing.name
            );
            out.decide(
                Some(job_id),
                Some(&existing.name),
                DecisionCode::SkipExisting,
                text,
            );
            return false;
        }
        let name = context.next_pod_name;
        debug_assert!(
            !context.pods.contains_key(name),
            "the next pod name {name} is not in use"
        );
        debug_assert!(
            pending_count < limit as usize,
            "a create stays under the pod limit"
        );
        let text = format!(
            "{pending_count} of {limit} allowed pods not Running and no pod for job {job_id}: \
             creating pod {name}"
        );
        out.decide(Some(job_id), Some(name), DecisionCode::Create, text);
        true
    }

    fn pod_template(
        &self,
        name: &str,
        request: &CreateAgentRequest,
        profile: &ClusterProfile,
        _process_id: u64,
    ) -> PodTemplate {
        pod_spec::pod_template(name, request, profile)
    }

    fn created_agent_state(&self) -> PluginAgentState {
        PluginAgentState::Unknown
    }

    fn should_assign_work(
        &self,
        pods: &mut PodMap,
        request: &ShouldAssignWorkRequest,
        _process_id: u64,
        out: &mut Outbox,
    ) -> bool {
        let agent_id = &*request.agent.agent_id;
        let job_id = request.job_identifier.job_id;
        let (answer, code, text) = match pods.get(agent_id) {
            None => (
                false,
                DecisionCode::AssignNo,
                format!("pod {agent_id} is not in the plugin's map"),
            ),
            Some(pod) if pod.job_id == Some(job_id) => (
                true,
                DecisionCode::AssignYes,
                format!("pod {agent_id} was created for job {job_id}"),
            ),
            Some(pod) => {
                let own = pod
                    .job_id
                    .map_or("no job".to_owned(), |id| format!("job {id}"));
                (
                    false,
                    DecisionCode::AssignNo,
                    format!("pod {agent_id} was created for {own}, not {job_id}"),
                )
            }
        };
        debug_assert_eq!(
            answer,
            code == DecisionCode::AssignYes,
            "the decision recorded is the answer given"
        );
        out.decide(Some(job_id), Some(agent_id), code, text);
        answer
    }

    fn job_completion(
        &self,
        _pods: &mut PodMap,
        _request: &JobCompletionRequest,
        _out: &mut Outbox,
    ) -> CompletionAction {
        CompletionAction::Terminate
    }
}

/// The codes `upstream` records itself (see [`UPSTREAM`] for the shared ones).
const UPSTREAM_CODES: &[DeclaredCode] = &[
    code(
        DecisionCode::Create,
        RequestKind::CreateAgent,
        "fewer than pending_pods_count pods not Running and none for the job: create one",
    ),
    code(
        DecisionCode::SkipLimit,
        RequestKind::CreateAgent,
        "pending_pods_count pods are not Running yet: no pod; the server resends later",
    ),
    code(
        DecisionCode::SkipExisting,
        RequestKind::CreateAgent,
        "a pod labelled for the job exists: no second pod",
    ),
];

/// What `upstream` declares about its decisions: the master branch, the reference every
/// candidate is reviewed against, so it intends no difference.
pub(super) const UPSTREAM: Declaration = Declaration {
    codes: &[UPSTREAM_CODES, CORE_CODES, PING_CODES],
    assign_rule: "true iff the pod was created for that job (its Elastic-Agent-Job-Id label)",
    intents: &[],
};

#[cfg(test)]
mod tests;
