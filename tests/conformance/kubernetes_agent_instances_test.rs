//! `KubernetesAgentInstancesTest` (src/test/java/cd/go/contrib/elasticagent/): create-agent's
//! refresh, job-id dedupe, pending-pod limit, and the instance cached at creation.

use crate::kit::{driver, settings};
use elasticsim::allocator::{ClusterProfile, Policy};
use elasticsim::resources::PodPhase;
use elasticsim::testkit::Driver;

#[test]
fn should_sync_pods_state_from_cluster_before_creating_pod() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178, KubernetesAgentInstancesTest.java,
    // shouldSyncPodsStateFromClusterBeforeCreatingPod. Asserts: create-agent lists the pods
    // (`list()`) before it creates one (`create(...)`), in that order.
    // PR #355 deletes this test together with the refresh: `pr355` lists only on the first use
    // of the cluster profile (`getAgentInstancesFor`), so its second create-agent creates
    // without a listing. `upstream` lists twice on first use (first use, then inside the
    // lock), as master does. `safe` lists before every decision, as master.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.create_agent(100);
        d.create_agent(101);
        let expected: &[&str] = match policy {
            Policy::Upstream => &[
                "list-pods",
                "list-pods",
                "create-pod",
                "list-pods",
                "create-pod",
            ],
            Policy::Pr355 => &["list-pods", "create-pod", "create-pod"],
            Policy::Safe => &["list-pods", "create-pod", "list-pods", "create-pod"],
        };
        assert_eq!(d.kube.served, expected, "{policy:?}");
    }
}

#[test]
fn should_not_create_pod_when_outstanding_requests_exist_for_jobs() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178, KubernetesAgentInstancesTest.java,
    // shouldNotCreatePodWhenOutstandingRequestsExistForJobs (unchanged in PR #355 but for the
    // method name). Asserts: a first create-agent for job 100 creates a pod; once the cluster
    // lists a Running pod labelled with job 100, a second create-agent for job 100 creates
    // nothing. Applies to every policy.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.create_agent(100);
        let pod = d.pod_of(100);
        d.set_phase(&pod, PodPhase::Running);
        d.create_agent(100);
        assert_eq!(
            d.pods_for_job(100),
            std::slice::from_ref(&pod),
            "{policy:?}"
        );
        let expected: &[&str] = match policy {
            Policy::Upstream | Policy::Pr355 => &["create", "skip-existing"],
            Policy::Safe => &["create", "skip-existing"],
        };
        assert_eq!(d.codes_for(100), expected, "{policy:?}");
    }
}

fn one_pod_limit() -> ClusterProfile {
    ClusterProfile {
        pending_pods_count: 1,
        ..ClusterProfile::default()
    }
}

#[test]
fn should_not_create_pods_when_outstanding_limit_of_pending_kubernetes_pods_has_reached() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178, KubernetesAgentInstancesTest.java,
    // shouldNotCreatePodsWhenOutstandingLimitOfPendingKubernetesPodsHasReached. Asserts: with
    // pending_pods_count = 1 and one Pending pod listed, a second create-agent (the real test
    // resends job 100) creates nothing. The limit is checked before the job-id dedupe, so the
    // decision is the limit for the plugin's code; `safe` checks its own job first (the pod
    // is this job's) and says so.
    for policy in Policy::ALL {
        let mut d = driver(policy, one_pod_limit());
        d.create_agent(100);
        assert_eq!(d.pods_for_job(100).len(), 1, "{policy:?}");
        d.create_agent(100);
        assert_eq!(d.kube.pod_count(), 1, "{policy:?}");
        let second = *d.codes_for(100).last().expect("a decision");
        let expected = match policy {
            Policy::Upstream | Policy::Pr355 => "skip-limit",
            Policy::Safe => "skip-existing",
        };
        assert_eq!(second, expected, "{policy:?}");
    }
}

#[test]
fn should_not_create_pods_when_outstanding_limit_of_pending_kubernetes_pods_has_reached_pr355() {
    // Origin: brandonvin/kubernetes-elastic-agents add-option-to-enable-agent-reuse 816a2cc,
    // KubernetesAgentInstancesTest.java,
    // shouldNotCreatePodsWhenOutstandingLimitOfPendingKubernetesPodsHasReached (the PR's
    // version: the known pod is Running, not Pending). Asserts: with pending_pods_count = 1, a
    // Running pod still fills the limit — the PR counts every pod it knows. Only `pr355`
    // decides on the limit: master counts pods not Running, so `upstream` is stopped by the
    // job-id dedupe instead (the real test resends job 100), and so is `safe`. A create-agent
    // for another job shows the difference: only `pr355` refuses it.
    for policy in Policy::ALL {
        let mut d = driver(policy, one_pod_limit());
        d.create_agent(100);
        let pod = d.pod_of(100);
        d.set_phase(&pod, PodPhase::Running);
        d.ping();
        d.create_agent(100);
        assert_eq!(d.kube.pod_count(), 1, "{policy:?}");
        let second = *d.codes_for(100).last().expect("a decision");
        let expected = match policy {
            Policy::Pr355 => "skip-limit",
            Policy::Upstream | Policy::Safe => "skip-existing",
        };
        assert_eq!(second, expected, "{policy:?}");
        d.create_agent(101);
        let other_created = d.pods_for_job(101).len() == 1;
        assert_eq!(other_created, policy != Policy::Pr355, "{policy:?}");
    }
}

/// The three `…AndCacheCreatedInstance` tests: a create-agent for job 100 whose elastic
/// profile has `PodSpecType` = `spec_type` creates one pod, and the plugin caches the
/// instance it created (`instanceExists`): the next should-assign-work for job 100 is
/// answered `true` from the cache, with no listing in between.
fn creates_and_caches(spec_type: &str) {
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.elastic_properties
            .insert("PodSpecType".to_owned(), spec_type.to_owned());
        d.create_agent_in(100, Some("QA"));
        assert_eq!(d.codes_for(100), ["create"], "{policy:?} {spec_type}");
        let pod = d.pod_of(100);
        d.register(&pod);
        let lists = |d: &Driver| d.kube.served.iter().filter(|v| **v == "list-pods").count();
        let before = lists(&d);
        assert!(d.should_assign_in(&pod, 100, Some("QA")), "{policy:?}");
        assert_eq!(lists(&d), before, "{policy:?}: from the cache");
    }
}

#[test]
fn should_create_kubernetes_pod_using_pod_yaml_and_cache_created_instance() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178, KubernetesAgentInstancesTest.java,
    // shouldCreateKubernetesPodUsingPodYamlAndCacheCreatedInstance. Asserts (see
    // `creates_and_caches`): with `PodSpecType` = `yaml` the pod is created and its instance
    // cached. The model writes the properties pod body for every spec type (the body is not
    // what this test checks). Every policy.
    creates_and_caches("yaml");
}

#[test]
fn should_create_kubernetes_pod_and_cache_created_instance() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178, KubernetesAgentInstancesTest.java,
    // shouldCreateKubernetesPodAndCacheCreatedInstance. Asserts: with `PodSpecType` =
    // `properties`, the pod is created and its instance cached. Every policy.
    creates_and_caches("properties");
}

#[test]
fn should_create_kubernetes_pod_from_file_and_cache_created_instance() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178, KubernetesAgentInstancesTest.java,
    // shouldCreateKubernetesPodFromFileAndCacheCreatedInstance. Asserts: with `PodSpecType` =
    // `remote`, the pod is created and its instance cached. Every policy.
    creates_and_caches("remote");
}
