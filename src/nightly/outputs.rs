//! The nightly's judgement against baselines and its files: `junit.xml`, `nightly.md`,
//! `index.html` and one comparison chart per scenario.

use super::junit::{Case, Suite, junit_xml};
use super::{
    Baseline, GroupOutcome, NightlyConfig, NightlyError, NightlyOptions, NightlyOutcome, Tolerance,
    WALL_CLOCK_METRICS, compare,
};
use crate::check::InvariantId;
use crate::report::format::{duration_text, number_text};
use crate::report::html::{IndexPage, Link, RowVerdict, VerdictRow, write_index};
use crate::report::plots::{LeaderBars, PolicyRow, compare_charts};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The scenario suites (every suite but `regressions`), in first-seen order.
pub(super) fn scenario_suites(outcome: &NightlyOutcome) -> Vec<String> {
    let mut suites: Vec<String> = Vec::new();
    for group in &outcome.groups {
        if group.suite != "regressions" && !suites.contains(&group.suite) {
            suites.push(group.suite.clone());
        }
    }
    suites
}

fn baseline_of(outcome: &NightlyOutcome, suite: &str) -> Baseline {
    let groups: Vec<&GroupOutcome> = outcome.groups.iter().filter(|g| g.suite == suite).collect();
    let policies = groups
        .iter()
        .map(|group| {
            let mut means = group.means.clone();
            means.retain(|name, _| !WALL_CLOCK_METRICS.contains(&name.as_str()));
            (group.case.clone(), means)
        })
        .collect();
    Baseline {
        scenario: suite.to_owned(),
        seeds: groups.first().map_or(0, |group| group.seeds),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        policies,
    }
}

/// Rewrite the baselines (`--update-baseline`) or compare every group with its baseline.
pub(super) fn judge_baselines(
    options: &NightlyOptions,
    config: &NightlyConfig,
    outcome: &mut NightlyOutcome,
) -> Result<(), NightlyError> {
    let mut baselines = BTreeMap::new();
    for suite in scenario_suites(outcome) {
        if options.update_baseline {
            let baseline = baseline_of(outcome, &suite);
            baseline.save(&options.baselines_dir).map_err(|e| {
                NightlyError::Internal(format!("writing the baseline of {suite}: {e}"))
            })?;
            outcome
                .baselines_written
                .push(Baseline::path(&options.baselines_dir, &suite));
        } else if let Some(baseline) =
            Baseline::load(&options.baselines_dir, &suite).map_err(NightlyError::Input)?
        {
            baselines.insert(suite, baseline);
        }
    }
    if options.check_baseline {
        check_exact(&baselines, outcome);
    } else if !options.update_baseline {
        judge(&config.metrics, &baselines, outcome);
    }
    Ok(())
}

/// `--check-baseline`: runs are deterministic, so a baseline run's means must equal the
/// committed baseline's, metric by metric (up to a JSON round trip); any difference, a
/// missing baseline, policy or metric fails its case, naming what moved and the command that
/// re-makes the baselines.
fn check_exact(baselines: &BTreeMap<String, Baseline>, outcome: &mut NightlyOutcome) {
    const REMAKE: &str = "if the change is meant to move it, re-make the baselines in the same \
                          commit (cargo xtask nightly --update-baseline) and say why";
    for suite in scenario_suites(outcome) {
        let baseline = baselines.get(&suite);
        for group in outcome.groups.iter_mut().filter(|g| g.suite == suite) {
            let base = baseline.and_then(|baseline| baseline.policies.get(&group.case));
            let moved = match (baseline, base) {
                (None, _) => vec![format!("no baseline file for scenario {suite}")],
                (Some(_), None) => vec![format!("the baseline has no policy {}", group.case)],
                (Some(baseline), Some(base)) => {
                    let mut moved = super::baseline::moved_metrics(base, &group.means);
                    if baseline.seeds != group.seeds {
                        moved.insert(
                            0,
                            format!(
                                "baseline made from {} seeds, this run {}",
                                baseline.seeds, group.seeds
                            ),
                        );
                    }
                    moved
                }
            };
            if !moved.is_empty() {
                group.expectation = Some(format!(
                    "baseline moved ({suite}, {}): {}; {REMAKE}",
                    group.case,
                    moved.join("; ")
                ));
            }
        }
    }
}

/// Compare every scenario group's means with its suite's baseline (suite → baseline; a
/// suite without one gets a note). The one judgement of an unsharded run and of a merge.
pub(super) fn judge(
    tolerances: &BTreeMap<String, Tolerance>,
    baselines: &BTreeMap<String, Baseline>,
    outcome: &mut NightlyOutcome,
) {
    for suite in scenario_suites(outcome) {
        let baseline = baselines.get(&suite);
        for group in outcome.groups.iter_mut().filter(|g| g.suite == suite) {
            let Some(baseline) = baseline else {
                group.note = Some("no baseline yet: run with --update-baseline".to_owned());
                continue;
            };
            let Some(base) = baseline.policies.get(&group.case) else {
                group.note = Some(format!("the baseline has no policy {}", group.case));
                continue;
            };
            group.regressions = compare(&suite, &group.case, base, &group.means, tolerances);
            if baseline.seeds != group.seeds {
                group.note = Some(format!(
                    "baseline made from {} seeds, this run {}",
                    baseline.seeds, group.seeds
                ));
            }
        }
    }
}

fn policy_row(group: &GroupOutcome) -> PolicyRow {
    let mean = |name: &str| group.means.get(name).copied().unwrap_or(0.0);
    let mut violated: BTreeMap<InvariantId, u64> = BTreeMap::new();
    for failure in &group.failing {
        for &id in &failure.violated {
            *violated.entry(id).or_insert(0) += 1;
        }
    }
    let seeds = group.seeds.max(1) as f64;
    PolicyRow {
        label: group.case.clone(),
        reuse_ratio: mean("reuse_ratio"),
        wait_s_p95: mean("wait_s_p95"),
        pods_created: mean("pods_created"),
        pod_seconds: mean("pod_seconds_busy")
            + mean("pod_seconds_idle")
            + mean("pod_seconds_pending"),
        pass_rate: group.passed as f64 / seeds,
        invariant_pass_rates: violated
            .into_iter()
            .map(|(id, count)| (id, 1.0 - count as f64 / seeds))
            .collect(),
        leader: group.variant.is_some().then(|| LeaderBars {
            failover_s_p95: mean("failover_s_p95"),
            failover_s_max: mean("failover_s_max"),
            no_leader_s: mean("no_leader_s"),
            two_acting_s: mean("two_acting_s"),
        }),
    }
}

fn junit(outcome: &NightlyOutcome) -> String {
    let mut suites: Vec<Suite> = Vec::new();
    for group in &outcome.groups {
        let problems = group.problems();
        let failure = group.failed().then(|| {
            let message = format!(
                "{} of {} seeds failed, {} regression(s)",
                group.seeds - group.passed,
                group.seeds,
                group.regressions.len()
            );
            (message, problems.join("\n"))
        });
        let case = Case {
            name: group.case.clone(),
            time_s: group.wall_s,
            failure,
        };
        match suites.iter_mut().find(|suite| suite.name == group.suite) {
            Some(suite) => suite.cases.push(case),
            None => suites.push(Suite {
                name: group.suite.clone(),
                cases: vec![case],
            }),
        }
    }
    junit_xml(&suites)
}

const COLUMNS: [&str; 11] = [
    "scenario",
    "policy / variant",
    "seeds",
    "passed",
    "regressions",
    "reuse ratio",
    "p95 wait (s)",
    "pods created",
    "failovers",
    "failover p95 (s)",
    "two acting (s)",
];

/// A row's cells: elastic-agent means for a policy's case, leader means for a variant's
/// (the other group's columns show `–`).
fn cells(group: &GroupOutcome) -> Vec<String> {
    let mean = |name: &str| number_text(group.means.get(name).copied().unwrap_or(0.0));
    let none = || "–".to_owned();
    let (elastic, leader) = if group.variant.is_some() {
        (
            [none(), none(), none()],
            [
                mean("failovers"),
                mean("failover_s_p95"),
                mean("two_acting_s"),
            ],
        )
    } else {
        (
            [
                mean("reuse_ratio"),
                mean("wait_s_p95"),
                mean("pods_created"),
            ],
            [none(), none(), none()],
        )
    };
    let mut cells = vec![
        group.suite.clone(),
        group.case.clone(),
        group.seeds.to_string(),
        group.passed.to_string(),
        group.regressions.len().to_string(),
    ];
    cells.extend(elastic);
    cells.extend(leader);
    cells
}

fn headline(outcome: &NightlyOutcome) -> String {
    let failed = outcome.groups.iter().filter(|group| group.failed()).count();
    let seeds: u64 = outcome.groups.iter().map(|group| group.seeds).sum();
    let wall_s: f64 = outcome.groups.iter().map(|group| group.wall_s).sum();
    let verdict = if failed == 0 { "PASS" } else { "FAIL" };
    format!(
        "{verdict} nightly: {failed} of {} cases failed ({seeds} runs, {} of run time)",
        outcome.groups.len(),
        duration_text(wall_s)
    )
}

fn markdown(outcome: &NightlyOutcome, plots: &[Link]) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail, so the fmt::Result of each writeln! is always Ok.
    let _ = writeln!(out, "# {}\n", headline(outcome));
    let _ = writeln!(out, "| verdict | {} |", COLUMNS.join(" | "));
    let _ = writeln!(out, "|---{}|", "|---".repeat(COLUMNS.len()));
    for group in &outcome.groups {
        let verdict = if group.failed() { "FAIL" } else { "PASS" };
        let _ = writeln!(out, "| {verdict} | {} |", cells(group).join(" | "));
    }
    let _ = writeln!(out, "\n## Problems\n");
    let problems: Vec<String> = outcome
        .groups
        .iter()
        .flat_map(|group| {
            let label = format!("{} / {}", group.suite, group.case);
            group
                .problems()
                .into_iter()
                .map(move |line| format!("- {label}: {line}"))
        })
        .collect();
    let _ = writeln!(
        out,
        "{}\n",
        if problems.is_empty() {
            "None.".to_owned()
        } else {
            problems.join("\n")
        }
    );
    let notes: Vec<String> = outcome
        .groups
        .iter()
        .filter_map(|group| {
            Some(format!(
                "- {} / {}: {}",
                group.suite,
                group.case,
                group.note.as_ref()?
            ))
        })
        .chain(
            outcome
                .warnings
                .iter()
                .map(|warning| format!("- warning: {warning}")),
        )
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "## Notes\n\n{}\n", notes.join("\n"));
    }
    if !plots.is_empty() {
        let _ = writeln!(out, "## Plots\n");
        for plot in plots {
            let _ = writeln!(out, "![{}]({})\n", plot.label, plot.href);
        }
    }
    out
}

/// Failing seeds' report folders, for the index page.
fn failing_links(outcome: &NightlyOutcome) -> Vec<Link> {
    outcome
        .groups
        .iter()
        .flat_map(|group| {
            group.failing.iter().filter_map(move |failure| {
                let report = failure.report.as_ref()?;
                Some(Link {
                    label: format!(
                        "{} / {} seed {}: {}",
                        group.suite,
                        group.case,
                        failure.seed,
                        InvariantId::join(&failure.violated, ", ")
                    ),
                    href: format!("{report}/summary.md"),
                })
            })
        })
        .collect()
}

/// Write `junit.xml`, the comparison charts, `nightly.md` and `index.html` into `out`: the
/// one writer of a nightly's files, for a run, a shard and a merge.
pub(super) fn write_all(out: &Path, outcome: &mut NightlyOutcome) -> Result<(), NightlyError> {
    let write = |name: &str, bytes: &[u8]| {
        crate::report::atomic::write_file(&out.join(name), bytes)
            .map_err(|e| NightlyError::Internal(format!("writing {name}: {e}")))
    };
    write("junit.xml", junit(outcome).as_bytes())?;
    let mut plots = Vec::new();
    for suite in scenario_suites(outcome) {
        let rows: Vec<PolicyRow> = outcome
            .groups
            .iter()
            .filter(|group| group.suite == suite)
            .map(policy_row)
            .collect();
        match compare_charts(&out.join(&suite), &rows) {
            Ok(drawn) => plots.extend(drawn.into_iter().map(|plot| Link {
                label: format!("{suite}: {}", plot.title),
                href: format!("{suite}/{}", plot.svg_name()),
            })),
            Err(error) => outcome.warnings.push(format!(
                "the {suite} comparison chart was not drawn: {error}"
            )),
        }
    }
    write("nightly.md", markdown(outcome, &plots).as_bytes())?;
    let page = IndexPage {
        title: "elasticsim nightly".to_owned(),
        summary: headline(outcome),
        columns: COLUMNS.iter().map(|column| column.to_string()).collect(),
        rows: outcome
            .groups
            .iter()
            .map(|group| VerdictRow {
                verdict: RowVerdict::of(!group.failed()),
                cells: cells(group),
            })
            .collect(),
        plots,
        failing: failing_links(outcome),
        notes: outcome
            .groups
            .iter()
            .flat_map(GroupOutcome::problems)
            .collect(),
        sections: Vec::new(),
    };
    write_index(out, &page).map_err(|e| NightlyError::Internal(format!("writing index.html: {e}")))
}
