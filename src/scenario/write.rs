//! Writes a scenario back as TOML in the contract's format, every value explicit, so that
//! `parse(to_toml(s)) == s` (`shrink` writes `repro.toml` with it).

use super::duration::format_duration_ms;
use super::fault_kind::{ElasticFault, FaultKind, LeaderFault, NetworkFault};
use super::model::{Fault, JobSource, Leader, OutageMode, PodTarget, Range, ReplicaRef, Scenario};
use crate::check::InvariantId;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The scenario as TOML. Trace paths are written as stored: parse the result from a file in
/// the same folder as the original (or keep trace paths absolute) to get them back unchanged.
pub fn to_toml(scenario: &Scenario) -> String {
    let mut out = String::new();
    line(&mut out, "name", &quote(&scenario.name));
    line(&mut out, "description", &quote(&scenario.description));
    line(&mut out, "seed", &scenario.seed.to_string());
    line(&mut out, "duration", &duration(scenario.duration_ms));
    line(&mut out, "settle", &duration(scenario.settle_ms));
    if !scenario.ablations.is_empty() {
        let names: Vec<String> = scenario
            .ablations
            .names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        line(&mut out, "ablate", &list(&names));
    }
    write_settings(&mut out, scenario);
    for profile in &scenario.profiles {
        out.push_str("\n[[profiles]]\n");
        line(&mut out, "name", &quote(&profile.name));
        line(&mut out, "image", &quote(&profile.image));
        line(&mut out, "cpu", &quote(&profile.cpu));
        line(&mut out, "memory", &quote(&profile.memory));
        if let Some(environment) = &profile.environment {
            line(&mut out, "environment", &quote(environment));
        }
    }
    for job in &scenario.jobs {
        out.push_str("\n[[jobs]]\n");
        write_job(&mut out, job);
    }
    for fault in &scenario.faults {
        out.push_str("\n[[faults]]\n");
        write_fault(&mut out, fault);
    }
    out.push_str("\n[swarm]\n");
    line(&mut out, "enabled", &scenario.swarm.enabled.to_string());
    let kinds = scenario.swarm.kinds.iter().map(|kind| kind.name());
    line(&mut out, "kinds", &names(kinds));
    line(
        &mut out,
        "mean_interval",
        &duration(scenario.swarm.mean_interval_ms),
    );
    if let Some(draw) = &scenario.swarm.draw {
        line(&mut out, "draw", &quote(&draw.to_string()));
    }
    if let Some(levels) = scenario.swarm.api_latency {
        line(&mut out, "api_latency", &range(levels));
    }
    out.push_str("\n[invariants]\n");
    line(
        &mut out,
        "max_job_wait",
        &duration(scenario.invariants.max_job_wait_ms),
    );
    line(
        &mut out,
        "plugin_requests_per_job_max",
        &scenario.invariants.plugin_requests_per_job_max.to_string(),
    );
    let ids = |ids: &[InvariantId]| names(ids.iter().map(|id| id.name()));
    line(&mut out, "disable", &ids(&scenario.invariants.disable));
    line(&mut out, "require", &ids(&scenario.invariants.require));
    if let Some(leader) = &scenario.leader {
        write_leader(&mut out, leader);
    }
    out
}

fn write_settings(out: &mut String, scenario: &Scenario) {
    let cluster = &scenario.cluster;
    out.push_str("\n[cluster]\n");
    line(out, "nodes", &cluster.nodes.to_string());
    line(out, "pods_per_node", &cluster.pods_per_node.to_string());
    line(out, "pod_startup", &range(cluster.pod_startup));
    line(out, "api_latency", &range(cluster.api_latency));
    line(out, "api_error_rate", &float(cluster.api_error_rate));
    line(
        out,
        "container_restart_backoff",
        &duration(cluster.container_restart_backoff_ms),
    );
    line(
        out,
        "termination_grace",
        &duration(cluster.termination_grace_ms),
    );
    line(out, "node_eviction", &duration(cluster.node_eviction_ms));
    write_kube(out, &scenario.kube);
    write_server_and_plugin(out, scenario);
}

/// `[kube]`, only when a timeout differs from its default (older files stay as they were).
fn write_kube(out: &mut String, kube: &super::model::Kube) {
    if *kube == super::model::Kube::default() {
        return;
    }
    out.push_str("\n[kube]\n");
    line(out, "request_timeout", &duration(kube.request_timeout_ms));
    line(out, "dial_timeout", &duration(kube.dial_timeout_ms));
}

fn write_server_and_plugin(out: &mut String, scenario: &Scenario) {
    let server = &scenario.server;
    out.push_str("\n[server]\n");
    line(
        out,
        "job_starvation_timeout",
        &duration(server.job_starvation_timeout_ms),
    );
    line(
        out,
        "server_ping_interval",
        &duration(server.server_ping_interval_ms),
    );
    line(
        out,
        "assignment_interval",
        &duration(server.assignment_interval_ms),
    );
    line(
        out,
        "agent_connection_timeout",
        &duration(server.agent_connection_timeout_ms),
    );
    line(
        out,
        "hung_job_check_interval",
        &duration(server.hung_job_check_interval_ms),
    );
    line(
        out,
        "auto_register_key_ttl",
        &duration(server.auto_register_key_ttl_ms),
    );
    line(
        out,
        "create_agent_threads",
        &server.create_agent_threads.to_string(),
    );
    line(out, "cancel_kill", &duration(server.cancel_kill_ms));
    line(
        out,
        "job_completion_delay",
        &duration(server.job_completion_delay_ms),
    );
    line(out, "agent_boot", &range(server.agent_boot));
    write_plugin(out, scenario);
}

fn write_plugin(out: &mut String, scenario: &Scenario) {
    let plugin = &scenario.plugin;
    out.push_str("\n[plugin]\n");
    line(out, "policy", &quote(plugin.policy.name()));
    line(
        out,
        "enable_agent_reuse",
        &plugin.enable_agent_reuse.to_string(),
    );
    line(
        out,
        "auto_register_timeout",
        &duration(plugin.auto_register_timeout_ms),
    );
    line(
        out,
        "pending_pods_count",
        &plugin.pending_pods_count.to_string(),
    );
    line(out, "idle_timeout", &duration(plugin.idle_timeout_ms));
    line(
        out,
        "cluster_request_timeout",
        &duration(plugin.cluster_request_timeout_ms),
    );
    if let Some(max_pods) = plugin.max_pods {
        line(out, "max_pods", &max_pods.to_string());
    }
}

fn write_job(out: &mut String, job: &JobSource) {
    match job {
        JobSource::Burst {
            at_ms,
            count,
            spread_ms,
            profile,
            runtime,
            environment,
        } => {
            line(out, "kind", "\"burst\"");
            line(out, "at", &duration(*at_ms));
            write_burst(out, *count, *spread_ms, profile, *runtime);
            write_environment(out, environment.as_deref());
        }
        JobSource::Poisson {
            from_ms,
            until_ms,
            per_minute,
            profile,
            runtime,
            environment,
        } => {
            line(out, "kind", "\"poisson\"");
            line(out, "from", &duration(*from_ms));
            line(out, "until", &duration(*until_ms));
            line(out, "per_minute", &float(*per_minute));
            line(out, "profile", &quote(profile));
            line(out, "runtime", &range(*runtime));
            write_environment(out, environment.as_deref());
        }
        JobSource::Trace { file } => {
            line(out, "kind", "\"trace\"");
            line(out, "file", &quote(&file.to_string_lossy()));
        }
        JobSource::Single {
            at_ms,
            profile,
            runtime_ms,
            environment,
        } => {
            line(out, "kind", "\"single\"");
            line(out, "at", &duration(*at_ms));
            line(out, "profile", &quote(profile));
            line(out, "runtime", &duration(*runtime_ms));
            write_environment(out, environment.as_deref());
        }
    }
}

/// A job's own `environment`, when it names one.
fn write_environment(out: &mut String, environment: Option<&str>) {
    if let Some(environment) = environment {
        line(out, "environment", &quote(environment));
    }
}

fn write_burst(out: &mut String, count: u32, spread_ms: u64, profile: &str, runtime: Range) {
    line(out, "count", &count.to_string());
    line(out, "spread", &duration(spread_ms));
    line(out, "profile", &quote(profile));
    line(out, "runtime", &range(runtime));
}

fn write_fault(out: &mut String, fault: &Fault) {
    line(out, "at", &duration(fault.at_ms));
    line(out, "kind", &quote(fault.kind.name()));
    match &fault.kind {
        FaultKind::Elastic(kind) => write_elastic_fault(out, kind),
        FaultKind::Network(kind) => write_network_fault(out, kind),
        FaultKind::Leader(kind) => write_leader_fault(out, kind),
    }
}

/// The keys of a fault of the elastic-agent side.
fn write_elastic_fault(out: &mut String, kind: &ElasticFault) {
    match kind {
        ElasticFault::ServerCrash { downtime_ms } => line(out, "downtime", &duration(*downtime_ms)),
        ElasticFault::PodDelete { target, count }
        | ElasticFault::ContainerRestart { target, count }
        | ElasticFault::PodFail { target, count } => {
            line(out, "target", &quote(target_name(*target)));
            line(out, "count", &count.to_string());
        }
        ElasticFault::ProfileEdit { profile, set } => {
            line(out, "profile", &quote(profile));
            line(out, "set", &inline_table(set, |value| quote(value)));
        }
        ElasticFault::ClusterProfileEdit { set } => line(out, "set", &cluster_changes(set)),
        ElasticFault::NodeLoss {
            count,
            replace_after_ms,
        } => {
            line(out, "count", &count.to_string());
            line(out, "replace_after", &duration(*replace_after_ms));
        }
        ElasticFault::NodeAdd { count } => line(out, "count", &count.to_string()),
        ElasticFault::JobCancel { target, count } => {
            line(out, "target", &quote(target.name()));
            line(out, "count", &count.to_string());
        }
        ElasticFault::Burst {
            count,
            spread_ms,
            profile,
            runtime,
        } => {
            write_burst(out, *count, *spread_ms, profile, *runtime);
        }
    }
}

/// The keys of a fault of the network or the API.
fn write_network_fault(out: &mut String, kind: &NetworkFault) {
    match kind {
        NetworkFault::Partition { between, for_ms } => {
            line(out, "between", &list(between));
            line(out, "for", &duration(*for_ms));
        }
        NetworkFault::ApiOutage { for_ms, mode } => {
            line(out, "for", &duration(*for_ms));
            let mode = match mode {
                OutageMode::Error => "error",
                OutageMode::Hang => "hang",
            };
            line(out, "mode", &quote(mode));
        }
    }
}

/// The keys of a fault of the leader replicas or their Lease.
fn write_leader_fault(out: &mut String, kind: &LeaderFault) {
    match kind {
        LeaderFault::ReplicaCrash {
            replica,
            downtime_ms,
        }
        | LeaderFault::ReplicaStop {
            replica,
            downtime_ms,
        } => {
            line(out, "replica", &replica_value(*replica));
            line(out, "downtime", &duration(*downtime_ms));
        }
        LeaderFault::ReplicaPause { replica, for_ms } => {
            line(out, "replica", &replica_value(*replica));
            line(out, "for", &duration(*for_ms));
        }
        LeaderFault::ClockDrift { replica, rate } => {
            line(out, "replica", &replica_value(*replica));
            line(out, "rate", &float(*rate));
        }
        LeaderFault::CallbackDelay { replica, delay_ms } => {
            line(out, "replica", &replica_value(*replica));
            line(out, "delay", &duration(*delay_ms));
        }
        LeaderFault::LeaseDelete => {}
    }
}

fn write_leader(out: &mut String, leader: &Leader) {
    out.push_str("\n[leader]\n");
    line(out, "replicas", &leader.replicas.to_string());
    line(out, "variant", &quote(leader.variant.name()));
    if let Some(lease_crate) = leader.lease_crate {
        line(out, "lease_crate", &quote(lease_crate.name()));
    }
    line(out, "lease_duration", &duration(leader.lease_duration_ms));
    line(out, "renew_deadline", &duration(leader.renew_deadline_ms));
    line(out, "retry_period", &duration(leader.retry_period_ms));
    line(
        out,
        "module_stop_latency",
        &range(leader.module_stop_latency),
    );
    if leader.module_behaviour != crate::mutants::ModuleBehaviour::default() {
        line(
            out,
            "module_behaviour",
            &quote(leader.module_behaviour.name()),
        );
    }
    if leader.http2_dead_ms != super::leader::DEFAULT_HTTP2_DEAD_MS {
        line(out, "http2_dead", &duration(leader.http2_dead_ms));
    }
    for module in &leader.modules {
        out.push_str("\n[[leader.modules]]\n");
        line(out, "name", &quote(&module.name));
        line(out, "runnable_when", &quote(&module.runnable_when));
        if module.work_ctx != crate::mutants::WorkCtx::default() {
            line(out, "work_ctx", &quote(module.work_ctx.name()));
        }
    }
    for change in &leader.config {
        out.push_str("\n[[leader.config]]\n");
        line(out, "at", &duration(change.at_ms));
        line(out, "set", &inline_table(&change.set, bool::to_string));
    }
}

fn target_name(target: PodTarget) -> &'static str {
    match target {
        PodTarget::Idle => "idle",
        PodTarget::Busy => "busy",
        PodTarget::Pending => "pending",
        PodTarget::Any => "any",
    }
}

fn replica_value(replica: ReplicaRef) -> String {
    match replica {
        ReplicaRef::Index(index) => index.to_string(),
        ReplicaRef::Leader => "\"leader\"".to_owned(),
    }
}

fn line(out: &mut String, key: &str, value: &str) {
    writeln!(out, "{key} = {value}").expect("writing to a String cannot fail");
}

fn duration(total_ms: u64) -> String {
    quote(&format_duration_ms(total_ms))
}

/// A fixed range as one duration, any other as `{ min, max }`.
fn range(range: Range) -> String {
    if range.min_ms == range.max_ms {
        return duration(range.min_ms);
    }
    format!(
        "{{ min = {}, max = {} }}",
        duration(range.min_ms),
        duration(range.max_ms)
    )
}

/// Rust's shortest round-trip form; a `.0` is added where it would read as an integer.
fn float(number: f64) -> String {
    let text = format!("{number:?}");
    if text.contains(['.', 'e', 'E', 'n', 'i']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// A `cluster_profile_edit`'s `set`, keys in scenario order.
fn cluster_changes(set: &super::model::ClusterProfileChanges) -> String {
    let mut parts = Vec::new();
    if let Some(url) = &set.go_server_url {
        parts.push(format!("go_server_url = {}", quote(url)));
    }
    if let Some(reuse) = set.enable_agent_reuse {
        parts.push(format!("enable_agent_reuse = {reuse}"));
    }
    if let Some(ms) = set.auto_register_timeout_ms {
        parts.push(format!("auto_register_timeout = {}", duration(ms)));
    }
    if let Some(count) = set.pending_pods_count {
        parts.push(format!("pending_pods_count = {count}"));
    }
    if let Some(ms) = set.idle_timeout_ms {
        parts.push(format!("idle_timeout = {}", duration(ms)));
    }
    if let Some(count) = set.max_pods {
        parts.push(format!("max_pods = {count}"));
    }
    format!("{{ {} }}", parts.join(", "))
}

fn list(items: &[String]) -> String {
    names(items.iter().map(String::as_str))
}

/// A list of vocabulary names (invariant ids, fault kinds), quoted.
fn names<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items.map(quote).collect();
    format!("[{}]", quoted.join(", "))
}

fn inline_table<V>(entries: &BTreeMap<String, V>, value: impl Fn(&V) -> String) -> String {
    let parts: Vec<String> = entries
        .iter()
        .map(|(key, item)| format!("{} = {}", bare_or_quoted(key), value(item)))
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

fn bare_or_quoted(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "-_".contains(character));
    if bare { key.to_owned() } else { quote(key) }
}

/// A TOML basic string: quotes, backslashes and control characters escaped.
fn quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for character in text.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            '\r' => quoted.push_str("\\r"),
            control if control.is_control() => {
                write!(quoted, "\\u{:04X}", u32::from(control))
                    .expect("writing to a String cannot fail");
            }
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}
