//! The pod the plugin creates for a create-agent request: name, labels, annotations and the
//! auto-register environment, as `KubernetesInstanceFactory.java` writes them.

use super::messages::CreateAgentRequest;
use super::settings::ClusterProfile;
use crate::resources::{PodTemplate, StringMap};

/// The plugin id, also the value of the `Elastic-Agent-Created-By` label.
pub const PLUGIN_ID: &str = "cd.go.contrib.elasticagent.kubernetes";

/// Label and annotation keys.
pub mod keys {
    /// Label: the plugin that created the pod, always [`PLUGIN_ID`](super::PLUGIN_ID).
    pub const CREATED_BY: &str = "Elastic-Agent-Created-By";
    /// Label: the `job_identifier.job_id` the pod was created for.
    pub const JOB_ID: &str = "Elastic-Agent-Job-Id";
    /// Label: the job's GoCD environment, only when it has one.
    pub const ENVIRONMENT: &str = "Elastic-Agent-Environment-Name";
    /// The only selector the plugin lists pods with.
    pub const KIND: &str = "kind";
    /// The value of the `kind` label on every agent pod.
    pub const KIND_VALUE: &str = "kubernetes-elastic-agent";
    /// Annotation: the job identifier as JSON.
    pub const JOB_IDENTIFIER: &str = "Elastic-Agent-Job-Identifier";
    /// Annotation written by PR #355 (and by `safe`, with a canonical value).
    pub const CONFIG_HASH: &str = "go.cd/elastic-config-hash";
    /// Container environment read by the go-agent at start.
    pub const ENV_SERVER_URL: &str = "GO_EA_SERVER_URL";
    /// The create-agent request's `auto_register_key`, with which the agent registers.
    pub const ENV_AUTO_REGISTER_KEY: &str = "GO_EA_AUTO_REGISTER_KEY";
    /// The job's GoCD environment, which the agent registers into.
    pub const ENV_AUTO_REGISTER_ENVIRONMENT: &str = "GO_EA_AUTO_REGISTER_ENVIRONMENT";
    /// The elastic agent id the agent registers with: the pod name.
    pub const ENV_ELASTIC_AGENT_ID: &str = "GO_EA_AUTO_REGISTER_ELASTIC_AGENT_ID";
    /// The plugin id the agent registers as an elastic agent of: [`PLUGIN_ID`](super::PLUGIN_ID).
    pub const ENV_ELASTIC_PLUGIN_ID: &str = "GO_EA_AUTO_REGISTER_ELASTIC_PLUGIN_ID";
}

/// Elastic profile property holding the container image.
pub(crate) const PROFILE_IMAGE: &str = "Image";

/// The label selector every policy lists pods with: `kind=kubernetes-elastic-agent`.
pub(crate) fn agent_selector() -> StringMap {
    StringMap::from([(keys::KIND.to_owned(), keys::KIND_VALUE.to_owned())])
}

/// A pod name in the plugin's `k8s-ea-<id>` form, unique per process and counter.
pub(crate) fn pod_name(process_id: u64, counter: u64) -> String {
    format!("k8s-ea-{:08x}-{counter:04}", process_id & 0xffff_ffff)
}

/// The pod template for a create-agent request, exactly as the master branch writes it:
/// labels `Elastic-Agent-Created-By`, `Elastic-Agent-Job-Id`, `Elastic-Agent-Environment-Name`
/// (when the job has an environment) and `kind`; annotations with every elastic profile
/// property plus `Elastic-Agent-Job-Identifier`; the `GO_EA_*` auto-register environment.
/// Policies add their own annotations (the config hash) on top.
pub(crate) fn pod_template(
    name: &str,
    request: &CreateAgentRequest,
    settings: &ClusterProfile,
) -> PodTemplate {
    debug_assert!(
        name.starts_with("k8s-ea-"),
        "agent pods are named k8s-ea-…: {name}"
    );
    let job_id = request.job_identifier.job_id.to_string();
    let mut labels = StringMap::new();
    labels.insert(keys::CREATED_BY.to_owned(), PLUGIN_ID.to_owned());
    labels.insert(keys::JOB_ID.to_owned(), job_id);
    labels.insert(keys::KIND.to_owned(), keys::KIND_VALUE.to_owned());
    if let Some(environment) = &request.environment {
        labels.insert(keys::ENVIRONMENT.to_owned(), environment.clone());
    }
    let mut annotations = request.elastic_agent_profile_properties.clone();
    let identifier = serde_json::to_string(&request.job_identifier)
        .expect("a job identifier of strings and integers always serialises");
    annotations.insert(keys::JOB_IDENTIFIER.to_owned(), identifier);
    let mut env = StringMap::new();
    env.insert(
        keys::ENV_SERVER_URL.to_owned(),
        settings.go_server_url.clone(),
    );
    env.insert(
        keys::ENV_AUTO_REGISTER_KEY.to_owned(),
        request.auto_register_key.clone(),
    );
    env.insert(keys::ENV_ELASTIC_AGENT_ID.to_owned(), name.to_owned());
    env.insert(keys::ENV_ELASTIC_PLUGIN_ID.to_owned(), PLUGIN_ID.to_owned());
    if let Some(environment) = &request.environment {
        env.insert(
            keys::ENV_AUTO_REGISTER_ENVIRONMENT.to_owned(),
            environment.clone(),
        );
    }
    let image = request
        .elastic_agent_profile_properties
        .get(PROFILE_IMAGE)
        .cloned()
        .unwrap_or_else(|| "gocd/gocd-agent".to_owned());
    PodTemplate {
        name: name.to_owned(),
        labels,
        annotations,
        image,
        env,
    }
}
