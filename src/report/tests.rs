//! Tests of the collector, metrics and tables on hand-built record sequences.

use super::{Collector, JobOutcome, RunInfo, classify, format, percentile_nearest_rank, tables};
use crate::check::{Kind, Violation};
use crate::trace::{Actor, Record};

fn scheduled(job: u64, logical: u64, environment: Option<&str>) -> Record {
    Record::JobScheduled {
        job,
        logical,
        profile: "small".to_owned(),
        environment: environment.map(str::to_owned),
        config: "H1".to_owned(),
    }
}

fn pod_created(pod: &str) -> Record {
    Record::PodCreated {
        pod: pod.to_owned(),
        job_label: None,
        config: "H1".to_owned(),
        by: Actor::Allocator,
    }
}

fn assigned(job: u64, agent: &str) -> Record {
    Record::JobAssigned {
        job,
        agent: agent.to_owned(),
        config: "H1".to_owned(),
    }
}

fn completed(job: u64, agent: &str) -> Record {
    Record::JobCompleted {
        job,
        agent: agent.to_owned(),
    }
}

fn registered(agent: &str) -> Record {
    Record::AgentRegistered {
        agent: agent.to_owned(),
        uuid: 1,
    }
}

fn running(pod: &str) -> Record {
    Record::PodRunning {
        pod: pod.to_owned(),
    }
}

fn fault_started(index: u32, fault: &str, target: &str) -> Record {
    Record::FaultStarted {
        index,
        fault: fault.to_owned(),
        target: target.to_owned(),
    }
}

fn feed(records: &[(u64, Record)]) -> Collector {
    let mut collector = Collector::new();
    for (t_ms, record) in records {
        collector.observe(*t_ms, record);
    }
    collector
}

/// Two pods, three jobs (job 3 reuses pod-a after job 1), a partition with start and end, an
/// instantaneous pod delete, an endless clock drift, and four samples. Run ends at 100 s.
fn workload() -> Vec<(u64, Record)> {
    vec![
        (0, scheduled(1, 1, None)),
        (0, scheduled(2, 2, Some("prod"))),
        (1_000, pod_created("pod-a")),
        (1_000, pod_created("pod-b")),
        (1_000, fault_started(0, "partition", "gocd/agents")),
        (3_000, running("pod-a")),
        (4_000, running("pod-b")),
        (5_000, registered("pod-a")),
        (5_000, Record::Sample),
        (6_000, registered("pod-b")),
        (7_000, assigned(1, "pod-a")),
        (8_000, assigned(2, "pod-b")),
        (
            9_000,
            Record::FaultEnded {
                index: 0,
                fault: "partition".to_owned(),
            },
        ),
        (10_000, Record::Sample),
        (20_000, scheduled(3, 3, None)),
        (27_000, completed(1, "pod-a")),
        (30_000, assigned(3, "pod-a")),
        (30_000, Record::Sample),
        (40_000, completed(3, "pod-a")),
        (50_000, completed(2, "pod-b")),
        (50_000, fault_started(1, "pod_delete", "idle")),
        (55_000, fault_started(2, "clock_drift", "replica-0")),
        (
            60_000,
            Record::PodDeleted {
                pod: "pod-b".to_owned(),
                by: Actor::Allocator,
            },
        ),
        (70_000, Record::Sample),
        (100_000, Record::RunEnded),
    ]
}

fn run_info() -> RunInfo {
    RunInfo {
        scenario: "burst".to_owned(),
        seed: 7,
        policy: crate::allocator::Policy::Pr355,
        variant: None,
        version: "0.1.0".to_owned(),
        verdict: "fail".to_owned(),
        failure_class: Some("safety".to_owned()),
        fingerprint: "ab12".to_owned(),
        events: 50_000,
        sim_ms: 100_000,
        wall_s: 0.5,
        reproduce: "cargo xtask sim scenarios/burst.toml --seed 7 --policy pr355".to_owned(),
        violations: vec![Violation {
            id: crate::check::InvariantId::JobWaitBound,
            kind: Kind::Always,
            at_ms: 301_500,
            objects: vec!["job:17".to_owned()],
            message: "job 17 waited 5m01s".to_owned(),
            context: vec![
                "300.0s job 17 scheduled".to_owned(),
                "301.5s bound".to_owned(),
            ],
            expected: false,
        }],
        expected_violations: Vec::new(),
        sometimes: vec![(crate::check::InvariantId::ReuseHappens, true)],
        not_applicable: Vec::new(),
        drawn: Vec::new(),
        max_job_wait_ms: 300_000,
        ablations: crate::ablation::Ablations::none(),
    }
}

fn csv_text(write: fn(&mut dyn std::io::Write, &Collector) -> std::io::Result<()>) -> String {
    let collector = feed(&workload());
    let mut bytes = Vec::new();
    write(&mut bytes, &collector).expect("writing to a Vec cannot fail");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

#[test]
fn jobs_csv_has_one_row_per_instance_with_waits_agents_and_reuse() {
    let expected = "\
job_id,logical_job,profile,environment,scheduled_at_s,assigned_at_s,completed_at_s,wait_s,\
agent_id,pod_reused,outcome
1,1,small,,0,7,27,7,pod-a,false,completed
2,2,small,prod,0,8,50,8,pod-b,false,completed
3,3,small,,20,30,40,10,pod-a,true,completed
";
    assert_eq!(csv_text(tables::write_jobs), expected);
}

#[test]
fn pods_csv_books_busy_from_assignment_and_idle_until_deletion_or_run_end() {
    // pod-a: idle 5–7, busy 7–27, idle 27–30, busy 30–40, idle 40–100 (run end).
    // pod-b: idle 6–8, busy 8–50, idle 50–60 (deleted).
    let expected = "\
pod,config_hash,created_at_s,running_at_s,registered_at_s,deleted_at_s,deleted_by,jobs_run,\
busy_s,idle_s
pod-a,H1,1,3,5,,,2,30,65
pod-b,H1,1,4,6,60,allocator,1,42,12
";
    assert_eq!(csv_text(tables::write_pods), expected);
}

#[test]
fn timeline_csv_samples_the_gauges_and_the_reuse_ratio_so_far() {
    let expected = "\
t_s,jobs_waiting,jobs_building,pods_pending,pods_running,agents_idle,agents_building,\
reuse_ratio,leader
5,2,0,0,2,1,0,0.0000,
10,0,2,0,2,0,2,0.0000,
30,0,2,0,2,0,2,0.3333,
70,0,0,0,1,1,0,0.3333,
";
    assert_eq!(csv_text(tables::write_timeline), expected);
}

#[test]
fn faults_csv_matches_ends_by_index_and_closes_instantaneous_faults_at_once() {
    let expected = "\
at_s,until_s,kind,target,replicas
1,9,partition,gocd/agents,
50,50,pod_delete,idle,
55,,clock_drift,replica-0,0
";
    assert_eq!(csv_text(tables::write_faults), expected);
}

#[test]
fn a_leader_fault_names_the_replicas_it_hits_as_the_world_resolved_them() {
    let lease = |holder: &str| Record::LeaseWritten {
        by: Actor::Replica(2),
        verb: "update".to_owned(),
        holder: holder.to_owned(),
        transitions: 0,
        rv_current: Some(1),
        rv_sent: Some(1),
        rv_new: 2,
    };
    let records = [
        (0, Record::ElectionStarted { replica: 0 }),
        (0, Record::ElectionStarted { replica: 1 }),
        (1, lease("agentk-2")),
        (2, fault_started(0, "partition", "leader|kube-api")),
        (3, fault_started(1, "partition", "replicas|kube-api")),
        (4, fault_started(2, "replica_pause", "replica-1")),
        (5, fault_started(3, "clock_drift", "replica-0 rate=0.5")),
        (6, fault_started(4, "api_outage", "error")),
        (7, fault_started(5, "partition", "gocd|kube-api")),
        (8, fault_started(6, "lease_delete", "lease")),
        (9, lease("")),
        (10, fault_started(7, "partition", "leader|kube-api")),
    ];
    let replicas: Vec<Option<Vec<u32>>> = feed(&records)
        .faults()
        .iter()
        .map(|row| row.replicas.clone())
        .collect();
    assert_eq!(
        replicas,
        [
            Some(vec![2]),
            Some(vec![0, 1, 2]),
            Some(vec![1]),
            Some(vec![0]),
            None,
            None,
            None,
            Some(vec![]),
        ]
    );
}

#[test]
fn a_job_never_assigned_counts_in_the_waits_with_its_wait_so_far() {
    // Job 9 is scheduled at 10 s and still waits when the run ends at 100 s: its wait is at
    // least 90 s, so the percentiles over 7, 8, 10 and (censored) 90 s are lower bounds.
    let mut records = workload();
    records.push((10_000, scheduled(9, 9, None)));
    records.push((100_000, Record::RunEnded));
    let metrics = feed(&records).metrics(&run_info());
    assert_eq!(metrics.waits_censored, 1);
    assert_eq!(
        metrics.wait_s_max, 90.0,
        "the censored wait, not the longest assigned one"
    );
    assert_eq!(metrics.wait_s_p50, 8.0, "rank 2 of 4");
    let terminal = super::terminal::summary(&run_info(), &metrics);
    assert!(terminal.contains("max ≥1m30s"), "{terminal}");
    assert!(terminal.contains("1 never assigned"), "{terminal}");
}

#[test]
fn metrics_count_reuse_waits_and_pod_seconds_from_records() {
    let metrics = feed(&workload()).metrics(&run_info());
    assert_eq!(metrics.jobs_total, 3);
    assert_eq!(metrics.jobs_completed, 3);
    assert_eq!(metrics.job_instances, 3);
    assert_eq!(metrics.reuse_ratio, 1.0 / 3.0);
    assert_eq!(metrics.pods_created, 2);
    assert_eq!(metrics.pods_per_job, 2.0 / 3.0);
    // Waits 7, 8 and 10 s: nearest rank 2 of 3 for p50, rank 3 for p95 and above.
    assert_eq!(metrics.wait_s_p50, 8.0);
    assert_eq!(metrics.wait_s_p95, 10.0);
    assert_eq!(metrics.wait_s_p99, 10.0);
    assert_eq!(metrics.wait_s_max, 10.0);
    assert_eq!(metrics.pod_seconds_busy, 72.0);
    assert_eq!(metrics.pod_seconds_idle, 77.0);
    assert_eq!(metrics.pod_seconds_pending, 5.0);
    assert_eq!(metrics.agent_utilisation, 72.0 / 149.0);
    assert_eq!(metrics.events, 50_000);
    assert_eq!(metrics.sim_s, 100.0);
    assert_eq!(metrics.events_per_s, 100_000.0);
    assert_eq!(metrics.compression, 200.0);
    // No leader records: every leader metric stays zero.
    assert_eq!((metrics.failovers, metrics.leader_changes), (0, 0));
    assert_eq!((metrics.no_leader_s, metrics.two_acting_s), (0.0, 0.0));
}

#[test]
fn a_rescheduled_instance_frees_its_agent_and_counts_once_as_a_logical_job() {
    let collector = feed(&[
        (0, scheduled(1, 1, None)),
        (0, pod_created("pod-a")),
        (1_000, running("pod-a")),
        (2_000, registered("pod-a")),
        (3_000, assigned(1, "pod-a")),
        (
            13_000,
            Record::JobRescheduled {
                job: 1,
                new_job: 2,
                reason: "hung".to_owned(),
            },
        ),
        (13_000, scheduled(2, 1, None)),
        (14_000, assigned(2, "pod-a")),
        (24_000, completed(2, "pod-a")),
        (30_000, Record::RunEnded),
    ]);
    let outcomes: Vec<(u64, JobOutcome, bool)> = collector
        .jobs()
        .map(|row| (row.job_id, row.outcome, row.pod_reused))
        .collect();
    // The agent never completed a job before job 2, so job 2 is not a reuse.
    assert_eq!(
        outcomes,
        [
            (1, JobOutcome::Rescheduled, false),
            (2, JobOutcome::Completed, false)
        ]
    );
    let pod = collector.pods().next().expect("one pod was created");
    // Busy 3–13 and 14–24; idle 2–3, 13–14 and 24–30.
    assert_eq!(
        (
            pod.busy_ms(collector.end_ms()),
            pod.idle_ms(collector.end_ms())
        ),
        (20_000, 8_000)
    );
    let metrics = collector.metrics(&run_info());
    assert_eq!(
        (
            metrics.jobs_total,
            metrics.jobs_completed,
            metrics.job_instances
        ),
        (1, 1, 2)
    );
    assert_eq!(metrics.reuse_ratio, 0.0);
}

#[test]
fn a_pod_that_never_runs_is_pending_until_deleted_and_never_idle() {
    let collector = feed(&[
        (0, pod_created("pod-a")),
        (0, pod_created("pod-b")),
        (
            4_000,
            Record::PodDeleted {
                pod: "pod-a".to_owned(),
                by: Actor::NodeLoss,
            },
        ),
        (5_000, Record::Sample),
        (9_000, Record::RunEnded),
    ]);
    let metrics = collector.metrics(&run_info());
    // pod-a pending 0–4 (deleted), pod-b pending 0–9 (run end).
    assert_eq!(metrics.pod_seconds_pending, 13.0);
    assert_eq!(
        (metrics.pod_seconds_idle, metrics.agent_utilisation),
        (0.0, 0.0)
    );
    assert_eq!(collector.timeline()[0].pods_pending, 1);
    let pod_a = collector.pods().next().expect("pod-a was created");
    assert_eq!(pod_a.deleted_by, Some(Actor::NodeLoss));
}

/// Replica 0 leads, pauses (still believing it leads) while replica 1 takes over, resumes and
/// steps down; replica 1 crashes and replica 0 leads again. Run ends at 40 s.
fn leadership() -> Vec<(u64, Record)> {
    let held = |replica, term| Record::LeaseHeld { replica, term };
    let leading = |replica, term| Record::LeadingStarted { replica, term };
    let module_started = |replica, term| Record::ModuleStarted {
        replica,
        module: "gitops".to_owned(),
        term,
    };
    vec![
        (0, Record::ReplicaStarted { replica: 0 }),
        (0, Record::ReplicaStarted { replica: 1 }),
        (1_000, held(0, 1)),
        (1_000, leading(0, 1)),
        (1_000, module_started(0, 1)),
        (2_000, Record::Sample),
        (5_000, held(0, 1)),
        (6_000, Record::ReplicaPaused { replica: 0 }),
        (20_000, held(1, 2)),
        (20_000, leading(1, 2)),
        (20_000, module_started(1, 2)),
        (21_000, Record::Sample),
        (22_000, Record::ReplicaResumed { replica: 0 }),
        (
            22_000,
            Record::LeadingStopped {
                replica: 0,
                term: 1,
            },
        ),
        (
            22_000,
            Record::ModuleStopped {
                replica: 0,
                module: "gitops".to_owned(),
            },
        ),
        (30_000, Record::ReplicaStopped { replica: 1 }),
        (31_000, Record::Sample),
        (34_000, leading(0, 3)),
        (40_000, Record::RunEnded),
    ]
}

#[test]
fn leader_metrics_measure_failovers_gaps_and_overlap() {
    let metrics = feed(&leadership()).metrics(&run_info());
    assert_eq!(metrics.leader_changes, 3);
    // 0 → 1: replica 0 had not stopped, so from its last renewal at 5 s to 20 s: 15 s.
    // 1 → 0: replica 1 crashed at 30 s, replica 0 led at 34 s: 4 s.
    assert_eq!(metrics.failovers, 2);
    assert_eq!(metrics.failover_s_max, 15.0);
    assert_eq!(metrics.failover_s_p95, 15.0);
    // Nobody led 0–1 s (first election) and 30–34 s.
    assert_eq!(metrics.no_leader_s, 5.0);
    // Both replicas ran a module from 20 s until replica 0 stopped its module at 22 s.
    assert_eq!(metrics.two_acting_s, 2.0);
}

#[test]
fn timeline_names_every_leader_and_has_a_leading_column_per_replica() {
    let collector = feed(&leadership());
    let mut bytes = Vec::new();
    tables::write_timeline(&mut bytes, &collector).expect("writing to a Vec cannot fail");
    let expected = "\
t_s,jobs_waiting,jobs_building,pods_pending,pods_running,agents_idle,agents_building,\
reuse_ratio,leader,leading_0,leading_1
2,0,0,0,0,0,0,0.0000,0,1,0
21,0,0,0,0,0,0,0.0000,0;1,1,1
31,0,0,0,0,0,0,0.0000,,0,0
";
    assert_eq!(String::from_utf8(bytes).expect("CSV is UTF-8"), expected);
}

#[test]
fn nearest_rank_percentiles_pick_observed_values() {
    let hundred: Vec<u64> = (1..=100).collect();
    let picks: Vec<Option<u64>> = [1, 50, 95, 99, 100]
        .iter()
        .map(|p| percentile_nearest_rank(&hundred, *p))
        .collect();
    assert_eq!(picks, [Some(1), Some(50), Some(95), Some(99), Some(100)]);
    let four = [10, 20, 30, 40];
    assert_eq!(percentile_nearest_rank(&four, 50), Some(20));
    assert_eq!(percentile_nearest_rank(&four, 51), Some(30));
    assert_eq!(percentile_nearest_rank(&four, 95), Some(40));
    assert_eq!(percentile_nearest_rank(&[7], 1), Some(7));
    assert_eq!(percentile_nearest_rank(&[], 50), None);
}

#[test]
fn metrics_map_has_the_serde_names_and_values() {
    let metrics = feed(&workload()).metrics(&run_info());
    let map = metrics.to_map();
    let json = serde_json::to_value(&metrics).expect("metrics serialise");
    let json_names: Vec<&String> = json
        .as_object()
        .expect("metrics serialise as an object")
        .keys()
        .collect();
    let map_names: Vec<&String> = map.keys().collect();
    assert_eq!(map_names, json_names);
    for (name, value) in &map {
        assert_eq!(json[name].as_f64(), Some(*value), "metric {name}");
    }
    assert_eq!(map["reuse_ratio"], 1.0 / 3.0);
}

#[test]
fn classify_separates_safety_from_liveness_failures() {
    let mut violation = run_info().violations[0].clone();
    assert_eq!(classify(&[]), ("pass", None));
    assert_eq!(
        classify(std::slice::from_ref(&violation)),
        ("fail", Some("safety"))
    );
    let mut liveness = violation.clone();
    liveness.kind = Kind::Eventually;
    assert_eq!(
        classify(std::slice::from_ref(&liveness)),
        ("fail", Some("liveness"))
    );
    violation.kind = Kind::Always;
    assert_eq!(classify(&[violation, liveness]), ("fail", Some("both")));
}

#[test]
fn seconds_are_written_exactly_without_trailing_zeros() {
    let texts: Vec<String> = [0, 7, 1_000, 301_500, 12_345]
        .into_iter()
        .map(format::seconds_text)
        .collect();
    assert_eq!(texts, ["0", "0.007", "1", "301.5", "12.345"]);
    assert_eq!(format::duration_text(14.24), "14.2s");
    assert_eq!(format::duration_text(301.5), "5m02s");
    assert_eq!(format::duration_text(3_723.0), "1h02m03s");
    assert_eq!(format::number_text(2.0 / 3.0), "0.667");
    assert_eq!(format::number_text(40.0), "40");
}

mod output;
