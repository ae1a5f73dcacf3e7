//! Fidelity: the GoCD server, the plugin and Kubernetes keep the timings of the real systems
//! (`[server]` and `[plugin]` in `docs/scenario-format.md`), each shown on a tiny scenario
//! whose every record is kept.
//!
//! All scenarios use a fixed 1 ms API latency, so the only slack in a bound is the handful of
//! API round trips between a decision and the record of its effect.

use crate::common;

use common::{Recording, allocator_created, record_run, scenario};
use elasticsim::scenario::Scenario;
use elasticsim::trace::{Actor, AgentRuntime, Record};
use std::collections::BTreeSet;

/// A few API round trips at 1 ms each, between a plugin decision and its recorded effect.
const API_SLACK_MS: u64 = 10;
/// The go-agent pings every 5 s (plus a few ms of latency); the server refreshes agent
/// liveness every 5 s.
const AGENT_PING_MS: u64 = 5_000;
const AGENT_REFRESH_MS: u64 = 5_000;

/// A scenario with one `small` profile; `body` adds sections and jobs.
fn tiny(name: &str, body: &str) -> Scenario {
    scenario(&format!(
        r#"
name = "{name}"
seed = 1
{body}

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"
"#
    ))
}

fn created_by_allocator(run: &Recording) -> Vec<(u64, String, Option<u64>)> {
    run.events
        .iter()
        .filter_map(|e| match &e.record {
            Record::PodCreated {
                pod,
                job_label,
                by: Actor::Allocator,
                ..
            } => Some((e.t_ms, pod.clone(), *job_label)),
            _ => None,
        })
        .collect()
}

fn pod_deleted_by(run: &Recording, name: &str, actor: Actor) -> u64 {
    run.first(
        &format!("delete of {name} by {actor:?}"),
        |r| matches!(r, Record::PodDeleted { pod, by } if pod == name && *by == actor),
    )
}

fn lost_contact_of(run: &Recording, name: &str) -> u64 {
    run.first(&format!("LostContact of {name}"), |r| {
        matches!(r, Record::AgentState { agent, state: AgentRuntime::LostContact }
            if agent == name)
    })
}

fn completions_of(run: &Recording, id: u64) -> usize {
    run.times(|r| matches!(r, Record::JobCompleted { job, .. } if *job == id))
        .len()
}

#[test]
fn a_job_that_cannot_get_an_agent_gets_a_create_agent_every_starvation_timeout() {
    // One slot: job 1 holds it for 20 minutes, so job 2's pod stays Unschedulable. The run
    // ends before the auto-register timeout (10m) would reap that pod.
    let starving = tiny(
        "starvation",
        r#"
duration = "9m"
settle = "1m"
[cluster]
nodes = 1
pods_per_node = 1
api_latency = "1ms"
[plugin]
policy = "upstream"
[[jobs]]
kind = "single"
at = "30s"
profile = "small"
runtime = "20m"
[[jobs]]
kind = "single"
at = "42s"
profile = "small"
runtime = "1m"
"#,
    );
    let run = record_run(&starving, 1);
    let starvation_ms = starving.server.job_starvation_timeout_ms;
    let assignment_ms = starving.server.assignment_interval_ms;
    let scheduled_ms = run.first("job 2 scheduled", |r| {
        matches!(r, Record::JobScheduled { job: 2, .. })
    });
    let queued = run.times(|r| matches!(r, Record::CreateAgentQueued { job: 2, .. }));
    assert!(queued.len() >= 5, "{queued:?}\n{}", run.dump());
    assert!(
        queued[0] >= scheduled_ms && queued[0] < scheduled_ms + assignment_ms,
        "the first create-agent goes out at the next assignment tick: {queued:?}"
    );
    for pair in queued.windows(2) {
        let gap_ms = pair[1] - pair[0];
        assert!(
            gap_ms >= starvation_ms && gap_ms < starvation_ms + assignment_ms,
            "create-agent gap {gap_ms} ms outside [{starvation_ms}, {}): {queued:?}",
            starvation_ms + assignment_ms
        );
    }
    assert!(
        run.times(|r| matches!(r, Record::JobAssigned { job: 2, .. }))
            .is_empty(),
        "job 2 never gets an agent while the only slot is taken"
    );
    let pods_for_job_2 = created_by_allocator(&run)
        .into_iter()
        .filter(|(_, _, label)| *label == Some(2))
        .count();
    assert_eq!(
        pods_for_job_2, 1,
        "upstream never makes a second pod while the job's pod exists"
    );
}

#[test]
fn a_pod_that_never_registers_is_deleted_by_the_allocator_after_the_auto_register_timeout() {
    // Agents cannot reach the server for 5 minutes: the first pod never registers.
    let orphan = tiny(
        "orphan",
        r#"
duration = "10m"
settle = "5m"
[cluster]
api_latency = "1ms"
[plugin]
policy = "upstream"
auto_register_timeout = "3m"
[[jobs]]
kind = "single"
at = "30s"
profile = "small"
runtime = "1m"
[[faults]]
at = "0s"
kind = "partition"
between = ["agents", "gocd"]
for = "5m"
"#,
    );
    let run = record_run(&orphan, 1);
    let register_timeout_ms = orphan.plugin.auto_register_timeout_ms;
    let ping_ms = orphan.server.server_ping_interval_ms;
    let (created_ms, pod, _) = created_by_allocator(&run)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no pod created:\n{}", run.dump()));
    let deleted_ms = pod_deleted_by(&run, &pod, Actor::Allocator);
    let age_ms = deleted_ms - created_ms;
    assert!(
        age_ms > register_timeout_ms && age_ms <= register_timeout_ms + ping_ms + API_SLACK_MS,
        "unregistered pod deleted {age_ms} ms after creation, outside (ART, ART + ping]"
    );
    assert!(
        run.times(|r| matches!(r, Record::AgentRegistered { agent, .. } if *agent == pod))
            .is_empty(),
        "the pod's agent never registered"
    );
    assert_eq!(
        completions_of(&run, 1),
        1,
        "a replacement pod runs the job after the partition:\n{}",
        run.dump()
    );
}

#[test]
fn a_partitioned_agent_becomes_lost_contact_after_the_connection_timeout() {
    // Every agent is cut off from the server for 8 minutes in the middle of a 10-minute build.
    let partitioned = tiny(
        "lost-contact",
        r#"
duration = "15m"
settle = "15m"
[cluster]
api_latency = "1ms"
[server]
agent_connection_timeout = "4m"
[plugin]
policy = "upstream"
[[jobs]]
kind = "single"
at = "30s"
profile = "small"
runtime = "10m"
[[faults]]
at = "2m"
kind = "partition"
between = ["agents", "gocd"]
for = "8m"
"#,
    );
    let run = record_run(&partitioned, 1);
    let timeout_ms = partitioned.server.agent_connection_timeout_ms;
    let partition_ms = run.first("partition", |r| matches!(r, Record::FaultStarted { .. }));
    let healed_ms = run.first("partition end", |r| matches!(r, Record::FaultEnded { .. }));
    let pod = created_by_allocator(&run)[0].1.clone();
    let lost_ms = lost_contact_of(&run, &pod);
    // The last ping got through at most one ping period before the partition.
    let silent_ms = lost_ms - partition_ms;
    assert!(
        silent_ms > timeout_ms - AGENT_PING_MS - API_SLACK_MS
            && silent_ms <= timeout_ms + AGENT_REFRESH_MS,
        "LostContact {silent_ms} ms after the partition, timeout {timeout_ms} ms"
    );
    // GoCD reschedules hung jobs only while some agent is live; here none is, so the job
    // stays with its agent, which reports back after the partition.
    assert!(
        run.times(|r| matches!(r, Record::JobRescheduled { .. }))
            .is_empty(),
        "no live agent, no hung-job reschedule:\n{}",
        run.dump()
    );
    let back = run.between(lost_ms, u64::MAX, |r| {
        matches!(r, Record::AgentState { agent, state: AgentRuntime::Building } if *agent == pod)
    });
    assert!(
        back.first().is_some_and(|e| e.t_ms > healed_ms),
        "the agent is Building again once its pings get through after the partition"
    );
    assert_eq!(completions_of(&run, 1), 1);
}

/// Two 15-minute jobs; the container building one of them restarts at 2 minutes.
const HUNG_JOB: &str = r#"
duration = "15m"
settle = "30m"
[cluster]
api_latency = "1ms"
[plugin]
policy = "upstream"
[[jobs]]
kind = "single"
at = "30s"
profile = "small"
runtime = "15m"
[[jobs]]
kind = "single"
at = "30s"
profile = "small"
runtime = "15m"
[[faults]]
at = "2m"
kind = "container_restart"
target = "busy"
"#;

#[test]
fn a_silent_agents_job_is_rescheduled_under_a_new_job_id_while_another_agent_is_live() {
    // The container building one of the two jobs restarts: the new process cannot register
    // (its key is used), so the old agent is never heard again while the other one pings.
    let restarted = tiny("hung-job", HUNG_JOB);
    let run = record_run(&restarted, 1);
    let timeout_ms = restarted.server.agent_connection_timeout_ms;
    let hung_check_ms = restarted.server.hung_job_check_interval_ms;
    let (died_ms, pod) = run
        .events
        .iter()
        .find_map(|e| match &e.record {
            Record::ContainerDied { pod } => Some((e.t_ms, pod.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no container died:\n{}", run.dump()));
    let lost_ms = lost_contact_of(&run, &pod);
    let silent_ms = lost_ms - died_ms;
    assert!(
        silent_ms > timeout_ms - AGENT_PING_MS - API_SLACK_MS
            && silent_ms <= timeout_ms + AGENT_REFRESH_MS,
        "LostContact {silent_ms} ms after the agent died, timeout {timeout_ms} ms"
    );
    let old_job = run
        .events
        .iter()
        .find_map(|e| match &e.record {
            Record::JobAssigned { job, agent, .. } if *agent == pod => Some(*job),
            _ => None,
        })
        .expect("the restarted pod's agent was building a job");
    let (rescheduled_ms, new_job) = run
        .events
        .iter()
        .find_map(|e| match &e.record {
            Record::JobRescheduled { job, new_job, .. } if *job == old_job => {
                Some((e.t_ms, *new_job))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("job {old_job} was not rescheduled:\n{}", run.dump()));
    assert!(
        rescheduled_ms >= lost_ms && rescheduled_ms <= lost_ms + hung_check_ms,
        "rescheduled at {rescheduled_ms}, LostContact at {lost_ms}"
    );
    assert_ne!(new_job, old_job);
    let logical_of = |id: u64| {
        run.events.iter().find_map(|e| match &e.record {
            Record::JobScheduled { job, logical, .. } if *job == id => Some((e.t_ms, *logical)),
            _ => None,
        })
    };
    let (old_scheduled_ms, old_logical) = logical_of(old_job).expect("the old job was scheduled");
    assert!(old_scheduled_ms < rescheduled_ms);
    assert_eq!(
        logical_of(new_job),
        Some((rescheduled_ms, old_logical)),
        "the new instance is scheduled at once, for the same logical job"
    );
    assert_eq!(completions_of(&run, old_job), 0);
    assert_eq!(completions_of(&run, new_job), 1);
}

#[test]
fn the_pod_limit_counts_every_pod_that_is_not_running() {
    // Pods take 3 minutes to start; at most 2 may be not Running when a pod is created.
    let slow = tiny(
        "pending-limit",
        r#"
duration = "20m"
settle = "20m"
[cluster]
api_latency = "1ms"
pod_startup = "3m"
[plugin]
policy = "upstream"
pending_pods_count = 2
[[jobs]]
kind = "burst"
at = "30s"
count = 5
profile = "small"
runtime = "1m"
"#,
    );
    let run = record_run(&slow, 1);
    let limit = slow.plugin.pending_pods_count as usize;
    let mut not_running: BTreeSet<String> = BTreeSet::new();
    let mut created = 0;
    for event in &run.events {
        match &event.record {
            Record::PodCreated { pod, by, .. } => {
                if *by == Actor::Allocator {
                    assert!(
                        not_running.len() < limit,
                        "pod {pod} created at {} while {not_running:?} are not Running",
                        event.t_ms
                    );
                    created += 1;
                }
                not_running.insert(pod.clone());
            }
            Record::PodRunning { pod } | Record::PodDeleted { pod, .. } => {
                not_running.remove(pod);
            }
            _ => {}
        }
    }
    assert_eq!(created, 5, "every job gets its pod in the end");
    let first_running_ms = run.first("a Running pod", |r| matches!(r, Record::PodRunning { .. }));
    let early = created_by_allocator(&run)
        .iter()
        .filter(|(t_ms, _, _)| *t_ms < first_running_ms)
        .count();
    assert_eq!(early, limit, "the first wave fills the limit and stops");
    assert!(
        !run.times(|r| matches!(r, Record::Decision { code, .. } if code == "skip-limit"))
            .is_empty(),
        "jobs were refused by the limit"
    );
}

#[test]
fn failed_pods_count_toward_the_pod_limit_until_reaped() {
    // Job 1's Running pod fails for good; job 2 arrives while the failed pod still exists.
    let failing = tiny(
        "failed-pod",
        r#"
duration = "20m"
settle = "30m"
[cluster]
api_latency = "1ms"
[plugin]
policy = "upstream"
pending_pods_count = 1
[[jobs]]
kind = "single"
at = "30s"
profile = "small"
runtime = "30m"
[[jobs]]
kind = "single"
at = "4m"
profile = "small"
runtime = "1m"
[[faults]]
at = "3m"
kind = "pod_fail"
target = "busy"
count = 1
"#,
    );
    let run = record_run(&failing, 1);
    let (_, pod, _) = created_by_allocator(&run)[0].clone();
    let running_ms = run.first(
        "the first pod Running",
        |r| matches!(r, Record::PodRunning { pod: p } if *p == pod),
    );
    let failed_ms = run.first(
        "the first pod Failed",
        |r| matches!(r, Record::PodPhase { pod: p, phase } if *p == pod && phase == "Failed"),
    );
    assert!(running_ms < failed_ms, "the pod failed while Running");
    let reaped_ms = pod_deleted_by(&run, &pod, Actor::Allocator);
    let created_meanwhile = run.between(failed_ms, reaped_ms, |r| allocator_created(r).is_some());
    assert!(
        created_meanwhile.is_empty(),
        "a pod was created while the failed pod counted: {created_meanwhile:?}"
    );
    let refused = run.between(
        failed_ms,
        reaped_ms,
        |r| matches!(r, Record::Decision { job: Some(2), code, .. } if code == "skip-limit"),
    );
    assert!(
        refused.len() >= 2,
        "job 2 is refused by the limit at every resend until the reap:\n{}",
        run.dump()
    );
    let next = created_by_allocator(&run)
        .into_iter()
        .find(|(t_ms, _, _)| *t_ms >= reaped_ms)
        .unwrap_or_else(|| panic!("no pod after the reap:\n{}", run.dump()));
    assert_eq!(next.2, Some(2), "the freed slot goes to job 2");
    assert_eq!(completions_of(&run, 2), 1);
}

#[test]
fn server_ping_runs_at_its_interval_and_again_after_a_restart() {
    let crashing = tiny(
        "server-ping",
        r#"
duration = "12m"
settle = "2m"
[cluster]
api_latency = "1ms"
[server]
server_ping_interval = "45s"
[[faults]]
at = "5m"
kind = "server_crash"
downtime = "40s"
"#,
    );
    let run = record_run(&crashing, 1);
    let interval_ms = crashing.server.server_ping_interval_ms;
    let end_ms = run.first("run end", |r| matches!(r, Record::RunEnded));
    let starts = run.times(|r| matches!(r, Record::ServerStarted));
    let stops = run.times(|r| matches!(r, Record::ServerStopped));
    assert_eq!(stops, [300_000], "one crash at 5m");
    assert_eq!(
        starts,
        [0, 340_000],
        "started at 0 and again after the downtime"
    );
    let mut expected = Vec::new();
    for (index, start_ms) in starts.iter().enumerate() {
        let until_ms = stops.get(index).copied().unwrap_or(end_ms);
        let mut t_ms = start_ms + 10_000;
        while t_ms < until_ms {
            expected.push(t_ms);
            t_ms += interval_ms;
        }
    }
    let pings = run.times(|r| matches!(r, Record::ServerPing));
    assert_eq!(pings, expected);
}

/// pr355 with reuse off, two jobs at a time for a while: agents finish jobs while others wait.
fn completions(delay: &str) -> Scenario {
    tiny(
        "job-status-listener",
        &format!(
            r#"duration = "10m"
settle = "20m"

[server]
job_completion_delay = "{delay}"

[plugin]
policy = "pr355"
enable_agent_reuse = false

[[jobs]]
kind = "poisson"
until = "10m"
per_minute = 3.0
profile = "small"
runtime = {{ min = "20s", max = "1m" }}
"#
        ),
    )
}

/// The agents that asked for work after their job completed and before the plugin disabled
/// them: the job-completion had not reached the plugin yet.
fn asked_before_disabled(run: &Recording) -> Vec<String> {
    let mut finished: BTreeSet<String> = BTreeSet::new();
    let mut raced = Vec::new();
    for event in &run.events {
        match &event.record {
            Record::JobCompleted { agent, .. } => {
                finished.insert(agent.clone());
            }
            Record::AgentConfig {
                agent,
                enabled: false,
            }
            | Record::JobAssigned { agent, .. } => {
                finished.remove(agent);
            }
            Record::ShouldAssignWork { agent, .. } if finished.remove(agent) => {
                raced.push(agent.clone());
            }
            _ => {}
        }
    }
    raced
}

#[test]
fn a_finished_agent_can_ask_for_work_before_the_job_status_listener_tells_the_plugin() {
    // gocd/gocd: completing a job posts a JobStatusMessage; JobStatusListener.onMessage calls
    // jobCompleted on its own thread, while the agent's get-work loop asks again at once.
    // With the listener's delay some get-works win the race; with 0 none can.
    let seeds = 1..=6;
    let raced: usize = seeds
        .clone()
        .map(|seed| asked_before_disabled(&record_run(&completions("5ms"), seed)).len())
        .sum();
    assert!(raced > 0, "no get-work ever beat the job-completion");
    for seed in seeds {
        let run = record_run(&completions("0s"), seed);
        let raced = asked_before_disabled(&run);
        assert!(
            raced.is_empty(),
            "seed {seed}: {raced:?} raced with delay 0"
        );
    }
}
