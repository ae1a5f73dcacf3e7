//! `CreateAgentRequestExecutorTest` (src/test/java/cd/go/contrib/elasticagent/executors/):
//! a create-agent request reaches `create` with the request's own cluster profile, and a
//! failed create fails the request.
//!
//! The console-log lines both tests also verify (`Received request to create a pod for job`,
//! `Failed to create agent pod`) go to the job's console at the server; the model has no
//! console, and its decisions carry the same information: each test asserts the decision
//! instead.

use crate::kit::{driver, settings};
use elasticsim::allocator::Policy;
use elasticsim::allocator::pod_spec::keys;
use elasticsim::resources::KubeError;

#[test]
fn should_ask_docker_containers_to_create_an_agent() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // CreateAgentRequestExecutorTest.java, shouldAskDockerContainersToCreateAnAgent.
    // Asserts: the executor passes the request and the request's cluster profile to
    // `agentInstances.create`: one pod is created for the job, whose agent is pointed at the
    // request's cluster profile (`GO_EA_SERVER_URL` of the request, here not the default),
    // with the decision `create`. Every policy.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.settings.go_server_url = "http://go-server".to_owned();
        let id = d.create_agent_in(1, Some("env1"));
        assert!(d.is_finished(id), "{policy:?}");
        assert_eq!(d.codes_for(1), ["create"], "{policy:?}");
        let pod = d.pod_of(1);
        let env = &d.kube.pod(&pod).expect("listed").env;
        let url = env.get(keys::ENV_SERVER_URL).map(String::as_str);
        assert_eq!(url, Some("http://go-server"), "{policy:?}");
    }
}

#[test]
fn should_log_error_message_to_console_if_agent_create_fails() {
    // Origin: gocd/kubernetes-elastic-agents master 8128178,
    // CreateAgentRequestExecutorTest.java, shouldLogErrorMessageToConsoleIfAgentCreateFails.
    // Asserts: when the create fails (the real test's `create` throws), the request still
    // ends (the executor throws, the server gets an error answer: here the request finishes
    // once), no pod exists, and the failure is reported (`create-failed`, the console's
    // "Failed to create agent pod"). The create-pod call answers ServerError. Every policy.
    for policy in Policy::ALL {
        let mut d = driver(policy, settings(false));
        d.auto_answer = false;
        let id = d.create_agent(1);
        while d.next_verb() == Some("list-pods") {
            assert!(d.answer_next());
        }
        assert_eq!(d.next_verb(), Some("create-pod"), "{policy:?}");
        d.answer_next_with(Err(KubeError::ServerError));
        d.settle();
        assert!(d.is_finished(id), "{policy:?}");
        assert!(d.pods_for_job(1).is_empty(), "{policy:?}");
        assert_eq!(d.codes_for(1).last(), Some(&"create-failed"), "{policy:?}");
    }
}
