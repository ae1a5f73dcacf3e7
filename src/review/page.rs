//! The review's `index.html` (static, no scripts): the summary, a verdict line per scenario,
//! the same sections as `review.md`, and each scenario's comparison chart of the two runs.

use super::ScenarioReview;
use super::cause::verdict_word;
use super::markdown::{SCREEN_COLUMNS, screen_cells, setting_heading, verdict_sentence};
use super::stats::judgement;
use crate::report::format::number_text;
use crate::report::html::{
    IndexPage, Link, RowVerdict, Section, VerdictRow, VerdictTable, write_index_with_tables,
};
use std::path::Path;

/// The row of one scenario: `breaks`, `both break`, `diverges` or `same`, then the first
/// screen's cells.
fn verdict_row(review: &ScenarioReview, base: &str, candidate: &str) -> VerdictRow {
    let verdict = match verdict_word(review) {
        "breaks" => RowVerdict::Breaks,
        "both break" => RowVerdict::BothBreak,
        "diverges" => RowVerdict::Diverges,
        _ => RowVerdict::Same,
    };
    VerdictRow {
        verdict,
        cells: screen_cells(review, base, candidate),
    }
}

/// The first screen's two tables: the feature off (the default), then on.
fn setting_tables(reviews: &[ScenarioReview], base: &str, candidate: &str) -> Vec<VerdictTable> {
    [false, true]
        .into_iter()
        .map(|reuse| VerdictTable {
            heading: setting_heading(reuse).to_owned(),
            columns: SCREEN_COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: (reviews.iter())
                .filter(|review| review.reuse == reuse)
                .map(|review| verdict_row(review, base, candidate))
                .collect(),
        })
        .filter(|table| !table.rows.is_empty())
        .collect()
}

fn metrics_section(reviews: &[ScenarioReview]) -> Section {
    let columns = [
        "scenario",
        "metric",
        "base",
        "candidate",
        "change",
        "95 % CI",
        "judgement",
    ];
    let rows = reviews
        .iter()
        .flat_map(|review| {
            review.metrics.iter().map(|(name, delta)| {
                vec![
                    review.label(),
                    name.clone(),
                    number_text(delta.base_mean),
                    number_text(delta.candidate_mean),
                    number_text(delta.delta),
                    format!(
                        "{} … {}",
                        number_text(delta.ci95_low),
                        number_text(delta.ci95_high)
                    ),
                    judgement(name, delta).to_owned(),
                ]
            })
        })
        .collect();
    Section {
        heading: "Metric changes".to_owned(),
        paragraphs: vec![
            "Candidate − base per seed, mean over seeds, seeded bootstrap 95 % interval."
                .to_owned(),
        ],
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
        blocks: Vec::new(),
    }
}

fn clusters_section(reviews: &[ScenarioReview], base: &str, candidate: &str) -> Section {
    let columns = [
        "scenario".to_owned(),
        format!("{base} → {candidate}"),
        "request".to_owned(),
        "seeds".to_owned(),
        "example seed".to_owned(),
        format!("{base} said"),
        format!("{candidate} said"),
        "intended".to_owned(),
    ];
    let rows = reviews
        .iter()
        .flat_map(|review| {
            review.clusters.iter().map(|cluster| {
                vec![
                    review.label(),
                    format!("{} → {}", cluster.base_code, cluster.candidate_code),
                    cluster.example.request.clone(),
                    cluster.seeds.to_string(),
                    cluster.example_seed.to_string(),
                    cluster.example.base.text.clone(),
                    cluster.example.candidate.text.clone(),
                    cluster
                        .example
                        .intended
                        .clone()
                        .unwrap_or_else(|| "no".to_owned()),
                ]
            })
        })
        .collect();
    Section {
        heading: "Divergence clusters".to_owned(),
        paragraphs: Vec::new(),
        columns: columns.to_vec(),
        rows,
        blocks: Vec::new(),
    }
}

fn first_section(reviews: &[ScenarioReview], base: &str, candidate: &str) -> Section {
    let mut blocks = Vec::new();
    for review in reviews {
        let Some(first) = review.first_divergences.first() else {
            continue;
        };
        let d = &first.divergence;
        let heading = format!(
            "{} seed {}: {} — {base} `{}` {} | {candidate} `{}` {}",
            review.label(),
            first.seed,
            d.request,
            d.base.code,
            d.base.text,
            d.candidate.code,
            d.candidate.text
        );
        blocks.push((
            format!("{heading} ({base} trace)"),
            first.context.base.clone(),
        ));
        blocks.push((
            format!("{} seed {} ({candidate} trace)", review.label(), first.seed),
            first.context.candidate.clone(),
        ));
    }
    Section {
        heading: "First divergence, smallest seed of each scenario".to_owned(),
        blocks,
        ..Section::default()
    }
}

/// Write `index.html` into `folder`; `plots` are the comparison charts already drawn.
pub(crate) fn write_page(
    folder: &Path,
    base: &str,
    candidate: &str,
    reviews: &[ScenarioReview],
    plots: Vec<Link>,
    interrupted: Option<&str>,
) -> std::io::Result<()> {
    let repros = reviews
        .iter()
        .flat_map(|review| {
            review
                .repros
                .iter()
                .filter(|repro| repro.toml.is_some())
                .map(|repro| Link {
                    label: format!(
                        "{}: {} seed {} (repro)",
                        review.label(),
                        repro.invariant,
                        repro.seed
                    ),
                    href: format!("repro/{}", repro.file_name),
                })
        })
        .collect();
    let page = IndexPage {
        title: format!("elasticsim review: {candidate} against {base}"),
        summary: match interrupted {
            Some(line) => format!("{line}. {}", verdict_sentence(base, candidate, reviews)),
            None => verdict_sentence(base, candidate, reviews),
        },
        columns: Vec::new(),
        rows: Vec::new(),
        plots,
        failing: repros,
        notes: vec![format!(
            "In words: {}",
            super::markdown::summary_paragraph(base, candidate, reviews)
        )],
        sections: vec![
            metrics_section(reviews),
            clusters_section(reviews, base, candidate),
            first_section(reviews, base, candidate),
        ],
    };
    write_index_with_tables(folder, &page, &setting_tables(reviews, base, candidate))
}
