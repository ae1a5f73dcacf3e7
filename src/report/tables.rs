//! The CSV tables of a report folder: `jobs.csv`, `pods.csv`, `timeline.csv`, `faults.csv`
//! (`docs/cli.md`, "Report folder", gives the columns). Unknown values are empty cells.

use super::collector::Collector;
use super::format::{actor_text, optional_seconds_text, ratio_text, seconds_text};
use std::io::{self, Write};

/// The columns of `jobs.csv`, in order.
pub const JOBS_HEADER: [&str; 11] = [
    "job_id",
    "logical_job",
    "profile",
    "environment",
    "scheduled_at_s",
    "assigned_at_s",
    "completed_at_s",
    "wait_s",
    "agent_id",
    "pod_reused",
    "outcome",
];

/// The columns of `pods.csv`, in order.
pub const PODS_HEADER: [&str; 10] = [
    "pod",
    "config_hash",
    "created_at_s",
    "running_at_s",
    "registered_at_s",
    "deleted_at_s",
    "deleted_by",
    "jobs_run",
    "busy_s",
    "idle_s",
];

/// The fixed columns of `timeline.csv`; one `leading_<i>` column per replica follows.
pub const TIMELINE_HEADER: [&str; 9] = [
    "t_s",
    "jobs_waiting",
    "jobs_building",
    "pods_pending",
    "pods_running",
    "agents_idle",
    "agents_building",
    "reuse_ratio",
    "leader",
];

/// The columns of `faults.csv`, in order.
pub const FAULTS_HEADER: [&str; 5] = ["at_s", "until_s", "kind", "target", "replicas"];

/// The columns of `leader.csv`, in order.
pub(crate) const LEADER_HEADER: [&str; 4] = ["replica", "state", "from_s", "until_s"];

fn finish(mut writer: csv::Writer<&mut dyn Write>) -> io::Result<()> {
    writer.flush()
}

/// One row per job instance, by job id.
pub(crate) fn write_jobs(out: &mut dyn Write, collector: &Collector) -> io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(JOBS_HEADER)?;
    for row in collector.jobs() {
        let wait_ms = row.wait_ms();
        writer.write_record([
            row.job_id.to_string(),
            row.logical_job.to_string(),
            row.profile,
            row.environment.unwrap_or_default(),
            seconds_text(row.scheduled_at_ms),
            optional_seconds_text(row.assigned_at_ms),
            optional_seconds_text(row.completed_at_ms),
            optional_seconds_text(wait_ms),
            row.agent_id.unwrap_or_default(),
            row.pod_reused.to_string(),
            row.outcome.name().to_owned(),
        ])?;
    }
    finish(writer)
}

/// One row per pod, by pod name; busy and idle time count up to the end of the run.
pub(crate) fn write_pods(out: &mut dyn Write, collector: &Collector) -> io::Result<()> {
    let end_ms = collector.end_ms();
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(PODS_HEADER)?;
    for row in collector.pods() {
        writer.write_record([
            row.pod.to_string(),
            row.config_hash.to_string(),
            seconds_text(row.created_at_ms),
            optional_seconds_text(row.running_at_ms),
            optional_seconds_text(row.registered_at_ms),
            optional_seconds_text(row.deleted_at_ms),
            row.deleted_by.map(actor_text).unwrap_or_default(),
            row.jobs_run.to_string(),
            seconds_text(row.busy_ms(end_ms)),
            seconds_text(row.idle_ms(end_ms)),
        ])?;
    }
    finish(writer)
}

/// One row per sample. `leader` lists the leading replicas joined by `;` (empty when none
/// leads); `leading_<i>` is 1 while replica i leads, for every replica seen in the run.
pub(crate) fn write_timeline(out: &mut dyn Write, collector: &Collector) -> io::Result<()> {
    let replicas: Vec<u32> = collector.replicas_seen().iter().copied().collect();
    let mut writer = csv::Writer::from_writer(out);
    let mut header: Vec<String> = TIMELINE_HEADER
        .iter()
        .map(|name| name.to_string())
        .collect();
    header.extend(replicas.iter().map(|replica| format!("leading_{replica}")));
    writer.write_record(&header)?;
    let mut record = Vec::with_capacity(header.len());
    for row in collector.timeline() {
        record.clear();
        record.extend([
            seconds_text(row.t_ms),
            row.jobs_waiting.to_string(),
            row.jobs_building.to_string(),
            row.pods_pending.to_string(),
            row.pods_running.to_string(),
            row.agents_idle.to_string(),
            row.agents_building.to_string(),
            ratio_text(row.reuse_ratio()),
        ]);
        let leaders: Vec<String> = row.leaders.iter().map(u32::to_string).collect();
        record.push(leaders.join(";"));
        for replica in &replicas {
            let leading = row.leaders.binary_search(replica).is_ok();
            record.push(if leading { "1" } else { "0" }.to_owned());
        }
        writer.write_record(&record)?;
    }
    finish(writer)
}

/// One row per fault start, in start order. `until_s` is empty for a fault that never
/// ended and equals `at_s` for an instantaneous one. `replicas` lists the leader replicas
/// the fault acts on, space-separated (`none` when it hit none, e.g. a leader partition while
/// nobody led), and is empty for a fault aimed at no particular replica.
pub(crate) fn write_faults(out: &mut dyn Write, collector: &Collector) -> io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(FAULTS_HEADER)?;
    for row in collector.faults() {
        let replicas = match &row.replicas {
            None => String::new(),
            Some(replicas) if replicas.is_empty() => "none".to_owned(),
            Some(replicas) => {
                let names: Vec<String> = replicas.iter().map(u32::to_string).collect();
                names.join(" ")
            }
        };
        writer.write_record([
            seconds_text(row.at_ms),
            optional_seconds_text(row.until_ms),
            row.kind.clone(),
            row.target.clone(),
            replicas,
        ])?;
    }
    finish(writer)
}

/// `leader.csv`: one row per leader-lane span in start order (see `lanes.rs`); `until_s` is
/// empty for a span still open at the end of the run.
pub(crate) fn write_leader(out: &mut dyn Write, collector: &Collector) -> io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(LEADER_HEADER)?;
    for span in collector.leader_lanes() {
        writer.write_record([
            span.replica.to_string(),
            span.state.name().to_owned(),
            seconds_text(span.from_ms),
            optional_seconds_text(span.until_ms),
        ])?;
    }
    finish(writer)
}
