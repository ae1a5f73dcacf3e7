//! `[[faults]]` (every kind of [`FaultType`], read by owner) and `[swarm]`.

use super::ErrorKind;
use super::fault_kind::{ElasticFault, FaultKind, LeaderFault, NetworkFault};
use super::fault_type::FaultType;
use super::fault_type::{ElasticKind, LeaderKind, NetworkKind};
use super::model::{
    ClusterProfileChanges, Fault, JobTarget, OutageMode, PodTarget, ReplicaRef, Swarm,
};
use super::parse::{Context, PROFILE_KEYS, instant, profile_reference, spread};
use super::reader::{
    Result, Table, Value, boolean, choice_list_of, count_at_least, duration, number, range, string,
    strings,
};
use std::collections::BTreeMap;
use toml::de::DeValue;

/// Every fault kind's name, in the order of [`FaultType::ALL`].
pub const FAULT_KINDS: &[&str] = &FaultType::NAMES;

/// Fixed partition groups; `replica-N` is the one parameterised group.
pub const PARTITION_GROUPS: &[&str] = &[
    "gocd",
    "kube-api",
    "agents",
    "replica-N",
    "replicas",
    "leader",
];

/// `replica_stop` without `downtime`: a rolling update's replacement pod starts this later.
pub(crate) const DEFAULT_STOP_DOWNTIME_MS: u64 = 30_000;

const TARGETS: &[&str] = &["idle", "busy", "pending", "any"];
const JOB_TARGETS: &[&str] = &["building", "scheduled"];

/// `replace_after` of a `node_loss` when the scenario gives none.
pub const NODE_REPLACE_AFTER_MS: u64 = 10 * 60_000;

pub(crate) fn faults(top: &Table<'_, '_>, context: &Context) -> Result<Vec<Fault>> {
    top.tables("faults")?
        .iter()
        .map(|table| fault(table, context))
        .collect()
}

fn fault(table: &Table<'_, '_>, context: &Context) -> Result<Fault> {
    let Some(name) = table.choice("kind", FAULT_KINDS)? else {
        return Err(table.missing("kind", "a fault kind such as \"server_crash\""));
    };
    let kind = FaultType::from_name(&name).expect("choice() accepts fault kind names only");
    let allowed: Vec<&str> = ["at", "kind"]
        .into_iter()
        .chain(kind.keys().iter().copied())
        .collect();
    table.expect_keys(&allowed)?;
    if kind.needs_leader() && context.leader_replicas.is_none() {
        let found = format!("\"{name}\" without a [leader] section");
        return Err(table.semantic("kind", "a [leader] section for this fault kind", &found));
    }
    let at_ms = instant(table, context)?;
    let kind = match kind {
        FaultType::Elastic(kind) => FaultKind::Elastic(elastic_fault(table, context, kind, at_ms)?),
        FaultType::Network(kind) => FaultKind::Network(network_fault(table, context, kind)?),
        FaultType::Leader(kind) => FaultKind::Leader(leader_fault(table, context, kind)?),
    };
    Ok(Fault { at_ms, kind })
}

/// The parameters of a fault of the elastic-agent side.
fn elastic_fault(
    table: &Table<'_, '_>,
    context: &Context,
    kind: ElasticKind,
    at_ms: u64,
) -> Result<ElasticFault> {
    Ok(match kind {
        ElasticKind::ServerCrash => ElasticFault::ServerCrash {
            downtime_ms: downtime(table)?,
        },
        ElasticKind::PodDelete => ElasticFault::PodDelete {
            target: target(table)?,
            count: count(table)?,
        },
        ElasticKind::ContainerRestart => ElasticFault::ContainerRestart {
            target: target(table)?,
            count: count(table)?,
        },
        ElasticKind::PodFail => ElasticFault::PodFail {
            target: target(table)?,
            count: count(table)?,
        },
        ElasticKind::ProfileEdit => ElasticFault::ProfileEdit {
            profile: profile_reference(table, context)?,
            set: profile_changes(table)?,
        },
        ElasticKind::ClusterProfileEdit => ElasticFault::ClusterProfileEdit {
            set: cluster_profile_changes(table)?,
        },
        ElasticKind::NodeLoss => ElasticFault::NodeLoss {
            count: count(table)?,
            replace_after_ms: period_of(table, "replace_after", NODE_REPLACE_AFTER_MS)?,
        },
        ElasticKind::NodeAdd => ElasticFault::NodeAdd {
            count: count(table)?,
        },
        ElasticKind::JobCancel => ElasticFault::JobCancel {
            target: job_target(table)?,
            count: count(table)?,
        },
        ElasticKind::Burst => ElasticFault::Burst {
            count: table.required("count", "how many jobs", &count_at_least(1))?,
            spread_ms: spread(table, at_ms, context)?,
            profile: profile_reference(table, context)?,
            runtime: table.required("runtime", "a duration or range", &range)?,
        },
    })
}

/// The parameters of a fault of the network or the API.
fn network_fault(
    table: &Table<'_, '_>,
    context: &Context,
    kind: NetworkKind,
) -> Result<NetworkFault> {
    Ok(match kind {
        NetworkKind::Partition => NetworkFault::Partition {
            between: between(table, context)?,
            for_ms: table.required("for", "how long, a duration", &duration)?,
        },
        NetworkKind::ApiOutage => NetworkFault::ApiOutage {
            for_ms: table.required("for", "how long, a duration", &duration)?,
            mode: match table.choice("mode", &["error", "hang"])?.as_deref() {
                Some("hang") => OutageMode::Hang,
                _ => OutageMode::Error,
            },
        },
    })
}

/// The parameters of a fault of the `[leader]` replicas or their Lease.
fn leader_fault(table: &Table<'_, '_>, context: &Context, kind: LeaderKind) -> Result<LeaderFault> {
    let replica = || replica(table, context);
    Ok(match kind {
        LeaderKind::LeaseDelete => LeaderFault::LeaseDelete,
        LeaderKind::ReplicaCrash => LeaderFault::ReplicaCrash {
            replica: replica()?,
            downtime_ms: downtime(table)?,
        },
        LeaderKind::ReplicaStop => LeaderFault::ReplicaStop {
            replica: replica()?,
            downtime_ms: table.or("downtime", DEFAULT_STOP_DOWNTIME_MS, &duration)?,
        },
        LeaderKind::ReplicaPause => LeaderFault::ReplicaPause {
            replica: replica()?,
            for_ms: table.required("for", "how long, a duration", &duration)?,
        },
        LeaderKind::ClockDrift => {
            let replica = replica()?;
            let rate = table.required("rate", "the clock rate, a number above 0", &number)?;
            if rate <= 0.0 {
                let value = table.get("rate").expect("required() found the key");
                return Err(table.invalid("rate", value, "a clock rate above 0"));
            }
            LeaderFault::ClockDrift { replica, rate }
        }
        LeaderKind::CallbackDelay => LeaderFault::CallbackDelay {
            replica: replica()?,
            delay_ms: table.required("delay", "how late, a duration", &duration)?,
        },
    })
}

fn downtime(table: &Table<'_, '_>) -> Result<u64> {
    table.required(
        "downtime",
        "how long until the restart, a duration",
        &duration,
    )
}

fn count(table: &Table<'_, '_>) -> Result<u32> {
    table.or("count", 1, &count_at_least(1))
}

/// A duration longer than zero, `default_ms` when absent.
fn period_of(table: &Table<'_, '_>, key: &str, default_ms: u64) -> Result<u64> {
    let period_ms = table.or(key, default_ms, &duration)?;
    if period_ms == 0 {
        return Err(table.semantic(key, "a duration longer than 0s", "\"0s\""));
    }
    Ok(period_ms)
}

/// `target` of a `job_cancel`: required, "building" or "scheduled".
fn job_target(table: &Table<'_, '_>) -> Result<JobTarget> {
    match table.choice("target", JOB_TARGETS)?.as_deref() {
        Some("building") => Ok(JobTarget::Building),
        Some(_) => Ok(JobTarget::Scheduled),
        None => Err(table.missing("target", "\"building\" or \"scheduled\"")),
    }
}

fn target(table: &Table<'_, '_>) -> Result<PodTarget> {
    Ok(match table.choice("target", TARGETS)?.as_deref() {
        Some("idle") => PodTarget::Idle,
        Some("busy") => PodTarget::Busy,
        Some("pending") => PodTarget::Pending,
        _ => PodTarget::Any,
    })
}

/// `replica`: an index below `[leader] replicas`, `"replica-N"` naming one, or `"leader"`.
fn replica(table: &Table<'_, '_>, context: &Context) -> Result<ReplicaRef> {
    let replicas = context
        .leader_replicas
        .expect("leader faults are rejected without [leader]");
    let expected = format!(
        "a replica index from 0 to {}, \"replica-N\" or \"leader\"",
        replicas - 1
    );
    let Some(value) = table.get("replica") else {
        return Err(table.missing("replica", &expected));
    };
    match value.get_ref() {
        DeValue::String(text) if text == "leader" => Ok(ReplicaRef::Leader),
        DeValue::String(text) if text.starts_with("replica-") => {
            let index =
                replica_group(text).ok_or_else(|| table.invalid("replica", value, &expected))?;
            if index >= replicas {
                let mut error = table.invalid("replica", value, &expected);
                error.kind = ErrorKind::Semantic;
                return Err(error);
            }
            Ok(ReplicaRef::Index(index))
        }
        DeValue::Integer(_) => {
            let index = count_at_least(0)(table, "replica", value)
                .map_err(|_| table.invalid("replica", value, &expected))?;
            if index >= replicas {
                let mut error = table.invalid("replica", value, &expected);
                error.kind = ErrorKind::Semantic;
                return Err(error);
            }
            Ok(ReplicaRef::Index(index))
        }
        DeValue::String(_) => Err(table.invalid("replica", value, &expected)),
        _ => {
            let mut error = table.invalid("replica", value, &expected);
            error.kind = ErrorKind::WrongType;
            Err(error)
        }
    }
}

/// The replica a `replica-N` group (or `replica` value) names: `N` in decimal digits only;
/// `None` for anything else. The parser, the world and the lease-crate runs read groups so.
pub fn replica_group(group: &str) -> Option<u32> {
    let digits = group.strip_prefix("replica-")?;
    let decimal = !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit());
    digits.parse().ok().filter(|_| decimal)
}

/// `between`: exactly two different node groups.
fn between(table: &Table<'_, '_>, context: &Context) -> Result<[String; 2]> {
    let expected = "a list of two node groups, e.g. [\"gocd\", \"kube-api\"]";
    let Some(value) = table.get("between") else {
        return Err(table.missing("between", expected));
    };
    let groups = strings(table, "between", value)?;
    let [first, second] = <[String; 2]>::try_from(groups).map_err(|groups| {
        let mut error = table.invalid("between", value, expected);
        error.found = match groups.len() {
            1 => "a list of 1 group".to_owned(),
            count => format!("a list of {count} groups"),
        };
        error
    })?;
    let DeValue::Array(items) = value.get_ref() else {
        unreachable!("strings() accepted the value, so it is an array")
    };
    for (index, group) in [&first, &second].into_iter().enumerate() {
        check_group(table, context, &items[index], index, group)?;
    }
    if first == second {
        return Err(table.semantic(
            "between",
            "two different node groups",
            &format!("{first:?} twice"),
        ));
    }
    Ok([first, second])
}

fn check_group(
    table: &Table<'_, '_>,
    context: &Context,
    item: &Value<'_>,
    index: usize,
    group: &str,
) -> Result<()> {
    let key = format!("{}[{index}]", table.key_path("between"));
    let replica_index = group.strip_prefix("replica-").map(|_| replica_group(group));
    let known = match replica_index {
        Some(parsed) => parsed.is_some(),
        None => PARTITION_GROUPS.contains(&group) && group != "replica-N",
    };
    if !known {
        let mut error = table.source.error(
            ErrorKind::InvalidValue,
            item.span(),
            &key,
            "a node group",
            format!("{group:?}"),
        );
        error.choices = PARTITION_GROUPS
            .iter()
            .map(|&choice| choice.to_owned())
            .collect();
        return Err(error);
    }
    let needs_leader = replica_index.is_some() || group == "replicas" || group == "leader";
    let found = format!("{group:?}");
    match (
        needs_leader,
        context.leader_replicas,
        replica_index.flatten(),
    ) {
        (true, None, _) => Err(table.source.error(
            ErrorKind::Semantic,
            item.span(),
            &key,
            "a [leader] section for a replica group",
            found,
        )),
        (true, Some(replicas), Some(replica)) if replica >= replicas => Err(table.source.error(
            ErrorKind::Semantic,
            item.span(),
            &key,
            format!("a replica from replica-0 to replica-{}", replicas - 1),
            found,
        )),
        _ => Ok(()),
    }
}

/// `set` of a `profile_edit`: new string values for profile keys other than `name`.
fn profile_changes(table: &Table<'_, '_>) -> Result<BTreeMap<String, String>> {
    let Some(value) = table.get("set") else {
        return Err(table.missing(
            "set",
            "a table of new profile values, e.g. { image = \"…\" }",
        ));
    };
    let changes = table.nested("set", value, table.key_path("set"))?;
    let editable: Vec<&str> = PROFILE_KEYS
        .iter()
        .copied()
        .filter(|&key| key != "name")
        .collect();
    changes.expect_keys(&editable)?;
    let mut set = BTreeMap::new();
    for key in editable {
        if let Some(text) = changes.optional(key, &string)? {
            set.insert(key.to_owned(), text);
        }
    }
    if set.is_empty() {
        return Err(table.semantic(
            "set",
            "at least one changed profile value",
            "an empty table",
        ));
    }
    Ok(set)
}

/// `set` of a `cluster_profile_edit`: new values for cluster profile keys.
fn cluster_profile_changes(table: &Table<'_, '_>) -> Result<ClusterProfileChanges> {
    let Some(value) = table.get("set") else {
        return Err(table.missing(
            "set",
            "a table of new cluster profile values, e.g. { pending_pods_count = 5 }",
        ));
    };
    let changes = table.nested("set", value, table.key_path("set"))?;
    changes.expect_keys(CLUSTER_PROFILE_EDIT_KEYS)?;
    let set = ClusterProfileChanges {
        go_server_url: changes.optional("go_server_url", &string)?,
        enable_agent_reuse: changes.optional("enable_agent_reuse", &boolean)?,
        auto_register_timeout_ms: changes.optional("auto_register_timeout", &duration)?,
        pending_pods_count: changes.optional("pending_pods_count", &count_at_least(1))?,
        idle_timeout_ms: changes.optional("idle_timeout", &duration)?,
        max_pods: changes.optional("max_pods", &count_at_least(1))?,
    };
    if set == ClusterProfileChanges::default() {
        return Err(table.semantic(
            "set",
            "at least one changed cluster profile value",
            "an empty table",
        ));
    }
    Ok(set)
}

/// The keys a `cluster_profile_edit` may set.
pub(crate) const CLUSTER_PROFILE_EDIT_KEYS: &[&str] = &[
    "go_server_url",
    "enable_agent_reuse",
    "auto_register_timeout",
    "pending_pods_count",
    "idle_timeout",
    "max_pods",
];

pub(crate) fn swarm(top: &Table<'_, '_>, context: &Context) -> Result<Swarm> {
    let defaults = Swarm::default();
    let Some(table) = top.table("swarm")? else {
        return Ok(defaults);
    };
    table.expect_keys(&["enabled", "kinds", "mean_interval", "draw", "api_latency"])?;
    let enabled = table.or("enabled", defaults.enabled, &super::reader::boolean)?;
    let kinds = choice_list_of(&table, "kinds", &FaultType::ALL, FaultType::name)?
        .unwrap_or(defaults.kinds);
    let mean_interval_ms = table.or("mean_interval", defaults.mean_interval_ms, &duration)?;
    if mean_interval_ms == 0 {
        return Err(table.semantic("mean_interval", "a duration longer than 0s", "\"0s\""));
    }
    if enabled && kinds.is_empty() {
        return Err(table.semantic("kinds", "at least one fault kind when enabled", "[]"));
    }
    let leader_kind = kinds.iter().find(|kind| kind.needs_leader());
    if let (Some(kind), None) = (leader_kind, context.leader_replicas) {
        let found = format!("\"{}\" without a [leader] section", kind.name());
        return Err(table.semantic("kinds", "a [leader] section for leader fault kinds", &found));
    }
    let draw = match table.get("draw") {
        None => None,
        Some(value) => {
            let text = super::reader::string(&table, "draw", value)?;
            let draw = super::SwarmDraw::parse(&text)
                .map_err(|message| table.invalid("draw", value, &message))?;
            if let Some(kind) = draw.weights.keys().find(|kind| !kinds.contains(&kind.0)) {
                let expected = format!("kinds of [swarm] kinds only, not {:?}", kind.0.name());
                return Err(table.invalid("draw", value, &expected));
            }
            Some(draw)
        }
    };
    let api_latency = match table.get("api_latency") {
        None => None,
        Some(value) => {
            let levels = super::reader::range(&table, "api_latency", value)?;
            if levels.min_ms == 0 {
                let expected = "a level range from at least 1ms (levels are drawn log-uniformly)";
                return Err(table.semantic("api_latency", expected, "min = \"0s\""));
            }
            Some(levels)
        }
    };
    Ok(Swarm {
        enabled,
        kinds,
        mean_interval_ms,
        draw,
        api_latency,
    })
}

#[cfg(test)]
mod tests {
    use super::replica_group;

    #[test]
    fn a_replica_group_is_replica_and_decimal_digits_only() {
        assert_eq!(replica_group("replica-0"), Some(0));
        assert_eq!(replica_group("replica-12"), Some(12));
        for other in [
            "replica-",
            "replica-N",
            "replica-+1",
            "replica--1",
            "replicas",
            "gocd",
        ] {
            assert_eq!(replica_group(other), None, "{other:?}");
        }
    }
}
