//! The server's plugin host: server-ping queueing and held get-work requests.

use super::{Server, ServerInput, ServerOut, ServerSettings, ServerTimer};
use crate::allocator::{ClusterProfile, Policy};
use crate::component::{Component, Random};
use crate::resources::{KubeReply, PodList};
use crate::trace::Record;
use std::collections::BTreeMap;

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

fn server() -> Server {
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
        ablations: crate::ablation::Ablations::none(),
    };
    let mut server = Server::new(settings, BTreeMap::new());
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
