//! Replay mode: the recorded trace format (`docs/cli.md`, "Recorded trace"), reading it with
//! line-numbered errors and turning it into a workload (exporting a simulated run in it is
//! [`crate::export`]).
//!
//! A recorded trace is JSON Lines: a header, then one line per observed pod change. It is
//! written by `elasticsim record` (a real cluster), by `elasticsim sim --export-trace` (a
//! simulated run) and read by `[[jobs]] kind = "trace"`. Only the fields below ever enter a
//! trace: no environment value, token or kubeconfig content.

mod derive;
mod read;
#[cfg(test)]
mod tests;

pub use derive::{DerivedJob, Workload, derive_workload, load_workload};
pub use read::{Trace, TraceError, parse_trace, read_trace};

use crate::allocator::pod_spec::keys;
use crate::resources::{Pod, StringMap};
use serde::{Deserialize, Serialize};

/// The header's `format` value.
pub(crate) const FORMAT: &str = "elasticsim-trace";
/// The only format version this build reads and writes.
pub(crate) const VERSION: u32 = 1;

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// The format version, [`VERSION`].
    pub version: u32,
    /// Who wrote it: `record <server>` or `elasticsim export …`.
    pub source: String,
    /// The Kubernetes namespace the pods were watched in.
    pub namespace: String,
    /// When `t_ms = 0` was, as RFC 3339 (a fixed epoch for simulated runs).
    pub started_at: String,
}

/// The kind of a pod observation, as a watch reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PodEvent {
    /// The pod appeared (created, or first seen by the recording).
    Added,
    /// A field of the format changed.
    Modified,
    /// The pod left the API server.
    Deleted,
}

/// One observed pod change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceLine {
    /// Milliseconds since the header's `started_at` (simulated time for an export).
    pub t_ms: u64,
    /// Whether the pod was added, modified or deleted.
    pub event: PodEvent,
    /// The pod as it is after the change.
    #[serde(flatten)]
    pub state: PodState,
}

/// What a trace keeps of a pod: the fields of the format and nothing else.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PodState {
    /// The pod's name.
    pub pod: String,
    /// `Pending`, `Running`, `Succeeded` or `Failed` (`Unknown` is read too).
    pub phase: String,
    /// The `Elastic-Agent-Job-Id` label.
    pub job_id: Option<String>,
    /// The `Elastic-Agent-Job-Identifier` annotation, parsed; null when absent or not JSON.
    pub job_identifier: Option<serde_json::Value>,
    /// The plugin's `go.cd/elastic-config-hash` annotation; without it, the harness's own
    /// identity of the profile-property annotations and environment label (see
    /// [`config_hash_of`]); null for a pod with neither.
    pub config_hash: Option<String>,
    /// `status.containerStatuses[0].restartCount`.
    #[serde(default)]
    pub restarts: u32,
    /// `spec.nodeName` once scheduled.
    pub node: Option<String>,
}

/// A pod's trace state from its labels, annotations and status.
pub(crate) fn pod_state(
    name: &str,
    labels: &StringMap,
    annotations: &StringMap,
    phase: &str,
    restarts: u32,
    node: Option<&str>,
) -> PodState {
    PodState {
        pod: name.to_owned(),
        phase: phase.to_owned(),
        job_id: labels.get(keys::JOB_ID).cloned(),
        job_identifier: annotations
            .get(keys::JOB_IDENTIFIER)
            .and_then(|text| serde_json::from_str(text).ok()),
        config_hash: config_hash_of(labels, annotations),
        restarts,
        node: node.map(str::to_owned),
    }
}

/// A simulated pod's trace state.
pub fn pod_state_of(pod: &Pod) -> PodState {
    pod_state(
        &pod.name,
        &pod.labels,
        &pod.annotations,
        pod.phase.as_str(),
        pod.restart_count,
        pod.node.as_deref(),
    )
}

/// The config hash a trace records: the plugin's own annotation when it writes one (PR #355,
/// `safe`); otherwise the harness identity of the elastic-profile annotations (the plugin
/// writes every profile property as an annotation) and the environment label, so that traces
/// of the upstream plugin still tell configs apart. Only a hash, never a value, is kept.
pub(crate) fn config_hash_of(labels: &StringMap, annotations: &StringMap) -> Option<String> {
    if let Some(hash) = annotations.get(keys::CONFIG_HASH) {
        return Some(hash.clone());
    }
    let properties: StringMap = annotations
        .iter()
        .filter(|(key, _)| {
            key.as_str() != keys::JOB_IDENTIFIER && !key.contains('/') && !key.contains('.')
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if properties.is_empty() {
        return None;
    }
    let environment = labels.get(keys::ENVIRONMENT).map(String::as_str);
    Some(crate::trace::config_identity(&properties, environment))
}

/// One trace line as JSON text (no newline).
pub(crate) fn line_json(line: &TraceLine) -> String {
    serde_json::to_string(line).expect("a trace line of strings, integers and JSON serialises")
}

/// The header as JSON text (no newline).
pub(crate) fn header_json(header: &Header) -> String {
    serde_json::to_string(header).expect("a header of strings and integers serialises")
}

/// RFC 3339 (UTC, seconds) of `ms` milliseconds after the Unix epoch. Proleptic Gregorian
/// calendar, Howard Hinnant's `civil_from_days`.
pub(crate) fn rfc3339(ms: u64) -> String {
    let seconds = ms / 1000;
    let days = (seconds / 86_400) as i64;
    let in_day = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day % 3600 / 60,
        in_day % 60
    )
}
