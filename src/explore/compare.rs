//! The same seeds under several policies, side by side.
//!
//! Aggregation rules (what `compare.csv`, `compare.md` and the terminal table mean):
//! - pass rates are fractions of seeds: overall, and per invariant (seeds where that invariant
//!   held), for every invariant that failed under at least one compared policy;
//! - job waits are pooled: p50/p95/max over every assigned job instance of every seed, with
//!   the report's nearest-rank rule, so a seed with more jobs weighs more;
//! - the reuse ratio is pooled too: reused assignments ÷ assignments over all seeds;
//! - pods created and pod-seconds are means per seed.
//! - A leader comparison (`--variants`, rows whose seeds carry a variant) shows leader
//!   figures instead: failover p50/p95/max pooled over every failover of every seed
//!   (nearest rank), failovers, leader changes and the seconds with no leader and with two
//!   replicas acting as means per seed.

use super::sweep::SeedRow;
use crate::check::InvariantId;
use crate::report::atomic;
use crate::report::format::{number_text, ratio_text};
use crate::report::percentile_nearest_rank;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// One policy's aggregate over the compared seeds. Plots use these rows directly.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyRow {
    /// The column's label: the policy's name, or `policy/variant` for a leader comparison.
    pub label: String,
    /// Seeds compared.
    pub seeds: u64,
    /// Seeds where every invariant held.
    pub passed: u64,
    /// `passed ÷ seeds`.
    pub pass_rate: f64,
    /// Invariant id → fraction of seeds in which it held (ids failing under any policy).
    pub invariant_pass_rates: BTreeMap<InvariantId, f64>,
    /// `safety`, `liveness`, `both` → failing seeds.
    pub failure_classes: BTreeMap<String, u64>,
    /// Assignments to an agent that had already run a job ÷ assignments, pooled over the seeds.
    pub reuse_ratio: f64,
    /// Median job wait, pooled over every seed's assigned instances, in seconds.
    pub wait_s_p50: f64,
    /// 95th-percentile job wait, pooled over the seeds, in seconds.
    pub wait_s_p95: f64,
    /// Longest job wait of any seed, in seconds.
    pub wait_s_max: f64,
    /// Job instances never assigned, summed over the seeds: their waits are counted as they
    /// stood at the end, so the wait figures are lower bounds (`≥`) when this is not 0.
    pub waits_censored: u64,
    /// Pods created per seed, on average.
    pub pods_created_mean: f64,
    /// Busy pod-seconds per seed, on average.
    pub pod_seconds_busy_mean: f64,
    /// Idle pod-seconds per seed, on average.
    pub pod_seconds_idle_mean: f64,
    /// Pending pod-seconds per seed, on average.
    pub pod_seconds_pending_mean: f64,
    /// A leader comparison's figures; `None` for an elastic-agent comparison.
    pub leader: Option<LeaderFigures>,
}

impl PolicyRow {
    /// A wait figure, with `≥` when some waits were censored at the end of a run.
    pub(crate) fn wait_text(&self, seconds: f64) -> String {
        let at_least = if self.waits_censored > 0 { "≥" } else { "" };
        format!("{at_least}{}", number_text(seconds))
    }
}

/// One variant's leader figures over the compared seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LeaderFigures {
    /// Failovers per seed, on average.
    pub failovers_mean: f64,
    /// Pooled over every failover of every seed.
    pub failover_s_p50: f64,
    /// 95th-percentile failover, pooled, in seconds.
    pub failover_s_p95: f64,
    /// Longest failover of any seed, in seconds.
    pub failover_s_max: f64,
    /// Leader changes (terms started) per seed, on average.
    pub leader_changes_mean: f64,
    /// Seconds per seed with no replica leading, on average.
    pub no_leader_s_mean: f64,
    /// Seconds per seed with two or more replicas acting, on average.
    pub two_acting_s_mean: f64,
}

impl LeaderFigures {
    /// The figures of `rows`, or `None` when no row is a leader run.
    fn of(rows: &[SeedRow]) -> Option<LeaderFigures> {
        if rows.iter().all(|row| row.variant.is_none()) {
            return None;
        }
        let seeds = rows.len() as u64;
        let pooled = super::tables::pooled_failover_ms(rows);
        let metric_mean = |pick: fn(&SeedRow) -> f64| mean(rows.iter().map(pick), seeds);
        Some(LeaderFigures {
            failovers_mean: metric_mean(|row| row.metrics.failovers as f64),
            failover_s_p50: percentile_s(&pooled, 50),
            failover_s_p95: percentile_s(&pooled, 95),
            failover_s_max: percentile_s(&pooled, 100),
            leader_changes_mean: metric_mean(|row| row.metrics.leader_changes as f64),
            no_leader_s_mean: metric_mean(|row| row.metrics.no_leader_s),
            two_acting_s_mean: metric_mean(|row| row.metrics.two_acting_s),
        })
    }
}

impl PolicyRow {
    /// Busy + idle + pending pod-seconds per seed: what the pods cost.
    pub(crate) fn pod_seconds_mean(&self) -> f64 {
        self.pod_seconds_busy_mean + self.pod_seconds_idle_mean + self.pod_seconds_pending_mean
    }
}

fn mean(values: impl Iterator<Item = f64>, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        values.sum::<f64>() / count as f64
    }
}

fn percentile_s(sorted_ms: &[u64], percent: u64) -> f64 {
    percentile_nearest_rank(sorted_ms, percent).map_or(0.0, |ms| ms as f64 / 1000.0)
}

/// Aggregate each policy's seed rows; `runs` is (policy name, rows) in display order.
pub(crate) fn compare_rows(runs: &[(String, Vec<SeedRow>)]) -> Vec<PolicyRow> {
    let failing_ids: BTreeSet<InvariantId> = runs
        .iter()
        .flat_map(|(_, rows)| rows.iter().flat_map(|row| row.violated_ids()))
        .collect();
    runs.iter()
        .map(|(label, rows)| policy_row(label, rows, &failing_ids))
        .collect()
}

fn policy_row(label: &str, rows: &[SeedRow], failing_ids: &BTreeSet<InvariantId>) -> PolicyRow {
    let seeds = rows.len() as u64;
    let passed = rows.iter().filter(|row| row.passed()).count() as u64;
    let fraction = |count: u64| {
        if seeds == 0 {
            0.0
        } else {
            count as f64 / seeds as f64
        }
    };
    let invariant_pass_rates = failing_ids
        .iter()
        .map(|id| {
            let held = rows
                .iter()
                .filter(|row| !row.violated_ids().contains(id))
                .count() as u64;
            (*id, fraction(held))
        })
        .collect();
    let mut failure_classes = BTreeMap::new();
    for class in rows.iter().filter_map(|row| row.failure_class.clone()) {
        *failure_classes.entry(class).or_insert(0) += 1;
    }
    let mut waits_ms: Vec<u64> = rows
        .iter()
        .flat_map(|row| row.waits_ms.iter().copied())
        .collect();
    waits_ms.sort_unstable();
    let assigned: u64 = rows.iter().map(|row| row.assigned).sum();
    let reused: u64 = rows.iter().map(|row| row.reused).sum();
    let metric_mean = |pick: fn(&SeedRow) -> f64| mean(rows.iter().map(pick), seeds);
    PolicyRow {
        label: label.to_owned(),
        seeds,
        passed,
        pass_rate: fraction(passed),
        invariant_pass_rates,
        failure_classes,
        reuse_ratio: if assigned == 0 {
            0.0
        } else {
            reused as f64 / assigned as f64
        },
        wait_s_p50: percentile_s(&waits_ms, 50),
        wait_s_p95: percentile_s(&waits_ms, 95),
        wait_s_max: percentile_s(&waits_ms, 100),
        waits_censored: rows.iter().map(|row| row.metrics.waits_censored).sum(),
        pods_created_mean: metric_mean(|row| row.metrics.pods_created as f64),
        pod_seconds_busy_mean: metric_mean(|row| row.metrics.pod_seconds_busy),
        pod_seconds_idle_mean: metric_mean(|row| row.metrics.pod_seconds_idle),
        pod_seconds_pending_mean: metric_mean(|row| row.metrics.pod_seconds_pending),
        leader: LeaderFigures::of(rows),
    }
}

/// The table's lines: (label, one cell per policy or variant). Invariant pass rates come
/// last; a leader comparison shows leader figures instead of the elastic-agent ones.
pub(crate) fn compare_cells(rows: &[PolicyRow]) -> Vec<(String, Vec<String>)> {
    type Cell = fn(&PolicyRow) -> String;
    let common: [(&str, Cell); 3] = [
        ("seeds", |r| r.seeds.to_string()),
        ("pass_rate", |r| ratio_text(r.pass_rate)),
        ("failure_classes", |r| classes_text(&r.failure_classes)),
    ];
    let elastic: [(&str, Cell); 10] = [
        ("reuse_ratio", |r| ratio_text(r.reuse_ratio)),
        ("wait_s_p50", |r| r.wait_text(r.wait_s_p50)),
        ("wait_s_p95", |r| r.wait_text(r.wait_s_p95)),
        ("wait_s_max", |r| r.wait_text(r.wait_s_max)),
        ("waits_censored", |r| r.waits_censored.to_string()),
        ("pods_created_mean", |r| number_text(r.pods_created_mean)),
        ("pod_seconds_mean", |r| number_text(r.pod_seconds_mean())),
        ("pod_seconds_busy_mean", |r| {
            number_text(r.pod_seconds_busy_mean)
        }),
        ("pod_seconds_idle_mean", |r| {
            number_text(r.pod_seconds_idle_mean)
        }),
        ("pod_seconds_pending_mean", |r| {
            number_text(r.pod_seconds_pending_mean)
        }),
    ];
    type LeaderCell = fn(&LeaderFigures) -> f64;
    let leader: [(&str, LeaderCell); 7] = [
        ("failovers_mean", |l| l.failovers_mean),
        ("failover_s_p50", |l| l.failover_s_p50),
        ("failover_s_p95", |l| l.failover_s_p95),
        ("failover_s_max", |l| l.failover_s_max),
        ("leader_changes_mean", |l| l.leader_changes_mean),
        ("no_leader_s_mean", |l| l.no_leader_s_mean),
        ("two_acting_s_mean", |l| l.two_acting_s_mean),
    ];
    let line = |(label, cell): &(&str, Cell)| (label.to_string(), rows.iter().map(cell).collect());
    let mut lines: Vec<(String, Vec<String>)> = common.iter().map(line).collect();
    if rows.iter().any(|row| row.leader.is_some()) {
        lines.extend(leader.iter().map(|(label, pick)| {
            let cells = rows
                .iter()
                .map(|row| number_text(pick(&row.leader.unwrap_or_default())))
                .collect();
            (label.to_string(), cells)
        }));
    } else {
        lines.extend(elastic.iter().map(line));
    }
    let ids: BTreeSet<InvariantId> = rows
        .iter()
        .flat_map(|row| row.invariant_pass_rates.keys().copied())
        .collect();
    for id in ids {
        let cells = rows
            .iter()
            .map(|row| ratio_text(row.invariant_pass_rates.get(&id).copied().unwrap_or(1.0)))
            .collect();
        lines.push((format!("pass_rate:{id}"), cells));
    }
    lines
}

fn classes_text(classes: &BTreeMap<String, u64>) -> String {
    if classes.is_empty() {
        return "-".to_owned();
    }
    let parts: Vec<String> = classes
        .iter()
        .map(|(class, n)| format!("{class} {n}"))
        .collect();
    parts.join(" ")
}

/// `compare.csv`: one line per metric, one column per policy or variant
/// (`metric,<policy>…`).
pub(crate) fn write_compare_csv(out: &mut dyn Write, rows: &[PolicyRow]) -> io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    let mut header = vec!["metric".to_owned()];
    header.extend(rows.iter().map(|row| row.label.clone()));
    writer.write_record(&header)?;
    for (label, cells) in compare_cells(rows) {
        let mut record = vec![label];
        record.extend(cells);
        writer.write_record(&record)?;
    }
    writer.flush()
}

/// The side-by-side table as aligned text.
pub(crate) fn compare_table(rows: &[PolicyRow]) -> String {
    let lines = compare_cells(rows);
    let label_width = lines
        .iter()
        .map(|(label, _)| label.len())
        .max()
        .unwrap_or(0);
    let mut out = format!("{:<label_width$}", "");
    for row in rows {
        let _ = write!(out, "  {:>12}", row.label);
    }
    out.push('\n');
    for (label, cells) in lines {
        let _ = write!(out, "{label:<label_width$}");
        for cell in cells {
            let _ = write!(out, "  {cell:>12}");
        }
        out.push('\n');
    }
    out
}

/// `compare.md`: the same table in Markdown, with the aggregation rules.
pub(crate) fn compare_markdown(title: &str, rows: &[PolicyRow]) -> String {
    let mut out = format!("# Compare {title}\n\n");
    if rows.iter().any(|row| row.leader.is_some()) {
        out.push_str(
            "Failover durations are pooled over every failover of every seed (nearest rank); \
             failovers, leader changes and the seconds with no leader or two replicas acting \
             are means per seed; `pass_rate:<id>` is the fraction of seeds in which that \
             invariant held.\n\n",
        );
    } else {
        out.push_str(
            "Waits are pooled over every job of every seed (nearest rank); the reuse ratio is \
             pooled over all assignments; pods and pod-seconds are means per seed; \
             `pass_rate:<id>` is the fraction of seeds in which that invariant held.\n\n",
        );
    }
    out.push_str("| metric |");
    for row in rows {
        let _ = write!(out, " {} |", row.label);
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(rows.len()));
    out.push('\n');
    for (label, cells) in compare_cells(rows) {
        let _ = write!(out, "| {label} |");
        for cell in cells {
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

/// The comparison chart's view of the rows.
pub(super) fn chart_rows(rows: &[PolicyRow]) -> Vec<crate::report::plots::PolicyRow> {
    rows.iter()
        .map(|row| crate::report::plots::PolicyRow {
            label: row.label.clone(),
            reuse_ratio: row.reuse_ratio,
            wait_s_p95: row.wait_s_p95,
            pods_created: row.pods_created_mean,
            pod_seconds: row.pod_seconds_mean(),
            pass_rate: row.pass_rate,
            invariant_pass_rates: row
                .invariant_pass_rates
                .iter()
                .map(|(&id, &rate)| (id, rate))
                .collect(),
            leader: row.leader.map(|leader| crate::report::plots::LeaderBars {
                failover_s_p95: leader.failover_s_p95,
                failover_s_max: leader.failover_s_max,
                no_leader_s: leader.no_leader_s_mean,
                two_acting_s: leader.two_acting_s_mean,
            }),
        })
        .collect()
}

/// What [`write_compare_files`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CompareFiles {
    /// One row per policy (or variant), in the order compared.
    pub rows: Vec<PolicyRow>,
    /// Why the chart was not drawn, if it was not: a warning, since the tables are the result.
    pub chart_warning: Option<String>,
}

/// Aggregate `runs` ((policy, seed rows) in display order) and write `compare.csv`,
/// `compare.md` and the comparison chart into `folder`, each atomically. The one writer of
/// a comparison's files: a compare, a shard of one and a merge of shards all come here.
pub(crate) fn write_compare_files(
    folder: &Path,
    title: &str,
    runs: &[(String, Vec<SeedRow>)],
) -> io::Result<CompareFiles> {
    let rows = compare_rows(runs);
    std::fs::create_dir_all(folder)?;
    atomic::write_with(&folder.join("compare.csv"), |out| {
        write_compare_csv(out, &rows)
    })?;
    atomic::write_file(
        &folder.join("compare.md"),
        compare_markdown(title, &rows).as_bytes(),
    )?;
    let chart_warning = crate::report::plots::compare_charts(folder, &chart_rows(&rows))
        .err()
        .map(|error| format!("compare chart not drawn: {error}"));
    Ok(CompareFiles {
        rows,
        chart_warning,
    })
}
