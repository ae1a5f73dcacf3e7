//! The top level of a scenario and its plain sections: `[cluster]`, `[server]`, `[plugin]`,
//! `[[profiles]]` and `[[jobs]]`. Sections are read in dependency order (profiles and
//! `[leader]` before what refers to them), so cross-references are checked with spans.

use super::error::{ErrorKind, Source};
use super::fault_kind::{ElasticFault, FaultKind};
use super::fault_type::{ElasticKind, FaultType};
use super::model::{Cluster, JobSource, Kube, Plugin, Profile, Scenario, Server};
use super::reader::{
    Result, Table, boolean, count_at_least, duration, number, range, string, unsigned,
};
use super::{Loaded, faults, leader};
use crate::allocator::Policy;
use std::path::Path;
use toml::Spanned;
use toml::de::DeTable;

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "duration",
    "settle",
    "cluster",
    "kube",
    "server",
    "plugin",
    "profiles",
    "jobs",
    "faults",
    "swarm",
    "invariants",
    "leader",
    "ablate",
];

/// The policies `[plugin] policy` accepts.
pub const POLICIES: &[&str] = &Policy::NAMES;
/// The `kind`s a `[[jobs]]` entry accepts.
pub const JOB_KINDS: &[&str] = &["burst", "poisson", "trace", "single"];
pub(crate) const PROFILE_KEYS: &[&str] = &["name", "image", "cpu", "memory", "environment"];

/// What later sections need from earlier ones, plus the warnings gathered on the way.
pub(crate) struct Context {
    pub profiles: Vec<String>,
    /// `[leader] replicas`, when there is a `[leader]` section.
    pub leader_replicas: Option<u32>,
    pub duration_ms: u64,
    pub warnings: Vec<String>,
}

/// Reads a whole scenario from its parsed TOML tree; `folder` resolves trace paths.
pub(crate) fn scenario(
    source: Source<'_>,
    root: &Spanned<DeTable<'_>>,
    folder: &Path,
) -> Result<Loaded> {
    let top = Table {
        source,
        table: root.get_ref(),
        span: root.span(),
        path: String::new(),
    };
    top.expect_keys(TOP_KEYS)?;
    let name = scenario_name(&top)?;
    let duration_ms = top.or("duration", 3_600_000, &duration)?;
    if duration_ms == 0 {
        return Err(top.semantic("duration", "a duration longer than 0s", "\"0s\""));
    }
    let mut context = Context {
        profiles: Vec::new(),
        leader_replicas: None,
        duration_ms,
        warnings: Vec::new(),
    };
    let profiles = profiles(&top, &mut context)?;
    let leader = leader::leader(&top, &mut context)?;
    let scenario = Scenario {
        name,
        description: top.or("description", String::new(), &string)?,
        seed: top.or("seed", 1, &unsigned)?,
        duration_ms,
        settle_ms: top.or("settle", 30 * 60_000, &duration)?,
        cluster: cluster(&top)?,
        kube: kube(&top)?,
        server: server(&top)?,
        plugin: plugin(&top)?,
        jobs: jobs(&top, &context, folder)?,
        faults: faults::faults(&top, &context)?,
        swarm: faults::swarm(&top, &context)?,
        invariants: leader::invariants(&top, &mut context)?,
        profiles,
        leader,
        ablations: ablations(&top)?,
    };
    if let Some(warning) = short_settle(&top, &scenario) {
        context.warnings.push(warning);
    }
    Ok(Loaded {
        scenario,
        warnings: context.warnings,
    })
}

/// `name`: letters, digits, '-' and '_', not empty (it names report folders).
fn scenario_name(top: &Table<'_, '_>) -> Result<String> {
    let name = top.required(
        "name",
        "a name made of letters, digits, '-' and '_'",
        &string,
    )?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
    {
        let value = top.get("name").expect("required() found the key");
        return Err(top.invalid(
            "name",
            value,
            "a non-empty name of letters, digits, '-', '_'",
        ));
    }
    Ok(name)
}

/// The warning for a `settle` too short for pods to be registered and cleaned up
/// (`auto_register_timeout + server_ping_interval`). Only pods need the time: a leader-only
/// scenario (no jobs, no burst faults) gets none.
fn short_settle(top: &Table<'_, '_>, scenario: &Scenario) -> Option<String> {
    let settle_needed_ms = scenario
        .plugin
        .auto_register_timeout_ms
        .saturating_add(scenario.server.server_ping_interval_ms);
    let makes_pods = !scenario.jobs.is_empty()
        || scenario
            .faults
            .iter()
            .any(|f| matches!(f.kind, FaultKind::Elastic(ElasticFault::Burst { .. })))
        || (scenario.swarm.enabled
            && scenario
                .swarm
                .kinds
                .contains(&FaultType::Elastic(ElasticKind::Burst)));
    (makes_pods && scenario.settle_ms < settle_needed_ms).then(|| {
        top.warning(
            "settle",
            &format!(
                "{} is shorter than auto_register_timeout + server_ping_interval ({}); \
                 `no-orphan-pods` and `all-jobs-complete` may fail for lack of time",
                show(scenario.settle_ms),
                show(settle_needed_ms)
            ),
        )
    })
}

/// A duration as the format writes it, quoted, for messages.
pub(crate) fn show(total_ms: u64) -> String {
    format!("\"{}\"", super::duration::format_duration_ms(total_ms))
}

fn cluster(top: &Table<'_, '_>) -> Result<Cluster> {
    let defaults = Cluster::default();
    let Some(table) = top.table("cluster")? else {
        return Ok(defaults);
    };
    table.expect_keys(&[
        "nodes",
        "pods_per_node",
        "pod_startup",
        "api_latency",
        "api_error_rate",
        "api_request_timeout",
        "dial_timeout",
        "container_restart_backoff",
        "termination_grace",
        "node_eviction",
    ])?;
    let api_error_rate = table.or("api_error_rate", defaults.api_error_rate, &number)?;
    if !(0.0..=1.0).contains(&api_error_rate) {
        let value = table
            .get("api_error_rate")
            .expect("a non-default rate was read from it");
        return Err(table.invalid("api_error_rate", value, "a fraction from 0.0 to 1.0"));
    }
    Ok(Cluster {
        nodes: table.or("nodes", defaults.nodes, &count_at_least(1))?,
        pods_per_node: table.or("pods_per_node", defaults.pods_per_node, &count_at_least(1))?,
        pod_startup: table.or("pod_startup", defaults.pod_startup, &range)?,
        api_latency: table.or("api_latency", defaults.api_latency, &range)?,
        api_error_rate,
        container_restart_backoff_ms: table.or(
            "container_restart_backoff",
            defaults.container_restart_backoff_ms,
            &duration,
        )?,
        termination_grace_ms: table.or(
            "termination_grace",
            defaults.termination_grace_ms,
            &duration,
        )?,
        node_eviction_ms: table.or("node_eviction", defaults.node_eviction_ms, &duration)?,
    })
}

/// `[kube]`, or the two keys `[cluster]` took before it existed (`api_request_timeout`,
/// `dial_timeout`, still accepted); a key given in both places is an error.
fn kube(top: &Table<'_, '_>) -> Result<Kube> {
    let defaults = Kube::default();
    let kube = top.table("kube")?;
    if let Some(table) = &kube {
        table.expect_keys(&["request_timeout", "dial_timeout"])?;
    }
    let cluster = top.table("cluster")?;
    let request_timeout_ms = one_of(
        (&kube, "request_timeout"),
        (&cluster, "api_request_timeout"),
        defaults.request_timeout_ms,
    )?;
    let dial_timeout_ms = one_of(
        (&kube, "dial_timeout"),
        (&cluster, "dial_timeout"),
        defaults.dial_timeout_ms,
    )?;
    Ok(Kube {
        request_timeout_ms,
        dial_timeout_ms,
    })
}

/// A period read from `[kube]` or from its older place in `[cluster]`, not both.
fn one_of(
    (kube, key): (&Option<Table<'_, '_>>, &str),
    (cluster, old_key): (&Option<Table<'_, '_>>, &str),
    default_ms: u64,
) -> Result<u64> {
    let old = cluster
        .as_ref()
        .filter(|table| table.get(old_key).is_some());
    match (kube.as_ref().filter(|table| table.get(key).is_some()), old) {
        (Some(_), Some(cluster)) => Err(cluster.semantic(
            old_key,
            &format!("no `{old_key}` here when `[kube] {key}` is given (it is its older spelling)"),
            "both",
        )),
        (Some(kube), None) => period(kube, key, default_ms),
        (None, Some(cluster)) => period(cluster, old_key, default_ms),
        (None, None) => Ok(default_ms),
    }
}

/// A duration that must be longer than zero (a zero period would loop forever).
fn period(table: &Table<'_, '_>, key: &str, default_ms: u64) -> Result<u64> {
    let period_ms = table.or(key, default_ms, &duration)?;
    if period_ms == 0 {
        return Err(table.semantic(key, "a duration longer than 0s", "\"0s\""));
    }
    Ok(period_ms)
}

fn server(top: &Table<'_, '_>) -> Result<Server> {
    let defaults = Server::default();
    let Some(table) = top.table("server")? else {
        return Ok(defaults);
    };
    table.expect_keys(&[
        "job_starvation_timeout",
        "server_ping_interval",
        "assignment_interval",
        "agent_connection_timeout",
        "hung_job_check_interval",
        "auto_register_key_ttl",
        "create_agent_threads",
        "cancel_kill",
        "job_completion_delay",
        "agent_boot",
    ])?;
    Ok(Server {
        job_starvation_timeout_ms: table.or(
            "job_starvation_timeout",
            defaults.job_starvation_timeout_ms,
            &duration,
        )?,
        server_ping_interval_ms: period(
            &table,
            "server_ping_interval",
            defaults.server_ping_interval_ms,
        )?,
        assignment_interval_ms: period(
            &table,
            "assignment_interval",
            defaults.assignment_interval_ms,
        )?,
        agent_connection_timeout_ms: table.or(
            "agent_connection_timeout",
            defaults.agent_connection_timeout_ms,
            &duration,
        )?,
        hung_job_check_interval_ms: period(
            &table,
            "hung_job_check_interval",
            defaults.hung_job_check_interval_ms,
        )?,
        auto_register_key_ttl_ms: table.or(
            "auto_register_key_ttl",
            defaults.auto_register_key_ttl_ms,
            &duration,
        )?,
        create_agent_threads: table.or(
            "create_agent_threads",
            defaults.create_agent_threads,
            &count_at_least(1),
        )?,
        cancel_kill_ms: table.or("cancel_kill", defaults.cancel_kill_ms, &duration)?,
        job_completion_delay_ms: table.or(
            "job_completion_delay",
            defaults.job_completion_delay_ms,
            &duration,
        )?,
        agent_boot: table.or("agent_boot", defaults.agent_boot, &range)?,
    })
}

fn plugin(top: &Table<'_, '_>) -> Result<Plugin> {
    let defaults = Plugin::default();
    let Some(table) = top.table("plugin")? else {
        return Ok(defaults);
    };
    table.expect_keys(&[
        "policy",
        "enable_agent_reuse",
        "auto_register_timeout",
        "pending_pods_count",
        "idle_timeout",
        "cluster_request_timeout",
        "max_pods",
    ])?;
    Ok(Plugin {
        policy: table
            .choice_of("policy", &Policy::ALL, Policy::name)?
            .unwrap_or(defaults.policy),
        enable_agent_reuse: table.or(
            "enable_agent_reuse",
            defaults.enable_agent_reuse,
            &boolean,
        )?,
        auto_register_timeout_ms: table.or(
            "auto_register_timeout",
            defaults.auto_register_timeout_ms,
            &duration,
        )?,
        pending_pods_count: table.or(
            "pending_pods_count",
            defaults.pending_pods_count,
            &count_at_least(1),
        )?,
        idle_timeout_ms: table.or("idle_timeout", defaults.idle_timeout_ms, &duration)?,
        cluster_request_timeout_ms: table.or(
            "cluster_request_timeout",
            defaults.cluster_request_timeout_ms,
            &duration,
        )?,
        max_pods: table.optional("max_pods", &count_at_least(1))?,
    })
}

fn profiles(top: &Table<'_, '_>, context: &mut Context) -> Result<Vec<Profile>> {
    let mut profiles: Vec<Profile> = Vec::new();
    for table in top.tables("profiles")? {
        table.expect_keys(PROFILE_KEYS)?;
        let name = table.required("name", "the profile's name", &string)?;
        if name.is_empty() || profiles.iter().any(|profile| profile.name == name) {
            return Err(table.semantic("name", "a unique, non-empty profile name", &name));
        }
        profiles.push(Profile {
            name,
            image: table.or("image", "gocd/gocd-agent:v25.1.0".to_owned(), &string)?,
            cpu: table.or("cpu", "500m".to_owned(), &string)?,
            memory: table.or("memory", "1Gi".to_owned(), &string)?,
            environment: table.optional("environment", &string)?,
        });
    }
    context.profiles = profiles
        .iter()
        .map(|profile| profile.name.clone())
        .collect();
    Ok(profiles)
}

/// `profile` of a job or fault: must name a `[[profiles]]` entry.
pub(crate) fn profile_reference(table: &Table<'_, '_>, context: &Context) -> Result<String> {
    let name = table.required("profile", "the name of a [[profiles]] entry", &string)?;
    if context.profiles.contains(&name) {
        return Ok(name);
    }
    let value = table.get("profile").expect("required() found the key");
    let mut error = table.invalid("profile", value, "the name of a [[profiles]] entry");
    error.kind = ErrorKind::Semantic;
    if context.profiles.is_empty() {
        error.expected = "a [[profiles]] entry of that name, but the file defines none".to_owned();
    }
    error.choices = context.profiles.clone();
    Err(error)
}

/// `at` of a job or fault: inside the safety phase `[0, duration)`.
pub(crate) fn instant(table: &Table<'_, '_>, context: &Context) -> Result<u64> {
    let at_ms = table.required(
        "at",
        "when it happens, a duration from the start",
        &duration,
    )?;
    if at_ms >= context.duration_ms {
        let expected = format!("a time before `duration` ({})", show(context.duration_ms));
        return Err(table.semantic("at", &expected, &show(at_ms)));
    }
    Ok(at_ms)
}

/// `spread` of a burst: its jobs must still arrive inside the safety phase.
pub(crate) fn spread(table: &Table<'_, '_>, at_ms: u64, context: &Context) -> Result<u64> {
    let spread_ms = table.or("spread", 0, &duration)?;
    if at_ms.saturating_add(spread_ms) > context.duration_ms {
        let expected = format!("at + spread <= `duration` ({})", show(context.duration_ms));
        let found = format!("{} + {}", show(at_ms), show(spread_ms));
        return Err(table.semantic("spread", &expected, &found));
    }
    Ok(spread_ms)
}

fn jobs(top: &Table<'_, '_>, context: &Context, folder: &Path) -> Result<Vec<JobSource>> {
    let tables = top.tables("jobs")?;
    tables
        .iter()
        .map(|table| job(table, context, folder))
        .collect()
}

fn job(table: &Table<'_, '_>, context: &Context, folder: &Path) -> Result<JobSource> {
    let kind = table.choice("kind", JOB_KINDS)?;
    let Some(kind) = kind else {
        return Err(table.missing(
            "kind",
            "one of \"burst\", \"poisson\", \"trace\", \"single\"",
        ));
    };
    match kind.as_str() {
        "burst" => {
            table.expect_keys(&[
                "kind",
                "at",
                "count",
                "spread",
                "profile",
                "runtime",
                "environment",
            ])?;
            let at_ms = instant(table, context)?;
            Ok(JobSource::Burst {
                at_ms,
                count: table.required("count", "how many jobs", &count_at_least(1))?,
                spread_ms: spread(table, at_ms, context)?,
                profile: profile_reference(table, context)?,
                runtime: table.required("runtime", "a duration or range", &range)?,
                environment: table.optional("environment", &string)?,
            })
        }
        "poisson" => poisson(table, context),
        "trace" => {
            table.expect_keys(&["kind", "file"])?;
            let file = table.required("file", "a trace path, relative to the scenario", &string)?;
            if context.profiles.is_empty() {
                return Err(no_profiles(table));
            }
            Ok(JobSource::Trace {
                file: folder.join(file),
            })
        }
        _ => {
            table.expect_keys(&["kind", "at", "profile", "runtime", "environment"])?;
            Ok(JobSource::Single {
                at_ms: instant(table, context)?,
                profile: profile_reference(table, context)?,
                runtime_ms: table.required("runtime", "one duration", &duration)?,
                environment: table.optional("environment", &string)?,
            })
        }
    }
}

fn no_profiles(table: &Table<'_, '_>) -> super::ScenarioError {
    table.semantic(
        "kind",
        "at least one [[profiles]] entry when there are jobs",
        "none",
    )
}

fn poisson(table: &Table<'_, '_>, context: &Context) -> Result<JobSource> {
    table.expect_keys(&[
        "kind",
        "from",
        "until",
        "per_minute",
        "profile",
        "runtime",
        "environment",
    ])?;
    let from_ms = table.or("from", 0, &duration)?;
    let until_ms = table.or("until", context.duration_ms, &duration)?;
    if from_ms >= until_ms {
        let found = format!("from = {} >= until = {}", show(from_ms), show(until_ms));
        return Err(table.semantic("from", "from < until", &found));
    }
    if until_ms > context.duration_ms {
        let expected = format!("until <= `duration` ({})", show(context.duration_ms));
        return Err(table.semantic("until", &expected, &show(until_ms)));
    }
    let per_minute = table.required("per_minute", "jobs per minute, a number", &number)?;
    if per_minute <= 0.0 {
        let value = table.get("per_minute").expect("required() found the key");
        return Err(table.invalid("per_minute", value, "a rate above 0"));
    }
    Ok(JobSource::Poisson {
        from_ms,
        until_ms,
        per_minute,
        profile: profile_reference(table, context)?,
        runtime: table.required("runtime", "a duration or range", &range)?,
        environment: table.optional("environment", &string)?,
    })
}

/// `ablate = ["reservations", …]`: names of `SAFE_ABLATIONS` and `FIXED_ABLATIONS`.
fn ablations(top: &Table<'_, '_>) -> Result<crate::ablation::Ablations> {
    let declared: Vec<crate::ablation::Ablation> = crate::ablation::Owner::ALL
        .into_iter()
        .flat_map(crate::mutants::declared_of)
        .collect();
    let named = super::reader::choice_list_of(top, "ablate", &declared, |a| a.name())?;
    Ok(crate::ablation::Ablations::of(named.unwrap_or_default()))
}
