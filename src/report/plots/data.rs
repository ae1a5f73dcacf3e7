//! The numbers a run's plots draw, read back from its CSV tables (and `summary.json`), so the
//! plots of any report folder can be redrawn from its files alone.

use super::PlotError;
use crate::ablation::Ablations;
use crate::allocator::Policy;
use crate::leader::Variant;
use crate::report::metrics::seconds;
use crate::report::summary::verdict_line;
use crate::report::{LaneState, RunInfo};
use std::path::Path;

/// What the tables do not say: the caption's run name, the run's end and the wait bound.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PlotContext {
    /// Names the run in every caption, e.g. `PASS burst (policy upstream, seed 7)`.
    pub title: String,
    /// The scenario's `max_job_wait`, drawn on the wait CDF.
    pub max_job_wait_s: Option<f64>,
    /// Simulated end of the run; open fault intervals are drawn up to here.
    pub end_s: Option<f64>,
}

impl PlotContext {
    /// The context of a run still in memory: its verdict line, wait bound and end.
    pub(crate) fn from_info(info: &RunInfo) -> PlotContext {
        PlotContext {
            title: verdict_line(info),
            max_job_wait_s: Some(seconds(info.max_job_wait_ms)),
            end_s: Some(seconds(info.sim_ms)),
        }
    }

    /// From `dir/summary.json` when it is there and readable; otherwise the folder's name
    /// and no bound.
    pub(crate) fn from_folder(dir: &Path) -> PlotContext {
        let fallback = PlotContext {
            title: dir
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ..PlotContext::default()
        };
        let Ok(text) = std::fs::read_to_string(dir.join("summary.json")) else {
            return fallback;
        };
        let Ok(summary) = serde_json::from_str::<serde_json::Value>(&text) else {
            return fallback;
        };
        let text_of = |key: &str| summary[key].as_str().unwrap_or_default().to_owned();
        // Absent when nothing was switched off.
        let ablations: Ablations =
            serde_json::from_value(summary["ablations"].clone()).unwrap_or_default();
        let ablated = if ablations.is_empty() {
            String::new()
        } else {
            format!(", ablate {}", ablations.label())
        };
        // The same words as `verdict_line`: a leader run names its variant, an elastic run
        // its policy.
        let Ok(variant) = serde_json::from_value::<Option<Variant>>(summary["variant"].clone())
        else {
            return fallback;
        };
        let runner = match variant {
            Some(variant) => format!("variant {}", variant.name()),
            None => match serde_json::from_value::<Policy>(summary["policy"].clone()) {
                Ok(policy) => format!("policy {}", policy.name()),
                Err(_) => return fallback,
            },
        };
        PlotContext {
            title: format!(
                "{} {} ({runner}{ablated}, seed {})",
                text_of("verdict").to_uppercase(),
                text_of("scenario"),
                summary["seed"].as_u64().unwrap_or_default()
            ),
            max_job_wait_s: summary["max_job_wait_s"].as_f64(),
            end_s: summary["sim_s"].as_f64(),
        }
    }
}

/// One row of `timeline.csv`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TimelinePoint {
    /// Simulated time of the sample, in seconds.
    pub t_s: f64,
    /// Job instances scheduled and not yet assigned.
    pub jobs_waiting: f64,
    /// Pods created and not yet running.
    pub pods_pending: f64,
    /// Pods running.
    pub pods_running: f64,
    /// Registered agents with no job.
    pub agents_idle: f64,
    /// Agents building a job.
    pub agents_building: f64,
    /// Reuse ratio of the assignments so far.
    pub reuse_ratio: f64,
}

/// One row of `faults.csv`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FaultSpan {
    /// When the fault started, in simulated seconds.
    pub from_s: f64,
    /// `None` for a fault that had not ended when the run did.
    pub until_s: Option<f64>,
    /// The fault's kind, as in the scenario (e.g. `node_loss`).
    pub kind: String,
    /// What the fault acts on (a node group, a node, a replica).
    pub target: String,
    /// The leader replicas it acts on (empty: none); `None` for a fault aimed at no
    /// particular replica (or a `faults.csv` without the `replicas` column).
    pub replicas: Option<Vec<u32>>,
}

/// One row of `leader.csv`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LaneRow {
    /// The leader replica of the lane.
    pub replica: u32,
    /// What the replica was doing.
    pub state: LaneState,
    /// When the span began, in simulated seconds.
    pub from_s: f64,
    /// `None` for a span still open at the end of the run.
    pub until_s: Option<f64>,
}

/// Everything the run plots draw.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RunData {
    /// Caption, run end and wait bound.
    pub context: PlotContext,
    /// The `timeline.csv` samples, in time order.
    pub timeline: Vec<TimelinePoint>,
    /// Waits of the assigned job instances, ascending.
    pub waits_s: Vec<f64>,
    /// Job instances never assigned.
    pub jobs_unassigned: usize,
    /// The `faults.csv` rows, in start order.
    pub faults: Vec<FaultSpan>,
    /// The `leader.csv` spans, in start order.
    pub lanes: Vec<LaneRow>,
    /// Every replica of the run, ascending (from `leader.csv` and the `leading_<i>` columns).
    pub replicas: Vec<u32>,
    /// The end of the time axes.
    pub end_s: f64,
}

/// A CSV table read whole, with its columns found by name.
struct Table {
    path: String,
    header: csv::StringRecord,
    rows: Vec<csv::StringRecord>,
}

impl Table {
    fn read(path: &Path) -> Result<Table, PlotError> {
        let failed = |message: String| PlotError::Read {
            path: path.display().to_string(),
            message,
        };
        let mut reader = csv::Reader::from_path(path).map_err(|e| failed(e.to_string()))?;
        let header = reader.headers().map_err(|e| failed(e.to_string()))?.clone();
        let rows = reader
            .records()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(e.to_string()))?;
        Ok(Table {
            path: path.display().to_string(),
            header,
            rows,
        })
    }

    fn read_if_present(path: &Path) -> Result<Option<Table>, PlotError> {
        if path.exists() {
            Table::read(path).map(Some)
        } else {
            Ok(None)
        }
    }

    fn error(&self, message: String) -> PlotError {
        PlotError::Read {
            path: self.path.clone(),
            message,
        }
    }

    fn column(&self, name: &str) -> Result<usize, PlotError> {
        self.header
            .iter()
            .position(|column| column == name)
            .ok_or_else(|| self.error(format!("no column `{name}`")))
    }

    /// The number in `row` at `column`; `None` for an empty cell.
    fn number(&self, row: &csv::StringRecord, column: usize) -> Result<Option<f64>, PlotError> {
        let cell = row.get(column).unwrap_or_default().trim();
        if cell.is_empty() {
            return Ok(None);
        }
        cell.parse::<f64>()
            .map(Some)
            .map_err(|_| self.error(format!("`{cell}` is not a number")))
    }

    fn required(&self, row: &csv::StringRecord, column: usize) -> Result<f64, PlotError> {
        self.number(row, column)?
            .ok_or_else(|| self.error(format!("empty cell in column {}", column + 1)))
    }
}

fn read_timeline(table: &Table) -> Result<Vec<TimelinePoint>, PlotError> {
    let names = [
        "t_s",
        "jobs_waiting",
        "pods_pending",
        "pods_running",
        "agents_idle",
        "agents_building",
        "reuse_ratio",
    ];
    let columns = names
        .iter()
        .map(|name| table.column(name))
        .collect::<Result<Vec<_>, _>>()?;
    let mut points = Vec::with_capacity(table.rows.len());
    for row in &table.rows {
        let value = |position: usize| table.required(row, columns[position]);
        points.push(TimelinePoint {
            t_s: value(0)?,
            jobs_waiting: value(1)?,
            pods_pending: value(2)?,
            pods_running: value(3)?,
            agents_idle: value(4)?,
            agents_building: value(5)?,
            reuse_ratio: value(6)?,
        });
    }
    Ok(points)
}

/// Waits of assigned instances (ascending) and the count of unassigned ones.
fn read_waits(table: &Table) -> Result<(Vec<f64>, usize), PlotError> {
    let wait = table.column("wait_s")?;
    let mut waits_s = Vec::with_capacity(table.rows.len());
    let mut unassigned = 0;
    for row in &table.rows {
        match table.number(row, wait)? {
            Some(wait_s) => waits_s.push(wait_s),
            None => unassigned += 1,
        }
    }
    waits_s.sort_by(f64::total_cmp);
    Ok((waits_s, unassigned))
}

fn read_faults(table: &Table) -> Result<Vec<FaultSpan>, PlotError> {
    let [at, until, kind, target] =
        ["at_s", "until_s", "kind", "target"].map(|name| table.column(name));
    let (at, until, kind, target) = (at?, until?, kind?, target?);
    // Older report folders have no `replicas` column: their faults shade every lane.
    let replicas = table.column("replicas").ok();
    let mut faults = Vec::with_capacity(table.rows.len());
    for row in &table.rows {
        let cell = replicas
            .and_then(|column| row.get(column))
            .unwrap_or_default();
        faults.push(FaultSpan {
            from_s: table.required(row, at)?,
            until_s: table.number(row, until)?,
            kind: row.get(kind).unwrap_or_default().to_owned(),
            target: row.get(target).unwrap_or_default().to_owned(),
            replicas: read_replicas(table, cell)?,
        });
    }
    Ok(faults)
}

/// A `replicas` cell: empty → `None`, `none` → no replica, else space-separated indices.
fn read_replicas(table: &Table, cell: &str) -> Result<Option<Vec<u32>>, PlotError> {
    match cell.trim() {
        "" => Ok(None),
        "none" => Ok(Some(Vec::new())),
        list => list
            .split_whitespace()
            .map(|part| {
                part.parse()
                    .map_err(|_| table.error(format!("`{part}` is not a replica")))
            })
            .collect::<Result<Vec<u32>, PlotError>>()
            .map(Some),
    }
}

fn read_lanes(table: &Table) -> Result<Vec<LaneRow>, PlotError> {
    let [replica, state, from, until] =
        ["replica", "state", "from_s", "until_s"].map(|name| table.column(name));
    let (replica, state, from, until) = (replica?, state?, from?, until?);
    let mut lanes = Vec::with_capacity(table.rows.len());
    for row in &table.rows {
        let replica_text = row.get(replica).unwrap_or_default();
        let state_text = row.get(state).unwrap_or_default();
        lanes.push(LaneRow {
            replica: replica_text
                .parse()
                .map_err(|_| table.error(format!("`{replica_text}` is not a replica")))?,
            state: LaneState::from_name(state_text)
                .ok_or_else(|| table.error(format!("`{state_text}` is not a lane state")))?,
            from_s: table.required(row, from)?,
            until_s: table.number(row, until)?,
        });
    }
    Ok(lanes)
}

impl RunData {
    /// Read the tables of the run folder `dir`.
    pub(crate) fn load(dir: &Path, context: &PlotContext) -> Result<RunData, PlotError> {
        let timeline_table = Table::read(&dir.join("timeline.csv"))?;
        let timeline = read_timeline(&timeline_table)?;
        let (waits_s, jobs_unassigned) = read_waits(&Table::read(&dir.join("jobs.csv"))?)?;
        let faults = match Table::read_if_present(&dir.join("faults.csv"))? {
            Some(table) => read_faults(&table)?,
            None => Vec::new(),
        };
        let lanes = match Table::read_if_present(&dir.join("leader.csv"))? {
            Some(table) => read_lanes(&table)?,
            None => Vec::new(),
        };
        let mut replicas: Vec<u32> = timeline_table
            .header
            .iter()
            .filter_map(|column| column.strip_prefix("leading_")?.parse().ok())
            .chain(lanes.iter().map(|lane| lane.replica))
            .collect();
        replicas.sort_unstable();
        replicas.dedup();
        let last_sample_s = timeline.last().map_or(0.0, |point| point.t_s);
        let end_s = context.end_s.unwrap_or(0.0).max(last_sample_s).max(1.0);
        Ok(RunData {
            context: context.clone(),
            timeline,
            waits_s,
            jobs_unassigned,
            faults,
            lanes,
            replicas,
            end_s,
        })
    }
}
