//! From a pod trace to a workload: job arrivals, runtimes, configs and the empirical pod
//! start-up latency.
//!
//! What a pod trace can tell, and what each number means:
//! - **Job arrival**: the `t_ms` of the first `added` pod carrying a job id not seen before.
//!   A plugin creates a pod shortly after a job is scheduled (the server's next assignment
//!   tick plus the create-agent queue and one API call), so the replayed job arrives when the
//!   original's first pod appeared, not when it was scheduled. Pods that already exist when a
//!   recording starts arrive at their first observation.
//! - **Runtime**: for the last pod of a job that reached `Running`, the time from `Running` to
//!   its end (`Succeeded`/`Failed`, or deletion). This includes the agent's registration, the
//!   wait for assignment and the plugin's clean-up after the job, so it is an upper bound of
//!   the build itself. A pod still running when the trace ends runs until the trace's last
//!   line. A job none of whose pods ever ran gets the median of the known runtimes (60 s if
//!   none is known).
//! - **Start-up latency**: for every pod observed from `added` (Pending) to its first
//!   `Running`, that interval (it includes any wait for a free node slot).
//! - **Config**: distinct `config_hash` values in order of first appearance (null counts as
//!   one value); the n-th maps to the scenario's n-th profile, wrapping around.
//! - A plugin that reuses agents runs later jobs on existing pods without a pod event, so its
//!   trace shows only the jobs that created pods; record under the upstream plugin (one pod
//!   per job) for a faithful workload.

use super::read::{Trace, TraceError, read_trace};
use super::{PodEvent, TraceLine};
use std::collections::BTreeMap;
use std::path::Path;

/// Runtime given to a job when no pod's runtime is known at all.
const RUNTIME_DEFAULT_MS: u64 = 60_000;

/// One job derived from a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedJob {
    /// The job id the trace's pods carry.
    pub job_id: String,
    /// Arrival: when the job's first pod was added, in milliseconds since the trace's start.
    pub at_ms: u64,
    /// The time from the last pod's `Running` to its end, in milliseconds (an upper bound of the
    /// build).
    pub runtime_ms: u64,
    /// False when the runtime was filled in (no pod of the job ever ran).
    pub runtime_observed: bool,
    /// Index into [`Workload::configs`].
    pub config: usize,
}

/// Everything a trace tells about its workload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    /// Sorted by arrival, ties in trace order.
    pub jobs: Vec<DerivedJob>,
    /// Added → first Running of every pod seen from its creation, in trace order.
    pub startup_sample_ms: Vec<u64>,
    /// Distinct config hashes in order of first appearance.
    pub configs: Vec<Option<String>>,
}

impl Workload {
    /// The scenario profile a job runs under: config n → `profiles[n % len]`.
    pub fn profile_of<'a>(&self, job: &DerivedJob, profiles: &'a [String]) -> &'a str {
        assert!(
            !profiles.is_empty(),
            "scenario validation requires a profile"
        );
        &profiles[job.config % profiles.len()]
    }
}

/// Read the trace at `path` and derive its workload.
pub fn load_workload(path: &Path) -> Result<Workload, TraceError> {
    Ok(derive_workload(&read_trace(path)?))
}

/// One pod's life as the trace saw it.
struct PodLife {
    job: Option<usize>,
    added_ms: Option<u64>,
    running_ms: Option<u64>,
    end_ms: Option<u64>,
}

/// What the derivation accumulates per job.
struct JobLife {
    job: DerivedJob,
    /// (running_ms, end_ms) of the latest pod of this job that reached Running.
    ran: Option<(u64, Option<u64>)>,
}

/// Derive the workload of a trace (see the module documentation for each rule).
pub fn derive_workload(trace: &Trace) -> Workload {
    let mut workload = Workload::default();
    let mut jobs: Vec<JobLife> = Vec::new();
    let mut job_index: BTreeMap<String, usize> = BTreeMap::new();
    let mut pods: BTreeMap<String, PodLife> = BTreeMap::new();
    for line in &trace.lines {
        let first_sight = line.event == PodEvent::Added || !pods.contains_key(&line.state.pod);
        if first_sight {
            let job = line.state.job_id.as_ref().map(|id| {
                *job_index.entry(id.clone()).or_insert_with(|| {
                    let config = config_index(&mut workload.configs, &line.state.config_hash);
                    jobs.push(JobLife {
                        job: DerivedJob {
                            job_id: id.clone(),
                            at_ms: line.t_ms,
                            runtime_ms: 0,
                            runtime_observed: false,
                            config,
                        },
                        ran: None,
                    });
                    jobs.len() - 1
                })
            });
            let seen_pending = line.event == PodEvent::Added && line.state.phase == "Pending";
            pods.insert(
                line.state.pod.clone(),
                PodLife {
                    job,
                    added_ms: seen_pending.then_some(line.t_ms),
                    running_ms: None,
                    end_ms: None,
                },
            );
        }
        let life = pods.get_mut(&line.state.pod).expect("inserted above");
        observe(life, line, &mut workload.startup_sample_ms, &mut jobs);
    }
    let trace_end_ms = trace.lines.last().map_or(0, |line| line.t_ms);
    finish(jobs, trace_end_ms, &mut workload);
    workload
}

/// Apply one line to a pod's life: first Running, then its end.
fn observe(life: &mut PodLife, line: &TraceLine, sample: &mut Vec<u64>, jobs: &mut [JobLife]) {
    if life.end_ms.is_some() {
        return;
    }
    let phase = line.state.phase.as_str();
    if phase == "Running" && life.running_ms.is_none() {
        life.running_ms = Some(line.t_ms);
        if let Some(added_ms) = life.added_ms {
            sample.push(line.t_ms - added_ms);
        }
    }
    let ended = line.event == PodEvent::Deleted || phase == "Succeeded" || phase == "Failed";
    if ended {
        life.end_ms = Some(line.t_ms);
    }
    if let (Some(job), Some(running_ms)) = (life.job, life.running_ms) {
        jobs[job].ran = Some((running_ms, life.end_ms));
    }
}

fn config_index(configs: &mut Vec<Option<String>>, hash: &Option<String>) -> usize {
    match configs.iter().position(|known| known == hash) {
        Some(index) => index,
        None => {
            configs.push(hash.clone());
            configs.len() - 1
        }
    }
}

/// Runtimes from each job's last running pod; the median for jobs that never ran.
fn finish(jobs: Vec<JobLife>, trace_end_ms: u64, workload: &mut Workload) {
    let mut known: Vec<u64> = jobs
        .iter()
        .filter_map(|life| life.ran)
        .map(|(running_ms, end_ms)| end_ms.unwrap_or(trace_end_ms) - running_ms)
        .collect();
    known.sort_unstable();
    let median_ms = known
        .get(known.len() / 2)
        .copied()
        .unwrap_or(RUNTIME_DEFAULT_MS);
    workload.jobs = jobs
        .into_iter()
        .map(|life| {
            let mut job = life.job;
            match life.ran {
                Some((running_ms, end_ms)) => {
                    job.runtime_ms = end_ms.unwrap_or(trace_end_ms) - running_ms;
                    job.runtime_observed = true;
                }
                None => job.runtime_ms = median_ms,
            }
            job
        })
        .collect();
    // Jobs were created in trace order, which is time order: a stable sort keeps ties.
    workload.jobs.sort_by_key(|job| job.at_ms);
}
