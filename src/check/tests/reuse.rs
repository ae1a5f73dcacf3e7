use super::{assigned, bounds, clean_life, completed, deleted, of, reuse_bounds, run, scheduled};
use crate::check::InvariantId;
use crate::check::Kind;
use crate::trace::{Actor, Record};

/// A pod that registers at 3 s and runs job 1 from 4 s to 8 s: idle from 8 s, and the
/// plugin hears of it at once (its job-completion decision at 8 s).
fn idle_from_eight_seconds(pod: &str) -> Vec<(u64, Record)> {
    let mut records = clean_life(0, 1, pod);
    records.truncate(6);
    records.push((8_000, completion_heard(1, pod)));
    records
}

/// The allocator's decision on the job-completion of `job` on `pod`: the plugin heard of it.
fn completion_heard(job: u64, pod: &str) -> Record {
    Record::Decision {
        job: Some(job),
        pod: Some(pod.to_owned()),
        code: "complete-idle".to_owned(),
        text: format!("job {job} completed on pod {pod}"),
    }
}

#[test]
fn the_allocator_deleting_a_reusable_pod_idle_less_than_idle_timeout_violates() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((20_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 100_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1);
    assert_eq!(early[0].at_ms, 20_000);
    assert_eq!(early[0].objects, vec!["pod:pod-a".to_owned()]);
    assert!(
        early[0].message.contains("idle for 12.000s"),
        "{}",
        early[0].message
    );
}

#[test]
fn deleting_a_pod_idle_between_idle_and_idle_plus_ping_is_fine() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((58_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::IdleTimeout).is_empty());
}

#[test]
fn idle_is_measured_from_the_last_completion_not_from_creation() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((9_000, scheduled(2, 2, "H")));
    records.push((10_000, assigned(2, "pod-a", "H")));
    records.push((55_000, completed(2, "pod-a")));
    records.push((70_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 100_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1);
    assert_eq!(early[0].at_ms, 70_000);
}

#[test]
fn a_pod_never_reusable_may_be_deleted_early() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((
        9_000,
        Record::ContainerRestarted {
            pod: "pod-a".to_owned(),
            restart_count: 1,
        },
    ));
    records.push((10_000, deleted("pod-a", Actor::Allocator)));
    let mut edited = idle_from_eight_seconds("pod-b");
    let edit = Record::ProfileEdited {
        profile: "small".to_owned(),
        config: "H2".to_owned(),
    };
    edited.push((9_000, edit));
    edited.push((10_000, deleted("pod-b", Actor::Allocator)));
    for records in [records, edited] {
        let violations = run(&reuse_bounds(), &records, 100_000);
        assert!(of(&violations, InvariantId::IdleTimeout).is_empty());
    }
}

#[test]
fn an_idle_reusable_pod_still_alive_past_idle_plus_ping_violates_at_that_deadline() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((90_000, Record::Sample));
    let violations = run(&reuse_bounds(), &records, 100_000);
    let late = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].at_ms, 68_000);
    assert!(
        late[0].message.contains("still existed"),
        "{}",
        late[0].message
    );
}

#[test]
fn a_server_outage_gives_the_restarted_plugin_a_fresh_idle_window() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((20_000, Record::ServerStopped));
    records.push((30_000, Record::ServerStarted));
    records.push((85_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::IdleTimeout).is_empty());
}

#[test]
fn idle_timeout_is_not_judged_without_reuse() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((20_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::IdleTimeout).is_empty());
}

#[test]
fn reuse_enabled_without_any_reuse_is_a_sometimes_violation() {
    let violations = run(&reuse_bounds(), &clean_life(0, 1, "pod-a"), 100_000);
    let reuse = of(&violations, InvariantId::ReuseHappens);
    assert_eq!(reuse.len(), 1);
    assert_eq!(reuse[0].kind, Kind::Sometimes);
    assert_eq!(reuse[0].at_ms, 100_000);
}

#[test]
fn a_second_job_on_an_agent_that_completed_one_is_reuse() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((9_000, scheduled(2, 2, "H")));
    records.push((10_000, assigned(2, "pod-a", "H")));
    let violations = run(&reuse_bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::ReuseHappens).is_empty());
}

#[test]
fn a_crash_after_which_no_old_pod_runs_a_job_is_a_sometimes_violation() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((10_000, Record::ServerStopped));
    records.push((20_000, Record::ServerStarted));
    records.extend(clean_life(30_000, 2, "pod-b"));
    let violations = run(&bounds(), &records, 100_000);
    let recovers = of(&violations, InvariantId::RestartRecovers);
    assert_eq!(recovers.len(), 1);
    assert_eq!(recovers[0].kind, Kind::Sometimes);
    assert!(
        recovers[0].message.contains("stopped 1 time"),
        "{}",
        recovers[0].message
    );
}

#[test]
fn an_old_pod_running_a_job_after_the_restart_is_recovery_and_no_crash_needs_none() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((10_000, Record::ServerStopped));
    records.push((20_000, Record::ServerStarted));
    records.push((30_000, scheduled(2, 2, "H")));
    records.push((31_000, assigned(2, "pod-a", "H")));
    let violations = run(&bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::RestartRecovers).is_empty());
    let violations = run(&bounds(), &idle_from_eight_seconds("pod-b"), 100_000);
    assert!(of(&violations, InvariantId::RestartRecovers).is_empty());
}

#[test]
fn an_agent_idle_since_registration_gets_one_more_ping_before_it_must_be_gone() {
    // Registered at 3 s, never given a job: IDLE + PING + PING = 70 s later.
    let mut records = clean_life(0, 1, "pod-a");
    records.truncate(4);
    records.push((72_000, Record::Sample));
    let violations = run(&reuse_bounds(), &records, 72_500);
    assert!(of(&violations, InvariantId::IdleTimeout).is_empty());
    let violations = run(&reuse_bounds(), &records, 100_000);
    let late = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].at_ms, 73_000);
}

#[test]
fn a_partition_between_the_plugin_and_the_api_delays_the_idle_deadline() {
    // Idle from 8 s: deadline 68 s; a 30 s partition from 40 s moves it by 30 s + PING.
    let mut records = idle_from_eight_seconds("pod-a");
    let cut = Record::FaultStarted {
        index: 0,
        fault: "partition".to_owned(),
        target: "kube-api|gocd".to_owned(),
    };
    records.push((40_000, cut));
    let healed = Record::FaultEnded {
        index: 0,
        fault: "partition".to_owned(),
    };
    records.push((70_000, healed));
    records.push((100_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 200_000);
    assert!(of(&violations, InvariantId::IdleTimeout).is_empty());
    records.pop();
    let violations = run(&reuse_bounds(), &records, 200_000);
    let late = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].at_ms, 108_000);
}

#[test]
fn a_failed_pod_is_never_reusable_and_may_be_deleted_early() {
    let mut records = idle_from_eight_seconds("pod-a");
    let failed = Record::PodPhase {
        pod: "pod-a".to_owned(),
        phase: "Failed".to_owned(),
    };
    records.push((9_000, failed));
    records.push((10_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::IdleTimeout).is_empty());
}

/// The `cluster_profile_edited` record of an edit that sets reuse and the idle timeout (the
/// other values as in the bounds).
fn cluster_edited(enable_agent_reuse: bool, idle_timeout_ms: u64) -> Record {
    Record::ClusterProfileEdited {
        cluster: "cluster-profile".to_owned(),
        pending_pods_count: 2,
        enable_agent_reuse,
        auto_register_timeout_ms: 30_000,
        idle_timeout_ms,
        max_pods: None,
    }
}

#[test]
fn with_reuse_switched_off_idle_pods_may_go_at_once_and_owe_no_deadline() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.extend(idle_from_eight_seconds("pod-b"));
    records.sort_by_key(|(t_ms, _)| *t_ms);
    records.push((9_000, cluster_edited(false, 50_000)));
    records.push((10_000, deleted("pod-a", Actor::Allocator)));
    // pod-b lives past its old deadline (68 s): no longer owed.
    let violations = run(&reuse_bounds(), &records, 100_000);
    assert!(
        of(&violations, InvariantId::IdleTimeout).is_empty(),
        "{violations:?}"
    );
}

#[test]
fn reuse_switched_back_on_judges_only_pods_created_afterwards() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((9_000, cluster_edited(false, 50_000)));
    records.push((10_000, cluster_edited(true, 50_000)));
    // pod-a existed while reuse was off: a request queued then may still delete it.
    records.push((12_000, deleted("pod-a", Actor::Allocator)));
    let mut later: Vec<(u64, Record)> = idle_from_eight_seconds("pod-b")
        .into_iter()
        .map(|(t_ms, record)| (t_ms + 20_000, record))
        .collect();
    records.append(&mut later);
    records.push((30_000, deleted("pod-b", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 100_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1, "{violations:?}");
    assert_eq!(early[0].objects, vec!["pod:pod-b".to_owned()]);
    assert!(early[0].message.contains("idle for 2.000s"));
}

#[test]
fn a_lowered_idle_timeout_allows_the_earlier_delete_of_a_pod_idle_across_the_edit() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((9_000, cluster_edited(true, 20_000)));
    records.push((33_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 100_000);
    assert!(
        of(&violations, InvariantId::IdleTimeout).is_empty(),
        "{violations:?}"
    );
    // Without the edit the same delete (idle 25 s < 50 s) is early.
    records.remove(7);
    let violations = run(&reuse_bounds(), &records, 100_000);
    assert_eq!(of(&violations, InvariantId::IdleTimeout).len(), 1);
}

#[test]
fn a_raised_idle_timeout_moves_the_deadline_out() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((9_000, cluster_edited(true, 80_000)));
    records.push((150_000, Record::Sample));
    let violations = run(&reuse_bounds(), &records, 200_000);
    let late = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(late.len(), 1, "{violations:?}");
    // idle from 8 s + IDLE 80 s + PING 10 s (it was 68 s before the edit).
    assert_eq!(late[0].at_ms, 98_000);
}

/// An API outage from 20 s to `heal_ms`; the pod, idle from 8 s, runs job 2 from 30 s to
/// 40 s inside it, and the server is down from 45 s to 55 s.
fn assigned_and_freed_inside_an_outage(heal_ms: u64) -> Vec<(u64, Record)> {
    let mut records = idle_from_eight_seconds("pod-a");
    let outage = Record::FaultStarted {
        index: 0,
        fault: "api_outage".to_owned(),
        target: "error".to_owned(),
    };
    let healed = Record::FaultEnded {
        index: 0,
        fault: "api_outage".to_owned(),
    };
    let mut rest = vec![
        (20_000, outage),
        (30_000, assigned(2, "pod-a", "H")),
        (40_000, completed(2, "pod-a")),
        (45_000, Record::ServerStopped),
        (55_000, Record::ServerStarted),
        (heal_ms, healed),
    ];
    rest.sort_by_key(|(t_ms, _)| *t_ms);
    records.extend(rest);
    records
}

/// Found by `explore/elastic.toml` under `safe` (seeds 20 and 37 of 1–40): a pod assigned
/// and freed inside one API outage the server crashed in still carries its earlier idle
/// start, and the restarted plugin deletes it IDLE after that one. No plugin without
/// storage of its own can know better: the delete is expected, with the window named.
#[test]
fn a_delete_honouring_the_idle_start_the_lost_writes_left_is_expected() {
    let mut records = assigned_and_freed_inside_an_outage(59_000);
    // IDLE (50 s) after the earlier idle start (8 s), 20 s after job 2 ended.
    records.push((60_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 200_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1);
    assert!(early[0].expected, "{:?}", early[0]);
    assert!(
        early[0].message.contains("lost-writes fault budget")
            && early[0].message.contains("idle start t=8.000s"),
        "{}",
        early[0].message
    );
}

#[test]
fn a_delete_before_even_the_earlier_idle_period_ran_out_fails() {
    let mut records = assigned_and_freed_inside_an_outage(59_000);
    records.push((57_000, deleted("pod-a", Actor::Allocator)));
    records.sort_by_key(|(t_ms, _)| *t_ms);
    let violations = run(&reuse_bounds(), &records, 200_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1);
    assert!(!early[0].expected, "{:?}", early[0]);
}

fn request_done() -> Record {
    Record::PluginRequestDone { request: 9 }
}

#[test]
fn an_outage_that_ends_before_a_request_before_the_crash_leaves_no_excuse() {
    // The plugin reaches the API from 44 s and finishes a request at 44.5 s: it can write
    // the idle start of 40 s.
    let mut records = assigned_and_freed_inside_an_outage(44_000);
    records.push((44_500, request_done()));
    records.sort_by_key(|(t_ms, _)| *t_ms);
    records.push((60_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 200_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1);
    assert!(!early[0].expected, "{:?}", early[0]);
}

#[test]
fn an_assignment_before_the_outage_leaves_no_excuse() {
    // The assignment's write lands (no idle start on the pod): the restarted plugin starts
    // the idle clock when it sees the pod idle, so an early delete is a defect.
    let mut records = assigned_and_freed_inside_an_outage(59_000);
    for (t_ms, record) in &mut records {
        if matches!(record, Record::FaultStarted { .. }) {
            *t_ms = 35_000;
        }
    }
    records.sort_by_key(|(t_ms, _)| *t_ms);
    records.push((60_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 200_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1);
    assert!(!early[0].expected, "{:?}", early[0]);
}

/// Issue 48: the assignment's write is lost in a first outage, a second one starts 3.7 s
/// after the first ended with no plugin request between them, and the job ends and the server
/// crashes inside the second: the plugin never had the chance to repair the pod, so the
/// restarted plugin's delete IDLE after the earlier idle start is inside the budget.
fn two_outages_with_the_crash_in_the_second(request_between: bool) -> Vec<(u64, Record)> {
    let mut records = idle_from_eight_seconds("pod-a");
    let start = |index| Record::FaultStarted {
        index,
        fault: "api_outage".to_owned(),
        target: "error".to_owned(),
    };
    let end = |index| Record::FaultEnded {
        index,
        fault: "api_outage".to_owned(),
    };
    let mut rest = vec![
        (20_000, start(0)),
        (30_000, assigned(2, "pod-a", "H")),
        (32_000, end(0)),
        (35_700, start(1)),
        (40_000, completed(2, "pod-a")),
        (45_000, Record::ServerStopped),
        (55_000, Record::ServerStarted),
        (59_000, end(1)),
        (60_000, deleted("pod-a", Actor::Allocator)),
    ];
    if request_between {
        rest.push((33_000, request_done()));
    }
    // A request inside an outage repairs nothing.
    rest.push((38_000, request_done()));
    rest.sort_by_key(|(t_ms, _)| *t_ms);
    records.extend(rest);
    records
}

#[test]
fn two_outages_with_no_plugin_request_between_them_stay_inside_the_lost_writes_budget() {
    let records = two_outages_with_the_crash_in_the_second(false);
    let violations = run(&reuse_bounds(), &records, 200_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1);
    assert!(early[0].expected, "{:?}", early[0]);
}

#[test]
fn a_plugin_request_with_the_api_reachable_between_the_outages_leaves_no_excuse() {
    let records = two_outages_with_the_crash_in_the_second(true);
    let violations = run(&reuse_bounds(), &records, 200_000);
    let early = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(early.len(), 1);
    assert!(!early[0].expected, "{:?}", early[0]);
}

fn scheduled_on(pod: &str, node: &str) -> Record {
    Record::PodScheduled {
        pod: pod.to_owned(),
        node: node.to_owned(),
    }
}

/// explore/elastic seeds 231, 343, 1011, 1405, 1715, 1743, 1795, 1837 under `safe`: an idle
/// pod on a node lost after it became idle has no container and is kept until eviction.
#[test]
fn an_idle_pod_on_a_lost_node_owes_no_idle_deadline_and_may_go_early() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.insert(2, (1_500, scheduled_on("pod-a", "node-1")));
    records.push((
        9_000,
        Record::NodeLost {
            node: "node-1".to_owned(),
        },
    ));
    let mut kept = records.clone();
    kept.push((90_000, Record::Sample));
    let violations = run(&reuse_bounds(), &kept, 100_000);
    assert!(
        of(&violations, InvariantId::IdleTimeout).is_empty(),
        "{violations:?}"
    );
    records.push((10_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &records, 100_000);
    assert!(
        of(&violations, InvariantId::IdleTimeout).is_empty(),
        "{violations:?}"
    );
    // Another node's loss changes nothing.
    let mut other = idle_from_eight_seconds("pod-a");
    other.insert(2, (1_500, scheduled_on("pod-a", "node-1")));
    other.push((
        9_000,
        Record::NodeLost {
            node: "node-2".to_owned(),
        },
    ));
    other.push((90_000, Record::Sample));
    let violations = run(&reuse_bounds(), &other, 100_000);
    assert_eq!(of(&violations, InvariantId::IdleTimeout).len(), 1);
}

/// explore/elastic seed 10426 under `safe`: the restarted plugin first saw an idle pod at a
/// list 10 s after the restart and started its clock then; the ping IDLE after that came
/// 0.1 s short of it, so the pod went one PING later. The restarted plugin gets a PING to see
/// the pod before its IDLE + PING runs.
#[test]
fn the_restarted_plugin_gets_a_ping_to_see_an_idle_pod_before_its_idle_window_runs() {
    let mut records = idle_from_eight_seconds("pod-a");
    records.push((20_000, Record::ServerStopped));
    records.push((30_000, Record::ServerStarted));
    let mut kept = records.clone();
    // Restart 30 s + PING 10 s + IDLE 50 s + PING 10 s = 100 s.
    kept.push((95_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &kept, 200_000);
    assert!(
        of(&violations, InvariantId::IdleTimeout).is_empty(),
        "{violations:?}"
    );
    records.push((150_000, Record::Sample));
    let violations = run(&reuse_bounds(), &records, 200_000);
    let late = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(late.len(), 1, "{violations:?}");
    assert_eq!(late[0].at_ms, 100_000);
}

fn agent_state(pod: &str, state: crate::trace::AgentRuntime) -> Record {
    Record::AgentState {
        agent: pod.to_owned(),
        state,
    }
}

/// explore/elastic seed 1999: an agents|gocd cut kept a registered idle agent Missing at the
/// restarted server; `safe` never deletes a pod whose agent may be building, so the idle
/// deadline counts from the agent's return: IDLE + PING + PING after it is Idle again.
#[test]
fn an_idle_agent_away_from_the_server_gets_its_idle_window_from_its_return() {
    use crate::trace::AgentRuntime;
    let mut records = idle_from_eight_seconds("pod-a");
    // Away from 20 s (its deadline 68 s passes unjudged) until 80 s.
    records.push((20_000, agent_state("pod-a", AgentRuntime::Missing)));
    records.push((80_000, agent_state("pod-a", AgentRuntime::Idle)));
    let mut kept = records.clone();
    // Back at 80 s + IDLE 50 s + PING 10 s + PING 10 s = 150 s.
    kept.push((145_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&reuse_bounds(), &kept, 300_000);
    assert!(
        of(&violations, InvariantId::IdleTimeout).is_empty(),
        "{violations:?}"
    );
    records.push((200_000, Record::Sample));
    let violations = run(&reuse_bounds(), &records, 300_000);
    let late = of(&violations, InvariantId::IdleTimeout);
    assert_eq!(late.len(), 1, "{violations:?}");
    assert_eq!(late[0].at_ms, 150_000);
}

/// Pod-a idle from 8 s, its job-completion not yet heard; PING 10 s, IDLE 50 s.
fn idle_from_eight_seconds_unheard() -> Vec<(u64, Record)> {
    let mut records = idle_from_eight_seconds("pod-a");
    records.pop();
    records
}

/// The time of the one `idle-timeout` violation of `records`, run to 200 s.
fn late_at(records: &[(u64, Record)]) -> Option<u64> {
    let violations = run(&reuse_bounds(), records, 200_000);
    let late = of(&violations, InvariantId::IdleTimeout);
    assert!(late.len() <= 1, "{late:?}");
    late.first().map(|violation| violation.at_ms)
}

#[test]
fn a_job_completion_the_plugin_has_not_heard_of_gets_one_more_ping() {
    // The job-status listener may hold it: the plugin knows by the next server-ping at the
    // latest, a PING after the end (elastic-slow seed 1067).
    let mut records = idle_from_eight_seconds_unheard();
    records.push((77_000, deleted("pod-a", Actor::Allocator)));
    assert_eq!(late_at(&records), None);
    records.pop();
    records.push((190_000, Record::Sample));
    assert_eq!(late_at(&records), Some(78_000));
}

#[test]
fn the_deadline_counts_from_the_first_of_the_late_completion_and_the_next_ping() {
    // Heard at 12 s: deadline 12 + IDLE + PING.
    let mut late_completion = idle_from_eight_seconds_unheard();
    late_completion.push((12_000, completion_heard(1, "pod-a")));
    late_completion.push((15_000, Record::ServerPing));
    late_completion.push((190_000, Record::Sample));
    assert_eq!(late_at(&late_completion), Some(72_000));
    // The ping at 15 s shows the agent idle before the completion comes at 17 s.
    let mut ping_first = idle_from_eight_seconds_unheard();
    ping_first.push((15_000, Record::ServerPing));
    ping_first.push((17_000, completion_heard(1, "pod-a")));
    ping_first.push((74_000, deleted("pod-a", Actor::Allocator)));
    assert_eq!(late_at(&ping_first), None);
    ping_first.pop();
    ping_first.push((190_000, Record::Sample));
    assert_eq!(late_at(&ping_first), Some(75_000));
}

#[test]
fn the_completion_of_another_job_tells_nothing_about_this_idle_period() {
    let mut records = idle_from_eight_seconds_unheard();
    records.push((9_000, completion_heard(7, "pod-a")));
    records.push((190_000, Record::Sample));
    assert_eq!(late_at(&records), Some(78_000));
}
