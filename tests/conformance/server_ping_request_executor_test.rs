//! `ServerPingRequestExecutorTest` (src/test/java/cd/go/contrib/elasticagent/executors/).
//!
//! The real tests hand the executor pre-filled pod maps; here the pods are in the cluster
//! and the ping's own refresh lists them, as it does in the plugin (master refreshes in
//! `KubernetesPlugin` before the executor, PR #355 inside it).

use crate::kit::{ART_MS, driver, settings};
use elasticsim::allocator::{AgentState, ClusterProfile, ConfigState, Policy};
use elasticsim::resources::{PodPhase, StringMap};
use elasticsim::testkit::Driver;

const HUNDRED_MINUTES_MS: u64 = 100 * 60_000;

/// Pods of the "running after timeout" tests at `now` = 100 minutes: `{prefix}1` idle and
/// old, `{prefix}2` idle and just created, `{prefix}3` building and old; agents registered
/// and enabled.
fn three_agents(d: &mut Driver, prefix: &str, first_job: u64) {
    let now = d.now_ms;
    let specs = [
        (1, 0, AgentState::Idle),
        (2, now, AgentState::Idle),
        (3, 0, AgentState::Building),
    ];
    for (index, created_ms, state) in specs {
        let name = format!("{prefix}{index}");
        d.kube
            .put_agent_pod(&name, first_job + index, created_ms, PodPhase::Running);
        d.put_agent(&name, state, ConfigState::Enabled);
    }
}

/// What happened to `pod`: (disabled at the server, agent deleted, pod deleted).
fn fate(d: &Driver, pod: &str) -> (bool, bool, bool) {
    let disabled = d.server.log.contains(&format!("disable-agent {pod}"));
    let agent_deleted = !d.server.agents.contains_key(pod);
    let pod_deleted = d.kube.deleted(pod);
    (disabled, agent_deleted, pod_deleted)
}

#[test]
fn test_should_terminate_kubernetes_pods_running_after_timeout_for_single_cluster() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // ServerPingRequestExecutorTest.java,
    // testShouldTerminateKubernetesPodsRunningAfterTimeout_forSingleCluster (unchanged in
    // PR #355 but for constructor arguments). Asserts: an idle agent whose pod is older than
    // the auto-register timeout is disabled, then deleted, and its pod terminated; a young
    // idle agent and an old building agent are kept. `upstream` and `pr355` run this code.
    // `safe` deliberately differs for the young idle agent: age is not idleness, and with
    // enable_agent_reuse = false an idle agent with no job of this process has served its
    // one job, so it is disabled and deleted at once (`reap-idle`), young or old.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.now_ms = HUNDRED_MINUTES_MS;
        three_agents(&mut d, "agent", 0);
        d.ping();
        let young_reaped = policy == Policy::Safe;
        let young = (young_reaped, young_reaped, young_reaped);
        assert_eq!(fate(&d, "agent1"), (true, true, true), "{policy:?}");
        assert_eq!(fate(&d, "agent2"), young, "{policy:?}");
        assert_eq!(fate(&d, "agent3"), (false, false, false), "{policy:?}");
        assert_eq!(
            d.has_decision("reap-idle", "agent2"),
            young_reaped,
            "{policy:?}"
        );
    }
}

#[test]
fn test_should_terminate_kubernetes_pods_running_after_timeout_for_multiple_clusters() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // ServerPingRequestExecutorTest.java,
    // testShouldTerminateKubernetesPodsRunningAfterTimeout_forMultipleClusters. Asserts: with
    // two cluster profiles (go_server_url :8154 and :8254), the old idle agent of each
    // cluster is disabled and deleted and its pod terminated; the others are kept. In the
    // plugin (and here) both maps list the whole namespace, so each cleanup sees both
    // clusters' pods; the outcome is the test's. `safe`: as for a single cluster (reuse is
    // off, so the young idle agents go too).
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.now_ms = HUNDRED_MINUTES_MS;
        three_agents(&mut d, "agent", 0);
        three_agents(&mut d, "agent-b", 10);
        let cluster = |url: &str| ClusterProfile {
            go_server_url: url.to_owned(),
            ..ClusterProfile::default()
        };
        let all = vec![
            cluster("https://localhost:8154/go").to_properties(),
            cluster("https://localhost:8254/go").to_properties(),
        ];
        d.ping_clusters(all);
        let young_reaped = policy == Policy::Safe;
        let young = (young_reaped, young_reaped, young_reaped);
        for old_idle in ["agent1", "agent-b1"] {
            assert_eq!(fate(&d, old_idle), (true, true, true), "{policy:?}");
        }
        for young_idle in ["agent2", "agent-b2"] {
            assert_eq!(fate(&d, young_idle), young, "{policy:?} {young_idle}");
        }
        for kept in ["agent3", "agent-b3"] {
            assert_eq!(fate(&d, kept), (false, false, false), "{policy:?} {kept}");
        }
    }
}

#[test]
fn test_should_terminate_unregistered_instances_for_single_cluster() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // ServerPingRequestExecutorTest.java,
    // testShouldTerminateUnregisteredInstances_forSingleCluster. Asserts: a pod whose agent
    // never registered is terminated once it is older than the auto-register timeout; a
    // younger one is kept. `upstream` and `pr355`. `safe` deliberately differs (rule 7): these
    // pods were not created by this server process (their names are not its own) and never
    // registered, so their auto-register key died with the old server; both are deleted at
    // once as `reap-orphan`, the young one too.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.now_ms = HUNDRED_MINUTES_MS;
        let old = "unregisteredAgentId1";
        let young = "unregisteredAgentId2";
        d.kube.put_agent_pod(old, 3, 0, PodPhase::Running);
        d.kube
            .put_agent_pod(young, 3, HUNDRED_MINUTES_MS - ART_MS / 2, PodPhase::Running);
        d.ping();
        let safe = policy == Policy::Safe;
        assert!(d.kube.deleted(old), "{policy:?}");
        assert_eq!(d.kube.deleted(young), safe, "{policy:?}");
        let code = if safe {
            "reap-orphan"
        } else {
            "reap-unregistered"
        };
        assert!(d.has_decision(code, old), "{policy:?}");
        assert_eq!(d.has_decision(code, young), safe, "{policy:?}");
    }
}

#[test]
fn test_should_disable_and_delete_missing_agents() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // ServerPingRequestExecutorTest.java, testShouldDisableAndDeleteMissingAgents. Asserts:
    // agents no pod map knows (no pod in the cluster) are disabled and deleted. Every policy.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.put_agent("agent1", AgentState::Idle, ConfigState::Enabled);
        d.put_agent("agent2", AgentState::Idle, ConfigState::Enabled);
        d.ping();
        for agent in ["agent1", "agent2"] {
            assert!(d.server.disabled.contains(&agent.to_owned()), "{policy:?}");
            assert!(d.server.deleted.contains(&agent.to_owned()), "{policy:?}");
        }
    }
}

fn cluster_at(url: &str) -> StringMap {
    let mut properties = ClusterProfile::default().to_properties();
    properties.insert("kubernetes_cluster_url".to_owned(), url.to_owned());
    properties
}

#[test]
fn should_refresh_pods_for_all_clusters() {
    // Origin: brandonvin/kubernetes-elastic-agents add-option-to-enable-agent-reuse 816a2cc,
    // ServerPingRequestExecutorTest.java, shouldRefreshPodsForAllClusters. Asserts: a ping
    // naming two known cluster profiles (kubernetes_cluster_url cluster1 and cluster2)
    // refreshes each exactly once. `upstream` (master refreshes in KubernetesPlugin) and
    // `pr355` list once per cluster profile; `safe` deliberately lists once per ping: all
    // its cluster profiles share one namespace, and one listing sees every pod.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        let all = vec![
            cluster_at("https://cluster1"),
            cluster_at("https://cluster2"),
        ];
        d.ping_clusters(all.clone());
        d.kube.served.clear();
        d.ping_clusters(all);
        let lists = d.kube.served.iter().filter(|v| **v == "list-pods").count();
        let expected = if policy == Policy::Safe { 1 } else { 2 };
        assert_eq!(lists, expected, "{policy:?}");
    }
}

#[test]
fn should_initialize_instances_and_refresh_pods_for_new_clusters() {
    // Origin: brandonvin/kubernetes-elastic-agents add-option-to-enable-agent-reuse 816a2cc,
    // ServerPingRequestExecutorTest.java, shouldInitializeInstancesAndRefreshPodsForNewClusters.
    // Asserts: a ping naming a cluster profile the plugin has not seen creates its map once
    // and refreshes it exactly once; the map then exists, so the next create-agent for that
    // profile needs no first-use listing. `upstream` and `pr355`: one listing in the ping,
    // none before `pr355`'s create (`upstream` lists inside its create-agent lock, as master
    // does), and the listed pod dedupes job 7. `safe`: one listing per ping and one per
    // create-agent; the earlier process's unregistered pod is reaped (rule 7).
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.kube
            .put_agent_pod("k8s-ea-earlier", 7, 0, PodPhase::Running);
        // `upstream` and `pr355` also GET the unregistered pod (`unregisteredAfterTimeout`
        // reads its creation time): only the listings are counted, as the real test counts
        // refreshes.
        let lists = |d: &Driver| d.kube.served.iter().filter(|v| **v == "list-pods").count();
        d.ping();
        assert_eq!(lists(&d), 1, "{policy:?}");
        d.kube.served.clear();
        d.create_agent(7);
        let expected = match policy {
            Policy::Pr355 => 0,
            Policy::Upstream | Policy::Safe => 1,
        };
        assert_eq!(lists(&d), expected, "{policy:?}");
        if policy == Policy::Safe {
            // Rule 7: a pod of an earlier process that never registered is deleted at the
            // ping, so job 7 gets a pod of its own (the deleted one, whose container ran, is
            // still listed, Terminating, for its grace period).
            assert!(d.has_decision("reap-orphan", "k8s-ea-earlier"));
            assert!(d.kube.terminating("k8s-ea-earlier"));
            let mut pods = d.pods_for_job(7);
            pods.retain(|pod| !d.kube.deleted(pod));
            assert!(pods.len() == 1 && pods[0] != "k8s-ea-earlier", "{pods:?}");
        } else {
            assert_eq!(d.pods_for_job(7), ["k8s-ea-earlier"], "{policy:?}");
        }
    }
}
