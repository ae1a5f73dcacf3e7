//! The server: server-ping queueing and held get-work requests in its plugin host, and its
//! next deadline.

use super::{Server, ServerInput, ServerOut, ServerSettings, ServerTimer};
use crate::allocator::{ClusterProfile, Policy};
use crate::component::{Component, Random};
use crate::resources::{KubeReply, PodList};
use crate::trace::Record;
use std::collections::{BTreeMap, BTreeSet};

const INTERVAL_MS: u64 = 60_000;

/// The server draws nothing: a draw fails the test.
struct NoDraws;

impl Random for NoDraws {
    fn next_u64(&mut self) -> u64 {
        panic!("the server drew a random number")
    }
}

/// Hand `input` to `server` at `now_ms`; what it asked for.
fn step(server: &mut Server, now_ms: u64, input: ServerInput) -> ServerOut {
    let mut out = ServerOut::default();
    server.handle(now_ms, input, &mut NoDraws, &mut out);
    out
}

/// A server that is down (not started yet).
fn stopped_server() -> Server {
    let settings = ServerSettings {
        job_starvation_timeout_ms: 120_000,
        server_ping_interval_ms: INTERVAL_MS,
        assignment_interval_ms: 5_000,
        agent_connection_timeout_ms: 300_000,
        hung_job_check_interval_ms: 30_000,
        auto_register_key_ttl_ms: 30 * 60_000,
        create_agent_threads: 5,
        policy: Policy::Upstream,
        cluster_profile: ClusterProfile::default(),
        cancel_kill_ms: 10_000,
        job_completion_delay_ms: 0,
        ablations: crate::ablation::Ablations::none(),
    };
    let profiles = BTreeMap::from([("p".to_owned(), BTreeMap::new())]);
    Server::new(settings, profiles)
}

/// A server started at 0 as process 2.
fn server() -> Server {
    let mut server = stopped_server();
    step(&mut server, 0, ServerInput::Start { process_id: 2 });
    server
}

fn pings(out: &ServerOut) -> usize {
    let is_ping = |record: &&Record| matches!(record, Record::ServerPing);
    out.records.iter().filter(is_ping).count()
}

/// A ping starts at 10 s and its pod listing is answered at `answered_ms`; the heartbeat
/// fired again at 70 s meanwhile. Returns how many pings started at the answer.
fn second_ping_started_at(answered_ms: u64) -> usize {
    let mut server = server();
    let mut out = step(&mut server, 10_000, ServerInput::Timer(ServerTimer::Ping));
    assert_eq!(pings(&out), 1);
    let (call, _) = out.kube_calls.pop().expect("the ping lists pods");
    let out = step(&mut server, 70_000, ServerInput::Timer(ServerTimer::Ping));
    assert_eq!(
        pings(&out),
        0,
        "the ping thread is busy: the message waits in the queue"
    );
    let result = Ok(KubeReply::Pods(PodList::default()));
    let out = step(&mut server, answered_ms, ServerInput::Kube { call, result });
    pings(&out)
}

#[test]
fn a_ping_that_takes_longer_than_the_interval_delays_the_next_one_instead_of_dropping_it() {
    // Posted at 70 s, taken at 80 s: 10 s in the queue, within the TTL (60 s - 10 s).
    assert_eq!(second_ping_started_at(80_000), 1);
}

#[test]
fn a_queued_ping_older_than_the_heartbeat_minus_ten_seconds_expires() {
    // Taken at 120 s it would be exactly 50 s old: still live; at 120.001 s it has expired.
    assert_eq!(second_ping_started_at(120_000), 1);
    assert_eq!(second_ping_started_at(120_001), 0);
}

/// Take `out`'s timers into `unfired`, the timers asked for that have not fired yet.
fn arm(unfired: &mut BTreeSet<(u64, ServerTimer)>, out: &ServerOut) {
    unfired.extend(out.timers.iter().copied());
}

#[test]
fn next_deadline_is_the_earliest_timer_asked_for_that_has_not_fired() {
    let mut server = stopped_server();
    assert_eq!(
        server.next_deadline(),
        None,
        "a stopped server waits for nothing"
    );
    let mut unfired = BTreeSet::new();
    let out = step(&mut server, 0, ServerInput::Start { process_id: 2 });
    arm(&mut unfired, &out);
    assert_eq!(unfired.len(), 4, "one timer of each kind");
    assert_eq!(
        server.next_deadline(),
        Some(5_000),
        "the agent refresh comes first"
    );
    let mut fired = 0;
    // Fire the timers in due order, as the world's queue does, with jobs arriving between.
    while let Some((at_ms, timer)) = unfired.pop_first().filter(|(at, _)| *at <= 300_000) {
        if fired % 7 == 0 {
            let job = ServerInput::ScheduleJob {
                logical: None,
                profile: "p".to_owned(),
                environment: None,
                runtime_ms: 60_000,
            };
            assert!(step(&mut server, at_ms, job).timers.is_empty());
        }
        let out = step(&mut server, at_ms, ServerInput::Timer(timer));
        arm(&mut unfired, &out);
        fired += 1;
        let earliest = unfired.first().map(|&(at, _)| at);
        assert_eq!(
            server.next_deadline(),
            earliest,
            "after {timer:?} at {at_ms}"
        );
    }
    assert!(
        fired > 60,
        "every kind fired several times ({fired} firings)"
    );
    // A crashed process's timers never fire: the world drops them with its epoch.
    step(&mut server, 300_500, ServerInput::Crash);
    assert_eq!(
        server.next_deadline(),
        None,
        "a crashed server waits for nothing"
    );
    step(&mut server, 400_000, ServerInput::Start { process_id: 3 });
    assert_eq!(
        server.next_deadline(),
        Some(405_000),
        "the restart arms its timers anew"
    );
}

/// The image of every pod the plugin asks to create from `out` on, answering its pod
/// listings with an empty list and its creates with a server error at `now_ms`.
fn created_images(server: &mut Server, now_ms: u64, out: ServerOut) -> Vec<String> {
    use crate::resources::KubeRequest;
    let (mut calls, mut images) = (out.kube_calls, Vec::new());
    while let Some((call, request)) = calls.pop() {
        match request {
            KubeRequest::CreatePod { template } => {
                images.push(template.image);
                let result = Err(crate::resources::KubeError::ServerError);
                calls.extend(step(server, now_ms, ServerInput::Kube { call, result }).kube_calls);
            }
            KubeRequest::ListPods { .. } => {
                let result = Ok(KubeReply::Pods(PodList::default()));
                calls.extend(step(server, now_ms, ServerInput::Kube { call, result }).kube_calls);
            }
            other => panic!("unexpected call {other:?}"),
        }
    }
    images
}

#[test]
fn a_job_keeps_the_profiles_of_its_scheduling_after_an_edit() {
    // gocd/gocd freezes a job's elastic and cluster profile at scheduling
    // (`JobInstanceSqlMapDao.save`, read back by `loadPlan`): create-agent sends the plan's
    // copy, and so the pod carries the image of the moment the job was scheduled.
    let mut server = stopped_server();
    server.profiles = BTreeMap::from([(
        "p".to_owned(),
        BTreeMap::from([("Image".to_owned(), "old".to_owned())]),
    )]);
    step(&mut server, 0, ServerInput::Start { process_id: 2 });
    let schedule = |logical| ServerInput::ScheduleJob {
        logical,
        profile: "p".to_owned(),
        environment: None,
        runtime_ms: 1_000,
    };
    let first = step(&mut server, 1_000, schedule(None));
    let set = BTreeMap::from([("image".to_owned(), "new".to_owned())]);
    let profile = "p".to_owned();
    step(
        &mut server,
        2_000,
        ServerInput::EditProfile { profile, set },
    );
    let second = step(&mut server, 3_000, schedule(None));
    let config = |out: &ServerOut| match &out.records[0] {
        Record::JobScheduled { config, .. } => config.clone(),
        other => panic!("expected JobScheduled, got {other:?}"),
    };
    assert_ne!(
        config(&first),
        config(&second),
        "the edit binds the second job"
    );
    let out = step(
        &mut server,
        10_000,
        ServerInput::Timer(ServerTimer::Assignment),
    );
    let mut images = created_images(&mut server, 10_000, out);
    images.sort();
    assert_eq!(
        images,
        ["new", "old"],
        "each job's pod has its own plan's image"
    );
}
