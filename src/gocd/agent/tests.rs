use super::{AgentInput, AgentTimer, GoAgent, REGISTER_RETRY_MS};
use crate::component::{Component, Random};
use crate::engine::{Stream, StreamId};
use crate::gocd::protocol::{AgentAction, AgentId, Registration, RequestKind, ServerReply};
use std::collections::BTreeMap;

/// The go-agent draws nothing.
struct NoDraws;

impl Random for NoDraws {
    fn next_u64(&mut self) -> u64 {
        panic!("the go-agent drew a random number")
    }
}

/// Process uuid 9 of agent `k8s-ea-1` (id 0), with a key and no environment.
fn agent_k8s_ea_1() -> GoAgent {
    let registration = Registration {
        elastic_agent_id: "k8s-ea-1".into(),
        key: "key".into(),
        environment: None,
    };
    GoAgent::new(AgentId(0), 9, registration)
}

fn drive(agent: &mut GoAgent, now_ms: u64, input: AgentInput) -> Vec<AgentAction> {
    let mut out = Vec::new();
    agent.handle(now_ms, input, &mut NoDraws, &mut out);
    out
}

fn reply(kind: RequestKind, reply: ServerReply) -> AgentInput {
    AgentInput::Reply { kind, reply }
}

fn sent(out: &[AgentAction]) -> Vec<RequestKind> {
    out.iter()
        .filter_map(|a| match a {
            AgentAction::Send(r) => Some(r.kind()),
            AgentAction::Timer { .. } => None,
        })
        .collect()
}

#[test]
fn a_refused_registration_is_retried_forever() {
    let mut agent = agent_k8s_ea_1();
    let out = drive(&mut agent, 0, AgentInput::Start { boot_ms: 0 });
    assert_eq!(sent(&out), [RequestKind::Register]);
    let mut now = 0;
    for _ in 0..3 {
        now += 3;
        let refused = ServerReply::Refused("used key".into());
        let out = drive(&mut agent, now, reply(RequestKind::Register, refused));
        now += REGISTER_RETRY_MS;
        let retry = AgentAction::Timer {
            at_ms: now,
            timer: AgentTimer::Register,
        };
        assert_eq!(out, [retry]);
        assert_eq!(agent.next_deadline(), Some(now));
        let out = drive(&mut agent, now, AgentInput::Timer(AgentTimer::Register));
        assert_eq!(sent(&out), [RequestKind::Register]);
        assert_eq!(agent.next_deadline(), None);
    }
}

/// The agent boots before it registers: nothing is sent while the JVM starts and the
/// bootstrapper downloads the agent's jars (gocd/gocd@f17b6f3fc9, `AgentProcessParentImpl.run`
/// forks `agent.jar` only after its downloads; `AgentController.performWork` registers first).
#[test]
fn a_booting_agent_sends_nothing_until_its_boot_is_over() {
    let mut agent = agent_k8s_ea_1();
    let out = drive(&mut agent, 1_000, AgentInput::Start { boot_ms: 20_000 });
    let booted = AgentAction::Timer {
        at_ms: 21_000,
        timer: AgentTimer::Booted,
    };
    assert_eq!(out, [booted]);
    assert_eq!(agent.next_deadline(), Some(21_000));
    let out = drive(&mut agent, 21_000, AgentInput::Timer(AgentTimer::Booted));
    assert_eq!(sent(&out), [RequestKind::Register]);
    assert_eq!(agent.next_deadline(), None);
}

/// A refused registration is retried after `REGISTER_RETRY_INTERVAL` (5 s, gocd/gocd@f17b6f3fc9
/// `SslInfrastructureService.java`); one without an answer (the server is down) after the
/// work loop's back-off, 1 s, 1.5 s, 2.25 s, ... (`AgentWorkRetrievalScheduler.java`).
#[test]
fn a_registration_without_an_answer_backs_off_and_a_refused_one_waits_5_s() {
    assert_eq!(REGISTER_RETRY_MS, 5_000);
    let mut agent = agent_k8s_ea_1();
    drive(&mut agent, 0, AgentInput::Start { boot_ms: 0 });
    let mut now = 0;
    let mut delays = Vec::new();
    for answer in [
        ServerReply::Failed,
        ServerReply::Failed,
        ServerReply::Refused("used key".into()),
        ServerReply::Failed,
    ] {
        let out = drive(&mut agent, now, reply(RequestKind::Register, answer));
        let [AgentAction::Timer { at_ms, timer }] = out.as_slice() else {
            panic!("one retry timer expected, got {out:?}");
        };
        assert_eq!(*timer, AgentTimer::Register);
        delays.push(at_ms - now);
        now = *at_ms;
        drive(&mut agent, now, AgentInput::Timer(AgentTimer::Register));
    }
    assert_eq!(delays, [1_000, 1_500, 5_000, 2_250]);
}

#[test]
fn get_work_backs_off_from_one_to_ten_seconds() {
    let mut agent = agent_k8s_ea_1();
    drive(&mut agent, 0, AgentInput::Start { boot_ms: 0 });
    drive(
        &mut agent,
        0,
        reply(RequestKind::Register, ServerReply::Registered),
    );
    let mut delays = Vec::new();
    let mut now = 0;
    for _ in 0..8 {
        let out = drive(
            &mut agent,
            now,
            reply(RequestKind::GetWork, ServerReply::NoWork),
        );
        if let [AgentAction::Timer { at_ms, .. }] = out.as_slice() {
            delays.push(at_ms - now);
            now = *at_ms;
        }
        drive(&mut agent, now, AgentInput::Timer(AgentTimer::Poll));
    }
    assert_eq!(
        delays,
        [1_000, 1_500, 2_250, 3_375, 5_062, 7_593, 10_000, 10_000]
    );
}

/// A plausible answer to a request of `kind`.
fn answer(kind: RequestKind, choices: &mut Stream) -> ServerReply {
    match (kind, choices.below(5)) {
        (_, 0) => ServerReply::Failed,
        (_, 1) => ServerReply::NotRegistered,
        (RequestKind::Register, 2) => ServerReply::Refused("used key".into()),
        (RequestKind::Register, _) => ServerReply::Registered,
        (RequestKind::Ping, 2) => ServerReply::Cancel {
            kill_ms: choices.below(20_000),
        },
        (RequestKind::Ping, _) => ServerReply::Pong,
        (RequestKind::GetWork, 2 | 3) => ServerReply::Work {
            job: choices.next_u64(),
            runtime_ms: choices.below(60_000),
        },
        (RequestKind::GetWork, _) => ServerReply::NoWork,
        (RequestKind::ReportCompleted, _) => ServerReply::Ack,
    }
}

/// The timers and requests one agent asked for and that have not come back yet.
#[derive(Default)]
struct Asked {
    timers: BTreeMap<(u64, u64), AgentTimer>,
    sequence: u64,
    requests: Vec<RequestKind>,
}

impl Asked {
    fn take(&mut self, out: Vec<AgentAction>) {
        for action in out {
            match action {
                AgentAction::Send(request) => self.requests.push(request.kind()),
                AgentAction::Timer { at_ms, timer } => {
                    self.timers.insert((at_ms, self.sequence), timer);
                    self.sequence += 1;
                }
            }
        }
    }

    fn earliest(&self) -> Option<u64> {
        self.timers.keys().next().map(|&(at_ms, _)| at_ms)
    }
}

#[test]
fn next_deadline_is_the_earliest_timer_not_fired() {
    for seed in 0..8 {
        let mut choices = Stream::new(seed, StreamId::Agents);
        let mut agent = agent_k8s_ea_1();
        let mut asked = Asked::default();
        let mut now = 0;
        let boot_ms = seed * 1_000;
        asked.take(drive(&mut agent, now, AgentInput::Start { boot_ms }));
        for step in 0..3_000 {
            assert_eq!(
                agent.next_deadline(),
                asked.earliest(),
                "seed {seed}, step {step}"
            );
            if asked.requests.is_empty() && asked.timers.is_empty() {
                break;
            }
            let fire = asked.requests.is_empty() || choices.chance(0.4);
            let due = if fire { asked.timers.pop_first() } else { None };
            let out = if let Some(((at_ms, _), timer)) = due {
                now = at_ms;
                drive(&mut agent, now, AgentInput::Timer(timer))
            } else {
                let index = choices.below(asked.requests.len() as u64) as usize;
                let kind = asked.requests.swap_remove(index);
                now = (now + choices.below(3_000)).min(asked.earliest().unwrap_or(u64::MAX));
                let answer = answer(kind, &mut choices);
                drive(&mut agent, now, reply(kind, answer))
            };
            asked.take(out);
        }
        assert!(asked.sequence > 500, "seed {seed}: too few timers to judge");
    }
}
