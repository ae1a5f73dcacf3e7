//! One scenario's review (under one reuse setting) from its seeds, and `review.json`.

use super::align::{Context, Divergence};
use super::repro::Repro;
use super::stats::{MetricDelta, REVIEW_METRICS, delta, metric};
use super::{Group, SeedReview, reuse_text};
use crate::check::InvariantId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Seeds whose runs decided the same (base code → candidate code) differently.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    pub base_code: String,
    pub candidate_code: String,
    pub seeds: u64,
    /// The smallest such seed, and its divergence.
    pub example_seed: u64,
    pub example: Divergence,
}

/// A seed's first divergence with the trace lines before it.
#[derive(Clone, Debug, PartialEq)]
pub struct FirstDivergence {
    pub seed: u64,
    pub divergence: Divergence,
    pub context: Context,
}

/// What a review found for one scenario under one reuse setting.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioReview {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file as given.
    pub file: String,
    /// Whether agent reuse was on.
    pub reuse: bool,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds whose runs decided differently, in seed order.
    pub first_divergences: Vec<FirstDivergence>,
    /// Most seeds first.
    pub clusters: Vec<Cluster>,
    /// Invariant → seeds where the candidate violated it and the base did not, on its own:
    /// not a consequence of a stopped run.
    pub new_violations: BTreeMap<InvariantId, Vec<u64>>,
    /// Invariant → seeds where the candidate's run was stopped at the `bounded-requests`
    /// budget and this eventually- or sometimes-invariant was judged at the stop instant
    /// instead of after the settle phase: a consequence of the stop, not a finding of its
    /// own.
    pub stop_consequences: BTreeMap<InvariantId, Vec<u64>>,
    /// Seeds failing under each policy.
    pub base_failed: u64,
    /// Seeds failing under the candidate policy.
    pub candidate_failed: u64,
    /// Each compared metric's change, in the review's metric order.
    pub metrics: Vec<(String, MetricDelta)>,
    /// Shrunk repros of the smallest seed of each new violation (filled by `repro.rs`).
    pub repros: Vec<Repro>,
    /// The scenario's one-line description (the plain-words summary names workloads by it).
    pub description: String,
    /// The scenario's `pending_pods_count`: a row can say its break comes from the default.
    pub pending_pods_count: u32,
}

impl ScenarioReview {
    /// `burst (reuse off)`.
    pub(crate) fn label(&self) -> String {
        format!("{} (reuse {})", self.scenario, reuse_text(self.reuse))
    }

    /// The metric change of `name`.
    pub(crate) fn metric(&self, name: &str) -> Option<&MetricDelta> {
        self.metrics
            .iter()
            .find(|(metric, _)| metric == name)
            .map(|(_, delta)| delta)
    }
}

fn clusters(rows: &[SeedReview]) -> Vec<Cluster> {
    let mut clusters: BTreeMap<(String, String), Cluster> = BTreeMap::new();
    for row in rows {
        for pair in &row.alignment.pairs {
            let key = (pair.base.code.clone(), pair.candidate.code.clone());
            let cluster = clusters.entry(key).or_insert_with(|| Cluster {
                base_code: pair.base.code.clone(),
                candidate_code: pair.candidate.code.clone(),
                seeds: 0,
                example_seed: row.seed,
                example: pair.clone(),
            });
            cluster.seeds += 1;
            if row.seed < cluster.example_seed {
                cluster.example_seed = row.seed;
                cluster.example = pair.clone();
            }
        }
    }
    let mut clusters: Vec<Cluster> = clusters.into_values().collect();
    clusters.sort_by(|a, b| {
        b.seeds
            .cmp(&a.seeds)
            .then(a.example_seed.cmp(&b.example_seed))
    });
    clusters
}

/// The invariant whose violation stops a run (a request storm).
pub(crate) const STOP: InvariantId = InvariantId::BoundedRequests;

type BySeeds = BTreeMap<InvariantId, Vec<u64>>;

/// The candidate's violations the base does not share: (on their own, consequences of a
/// stop). In a run stopped at the request budget, eventually- and sometimes-invariants are
/// judged at the stop instant, before the settle phase that would let them come true.
fn new_violations(rows: &[SeedReview]) -> (BySeeds, BySeeds) {
    let (mut own, mut consequences) = (BySeeds::new(), BySeeds::new());
    for row in rows {
        let base = row.base.violated_ids();
        let stopped = row.candidate.violated_ids().contains(&STOP);
        for violated in &row.candidate.violated {
            if base.contains(&violated.id) {
                continue;
            }
            // Eventually- and sometimes-invariants (`liveness`) are judged when the run ends.
            let judged_at_stop = stopped && violated.class() == "liveness";
            let found = if judged_at_stop {
                &mut consequences
            } else {
                &mut own
            };
            found.entry(violated.id).or_default().push(row.seed);
        }
    }
    (own, consequences)
}

/// Aggregate a group's seed reviews (in seed order).
pub fn scenario_review(group: &Group, rows: &[SeedReview]) -> ScenarioReview {
    let first_divergences = rows
        .iter()
        .filter_map(|row| {
            let (divergence, context) = row.alignment.first.clone()?;
            Some(FirstDivergence {
                seed: row.seed,
                divergence,
                context,
            })
        })
        .collect();
    let metrics = REVIEW_METRICS
        .iter()
        .map(|(name, _)| {
            let values = |pick: fn(&SeedReview) -> &crate::report::Metrics| -> Vec<f64> {
                rows.iter().map(|row| metric(pick(row), name)).collect()
            };
            let base = values(|row| &row.base.metrics);
            let candidate = values(|row| &row.candidate.metrics);
            ((*name).to_owned(), delta(&base, &candidate))
        })
        .collect();
    let (new_violations, stop_consequences) = new_violations(rows);
    ScenarioReview {
        scenario: group.scenario.name.clone(),
        file: group.file.clone(),
        reuse: group.reuse,
        seeds: rows.len() as u64,
        first_divergences,
        clusters: clusters(rows),
        new_violations,
        stop_consequences,
        base_failed: rows.iter().filter(|row| !row.base.passed()).count() as u64,
        candidate_failed: rows.iter().filter(|row| !row.candidate.passed()).count() as u64,
        metrics,
        repros: Vec::new(),
        description: group.scenario.description.clone(),
        pending_pods_count: group.scenario.plugin.pending_pods_count,
    }
}

/// A decision's code and text in `review.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CodeText {
    pub code: String,
    pub text: String,
}

/// A first divergence in `review.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstJson {
    pub seed: u64,
    pub t_ms: u64,
    pub job: Option<u64>,
    pub agent: Option<String>,
    pub base: CodeText,
    pub candidate: CodeText,
}

/// A cluster in `review.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterJson {
    pub base_code: String,
    pub candidate_code: String,
    pub seeds: u64,
    pub example_seed: u64,
}

/// One scenario under one reuse setting in `review.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioJson {
    pub scenario: String,
    /// `on` or `off`.
    pub reuse: String,
    pub seeds: u64,
    pub diverged_seeds: u64,
    pub first_divergences: Vec<FirstJson>,
    pub clusters: Vec<ClusterJson>,
    pub new_violations: BTreeMap<InvariantId, Vec<u64>>,
    /// Violations judged at the instant a stopped run ended (see `ScenarioReview`).
    #[serde(default)]
    pub stop_consequences: BTreeMap<InvariantId, Vec<u64>>,
    pub metrics: BTreeMap<String, MetricDelta>,
}

/// `review.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewJson {
    /// The base policy's name.
    pub base: String,
    /// The candidate policy's name.
    pub candidate: String,
    /// The candidate's ablations (`review --ablate`), comma-separated; absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ablate: Option<String>,
    /// One entry per (scenario, reuse setting), in run order.
    pub scenarios: Vec<ScenarioJson>,
    /// Set when a signal stopped the review: which cells ran and which did not. The
    /// scenarios then hold the seeds done only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

fn code_text(side: &super::Side) -> CodeText {
    CodeText {
        code: side.code.clone(),
        text: side.text.clone(),
    }
}

fn scenario_json(review: &ScenarioReview) -> ScenarioJson {
    ScenarioJson {
        scenario: review.scenario.clone(),
        reuse: reuse_text(review.reuse).to_owned(),
        seeds: review.seeds,
        diverged_seeds: review.first_divergences.len() as u64,
        first_divergences: review
            .first_divergences
            .iter()
            .map(|first| FirstJson {
                seed: first.seed,
                t_ms: first.divergence.t_ms,
                job: first.divergence.job,
                agent: first.divergence.agent.clone(),
                base: code_text(&first.divergence.base),
                candidate: code_text(&first.divergence.candidate),
            })
            .collect(),
        clusters: review
            .clusters
            .iter()
            .map(|cluster| ClusterJson {
                base_code: cluster.base_code.clone(),
                candidate_code: cluster.candidate_code.clone(),
                seeds: cluster.seeds,
                example_seed: cluster.example_seed,
            })
            .collect(),
        new_violations: review.new_violations.clone(),
        stop_consequences: review.stop_consequences.clone(),
        metrics: review.metrics.iter().cloned().collect(),
    }
}

/// The whole review as `review.json` holds it.
pub fn review_json(base: &str, candidate: &str, reviews: &[ScenarioReview]) -> ReviewJson {
    ReviewJson {
        base: base.to_owned(),
        candidate: candidate.to_owned(),
        ablate: None,
        scenarios: reviews.iter().map(scenario_json).collect(),
        interrupted: None,
    }
}
