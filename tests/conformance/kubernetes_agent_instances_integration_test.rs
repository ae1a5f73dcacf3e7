//! `KubernetesAgentInstancesIntegrationTest` (src/test/java/cd/go/contrib/elasticagent/): the
//! pod a create-agent makes, field by field — the tests that back
//! `src/allocator/pod_spec.rs` (labels, annotations, name, auto-register environment).
//!
//! The real tests build the request with `CreateAgentRequestMother.defaultCreateAgentRequest`
//! (elastic profile of `Image`, `MaxMemory`, `MaxCPU`, `Environment`, `PodConfiguration`,
//! `SpecifiedUsingPodConfiguration`, `Privileged`; environment `QA`; job `up_42/1/up42_stage/
//! 20/up42_job`, job id 10) and capture the pod handed to the client. Here the request is the
//! same and the pod is read back from the test cluster.
//!
//! Left out of this class (reason for each, also listed in `main.rs`): the container tests
//! (`…WithContainerSpecification`, `…WithPrivilegedMod`,
//! `…WithResourcesLimitSpecificationOnGoCDAgentContainer`) — the model's pod has no
//! container spec (image pull policy, security context, resource limits): none of the
//! policies reads them; `…WithTimeStamp` — the creation timestamp is the API server's
//! (`Pod::created_ms`), not the plugin's; every `usingPodYamlConfigurations_…` and
//! `usingRemoteFile_…` test — the model writes the properties pod spec only (the YAML and
//! remote-file specs add the user's own labels, annotations, container and env, which no
//! policy reads).

use crate::kit::{driver, settings};
use elasticsim::allocator::pod_spec::{PLUGIN_ID, keys};
use elasticsim::allocator::{CreateAgentRequest, JobIdentifier, PluginRequest, Policy};
use elasticsim::resources::{Pod, StringMap};
use elasticsim::testkit::Driver;

/// `CreateAgentRequestMother.defaultCreateAgentRequest`'s job identifier.
fn mother_job() -> JobIdentifier {
    JobIdentifier {
        pipeline_name: "up_42".to_owned(),
        pipeline_label: "up_42_label".to_owned(),
        pipeline_counter: 1,
        stage_name: "up42_stage".to_owned(),
        stage_counter: "20".to_owned(),
        job_name: "up42_job".to_owned(),
        job_id: 10,
    }
}

/// `CreateAgentRequestMother.defaultCreateAgentRequest`'s elastic profile.
fn mother_profile() -> StringMap {
    [
        ("Image", "gocd/custom-gocd-agent-alpine"),
        ("MaxMemory", "1024M"),
        ("MaxCPU", "2"),
        ("Environment", "ENV1=VALUE1\nENV2=VALUE2"),
        ("PodConfiguration", ""),
        ("SpecifiedUsingPodConfiguration", "false"),
        ("Privileged", "false"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value.to_owned()))
    .collect()
}

const AUTO_REGISTER_KEY: &str = "5b1d5e1c-auto-register-key";

/// Send the mother's create-agent to `policy` (reuse off) and return the driver and the pod.
fn created_pod(policy: Policy) -> (Driver, Pod) {
    let mut d = driver(policy, settings(false));
    d.elastic_properties = mother_profile();
    let request = CreateAgentRequest {
        auto_register_key: AUTO_REGISTER_KEY.to_owned(),
        elastic_agent_profile_properties: mother_profile(),
        cluster_profile_properties: d.cluster_properties(),
        environment: Some("QA".to_owned()),
        job_identifier: mother_job(),
    };
    d.send(PluginRequest::CreateAgent(request));
    let name = d.pod_of(10);
    let pod = d.kube.pod(&name).expect("the pod is listed").clone();
    (d, pod)
}

#[test]
fn should_create_kubernetes_pod_for_create_agent_request() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // KubernetesAgentInstancesIntegrationTest.java,
    // shouldCreateKubernetesPodForCreateAgentRequest. Asserts: the instance created is
    // cached (`instanceExists`): once its agent registers, should-assign-work for job 10 is
    // answered `true` with no listing of pods. Every policy.
    for policy in Policy::ALL {
        let (mut d, pod) = created_pod(policy);
        d.register(&pod.name);
        let lists = |d: &Driver| d.kube.served.iter().filter(|v| **v == "list-pods").count();
        let before = lists(&d);
        assert!(d.should_assign_in(&pod.name, 10, Some("QA")), "{policy:?}");
        assert_eq!(lists(&d), before, "{policy:?}: from the cache");
    }
}

#[test]
fn should_create_kubernetes_pod_with_pod_labels() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // KubernetesAgentInstancesIntegrationTest.java, shouldCreateKubernetesPodWithPodLabels.
    // Asserts: the pod's labels are exactly `Elastic-Agent-Created-By` = the plugin id,
    // `Elastic-Agent-Job-Id` = 10, `kind` = `kubernetes-elastic-agent` and
    // `Elastic-Agent-Environment-Name` = `QA`. Every policy (PR #355 and `safe` add no label).
    for policy in Policy::ALL {
        let (_, pod) = created_pod(policy);
        let expected: StringMap = [
            (keys::CREATED_BY, PLUGIN_ID),
            (keys::JOB_ID, "10"),
            (keys::KIND, keys::KIND_VALUE),
            (keys::ENVIRONMENT, "QA"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
        assert_eq!(*pod.labels, expected, "{policy:?}");
        assert_eq!(keys::CREATED_BY, "Elastic-Agent-Created-By");
        assert_eq!(keys::JOB_ID, "Elastic-Agent-Job-Id");
        assert_eq!(keys::ENVIRONMENT, "Elastic-Agent-Environment-Name");
        assert_eq!(PLUGIN_ID, "cd.go.contrib.elasticagent.kubernetes");
    }
}

#[test]
fn should_create_kubernetes_pod_with_pod_annotations() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // KubernetesAgentInstancesIntegrationTest.java, shouldCreateKubernetesPodWithPodAnnotations.
    // Asserts: the annotations are every elastic profile property plus
    // `Elastic-Agent-Job-Identifier`, the job identifier as Gson writes it (snake-case keys:
    // compared as JSON values, since the plugin reads it back by key). `upstream` exactly;
    // PR #355 (`pr355`) adds one annotation of its own, the config hash
    // (`go.cd/elastic-config-hash`), and nothing else; `safe` adds the config hash and its
    // reservation of the pod for job 10 (`elasticsim.io/claim-job-id` and
    // `elasticsim.io/claim-deadline-ms`, `docs/policies.md`).
    let gson = serde_json::json!({
        "pipeline_name": "up_42",
        "pipeline_counter": 1,
        "pipeline_label": "up_42_label",
        "stage_name": "up42_stage",
        "stage_counter": "20",
        "job_name": "up42_job",
        "job_id": 10
    });
    for policy in Policy::ALL {
        let (_, pod) = created_pod(policy);
        let mut annotations = pod.annotations.clone();
        let identifier = annotations
            .remove(keys::JOB_IDENTIFIER)
            .expect("the job identifier annotation");
        let identifier: serde_json::Value =
            serde_json::from_str(&identifier).expect("the job identifier is JSON");
        assert_eq!(identifier, gson, "{policy:?}");
        let hash = annotations.remove(keys::CONFIG_HASH);
        assert_eq!(hash.is_some(), policy != Policy::Upstream, "{policy:?}");
        let reservation = annotations.remove("elasticsim.io/claim-job-id");
        let deadline = annotations.remove("elasticsim.io/claim-deadline-ms");
        let expected = (policy == Policy::Safe).then(|| "10".to_owned());
        assert_eq!(reservation, expected, "{policy:?}");
        assert_eq!(deadline.is_some(), policy == Policy::Safe, "{policy:?}");
        assert_eq!(annotations, mother_profile(), "{policy:?}");
    }
}

#[test]
fn should_create_kubernetes_pod_with_gocd_agent_container_containing_environment_variables() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // KubernetesAgentInstancesIntegrationTest.java,
    // shouldCreateKubernetesPodWithGoCDElasticAgentContainerContainingEnvironmentVariables
    // (the Rust name drops "Elastic" to fit the line limit).
    // Asserts: the agent container's environment carries `GO_EA_SERVER_URL` (the cluster
    // profile's server URL), `GO_EA_AUTO_REGISTER_KEY` (the request's key),
    // `GO_EA_AUTO_REGISTER_ENVIRONMENT` (`QA`), `GO_EA_AUTO_REGISTER_ELASTIC_AGENT_ID` (the
    // pod's name) and `GO_EA_AUTO_REGISTER_ELASTIC_PLUGIN_ID` (the plugin id) — the variables
    // the go-agent registers with. Not ported: the real test's `ENV1`/`ENV2`, which come from
    // the profile's `Environment` property; the model's container has only the auto-register
    // variables (no policy reads the others). Every policy.
    for policy in Policy::ALL {
        let (d, pod) = created_pod(policy);
        let expected: StringMap = [
            (keys::ENV_SERVER_URL, d.settings.go_server_url.as_str()),
            (keys::ENV_AUTO_REGISTER_KEY, AUTO_REGISTER_KEY),
            (keys::ENV_AUTO_REGISTER_ENVIRONMENT, "QA"),
            (keys::ENV_ELASTIC_AGENT_ID, pod.name.as_str()),
            (keys::ENV_ELASTIC_PLUGIN_ID, PLUGIN_ID),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
        assert_eq!(*pod.env, expected, "{policy:?}");
    }
}

#[test]
fn should_create_kubernetes_pod_with_pod_metadata() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // KubernetesAgentInstancesIntegrationTest.java, shouldCreateKubernetesPodWithPodMetadata.
    // Asserts: the pod has the name of the instance the plugin returns (here: the pod the
    // `create` decision names), in the plugin's `k8s-ea-…` form, and the image of the
    // profile's `Image`. Every policy.
    for policy in Policy::ALL {
        let (d, pod) = created_pod(policy);
        let created = d.decided("create");
        assert_eq!(created.len(), 1, "{policy:?}");
        assert_eq!(created[0].pod.as_deref(), Some(pod.name.as_str()));
        assert!(pod.name.starts_with("k8s-ea-"), "{policy:?}: {}", pod.name);
        assert_eq!(pod.image, "gocd/custom-gocd-agent-alpine", "{policy:?}");
    }
}
