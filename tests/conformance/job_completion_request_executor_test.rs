//! `JobCompletionRequestExecutorTest` (src/test/java/cd/go/contrib/elasticagent/executors/).

use crate::kit::{driver, settings};
use elasticsim::allocator::{AgentState, ConfigState, Policy};
use elasticsim::testkit::Driver;

/// A pod created for job 100 whose agent is registered and building it.
fn building_pod(d: &mut Driver) -> String {
    d.create_agent(100);
    let pod = d.pod_of(100);
    d.register(&pod);
    assert!(d.should_assign(&pod, 100), "a new pod takes its own job");
    pod
}

#[test]
fn should_terminate_elastic_agent_on_job_completion() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // JobCompletionRequestExecutorTest.java, shouldTerminateElasticAgentOnJobCompletion.
    // Asserts: job-completion disables the agent, then deletes the pod, then deletes the
    // agent, in that order, and makes no other call to the server (`verifyNoMoreInteractions`:
    // not even list-agents). `pr355` with reuse off is master's code. `safe` with reuse off
    // does the same writes in the same order.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        let pod = building_pod(&mut d);
        d.server.log.clear();
        d.server.list_agents_count = 0;
        d.complete(&pod, 100);
        let expected = [
            format!("disable-agent {pod}"),
            format!("delete-pod {pod}"),
            format!("delete-agent {pod}"),
        ];
        assert_eq!(d.server.log, expected, "{policy:?}");
        assert_eq!(d.server.list_agents_count, 0, "{policy:?}: nothing else");
        assert!(
            d.kube.terminating(&pod) && d.server.agents.is_empty(),
            "{policy:?}"
        );
    }
}

#[test]
fn with_agent_reuse_disabled_should_terminate_agent() {
    // Origin: brandonvin/kubernetes-elastic-agents add-option-to-enable-agent-reuse 816a2cc,
    // JobCompletionRequestExecutorTest.java, withAgentReuseDisabledShouldTerminateAgent.
    // Asserts: with enable_agent_reuse = false, job-completion disables and deletes the agent
    // once each and terminates its pod once. Applies to `pr355` (the PR's flag); `upstream`
    // and `safe` do the same with reuse off (see the master test above).
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        let pod = building_pod(&mut d);
        d.server.log.clear();
        d.complete(&pod, 100);
        let count = |line: String| d.server.log.iter().filter(|l| **l == line).count();
        assert_eq!(count(format!("disable-agent {pod}")), 1, "{policy:?}");
        assert_eq!(count(format!("delete-pod {pod}")), 1, "{policy:?}");
        assert_eq!(count(format!("delete-agent {pod}")), 1, "{policy:?}");
    }
}

#[test]
fn with_agent_reuse_enabled_should_mark_instance_idle() {
    // Origin: brandonvin/kubernetes-elastic-agents add-option-to-enable-agent-reuse 816a2cc,
    // JobCompletionRequestExecutorTest.java, withAgentReuseEnabledShouldMarkInstanceIdle.
    // Asserts: with enable_agent_reuse = true, job-completion turns the instance's agent state
    // from Building to Idle and keeps the pod. The real test uses a mock PluginRequest and
    // verifies nothing on it; here the server log shows no call at all for `pr355`. Seen from
    // outside, "Idle" means the next create-agent of the same config reuses the pod.
    // `safe` marks the pod idle with an annotation write (the mark survives a restart) and
    // makes no server call either. `upstream` has no reuse: it terminates (master above).
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(true));
        let pod = building_pod(&mut d);
        d.server.log.clear();
        d.server.list_agents_count = 0;
        d.complete(&pod, 100);
        if policy == Policy::Upstream {
            assert!(d.kube.terminating(&pod), "master deletes the pod");
            continue;
        }
        assert!(d.server.processor_writes().is_empty(), "{policy:?}");
        assert_eq!(d.server.list_agents_count, 0, "{policy:?}");
        assert_eq!(d.server.agents[&pod].config_state, ConfigState::Enabled);
        assert_eq!(d.server.agents[&pod].agent_state, AgentState::Idle);
        let expected_writes: &[String] = match policy {
            Policy::Safe => &[format!("annotate-pod {pod}")],
            _ => &[],
        };
        assert_eq!(d.server.log, expected_writes, "{policy:?}");
        // `pr355` keeps the pod state its create call returned (Pending) until a ping
        // refreshes the map; a ping comes before the next job in GoCD too.
        d.ping();
        d.create_agent(101);
        assert!(
            d.pods_for_job(101).is_empty(),
            "{policy:?}: the idle pod is reused"
        );
        assert!(d.should_assign(&pod, 101), "{policy:?}");
    }
}
