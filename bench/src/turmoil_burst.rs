//! The `burst.toml` workload expressed on turmoil, the measured peer of `turmoil_ratio`.
//!
//! Hosts: `gocd` (job queue, registration, pings, get-work, completion), `kube-api` (creates
//! pods and draws their start time, deletes pods) and a few `agents-N` hosts, each a kubelet
//! that runs many agents as tasks (turmoil cannot hold hundreds of hosts: its cost grows about
//! with the cube of the host count). Every exchange is a UDP datagram with turmoil's latency.
//!
//! A job's life: it arrives at gocd, which asks kube-api for a pod; kube-api picks an agent
//! host and a start time (2-15 s); the agent starts, registers, pings every 5 s and asks for
//! work with a back-off of 1 s growing by 1.5 up to 10 s; gocd gives each agent the job its
//! pod was created for; the agent runs it and reports completion; gocd has kube-api delete the
//! pod, and the kubelet stops the agent.

use crate::turmoil_messages::{Counts, Message, PORT};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until};
use turmoil::net::UdpSocket;

/// One job of the workload, as `World::planned_arrivals` gives it.
#[derive(Clone, Copy, Debug)]
pub struct PlannedJob {
    pub at_ms: u64,
    pub runtime_ms: u64,
}

/// The shape of one turmoil run.
#[derive(Clone, Copy, Debug)]
pub struct TurmoilSettings {
    pub seed: u64,
    /// Simulated time to run; the run ends there whatever is still in flight.
    pub span_ms: u64,
    pub agent_hosts: u32,
    pub pod_start_min_ms: u64,
    pub pod_start_max_ms: u64,
    pub latency_min_ms: u64,
    pub latency_max_ms: u64,
}

impl TurmoilSettings {
    /// `burst.toml`'s cluster: pods start in 2-15 s, the network takes 2-40 ms.
    pub fn burst(seed: u64, span_ms: u64) -> TurmoilSettings {
        TurmoilSettings {
            seed,
            span_ms,
            agent_hosts: 4,
            pod_start_min_ms: 2_000,
            pod_start_max_ms: 15_000,
            latency_min_ms: 2,
            latency_max_ms: 40,
        }
    }
}

const PING_INTERVAL_MS: u64 = 5_000;
const BACKOFF_MIN_MS: u64 = 1_000;
const BACKOFF_MAX_MS: u64 = 10_000;

type Shared = Rc<RefCell<Counts>>;

/// Run `jobs` on turmoil for `settings.span_ms` of simulated time and count what happened.
pub fn run(settings: &TurmoilSettings, jobs: &[PlannedJob]) -> anyhow::Result<Counts> {
    let counts: Shared = Rc::default();
    let jobs: Rc<Vec<PlannedJob>> = Rc::new(jobs.to_vec());
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_millis(settings.span_ms + 60_000))
        // The default epoch is the wall clock; a fixed one keeps runs identical.
        .epoch(UNIX_EPOCH)
        .rng_seed(settings.seed)
        .min_message_latency(Duration::from_millis(settings.latency_min_ms))
        .max_message_latency(Duration::from_millis(settings.latency_max_ms))
        // The default capacity (64) drops datagrams when a burst of agents talks at once.
        .udp_capacity(1 << 16)
        .build();
    {
        let (jobs, counts) = (jobs.clone(), counts.clone());
        sim.host("gocd", move || gocd(jobs.clone(), counts.clone()));
    }
    {
        let (settings, counts) = (*settings, counts.clone());
        sim.host("kube-api", move || kube_api(settings, counts.clone()));
    }
    for index in 0..settings.agent_hosts {
        let counts = counts.clone();
        sim.host(agent_host_name(index), move || kubelet(counts.clone()));
    }
    let span = Duration::from_millis(settings.span_ms);
    sim.client("clock", async move {
        sleep(span).await;
        Ok(())
    });
    sim.run()
        .map_err(|error| anyhow::anyhow!("turmoil run: {error}"))?;
    let result = counts.borrow().clone();
    Ok(result)
}

fn agent_host_name(index: u32) -> String {
    format!("agents-{index}")
}

async fn bind() -> std::io::Result<Rc<UdpSocket>> {
    let socket = UdpSocket::bind((IpAddr::from(Ipv4Addr::UNSPECIFIED), PORT)).await?;
    Ok(Rc::new(socket))
}

/// Send `message`; a failed send is counted, never hidden (the tests assert there is none).
async fn send(socket: &UdpSocket, message: Message, to: SocketAddr, counts: &Shared) {
    let sent = socket.send_to(&message.encode(), to).await;
    let mut counts = counts.borrow_mut();
    match sent {
        Ok(_) => counts.messages_sent += 1,
        Err(_) => counts.send_failures += 1,
    }
}

async fn receive(socket: &UdpSocket) -> std::io::Result<(Message, SocketAddr)> {
    let mut buffer = [0u8; 64];
    loop {
        let (length, from) = socket.recv_from(&mut buffer).await?;
        if let Some(message) = Message::decode(&buffer[..length]) {
            return Ok((message, from));
        }
    }
}

fn address(host: &str) -> SocketAddr {
    SocketAddr::new(turmoil::lookup(host), PORT)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum JobState {
    Planned,
    Waiting,
    Assigned,
    Completed,
}

/// The GoCD server: job arrivals, then every message from agents and their answers.
async fn gocd(jobs: Rc<Vec<PlannedJob>>, counts: Shared) -> turmoil::Result {
    let socket = bind().await?;
    let kube = address("kube-api");
    let states = Rc::new(RefCell::new(vec![JobState::Planned; jobs.len()]));
    let started = Instant::now();
    {
        let (socket, states, counts, jobs) =
            (socket.clone(), states.clone(), counts.clone(), jobs.clone());
        tokio::task::spawn_local(async move {
            for (index, job) in jobs.iter().enumerate() {
                sleep_until(started + Duration::from_millis(job.at_ms)).await;
                states.borrow_mut()[index] = JobState::Waiting;
                counts.borrow_mut().jobs_arrived += 1;
                let job = index as u64;
                send(&socket, Message::CreatePod { job }, kube, &counts).await;
            }
        });
    }
    loop {
        let (message, from) = receive(&socket).await?;
        let now_ms = started.elapsed().as_millis() as u64;
        counts.borrow_mut().fold(now_ms, &message);
        let answer = match message {
            Message::Register { pod } => {
                counts.borrow_mut().agents_registered += 1;
                Some((Message::Registered { pod }, from))
            }
            Message::Ping { .. } => {
                counts.borrow_mut().pings += 1;
                None
            }
            Message::GetWork { pod, job } => {
                counts.borrow_mut().get_work_calls += 1;
                let mut states = states.borrow_mut();
                let state = &mut states[job as usize];
                if *state == JobState::Waiting {
                    *state = JobState::Assigned;
                    counts.borrow_mut().jobs_assigned += 1;
                    let runtime_ms = jobs[job as usize].runtime_ms;
                    Some((Message::Work { pod, runtime_ms }, from))
                } else {
                    Some((Message::NoWork { pod }, from))
                }
            }
            Message::Completed { pod, job } => {
                states.borrow_mut()[job as usize] = JobState::Completed;
                counts.borrow_mut().jobs_completed += 1;
                Some((Message::DeletePod { pod }, kube))
            }
            _ => None,
        };
        if let Some((answer, to)) = answer {
            send(&socket, answer, to, &counts).await;
        }
    }
}

/// The API server: creates pods on the agent hosts and deletes them.
async fn kube_api(settings: TurmoilSettings, counts: Shared) -> turmoil::Result {
    let socket = bind().await?;
    let hosts: Vec<SocketAddr> = (0..settings.agent_hosts)
        .map(|index| address(&agent_host_name(index)))
        .collect();
    let mut random = Xoshiro256PlusPlus::seed_from_u64(settings.seed);
    let start_span_ms = settings.pod_start_max_ms - settings.pod_start_min_ms + 1;
    let mut next_pod = 0u64;
    loop {
        let (message, _) = receive(&socket).await?;
        match message {
            Message::CreatePod { job } => {
                let pod = next_pod;
                next_pod += 1;
                counts.borrow_mut().pods_created += 1;
                let start_ms = settings.pod_start_min_ms + random.next_u64() % start_span_ms;
                let host = hosts[(pod % hosts.len() as u64) as usize];
                let start = Message::StartPod { pod, job, start_ms };
                send(&socket, start, host, &counts).await;
            }
            Message::DeletePod { pod } => {
                counts.borrow_mut().pods_deleted += 1;
                let host = hosts[(pod % hosts.len() as u64) as usize];
                send(&socket, Message::KillPod { pod }, host, &counts).await;
            }
            _ => {}
        }
    }
}

/// The tasks of one pod on a kubelet: its agent, its pinger and the agent's inbox.
struct PodTasks {
    inbox: mpsc::UnboundedSender<Message>,
    agent: JoinHandle<()>,
    pinger: JoinHandle<()>,
}

/// An agent host: starts and stops pods, and hands gocd's answers to the right agent.
async fn kubelet(counts: Shared) -> turmoil::Result {
    let socket = bind().await?;
    let gocd = address("gocd");
    let mut pods: BTreeMap<u64, PodTasks> = BTreeMap::new();
    loop {
        let (message, _) = receive(&socket).await?;
        match message {
            Message::StartPod { pod, job, start_ms } => {
                let (inbox, receiver) = mpsc::unbounded_channel();
                let agent_run = agent(
                    pod,
                    job,
                    start_ms,
                    socket.clone(),
                    gocd,
                    receiver,
                    counts.clone(),
                );
                let agent = tokio::task::spawn_local(agent_run);
                let pinger = tokio::task::spawn_local(pinger(
                    pod,
                    start_ms,
                    socket.clone(),
                    gocd,
                    counts.clone(),
                ));
                pods.insert(
                    pod,
                    PodTasks {
                        inbox,
                        agent,
                        pinger,
                    },
                );
            }
            Message::KillPod { pod } => {
                if let Some(tasks) = pods.remove(&pod) {
                    tasks.agent.abort();
                    tasks.pinger.abort();
                    counts.borrow_mut().pods_killed += 1;
                }
            }
            Message::Registered { pod } | Message::Work { pod, .. } | Message::NoWork { pod } => {
                // An answer for a pod already killed has nobody to go to, as in a real cluster.
                if let Some(tasks) = pods.get(&pod) {
                    let _ = tasks.inbox.send(message);
                }
            }
            _ => {}
        }
    }
}

/// A go-agent in a pod: start, register, then ask for work with back-off and run what it gets.
async fn agent(
    pod: u64,
    job: u64,
    start_ms: u64,
    socket: Rc<UdpSocket>,
    gocd: SocketAddr,
    mut inbox: mpsc::UnboundedReceiver<Message>,
    counts: Shared,
) {
    sleep(Duration::from_millis(start_ms)).await;
    send(&socket, Message::Register { pod }, gocd, &counts).await;
    loop {
        match inbox.recv().await {
            Some(Message::Registered { .. }) => break,
            Some(_) => {}
            None => return,
        }
    }
    let mut backoff_ms = BACKOFF_MIN_MS;
    loop {
        send(&socket, Message::GetWork { pod, job }, gocd, &counts).await;
        match inbox.recv().await {
            Some(Message::Work { runtime_ms, .. }) => {
                sleep(Duration::from_millis(runtime_ms)).await;
                send(&socket, Message::Completed { pod, job }, gocd, &counts).await;
                backoff_ms = BACKOFF_MIN_MS;
            }
            Some(_) => {
                sleep(Duration::from_millis(backoff_ms)).await;
                backoff_ms = (backoff_ms * 3 / 2).min(BACKOFF_MAX_MS);
            }
            None => return,
        }
    }
}

/// The agent's ping loop, from the moment its container starts.
async fn pinger(pod: u64, start_ms: u64, socket: Rc<UdpSocket>, gocd: SocketAddr, counts: Shared) {
    sleep(Duration::from_millis(start_ms)).await;
    loop {
        sleep(Duration::from_millis(PING_INTERVAL_MS)).await;
        send(&socket, Message::Ping { pod }, gocd, &counts).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_jobs() -> Vec<PlannedJob> {
        vec![
            PlannedJob {
                at_ms: 1_000,
                runtime_ms: 5_000,
            },
            PlannedJob {
                at_ms: 1_500,
                runtime_ms: 8_000,
            },
            PlannedJob {
                at_ms: 2_000,
                runtime_ms: 3_000,
            },
        ]
    }

    #[test]
    fn every_job_of_a_tiny_arrival_list_completes_and_its_pod_is_deleted() {
        let counts = run(&TurmoilSettings::burst(3, 60_000), &tiny_jobs()).expect("turmoil run");
        assert_eq!(counts.jobs_arrived, 3);
        assert_eq!(counts.pods_created, 3);
        assert_eq!(counts.agents_registered, 3);
        assert_eq!(counts.jobs_assigned, 3);
        assert_eq!(counts.jobs_completed, 3);
        assert_eq!(counts.pods_deleted, 3);
        assert_eq!(counts.pods_killed, 3);
        assert_eq!(counts.send_failures, 0);
        assert!(counts.pings > 0, "agents ping while they run");
    }

    #[test]
    fn a_run_is_deterministic_for_a_seed() {
        let settings = TurmoilSettings::burst(5, 40_000);
        let first = run(&settings, &tiny_jobs()).expect("first run");
        let second = run(&settings, &tiny_jobs()).expect("second run");
        assert_eq!(first, second);
        let other = run(&TurmoilSettings::burst(6, 40_000), &tiny_jobs()).expect("other seed");
        assert_ne!(
            first.log_hash, other.log_hash,
            "another seed takes another path"
        );
    }

    #[test]
    fn jobs_arriving_after_the_span_never_start() {
        let jobs = [PlannedJob {
            at_ms: 30_000,
            runtime_ms: 1_000,
        }];
        let counts = run(&TurmoilSettings::burst(1, 10_000), &jobs).expect("turmoil run");
        assert_eq!(counts.jobs_arrived, 0);
        assert_eq!(counts.messages_sent, 0);
    }
}
