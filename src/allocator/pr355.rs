//! Policy `pr355`: agent reuse as proposed in gocd/kubernetes-elastic-agents#355, defects
//! included (`docs/policies.md` lists them).
//!
//! * The pod map is refreshed only at server-ping (known pods keep their plugin-side agent
//!   state, new ones are `Unknown`) and on the first use of a cluster profile in a process
//!   (`getAgentInstancesFor`, shared with master in `plugin_core`): never before a create.
//! * create-agent, one at a time per cluster profile, without a refresh: skip when the map
//!   holds `pending_pods_count` pods in any phase; with reuse on, skip when any pod carries this
//!   job id or is Idle, Running and hash-equal; with reuse off, skip when any pod carries this
//!   job id.
//! * should-assign-work emulates `ConcurrentHashMap.compute` returning null: every `false`
//!   removes the pod from the map.
//! * job-completion with reuse on marks the pod Idle and keeps it; with reuse off, as master.

use super::DecisionCode;
use super::declaration::{Declaration, DeclaredCode, Intent, RequestKind, code};
use super::instances::{PluginAgentState, PodMap, PodState};
use super::plugin_core::{CORE_CODES, CompletionAction, CreateContext, Plugin, Rules};
use super::plugin_ping::PING_CODES;
use super::{
    ClusterProfile, CreateAgentRequest, JobCompletionRequest, Outbox, Policy,
    ShouldAssignWorkRequest, pod_spec, pr355_config_hash,
};
use crate::resources::PodTemplate;

/// The pull request's decisions.
pub(super) struct Pr355Rules;

/// The pull request's plugin.
pub(super) type Pr355 = Plugin<Pr355Rules>;

impl Pr355 {
    pub(super) fn new(process_id: u64) -> Self {
        Plugin::with_rules(Pr355Rules, process_id)
    }
}

fn reuse_enabled(cluster_profile_properties: &crate::resources::StringMap) -> bool {
    ClusterProfile::from_properties(cluster_profile_properties).enable_agent_reuse
}

impl Pr355Rules {
    /// The reuse branch of `requestCreateAgent`, after the size limit.
    fn decide_reuse(&self, context: &CreateContext<'_>, out: &mut Outbox) -> bool {
        let request = context.request;
        let job_id = request.job_identifier.job_id;
        let hash = pr355_config_hash(
            &request.elastic_agent_profile_properties,
            &request.cluster_profile_properties,
            context.process_id,
        );
        let eligible = context
            .pods
            .values()
            .filter(|pod| {
                let reusable = pod.config_hash.as_deref() == Some(hash.as_str())
                    && pod.agent_state == PluginAgentState::Idle
                    && pod.pod_state == PodState::Running;
                pod.job_id == Some(job_id) || reusable
            })
            .map(|pod| pod.name.as_str())
            .collect::<Vec<_>>();
        if let Some(first) = eligible.first() {
            let text = format!(
                "[reuse] found {} eligible pod(s) ({}) for job {job_id}: not creating a pod",
                eligible.len(),
                eligible.join(", ")
            );
            out.decide(Some(job_id), Some(first), DecisionCode::SkipReuse, text);
            return false;
        }
        let name = context.next_pod_name;
        debug_assert!(
            !context.pods.contains_key(name),
            "the next pod name {name} is not in use"
        );
        let text = format!(
            "[reuse] no pod labelled for job {job_id} and none Idle, Running and hash-equal: \
             creating pod {name}"
        );
        out.decide(Some(job_id), Some(name), DecisionCode::Create, text);
        true
    }
}

impl Rules for Pr355Rules {
    const POLICY: Policy = Policy::Pr355;
    const REFRESH_BEFORE_CREATE: bool = false;

    fn decide_create(&self, context: &CreateContext<'_>, out: &mut Outbox) -> bool {
        let job_id = context.request.job_identifier.job_id;
        let limit = context.profile.pending_pods_count;
        let known_count = context.pods.len();
        if known_count >= limit as usize {
            let text = format!(
                "maximum permissible limit reached: the plugin knows {known_count} pods (any \
                 phase, Running included) and pending_pods_count = {limit}; not creating"
            );
            out.decide(Some(job_id), None, DecisionCode::SkipLimit, text);
            return false;
        }
        if context.profile.enable_agent_reuse {
            debug_assert!(
                known_count < limit as usize,
                "reuse is decided under the pod limit"
            );
            return self.decide_reuse(context, out);
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
            known_count < limit as usize,
            "a create stays under the pod limit"
        );
        let text = format!(
            "{known_count} of {limit} allowed pods known and none for job {job_id}: creating \
             pod {name}"
        );
        out.decide(Some(job_id), Some(name), DecisionCode::Create, text);
        true
    }

    fn pod_template(
        &self,
        name: &str,
        request: &CreateAgentRequest,
        profile: &ClusterProfile,
        process_id: u64,
    ) -> PodTemplate {
        let mut template = pod_spec::pod_template(name, request, profile);
        let hash = pr355_config_hash(
            &request.elastic_agent_profile_properties,
            &request.cluster_profile_properties,
            process_id,
        );
        template
            .annotations
            .insert(pod_spec::keys::CONFIG_HASH.to_owned(), hash);
        template
    }

    fn created_agent_state(&self) -> PluginAgentState {
        PluginAgentState::Building
    }

    fn should_assign_work(
        &self,
        pods: &mut PodMap,
        request: &ShouldAssignWorkRequest,
        process_id: u64,
        out: &mut Outbox,
    ) -> bool {
        let agent_id = &*request.agent.agent_id;
        let job_id = request.job_identifier.job_id;
        let Some(pod) = pods.get_mut(agent_id) else {
            let text = format!("pod {agent_id} is not in the plugin's map");
            out.decide(Some(job_id), Some(agent_id), DecisionCode::AssignNo, text);
            return false;
        };
        let (matches, reason) = if reuse_enabled(&request.cluster_profile_properties) {
            let hash = pr355_config_hash(
                &request.elastic_agent_profile_properties,
                &request.cluster_profile_properties,
                process_id,
            );
            (
                pod.config_hash.as_deref() == Some(hash.as_str()),
                "config hash",
            )
        } else {
            (pod.job_id == Some(job_id), "job id")
        };
        if matches {
            pod.agent_state = PluginAgentState::Building;
            let text = format!("[reuse] pod {agent_id} matches job {job_id} by {reason}");
            out.decide(Some(job_id), Some(agent_id), DecisionCode::AssignYes, text);
            return true;
        }
        // `compute` returning null removes the mapping: the pod is forgotten until a refresh.
        let evicted = pods.remove(agent_id);
        debug_assert!(evicted.is_some(), "only a pod in the map is evicted");
        let text = format!(
            "pod {agent_id} does not match job {job_id} by {reason}: answering false, and the \
             null from ConcurrentHashMap.compute drops the pod from the map until the next ping"
        );
        out.decide(Some(job_id), Some(agent_id), DecisionCode::Evict, text);
        false
    }

    fn job_completion(
        &self,
        pods: &mut PodMap,
        request: &JobCompletionRequest,
        out: &mut Outbox,
    ) -> CompletionAction {
        if !reuse_enabled(&request.cluster_profile_properties) {
            return CompletionAction::Terminate;
        }
        let agent_id = &request.elastic_agent_id;
        let job_id = request.job_identifier.job_id;
        match pods.get_mut(agent_id) {
            Some(pod) => {
                pod.agent_state = PluginAgentState::Idle;
                let text = format!(
                    "[reuse] job {job_id} completed: pod {agent_id} marked Idle and kept, its \
                     agent stays enabled"
                );
                out.decide(
                    Some(job_id),
                    Some(agent_id),
                    DecisionCode::CompleteIdle,
                    text,
                );
            }
            None => {
                let text = format!(
                    "[reuse] job {job_id} completed on pod {agent_id}, which is not in the \
                     plugin's map: nothing done"
                );
                out.decide(
                    Some(job_id),
                    Some(agent_id),
                    DecisionCode::CompleteUnknown,
                    text,
                );
            }
        }
        CompletionAction::Done
    }
}

/// The codes `pr355` records itself (see [`PR355`] for the shared ones).
const PR355_CODES: &[DeclaredCode] = &[
    code(
        DecisionCode::Create,
        RequestKind::CreateAgent,
        "fewer than pending_pods_count pods known (any phase) and none usable: create one",
    ),
    code(
        DecisionCode::SkipLimit,
        RequestKind::CreateAgent,
        "pending_pods_count pods known, Running ones included: no pod",
    ),
    code(
        DecisionCode::SkipExisting,
        RequestKind::CreateAgent,
        "a pod labelled for the job exists: no second pod",
    ),
    code(
        DecisionCode::SkipReuse,
        RequestKind::CreateAgent,
        "[reuse] an Idle, Running pod with an equal config hash exists: no pod created",
    ),
    code(
        DecisionCode::AssignYes,
        RequestKind::ShouldAssignWork,
        "the pod matches the job (by job id, or by config hash with reuse on)",
    ),
    code(
        DecisionCode::AssignNo,
        RequestKind::ShouldAssignWork,
        "the pod is not in the plugin's map",
    ),
    code(
        DecisionCode::Evict,
        RequestKind::ShouldAssignWork,
        "the pod does not match: false, and the pod is dropped from the map (compute → null)",
    ),
    code(
        DecisionCode::CompleteIdle,
        RequestKind::JobCompletion,
        "[reuse] the job finished: the pod is kept, marked Idle, its agent stays enabled",
    ),
];

/// What `pr355` declares about its decisions. With reuse off it intends no difference from
/// the master branch: the pull request must not change behaviour with its feature off.
pub(super) const PR355: Declaration = Declaration {
    codes: &[PR355_CODES, CORE_CODES, PING_CODES],
    assign_rule: "recorded for every answer (assign-yes, assign-no, evict)",
    intents: &[
        Intent {
            instead_of: &[DecisionCode::Create],
            code: DecisionCode::SkipReuse,
            reuse: Some(true),
            why: "agent reuse: an idle pod with the same config takes the job, no new pod",
        },
        Intent {
            instead_of: &[DecisionCode::AssignNo],
            code: DecisionCode::AssignYes,
            reuse: Some(true),
            why: "agent reuse: a pod matches any job with an equal config hash",
        },
        Intent {
            instead_of: &[DecisionCode::CompleteDelete],
            code: DecisionCode::CompleteIdle,
            reuse: Some(true),
            why: "agent reuse: a finished pod is kept for the next job",
        },
    ],
};

#[cfg(test)]
mod tests;
