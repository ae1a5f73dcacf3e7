//! A replica: one process running a crate's election object and a leader module that acts
//! while the crate says this process leads. The crate's code decides; this file only starts
//! and stops processes, turns what the crate says into trace records, and runs the module.
//!
//! The records are the ones the models' replicas emit (`src/world/leader/mod.rs`), so the leader
//! monitors judge the crates as they judge the models: `ReplicaStarted`/`ReplicaStopped`,
//! `ConfigReceived` (one module, `worker`, always runnable: the replica always wants to
//! lead), `ElectionStarted`/`ElectionStopped`, `LeadingStarted`/`LeadingStopped` (the crate
//! says it leads / no longer), `ModuleStarted`/`ModuleStopped` and one `ModuleAction` a
//! second while the module runs. `LeaseHeld` comes from the API edge (`api.rs`): a write of
//! this replica's that left it the holder, when the answer reaches it.

use crate::api::ApiService;
use crate::crates::LeaseCrate;
use crate::sim::{Node, Shared};
use elasticsim::trace::Record;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::{Duration, sleep, timeout};

/// The leader module's name in the records.
pub const MODULE: &str = "worker";

/// How often the module does one unit of work while it runs.
const ACTION_PERIOD: Duration = Duration::from_secs(1);

/// How long a graceful stop may take before the process is killed (Kubernetes'
/// `terminationGracePeriodSeconds` default, 30 s).
const STOP_GRACE: Duration = Duration::from_secs(30);

/// The identity replica `replica` writes as `holderIdentity`.
pub fn identity(replica: u32) -> String {
    format!("replica-{replica}")
}

/// What a crate driver needs of its replica: its connection, how to report, the election
/// timings, and where to register the tasks a crash must abort.
#[derive(Clone)]
pub struct ReplicaCtx {
    /// The run's shared state.
    pub shared: Arc<Shared>,
    /// The replica's index.
    pub replica: u32,
    /// The scenario's election timings.
    pub timings: Timings,
    tasks: Arc<Mutex<Vec<AbortHandle>>>,
    module: Arc<Mutex<Option<AbortHandle>>>,
}

/// `[leader]`'s timings, as each crate's parameters are derived from them (docs/crates.md).
#[derive(Clone, Copy, Debug)]
pub struct Timings {
    /// `lease_duration`.
    pub lease_duration: Duration,
    /// `renew_deadline`.
    pub renew_deadline: Duration,
    /// `retry_period`.
    pub retry_period: Duration,
}

impl ReplicaCtx {
    /// The replica's identity.
    pub fn identity(&self) -> String {
        identity(self.replica)
    }

    /// A new connection to the API server.
    pub fn service(&self) -> ApiService {
        ApiService::new(self.shared.clone(), self.replica)
    }

    /// Emit `record` from this replica.
    pub fn emit(&self, record: Record) {
        self.shared.emit(Node::Replica(self.replica), record);
    }

    /// A task the crate spawned for this replica: aborted if the process crashes.
    pub fn register(&self, task: AbortHandle) {
        self.tasks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(task);
    }

    /// The crate says whether this replica leads: start or stop the module.
    pub fn set_leading(&self, leading: bool) {
        let mut module = self
            .module
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let replica = self.replica;
        match (leading, module.is_some()) {
            (true, false) => {
                let term = self.shared.term(replica);
                self.emit(Record::LeadingStarted { replica, term });
                self.emit(Record::ModuleStarted {
                    replica,
                    module: MODULE.to_owned(),
                    term,
                });
                self.shared.set_acting(replica, true);
                *module = Some(tokio::spawn(act(self.clone())).abort_handle());
            }
            (false, true) => {
                if let Some(task) = module.take() {
                    task.abort();
                }
                self.shared.set_acting(replica, false);
                self.emit(Record::ModuleStopped {
                    replica,
                    module: MODULE.to_owned(),
                });
                let term = self.shared.term(replica);
                self.emit(Record::LeadingStopped { replica, term });
            }
            (true, true) | (false, false) => {}
        }
    }

    /// The process dies: every task of it stops where it is, nothing is released.
    fn kill(&self) {
        let tasks = std::mem::take(
            &mut *self
                .tasks
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        for task in tasks {
            task.abort();
        }
        let module = self
            .module
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(task) = module {
            task.abort();
        }
        self.shared.set_acting(self.replica, false);
    }
}

/// The leader module: one unit of work a second, until it is stopped.
async fn act(ctx: ReplicaCtx) {
    loop {
        sleep(ACTION_PERIOD).await;
        ctx.emit(Record::ModuleAction {
            replica: ctx.replica,
            module: MODULE.to_owned(),
        });
    }
}

/// A running replica process.
pub struct Process {
    ctx: ReplicaCtx,
    stop: Option<oneshot::Sender<()>>,
    main: JoinHandle<()>,
}

impl Process {
    /// Start replica `replica`'s process running `lease_crate`.
    pub fn start(
        shared: &Arc<Shared>,
        replica: u32,
        lease_crate: LeaseCrate,
        timings: Timings,
    ) -> Process {
        shared.replica_starts(replica);
        let ctx = ReplicaCtx {
            shared: shared.clone(),
            replica,
            timings,
            tasks: Arc::default(),
            module: Arc::default(),
        };
        ctx.emit(Record::ReplicaStarted { replica });
        ctx.emit(Record::ConfigReceived {
            replica,
            version: 1,
            runnable_modules: vec![MODULE.to_owned()],
        });
        let (stop, stopped) = oneshot::channel();
        let main = tokio::spawn(crate::crates::run(lease_crate, ctx.clone(), stopped));
        ctx.register(main.abort_handle());
        Process {
            ctx,
            stop: Some(stop),
            main,
        }
    }

    /// `replica_crash`: the process dies at once.
    pub fn crash(self) {
        self.ctx.kill();
        self.ctx.emit(Record::ReplicaStopped {
            replica: self.ctx.replica,
        });
    }

    /// `replica_stop`: SIGTERM; the crate's driver stops the module and releases as the crate
    /// documents, within the grace period, else the process is killed.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = timeout(STOP_GRACE, &mut self.main).await;
        self.crash();
    }
}
