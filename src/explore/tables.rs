//! What a sweep adds up to: per invariant, how many seeds violated it; per failure class, how
//! many seeds; the failing seeds. Written as `sweep.csv` and `sweep.md` and printed as a table.

use super::sweep::SeedRow;
use crate::check::InvariantId;
use crate::report::atomic;
use crate::report::format::{number_text, ratio_text};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// Failing seeds the terminal table lists before saying "… and N more".
pub const FAILING_LISTED_MAX: usize = 20;

/// The metric columns of `sweep.csv`, after `seed,verdict,violated,fingerprint,failure_class`.
/// Wall-clock metrics are left out on purpose, so the file is the same on any machine and
/// with any thread count.
pub const SWEEP_METRICS: [&str; 13] = [
    "jobs_total",
    "jobs_completed",
    "reuse_ratio",
    "pods_created",
    "wait_s_p50",
    "wait_s_p95",
    "wait_s_max",
    "pod_seconds_busy",
    "pod_seconds_idle",
    "pod_seconds_pending",
    "failovers",
    "events",
    "sim_s",
];

/// The metric columns of a leader sweep's `sweep.csv`, after
/// `seed,variant,verdict,violated,fingerprint,failure_class`.
pub const LEADER_SWEEP_METRICS: [&str; 8] = [
    "failovers",
    "failover_s_p95",
    "failover_s_max",
    "leader_changes",
    "no_leader_s",
    "two_acting_s",
    "events",
    "sim_s",
];

/// The variant of a leader sweep (every row of one sweep has the same).
fn sweep_variant(rows: &[SeedRow]) -> Option<crate::leader::Variant> {
    rows.first().and_then(|row| row.variant)
}

/// How many seeds violated one invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvariantCount {
    /// The invariant's id.
    pub id: InvariantId,
    /// `safety` or `liveness`.
    pub class: &'static str,
    /// Seeds on which it failed.
    pub seeds_violated: u64,
}

/// The aggregate of a sweep's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepSummary {
    /// Seeds run.
    pub seeds: u64,
    /// Seeds where every invariant held.
    pub passed: u64,
    /// Sorted by id.
    pub invariants: Vec<InvariantCount>,
    /// `safety`, `liveness`, `both` → seeds.
    pub classes: BTreeMap<String, u64>,
    /// Failing rows' seeds, ascending.
    pub failing_seeds: Vec<u64>,
}

impl SweepSummary {
    /// Count seeds, passes and violations per invariant over `rows`.
    pub fn of(rows: &[SeedRow]) -> SweepSummary {
        let mut invariants: BTreeMap<InvariantId, InvariantCount> = BTreeMap::new();
        let mut classes = BTreeMap::new();
        let mut failing_seeds = Vec::new();
        for row in rows {
            for violated in &row.violated {
                invariants
                    .entry(violated.id)
                    .or_insert(InvariantCount {
                        id: violated.id,
                        class: violated.class(),
                        seeds_violated: 0,
                    })
                    .seeds_violated += 1;
            }
            if let Some(class) = &row.failure_class {
                *classes.entry(class.clone()).or_insert(0) += 1;
            }
            if !row.passed() {
                failing_seeds.push(row.seed);
            }
        }
        failing_seeds.sort_unstable();
        SweepSummary {
            seeds: rows.len() as u64,
            passed: rows.iter().filter(|row| row.passed()).count() as u64,
            invariants: invariants.into_values().collect(),
            classes,
            failing_seeds,
        }
    }

    /// Seeds that failed.
    pub(crate) fn failed(&self) -> u64 {
        self.seeds - self.passed
    }
}

fn metric_cell(name: &str, value: f64) -> String {
    if name == "reuse_ratio" {
        ratio_text(value)
    } else {
        number_text(value)
    }
}

/// `sweep.csv`: one row per seed, in seed order.
pub fn write_sweep_csv(out: &mut dyn Write, rows: &[SeedRow]) -> io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    let leader = sweep_variant(rows).is_some();
    let columns: &[&str] = if leader {
        &LEADER_SWEEP_METRICS
    } else {
        &SWEEP_METRICS
    };
    let mut header = vec!["seed"];
    if leader {
        header.push("variant");
    }
    header.extend(["verdict", "violated", "fingerprint", "failure_class"]);
    header.extend(columns);
    writer.write_record(&header)?;
    for row in rows {
        let metrics = row.metrics.to_map();
        let mut record = vec![row.seed.to_string()];
        if let Some(variant) = row.variant {
            record.push(variant.name().to_owned());
        }
        record.extend([
            row.verdict.clone(),
            InvariantId::join(&row.violated_ids(), ";"),
            row.fingerprint.clone(),
            row.failure_class.clone().unwrap_or_default(),
        ]);
        for &name in columns {
            let value = metrics[name];
            record.push(metric_cell(name, value));
        }
        writer.write_record(&record)?;
    }
    writer.flush()
}

/// A leader sweep's variant and leader metrics over its seeds: failovers and leader changes
/// summed, failover p50/p95/max pooled over every failover of every seed (nearest rank),
/// time with no leader and with two acting summed.
fn leader_line(rows: &[SeedRow]) -> Option<String> {
    let variant = sweep_variant(rows)?.name();
    let sum = |name: &str| {
        rows.iter()
            .map(|row| row.metrics.to_map()[name])
            .sum::<f64>()
    };
    let pooled = pooled_failover_ms(rows);
    let percentile = |percent| {
        crate::report::percentile_nearest_rank(&pooled, percent).map_or(0.0, crate::report::seconds)
    };
    Some(format!(
        "variant {variant}: failovers {}, failover p50 {} s, p95 {} s, max {} s (pooled), \
         leader changes {}, no leader {} s, two acting {} s",
        number_text(sum("failovers")),
        number_text(percentile(50)),
        number_text(percentile(95)),
        number_text(percentile(100)),
        number_text(sum("leader_changes")),
        number_text(sum("no_leader_s")),
        number_text(sum("two_acting_s"))
    ))
}

/// A leader sweep's defects: `defects: one defect, H8 (20 seeds)` and, with more than one,
/// each hazard's seed count; nothing when no failing seed names a hazard.
pub(super) fn defect_lines(rows: &[SeedRow]) -> Vec<String> {
    let mut seeds: BTreeMap<crate::check::Hazard, u64> = BTreeMap::new();
    for row in rows {
        for name in &row.hazards {
            if let Some(hazard) = crate::check::Hazard::from_name(name) {
                *seeds.entry(hazard).or_default() += 1;
            }
        }
    }
    let counted: Vec<String> = seeds
        .iter()
        .map(|(hazard, n)| format!("{} ({n} seeds)", hazard.name()))
        .collect();
    match counted.as_slice() {
        [] => Vec::new(),
        [one] => vec![format!("defects: one defect, {one}")],
        many => vec![format!(
            "defects: {} defects, {}",
            many.len(),
            many.join(", ")
        )],
    }
}

/// Every failover of every row, ascending.
pub(super) fn pooled_failover_ms(rows: &[SeedRow]) -> Vec<u64> {
    let mut pooled: Vec<u64> = rows
        .iter()
        .flat_map(|row| row.failover_ms.iter().copied())
        .collect();
    pooled.sort_unstable();
    pooled
}

/// The invariant table and the failing-seed list, as plain text (terminal) lines.
pub fn sweep_table(summary: &SweepSummary, rows: &[SeedRow]) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail, so every fmt::Result below is Ok.
    let _ = writeln!(
        out,
        "{} seeds: {} passed, {} failed",
        summary.seeds,
        summary.passed,
        summary.failed()
    );
    if let Some(line) = leader_line(rows) {
        let _ = writeln!(out, "  {line}");
    }
    for line in defect_lines(rows) {
        let _ = writeln!(out, "  {line}");
    }
    for (class, seeds) in &summary.classes {
        let _ = writeln!(out, "  {class:<9} {seeds} seeds");
    }
    if !summary.invariants.is_empty() {
        let width = summary
            .invariants
            .iter()
            .map(|c| c.id.name().len())
            .max()
            .unwrap_or(0);
        let _ = writeln!(out, "  {:<width$}  class     seeds violated", "invariant");
        for count in &summary.invariants {
            let _ = writeln!(
                out,
                "  {:<width$}  {:<8}  {}",
                count.id, count.class, count.seeds_violated
            );
        }
    }
    let failing: Vec<&SeedRow> = rows.iter().filter(|row| !row.passed()).collect();
    if !failing.is_empty() {
        let _ = writeln!(out, "failing seeds:");
        for row in failing.iter().take(FAILING_LISTED_MAX) {
            let _ = writeln!(
                out,
                "  seed {} [{}] {}: {}",
                row.seed,
                row.failure_class.as_deref().unwrap_or("?"),
                InvariantId::join(&row.violated_ids(), ", "),
                row.reproduce
            );
        }
        if failing.len() > FAILING_LISTED_MAX {
            let _ = writeln!(out, "  … and {} more", failing.len() - FAILING_LISTED_MAX);
        }
    }
    out
}

/// `sweep.md`: the same for people, with every failing seed and its reproduce command.
pub fn sweep_markdown(title: &str, summary: &SweepSummary, rows: &[SeedRow]) -> String {
    let mut out = String::new();
    let verdict = if summary.failed() == 0 {
        "PASS"
    } else {
        "FAIL"
    };
    let _ = writeln!(out, "# {verdict} {title}\n");
    let _ = writeln!(
        out,
        "{} seeds: {} passed, {} failed.\n",
        summary.seeds,
        summary.passed,
        summary.failed()
    );
    if let Some(line) = leader_line(rows) {
        let _ = writeln!(out, "{line}\n");
    }
    for line in defect_lines(rows) {
        let _ = writeln!(out, "{line}\n");
    }
    if !summary.classes.is_empty() {
        let _ = writeln!(out, "| failure class | seeds |\n|---|---|");
        for (class, seeds) in &summary.classes {
            let _ = writeln!(out, "| {class} | {seeds} |");
        }
        out.push('\n');
    }
    if !summary.invariants.is_empty() {
        let _ = writeln!(out, "| invariant | class | seeds violated |\n|---|---|---|");
        for count in &summary.invariants {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} |",
                count.id, count.class, count.seeds_violated
            );
        }
        out.push('\n');
    }
    let failing: Vec<&SeedRow> = rows.iter().filter(|row| !row.passed()).collect();
    if !failing.is_empty() {
        let _ = writeln!(out, "## Failing seeds\n");
        let _ = writeln!(
            out,
            "| seed | class | violated | reproduce |\n|---|---|---|---|"
        );
        for row in failing {
            let _ = writeln!(
                out,
                "| {} | {} | {} | `{}` |",
                row.seed,
                row.failure_class.as_deref().unwrap_or(""),
                InvariantId::join(&row.violated_ids(), ", "),
                row.reproduce
            );
        }
    }
    out
}

/// Write `sweep.csv` and `sweep.md` into `folder` (created if needed), each atomically, and
/// return the summary. The one writer of both files: a sweep, a shard of one and a merge of
/// shards all come through here.
pub fn write_sweep_files(folder: &Path, title: &str, rows: &[SeedRow]) -> io::Result<SweepSummary> {
    let summary = SweepSummary::of(rows);
    std::fs::create_dir_all(folder)?;
    atomic::write_with(&folder.join("sweep.csv"), |out| write_sweep_csv(out, rows))?;
    let markdown = sweep_markdown(title, &summary, rows);
    atomic::write_file(&folder.join("sweep.md"), markdown.as_bytes())?;
    Ok(summary)
}
