//! The static `index.html` of a sweep (`sim --seeds`) and of a comparison, as nightly writes
//! one: the verdict table first, then the plots, then a link to every failing seed's report.

use super::compare::{PolicyRow, chart_rows, compare_rows};
use super::sweep::SeedRow;
use crate::check::InvariantId;
use crate::report::format::{number_text, ratio_text};
use crate::report::html::{IndexPage, Link, RowVerdict, VerdictRow, write_index};
use crate::report::plots::compare_charts;
use std::io;
use std::path::Path;

fn chart_links(folder: &Path, rows: &[PolicyRow]) -> (Vec<Link>, Vec<String>) {
    match compare_charts(folder, &chart_rows(rows)) {
        Ok(drawn) => (
            drawn
                .into_iter()
                .map(|plot| Link {
                    label: plot.title.clone(),
                    href: plot.svg_name(),
                })
                .collect(),
            Vec::new(),
        ),
        Err(error) => (Vec::new(), vec![format!("chart not drawn: {error}")]),
    }
}

fn failing_link(row: &SeedRow, prefix: &str, label: &str) -> Link {
    Link {
        label: format!(
            "{label}seed {}: {}",
            row.seed,
            InvariantId::join(&row.violated_ids(), ", ")
        ),
        href: format!("{prefix}seed-{}/summary.md", row.seed),
    }
}

/// A sweep's `index.html`: one verdict line per seed, the policy's chart, and links to the
/// failing seeds' folders (`seed-N/`, next to the page).
pub(crate) fn write_sweep_page(
    folder: &Path,
    title: &str,
    label: &str,
    rows: &[SeedRow],
) -> io::Result<()> {
    let failed = rows.iter().filter(|row| !row.passed()).count();
    let (plots, notes) = chart_links(folder, &compare_rows(&[(label.to_owned(), rows.to_vec())]));
    let columns = [
        "seed",
        "violated",
        "p95 wait s",
        "pods created",
        "reuse ratio",
    ];
    let page = IndexPage {
        title: format!("elasticsim sweep: {title}"),
        summary: format!(
            "{} seeds: {} passed, {failed} failed.",
            rows.len(),
            rows.len() - failed
        ),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: rows
            .iter()
            .map(|row| VerdictRow {
                verdict: RowVerdict::of(row.passed()),
                cells: vec![
                    row.seed.to_string(),
                    InvariantId::join(&row.violated_ids(), ", "),
                    number_text(row.metrics.wait_s_p95),
                    row.metrics.pods_created.to_string(),
                    ratio_text(row.metrics.reuse_ratio),
                ],
            })
            .collect(),
        plots,
        failing: rows
            .iter()
            .filter(|row| !row.passed())
            .map(|row| failing_link(row, "", ""))
            .collect(),
        notes,
        sections: Vec::new(),
    };
    write_index(folder, &page)
}

/// The columns of a leader comparison's table: a row per runner variant.
const LEADER_COMPARE_COLUMNS: &[&str] = &[
    "variant",
    "seeds",
    "passed",
    "failover p95 s",
    "failover max s",
    "two acting s",
];

/// The columns of an elastic-agent comparison's table: a row per policy.
const ELASTIC_COMPARE_COLUMNS: &[&str] = &[
    "policy",
    "seeds",
    "passed",
    "p95 wait s",
    "pods created",
    "reuse ratio",
];

/// The figures of one comparison row after its verdict cells (see the column lists).
fn compare_figures(row: &super::PolicyRow) -> Vec<String> {
    match row.leader {
        Some(figures) => vec![
            number_text(figures.failover_s_p95),
            number_text(figures.failover_s_max),
            number_text(figures.two_acting_s_mean),
        ],
        None => vec![
            number_text(row.wait_s_p95),
            number_text(row.pods_created_mean),
            ratio_text(row.reuse_ratio),
        ],
    }
}

/// A comparison's `index.html`: one verdict line per policy, the comparison chart, and links
/// to the failing seeds' folders (`<policy>/seed-N/`, under the page's folder).
pub(crate) fn write_compare_page(
    folder: &Path,
    title: &str,
    runs: &[(String, Vec<SeedRow>)],
) -> io::Result<()> {
    let rows = compare_rows(runs);
    let (plots, notes) = chart_links(folder, &rows);
    let leader = rows.iter().any(|row| row.leader.is_some());
    let columns = if leader {
        LEADER_COMPARE_COLUMNS
    } else {
        ELASTIC_COMPARE_COLUMNS
    };
    let what = if leader { "variants" } else { "policies" };
    let page = IndexPage {
        title: format!("elasticsim compare: {title}"),
        summary: format!("{} {what} over the same seeds.", rows.len()),
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows: rows
            .iter()
            .map(|row| VerdictRow {
                verdict: RowVerdict::of(row.passed == row.seeds),
                cells: [
                    vec![
                        row.label.clone(),
                        row.seeds.to_string(),
                        row.passed.to_string(),
                    ],
                    compare_figures(row),
                ]
                .concat(),
            })
            .collect(),
        plots,
        failing: runs
            .iter()
            .flat_map(|(policy, rows)| {
                rows.iter()
                    .filter(|row| !row.passed())
                    .map(move |row| failing_link(row, &format!("{policy}/"), &format!("{policy} ")))
            })
            .collect(),
        notes,
        sections: Vec::new(),
    };
    write_index(folder, &page)
}
