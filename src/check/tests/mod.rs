//! Tests for the elastic-agent monitors and the checker: for every monitor one record
//! sequence that breaks it and one close sequence that does not.

mod agents;
mod capacity;
mod checker;
mod jobs;
mod late_kill;
mod pods;
mod reuse;
mod wait_budget;

use super::{Bounds, CapacityBounds, Checker, LateKillBounds, Violation, WaitBounds};
use crate::check::InvariantId;
use crate::trace::{Actor, Record};

/// Small bounds so sequences stay short: wait 60 s, 2 pending pods, ART 30 s, PING 10 s,
/// IDLE 50 s.
fn bounds() -> Bounds {
    Bounds {
        max_job_wait_ms: 60_000,
        pending_pods_count: 2,
        auto_register_timeout_ms: 30_000,
        server_ping_interval_ms: 10_000,
        idle_timeout_ms: 50_000,
        call_slack_ms: 0,
        agent_connection_timeout_ms: 300_000,
        reuse_enabled: false,
        idle_timeout_enforced: true,
        capacity: CapacityBounds {
            nodes: 2,
            pods_per_node: 2,
            replace_after_ms: 120_000,
        },
        wait: WaitBounds { resend_ms: 20_000 },
        late_kill: LateKillBounds {
            build_max_ms: std::sync::Arc::new([("small".to_owned(), 600_000)].into()),
            agent_connection_timeout_ms: 300_000,
            hung_job_check_ms: 30_000,
            ping_ms: 10_000,
            max_job_wait_ms: 60_000,
        },
    }
}

fn reuse_bounds() -> Bounds {
    Bounds {
        reuse_enabled: true,
        idle_timeout_enforced: true,
        ..bounds()
    }
}

/// Feed `records` to a fresh checker and finish at `end_ms`.
fn run(bounds: &Bounds, records: &[(u64, Record)], end_ms: u64) -> Vec<Violation> {
    let mut checker = Checker::new(bounds, &[], Vec::new());
    for (t_ms, record) in records {
        checker.observe(*t_ms, record);
    }
    checker.finish(end_ms)
}

/// The violations of one invariant.
fn of(violations: &[Violation], id: InvariantId) -> Vec<&Violation> {
    violations
        .iter()
        .filter(|violation| violation.id == id)
        .collect()
}

fn scheduled(job: u64, logical: u64, config: &str) -> Record {
    Record::JobScheduled {
        job,
        logical,
        profile: "small".to_owned(),
        environment: None,
        config: config.to_owned(),
    }
}

fn assigned(job: u64, agent: &str, config: &str) -> Record {
    Record::JobAssigned {
        job,
        agent: agent.to_owned(),
        config: config.to_owned(),
    }
}

fn completed(job: u64, agent: &str) -> Record {
    Record::JobCompleted {
        job,
        agent: agent.to_owned(),
    }
}

fn created(pod: &str, job: u64, config: &str) -> Record {
    Record::PodCreated {
        pod: pod.to_owned(),
        job_label: Some(job),
        config: config.to_owned(),
        by: Actor::Allocator,
    }
}

fn running(pod: &str) -> Record {
    Record::PodRunning {
        pod: pod.to_owned(),
    }
}

fn registered(agent: &str) -> Record {
    Record::AgentRegistered {
        agent: agent.to_owned(),
        uuid: 1,
    }
}

fn deleted(pod: &str, by: Actor) -> Record {
    Record::PodDeleted {
        pod: pod.to_owned(),
        by,
    }
}

fn agent_deleted(agent: &str) -> Record {
    Record::AgentDeleted {
        agent: agent.to_owned(),
    }
}

fn decision(job: u64, code: &str, text: &str) -> Record {
    Record::Decision {
        job: Some(job),
        pod: Some("pod-a".to_owned()),
        code: code.to_owned(),
        text: text.to_owned(),
    }
}

/// One job's whole clean life on its own pod, starting at `t_ms` (ends by `t_ms + 9_000`).
fn clean_life(t_ms: u64, job: u64, pod: &str) -> Vec<(u64, Record)> {
    vec![
        (t_ms, scheduled(job, job, "H")),
        (t_ms + 1_000, created(pod, job, "H")),
        (t_ms + 2_000, running(pod)),
        (t_ms + 3_000, registered(pod)),
        (t_ms + 4_000, assigned(job, pod, "H")),
        (t_ms + 8_000, completed(job, pod)),
        (t_ms + 9_000, agent_deleted(pod)),
        (t_ms + 9_000, deleted(pod, Actor::Allocator)),
    ]
}
