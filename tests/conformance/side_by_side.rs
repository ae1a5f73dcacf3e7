//! Side by side: one script — server requests and Kubernetes answers — run through all three
//! policies, with each policy's decisions per step. Read the table like a spec: a row is one
//! step, a column one policy, a cell the decision codes that step produced (`-` for none;
//! `yes`/`no` is should-assign-work's answer).
//!
//! Origin: not a port. It is our own spec of the three policies on one script, written from
//! gocd/kubernetes-elastic-agents master (`KubernetesAgentInstances`, the executors) and the
//! PR #355 branch `add-option-to-enable-agent-reuse`, like the ported modules beside it.

use crate::kit::driver;
use elasticsim::allocator::{ClusterProfile, DecisionCode, Policy};
use elasticsim::testkit::Driver;

/// One step of the script. Pods are named by the job they were created for.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// The server sends create-agent for this job.
    Create(u64),
    /// The pod created for this job starts and its agent registers (no request).
    Register(u64),
    /// should-assign-work: may the pod of job `.0` take job `.1`?
    Assign(u64, u64),
    /// The job completes on the pod of job `.0`; job-completion for job `.1`.
    Complete(u64, u64),
    /// The heartbeat's server-ping.
    Ping,
}

use Step::{Assign, Complete, Create, Ping, Register};

/// The script, with reuse on: `(step, upstream, pr355, safe)`.
const SCRIPT: &[(Step, &str, &str, &str)] = &[
    (
        Create(1),
        "first-use-refresh create",
        "first-use-refresh create",
        "create",
    ),
    (Register(1), "-", "-", "-"),
    (
        Assign(1, 1),
        "yes assign-yes",
        "yes assign-yes",
        "yes assign-yes",
    ),
    (
        Complete(1, 1),
        "complete-delete",
        "complete-idle",
        "complete-idle",
    ),
    (Ping, "-", "-", "-"),
    (Create(2), "create", "skip-reuse", "claim"),
    (Create(3), "create", "skip-reuse", "create"),
    (
        Assign(1, 2),
        "no assign-no",
        "yes assign-yes",
        "yes assign-yes",
    ),
];

/// Run one step; returns the decision codes it produced (and the answer of an assign).
fn run(d: &mut Driver, step: Step, pods: &mut Vec<(u64, String)>) -> String {
    let before = d.decisions.len();
    let pod = |pods: &Vec<(u64, String)>, job: u64| {
        let found = pods.iter().find(|(j, _)| *j == job);
        found
            .map(|(_, name)| name.clone())
            .expect("the script names created pods")
    };
    let mut cell = Vec::new();
    match step {
        Create(job) => drop(d.create_agent(job)),
        Register(job) => d.register(&pod(pods, job)),
        Assign(of, job) => {
            let answer = d.should_assign(&pod(pods, of), job);
            cell.push(if answer { "yes" } else { "no" }.to_owned());
        }
        Complete(of, job) => drop(d.complete(&pod(pods, of), job)),
        Ping => drop(d.ping()),
    }
    for decision in &d.decisions[before..] {
        if decision.code == DecisionCode::Create
            && let (Some(job), Some(name)) = (decision.job_id, &decision.pod)
        {
            pods.push((job, name.clone()));
        }
        cell.push(decision.code.as_str().to_owned());
    }
    if cell.is_empty() {
        "-".to_owned()
    } else {
        cell.join(" ")
    }
}

#[test]
fn one_script_through_all_three_policies() {
    let settings = ClusterProfile {
        enable_agent_reuse: true,
        ..ClusterProfile::default()
    };
    for (column, policy) in Policy::ALL.into_iter().enumerate() {
        let mut d = driver(policy, settings.clone());
        let mut pods = Vec::new();
        for (row, &(step, upstream, pr355, safe)) in SCRIPT.iter().enumerate() {
            let expected = [upstream, pr355, safe][column];
            let got = run(&mut d, step, &mut pods);
            assert_eq!(got, expected, "{policy:?}, step {row} {step:?}");
        }
    }
}
