//! One simulation run, end to end: world → fingerprint, monitors, metrics, `trace.jsonl`.

use crate::allocator::Policy;
use crate::check::InvariantId;
use crate::check::{
    Bounds, CapacityBounds, Checker, Kind, LateKillBounds, LeaderBounds, Violation, WaitBounds,
    leader_monitors,
};
use crate::leader::Variant;
use crate::report::{Collector, RunInfo, classify};
use crate::scenario::{
    ElasticFault, ElasticKind, FaultKind, FaultType, JobSource, Leader, Scenario,
};
use crate::trace::{Fingerprint, JsonlWriter, Record};
use crate::world::{RunSettings, Sink, World, WorldError};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The result of one run. `info.wall_s` is left at zero: wall time is measured by the caller,
/// outside the simulation.
pub struct RunOutcome {
    /// Identity, verdict, timing and violations of the run.
    pub info: RunInfo,
    /// The rows the run's records filled, for its tables and metrics.
    pub collector: Collector,
}

impl RunOutcome {
    /// True if no failing violation was found.
    pub fn passed(&self) -> bool {
        self.info.verdict == "pass"
    }

    /// Ids of the failing violations, sorted, without repeats.
    pub fn violated_ids(&self) -> Vec<InvariantId> {
        let mut ids: Vec<InvariantId> = self.info.violations.iter().map(|v| v.id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// Why a run could not produce a verdict.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The scenario asks for something this build cannot do (exit 2).
    #[error("{0}")]
    Input(String),
    /// A harness bound broke or an output could not be written (exit 3).
    #[error("{0}")]
    Internal(String),
}

impl From<WorldError> for RunError {
    fn from(error: WorldError) -> Self {
        match error {
            WorldError::Input(message) => RunError::Input(message),
            WorldError::Bound(message) => RunError::Internal(message),
        }
    }
}

/// True when the run's policy reuses agents.
pub(crate) fn reuse_enabled(scenario: &Scenario, policy: Policy) -> bool {
    policy != Policy::Upstream && scenario.plugin.enable_agent_reuse
}

/// The invariants a run under `policy` does not judge because the policy lacks the setting
/// they bound, each with the reason (the report adds the measured figure).
pub(crate) fn not_applicable(scenario: &Scenario, policy: Policy) -> Vec<(InvariantId, String)> {
    if reuse_enabled(scenario, policy) && !policy.has_idle_timeout() {
        let reason = format!(
            "{} has no idle timeout: an idle pod lives until a server-ping finds it older than \
             the auto-register timeout since its creation",
            policy.name()
        );
        return vec![(InvariantId::IdleTimeout, reason)];
    }
    Vec::new()
}

/// The bounds the elastic-agent monitors judge `scenario` by under `policy`.
pub(crate) fn bounds_for(scenario: &Scenario, policy: Policy) -> Bounds {
    let mut bounds = bounds_of(scenario, reuse_enabled(scenario, policy));
    bounds.idle_timeout_enforced = policy.has_idle_timeout();
    bounds
}

/// The bounds the elastic-agent monitors judge `scenario` by; `reuse_enabled` is the run's
/// judgement of the policy (whose idle timeout is taken as enforced).
pub fn bounds_of(scenario: &Scenario, reuse_enabled: bool) -> Bounds {
    Bounds {
        max_job_wait_ms: scenario.invariants.max_job_wait_ms,
        pending_pods_count: scenario.plugin.pending_pods_count,
        auto_register_timeout_ms: scenario.plugin.auto_register_timeout_ms,
        server_ping_interval_ms: scenario.server.server_ping_interval_ms,
        idle_timeout_ms: scenario.plugin.idle_timeout_ms,
        call_slack_ms: scenario.plugin.cluster_request_timeout_ms,
        agent_connection_timeout_ms: scenario.server.agent_connection_timeout_ms,
        reuse_enabled,
        idle_timeout_enforced: true,
        capacity: CapacityBounds {
            nodes: scenario.cluster.nodes,
            pods_per_node: scenario.cluster.pods_per_node,
            replace_after_ms: replace_after_ms(scenario),
        },
        wait: WaitBounds {
            resend_ms: scenario.server.job_starvation_timeout_ms,
        },
        late_kill: LateKillBounds {
            build_max_ms: Arc::new(build_max_ms(scenario)),
            agent_connection_timeout_ms: scenario.server.agent_connection_timeout_ms,
            hung_job_check_ms: scenario.server.hung_job_check_interval_ms,
            ping_ms: (scenario.server.server_ping_interval_ms)
                .saturating_add(scenario.plugin.cluster_request_timeout_ms),
            max_job_wait_ms: scenario.invariants.max_job_wait_ms,
        },
    }
}

/// The longest build time of each profile's jobs, from the job sources and burst faults
/// (replayed jobs' profiles are left out: their build times are in the trace; a swarm's
/// bursts, up to 3 minutes, count only where a source of the profile allows as long).
fn build_max_ms(scenario: &Scenario) -> BTreeMap<String, u64> {
    let sources = scenario.jobs.iter().filter_map(|source| match source {
        JobSource::Burst {
            profile, runtime, ..
        }
        | JobSource::Poisson {
            profile, runtime, ..
        } => Some((profile, runtime.max_ms)),
        JobSource::Single {
            profile,
            runtime_ms,
            ..
        } => Some((profile, *runtime_ms)),
        JobSource::Trace { .. } => None,
    });
    let bursts = scenario.faults.iter().filter_map(|fault| {
        let FaultKind::Elastic(ElasticFault::Burst {
            profile, runtime, ..
        }) = &fault.kind
        else {
            return None;
        };
        Some((profile, runtime.max_ms))
    });
    let mut longest = BTreeMap::new();
    for (profile, max_ms) in sources.chain(bursts) {
        let entry = longest.entry(profile.clone()).or_insert(0);
        *entry = max_ms.max(*entry);
    }
    longest
}

/// The longest `replace_after` of the scenario's node losses (the default one for a swarm's).
fn replace_after_ms(scenario: &Scenario) -> u64 {
    scenario
        .faults
        .iter()
        .filter_map(|fault| {
            let FaultKind::Elastic(ElasticFault::NodeLoss {
                replace_after_ms, ..
            }) = fault.kind
            else {
                return None;
            };
            Some(replace_after_ms)
        })
        .max()
        .unwrap_or(crate::scenario::NODE_REPLACE_AFTER_MS)
}

struct Observers<'a> {
    fingerprint: Fingerprint,
    checker: Checker,
    after: AfterMonitors<'a>,
    records: u64,
}

/// The observers that see every record after the monitors.
struct AfterMonitors<'a> {
    collector: Collector,
    trace: Option<JsonlWriter>,
    trace_error: Option<std::io::Error>,
    /// `review` keeps the decisions.
    tap: Option<&'a mut dyn Sink>,
}

impl AfterMonitors<'_> {
    fn see(&mut self, t_ms: u64, node: &str, record: &Record) {
        self.collector.observe(t_ms, record);
        if let Some(tap) = &mut self.tap {
            tap.record(t_ms, node, record);
        }
        if let Some(writer) = &mut self.trace
            && let Err(error) = writer.write(t_ms, node, record)
        {
            self.trace_error.get_or_insert(error);
        }
    }
}

impl Sink for Observers<'_> {
    fn record(&mut self, t_ms: u64, node: &str, record: &Record) {
        self.records += 1;
        self.fingerprint.add(t_ms, node, record);
        self.checker.observe(t_ms, record);
        self.after.see(t_ms, node, record);
    }

    /// The monitors' context ring keeps the record itself: no copy per record.
    fn record_owned(&mut self, t_ms: u64, node: &str, record: Record) {
        if matches!(record, Record::Sample) {
            return self.record(t_ms, node, &record);
        }
        self.records += 1;
        self.fingerprint.add(t_ms, node, &record);
        let record = self.checker.observe_owned(t_ms, record);
        self.after.see(t_ms, node, record);
    }
}

/// Run `scenario` under `settings`; with `trace_path`, also write `trace.jsonl` there.
/// `reproduce` is the command line that reruns exactly this run.
pub fn run_scenario(
    scenario: &Scenario,
    settings: RunSettings,
    trace_path: Option<&Path>,
    reproduce: String,
) -> Result<RunOutcome, RunError> {
    run_scenario_tapped(scenario, settings, trace_path, reproduce, None)
}

/// [`run_scenario`], with `tap` seeing every trace record as the monitors do.
pub(crate) fn run_scenario_tapped(
    scenario: &Scenario,
    settings: RunSettings,
    trace_path: Option<&Path>,
    reproduce: String,
    tap: Option<&mut dyn Sink>,
) -> Result<RunOutcome, RunError> {
    let policy = settings.policy;
    let seed = settings.seed;
    let variant = settings.leader_variant(scenario);
    let mut world = World::new(scenario.clone(), settings)?;
    // The monitors judge the run as drawn: a seed's API latency level bounds their budgets.
    let drawn = world.scenario();
    let mut observers = observers_for(drawn, policy, variant, trace_path, tap)?;
    world.run(&mut observers)?;
    let end_ms = world.now().as_ms();
    let all = observers.checker.finish(end_ms);
    let after = &mut observers.after;
    finish_trace(after.trace.take(), after.trace_error.take())?;
    // An ablated run is a different program: its fingerprint says so. A plain run folds in
    // nothing, so its fingerprint is the one it always had.
    if !scenario.ablations.is_empty() {
        observers
            .fingerprint
            .add_note(&format!("ablate:{}", scenario.ablations.label()));
    }
    let (violations, expected, sometimes) = split_violations(scenario, &observers.checker, all);
    let (verdict, class) = classify(&violations);
    let info = RunInfo {
        scenario: scenario.name.clone(),
        seed,
        policy,
        variant,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        verdict: verdict.to_owned(),
        failure_class: class.map(str::to_owned),
        fingerprint: observers.fingerprint.hex(),
        events: world.events(),
        sim_ms: end_ms,
        wall_s: 0.0,
        reproduce,
        violations,
        expected_violations: expected,
        sometimes,
        not_applicable: not_applicable(scenario, policy),
        drawn: world.swarm_drawn().to_vec(),
        max_job_wait_ms: scenario.invariants.max_job_wait_ms,
        ablations: scenario.ablations.clone(),
    };
    Ok(RunOutcome {
        info,
        collector: observers.after.collector,
    })
}

/// The monitors, the report collector and the optional trace writer of one run.
fn observers_for<'a>(
    scenario: &Scenario,
    policy: Policy,
    variant: Option<Variant>,
    trace_path: Option<&Path>,
    tap: Option<&'a mut dyn Sink>,
) -> Result<Observers<'a>, RunError> {
    let bounds = bounds_for(scenario, policy);
    let extra = match (&scenario.leader, variant) {
        (Some(leader), Some(variant)) => leader_monitors(leader_bounds(scenario, leader, variant)),
        _ => Vec::new(),
    };
    let trace =
        match trace_path {
            Some(path) => Some(JsonlWriter::create(path).map_err(|e| {
                RunError::Internal(format!("cannot create {}: {e}", path.display()))
            })?),
            None => None,
        };
    Ok(Observers {
        fingerprint: Fingerprint::default(),
        checker: Checker::new(&bounds, &scenario.invariants.disable, extra),
        after: AfterMonitors {
            collector: Collector::new(),
            trace,
            trace_error: None,
            tap,
        },
        records: 0,
    })
}

/// The bounds the leader monitors judge `scenario`'s `[leader]` section by, for replicas
/// running `variant` (the one place they are built: runs here, `elasticsim-crates` too).
pub fn leader_bounds(scenario: &Scenario, leader: &Leader, variant: Variant) -> LeaderBounds {
    LeaderBounds {
        lease_duration_ms: leader.lease_duration_ms,
        renew_deadline_ms: leader.renew_deadline_ms,
        retry_period_ms: leader.retry_period_ms,
        api_latency_max_ms: scenario.cluster.api_latency.max_ms,
        module_stop_latency_max_ms: leader.module_stop_latency.max_ms,
        replicas: leader.replicas,
        variant,
    }
}

/// Close `trace.jsonl`, or report the first write that failed.
fn finish_trace(trace: Option<JsonlWriter>, error: Option<std::io::Error>) -> Result<(), RunError> {
    if let Some(error) = error {
        return Err(RunError::Internal(format!(
            "writing trace.jsonl failed: {error}"
        )));
    }
    if let Some(writer) = trace {
        writer
            .finish()
            .map_err(|e| RunError::Internal(format!("finishing trace.jsonl: {e}")))?;
    }
    Ok(())
}

type Split = (Vec<Violation>, Vec<Violation>, Vec<(InvariantId, bool)>);

/// Failing violations, expected ones (outside the fault budget), and `sometimes` coverage.
/// A `sometimes` invariant fails the run only if the scenario requires it.
fn split_violations(scenario: &Scenario, checker: &Checker, all: Vec<Violation>) -> Split {
    let mut failing = Vec::new();
    let mut expected = Vec::new();
    let mut missed = Vec::new();
    for violation in all {
        if violation.expected {
            expected.push(violation);
        } else if violation.kind == Kind::Sometimes {
            missed.push(violation.id);
            if scenario.invariants.require.contains(&violation.id) {
                failing.push(violation);
            }
        } else {
            failing.push(violation);
        }
    }
    // `restart-recovers` only means something in a run that can crash the server.
    let crashes = scenario
        .faults
        .iter()
        .any(|f| matches!(f.kind, FaultKind::Elastic(ElasticFault::ServerCrash { .. })))
        || (scenario.swarm.enabled
            && scenario
                .swarm
                .kinds
                .contains(&FaultType::Elastic(ElasticKind::ServerCrash)));
    let sometimes = checker
        .sometimes_ids()
        .into_iter()
        .filter(|&id| id != InvariantId::RestartRecovers || crashes)
        .map(|id| (id, !missed.contains(&id)))
        .collect();
    (failing, expected, sometimes)
}
