//! What the tasks of one run share: the API server (Lease store), the network's latency and
//! error draws, the faults in force, each replica's incarnation and term, and the channel
//! that carries trace records, stamped with the run's time, to the observers.

use crate::lease_store::LeaseStore;
use elasticsim::component::Random;
use elasticsim::engine::{Stream, StreamId};
use elasticsim::scenario::OutageMode;
use elasticsim::trace::Record;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, watch};
use tokio::time::{Duration, Instant};

/// Where a record comes from (the fingerprint hashes it with the record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node {
    /// The API server (Lease writes).
    KubeApi,
    /// The harness (faults, phases).
    Harness,
    /// A replica process.
    Replica(u32),
}

impl Node {
    /// The node's name, as the models' traces write it.
    pub fn name(self) -> String {
        match self {
            Node::KubeApi => "kube-api".to_owned(),
            Node::Harness => "harness".to_owned(),
            Node::Replica(index) => format!("replica-{index}"),
        }
    }
}

/// One trace record with its time and node.
#[derive(Debug)]
pub struct Event {
    /// Simulated time, milliseconds since the run began.
    pub t_ms: u64,
    /// Who emitted it.
    pub node: Node,
    /// The record.
    pub record: Record,
}

/// The run's clock: milliseconds on the paused tokio clock since the run began.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    anchor: Instant,
}

impl Clock {
    /// A clock that reads 0 now.
    pub fn start() -> Clock {
        Clock {
            // determinism-ok: tokio's paused clock, the run's virtual time.
            anchor: Instant::now(),
        }
    }

    /// Milliseconds since the run began.
    pub fn now_ms(self) -> u64 {
        // determinism-ok: tokio's paused clock, the run's virtual time.
        let elapsed = Instant::now().duration_since(self.anchor);
        u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
    }

    /// The tokio instant of run time `t_ms`.
    pub fn at(self, t_ms: u64) -> Instant {
        self.anchor + Duration::from_millis(t_ms)
    }
}

/// The network and the API server's faults, as the scenario sets them.
#[derive(Clone, Copy, Debug)]
pub struct NetworkSettings {
    /// One-way latency of an API call, drawn uniformly: (min, max) milliseconds.
    pub latency_ms: (u64, u64),
    /// The chance that the API server answers a call with 500.
    pub error_rate: f64,
    /// kube-apiserver's `--request-timeout`: a call held by a hanging outage is answered 504
    /// after this long.
    pub request_timeout_ms: u64,
}

/// The mutable state behind the lock.
pub struct State {
    /// The API server.
    pub store: LeaseStore,
    network: Stream,
    errors: Stream,
    /// Replicas cut off from the API server, with how many partitions cut each off.
    cut_off: BTreeMap<u32, u32>,
    /// Outages in force, by fault index.
    outages: BTreeMap<u32, OutageMode>,
    /// Each replica's process incarnation (grows at every start).
    incarnation: Vec<u64>,
    /// Each replica's term: how many times its own write made it the holder since it started.
    terms: Vec<u64>,
    /// The replicas whose module runs.
    acting: Vec<bool>,
}

/// Shared by every task of one run.
pub struct Shared {
    state: Mutex<State>,
    records: mpsc::UnboundedSender<Event>,
    /// Bumped whenever a partition or outage starts or ends: calls held by one re-check.
    faults_changed: watch::Sender<u64>,
    /// The run's clock.
    pub clock: Clock,
    /// The network's settings.
    pub network: NetworkSettings,
}

impl Shared {
    /// The shared state of a run of `replicas` replicas for `seed`; records go to `records`.
    pub fn new(
        seed: u64,
        replicas: u32,
        network: NetworkSettings,
        records: mpsc::UnboundedSender<Event>,
    ) -> Arc<Shared> {
        let state = State {
            store: LeaseStore::new(seed),
            network: Stream::new(seed, StreamId::Network),
            errors: Stream::new(seed, StreamId::KubeApi),
            cut_off: BTreeMap::new(),
            outages: BTreeMap::new(),
            incarnation: vec![0; replicas as usize],
            terms: vec![0; replicas as usize],
            acting: vec![false; replicas as usize],
        };
        Arc::new(Shared {
            state: Mutex::new(state),
            records,
            faults_changed: watch::channel(0).0,
            clock: Clock::start(),
            network,
        })
    }

    /// The state, locked (never held across an `.await`).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock is held fails the run anyway: take the state as it is.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Emit `record` from `node` now.
    pub fn emit(&self, node: Node, record: Record) {
        let t_ms = self.clock.now_ms();
        // The observers outlive every task of the run; after the run ends nothing is judged.
        let _ = self.records.send(Event { t_ms, node, record });
    }

    /// Wait for a partition or outage to start or end.
    pub fn subscribe_faults(&self) -> watch::Receiver<u64> {
        self.faults_changed.subscribe()
    }

    fn faults_changed(&self) {
        self.faults_changed
            .send_modify(|generation| *generation += 1);
    }

    /// Replica `replica` is cut off from the API server (one more partition).
    pub fn cut_off(&self, replica: u32) {
        *self.lock().cut_off.entry(replica).or_insert(0) += 1;
        self.faults_changed();
    }

    /// One partition of `replica` healed.
    pub fn reconnect(&self, replica: u32) {
        {
            let mut state = self.lock();
            if let Some(count) = state.cut_off.get_mut(&replica) {
                *count -= 1;
                if *count == 0 {
                    state.cut_off.remove(&replica);
                }
            }
        }
        self.faults_changed();
    }

    /// An API outage (fault `index`) starts.
    pub fn outage_starts(&self, index: u32, mode: OutageMode) {
        self.lock().outages.insert(index, mode);
        self.faults_changed();
    }

    /// API outage `index` ends.
    pub fn outage_ends(&self, index: u32) {
        self.lock().outages.remove(&index);
        self.faults_changed();
    }

    /// A new process of `replica` starts: a new incarnation, terms from 1 again.
    pub fn replica_starts(&self, replica: u32) -> u64 {
        let mut state = self.lock();
        state.incarnation[replica as usize] += 1;
        state.terms[replica as usize] = 0;
        state.acting[replica as usize] = false;
        state.incarnation[replica as usize]
    }

    /// The current incarnation of `replica`.
    pub fn incarnation(&self, replica: u32) -> u64 {
        self.lock().incarnation[replica as usize]
    }

    /// Record whether `replica`'s module runs (for `"leader"` fault targets).
    pub fn set_acting(&self, replica: u32, acting: bool) {
        self.lock().acting[replica as usize] = acting;
    }

    /// The replica whose module runs, the lowest index if several do; `None` if none does.
    pub fn acting_replica(&self) -> Option<u32> {
        let state = self.lock();
        (0..state.acting.len() as u32).find(|replica| state.acting[*replica as usize])
    }

    /// The current term of `replica`.
    pub fn term(&self, replica: u32) -> u64 {
        self.lock().terms[replica as usize]
    }
}

impl State {
    /// One leg of an API call: a latency drawn from the network stream.
    pub fn draw_latency_ms(&mut self, (min_ms, max_ms): (u64, u64)) -> u64 {
        if max_ms <= min_ms {
            return min_ms;
        }
        min_ms + self.network.below(max_ms - min_ms + 1)
    }

    /// Whether the API server fails this call (`[cluster] api_error_rate`).
    pub fn draw_error(&mut self, rate: f64) -> bool {
        rate > 0.0 && self.errors.unit() < rate
    }

    /// Whether `replica` is cut off from the API server.
    pub fn is_cut_off(&self, replica: u32) -> bool {
        self.cut_off.contains_key(&replica)
    }

    /// The outage in force, if any (`hang` wins over `error` when both are).
    pub fn outage(&self) -> Option<OutageMode> {
        let modes = self.outages.values();
        modes
            .max_by_key(|mode| matches!(mode, OutageMode::Hang))
            .copied()
    }

    /// `replica`'s write made it the holder: its term, one more if it was not the holder.
    pub fn held(&mut self, replica: u32, moved: bool) -> u64 {
        let term = &mut self.terms[replica as usize];
        if moved || *term == 0 {
            *term += 1;
        }
        *term
    }
}
