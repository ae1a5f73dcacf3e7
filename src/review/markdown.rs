//! `review.md`: a review comment ready to paste into the pull request. It opens with one
//! paragraph (what changes with the feature off, then with it on), then the new violations
//! with repro commands, the metric changes, the divergence clusters with the two decisions
//! side by side, and each scenario's first divergence with the trace lines before it.

use super::ScenarioReview;
use super::stats::judgement;
use super::summary::Cluster;
use crate::report::format::{duration_text, number_text};
use std::fmt::Write as _;

/// How many scenarios the summary paragraph names per reuse setting.
const NAMED_IN_SUMMARY: usize = 3;

fn metric_text(name: &str, value: f64) -> String {
    if name.starts_with("wait_s") {
        duration_text(value)
    } else if name == "reuse_ratio" || name == "pods_per_job" {
        format!("{value:.2}")
    } else {
        number_text((value * 10.0).round() / 10.0)
    }
}

fn words(name: &str) -> &'static str {
    match name {
        "wait_s_p50" => "p50 wait",
        "wait_s_p95" => "p95 wait",
        "waits_censored" => "jobs never assigned",
        "pods_created" => "pods created",
        "pods_per_job" => "pods per job",
        "pod_seconds_busy" => "busy pod-seconds",
        "pod_seconds_idle" => "idle pod-seconds",
        "pod_seconds_pending" => "pending pod-seconds",
        "reuse_ratio" => "reuse ratio",
        _ => "metric",
    }
}

fn cluster_words(cluster: &Cluster, base: &str, candidate: &str, seeds: u64) -> String {
    let intent = match &cluster.example.intended {
        Some(why) => format!(", intended: {why}"),
        None => format!(", not declared as intended by {candidate}"),
    };
    format!(
        "at {} {base} decides `{}` where {candidate} decides `{}` ({} of {seeds} seeds{intent})",
        cluster.example.request, cluster.base_code, cluster.candidate_code, cluster.seeds
    )
}

/// The invariant whose violation stops a run (a request storm): metrics cover less time.
const STORM: &str = super::summary::STOP;

/// One scenario's sentence for the summary: its top divergence, new violations, changes.
fn scenario_sentence(review: &ScenarioReview, base: &str, candidate: &str) -> String {
    let mut parts = Vec::new();
    let top = review
        .clusters
        .iter()
        .find(|cluster| cluster.example.intended.is_none())
        .or(review.clusters.first());
    if let Some(cluster) = top {
        parts.push(cluster_words(cluster, base, candidate, review.seeds));
    }
    if !review.new_violations.is_empty() {
        let broken: Vec<String> = review
            .new_violations
            .iter()
            .map(|(id, seeds)| format!("`{id}` ({} seeds)", seeds.len()))
            .collect();
        parts.push(format!("{candidate} alone breaks {}", broken.join(" and ")));
    }
    let worse: Vec<String> = review
        .metrics
        .iter()
        .filter(|(name, delta)| judgement(name, delta) == "worse")
        .take(3)
        .map(|(name, delta)| {
            format!(
                "{} {} → {}",
                words(name),
                metric_text(name, delta.base_mean),
                metric_text(name, delta.candidate_mean)
            )
        })
        .collect();
    if !worse.is_empty() {
        parts.push(format!("worse {}", worse.join(", ")));
    }
    if let Some(seeds) = review.new_violations.get(STORM) {
        parts.push(format!(
            "{candidate}'s run ends in a request storm on {} seeds (stopped at the `{STORM}` \
             bound, so its metrics there cover only the time before the stop)",
            seeds.len()
        ));
    }
    format!("on `{}` {}", review.scenario, parts.join("; "))
}

/// A review matters for the summary when it diverges, breaks something or gets worse.
fn weight(review: &ScenarioReview) -> (usize, bool, usize) {
    let worse = review
        .metrics
        .iter()
        .filter(|(name, delta)| judgement(name, delta) == "worse")
        .count();
    (review.new_violations.len(), review.unintended(), worse)
}

fn setting_sentences(
    reviews: &[&ScenarioReview],
    reuse: bool,
    base: &str,
    candidate: &str,
) -> String {
    let setting = if reuse {
        "With agent reuse on"
    } else {
        "With agent reuse off (the feature switched off)"
    };
    if reviews.is_empty() {
        return String::new();
    }
    let diverged = reviews
        .iter()
        .filter(|review| !review.first_divergences.is_empty())
        .count();
    if diverged == 0
        && reviews
            .iter()
            .all(|review| review.new_violations.is_empty())
    {
        return format!(
            "**{setting}**, {candidate} decides exactly as {base} on every seed of all {} \
             scenarios. ",
            reviews.len()
        );
    }
    let unintended = reviews.iter().filter(|review| review.unintended()).count();
    let breaking = reviews
        .iter()
        .filter(|review| !review.new_violations.is_empty())
        .count();
    let mut ranked: Vec<&&ScenarioReview> = reviews
        .iter()
        .filter(|review| !review.first_divergences.is_empty() || weight(review).0 > 0)
        .collect();
    ranked.sort_by_key(|review| std::cmp::Reverse(weight(review)));
    let named: Vec<String> = ranked
        .iter()
        .take(NAMED_IN_SUMMARY)
        .map(|review| scenario_sentence(review, base, candidate))
        .collect();
    format!(
        "**{setting}**, {candidate} decides differently from {base} in {diverged} of {} \
         scenarios ({unintended} with divergences {candidate} does not declare as intended) \
         and violates invariants {base} keeps in {breaking}: {}. ",
        reviews.len(),
        named.join("; ")
    )
}

/// `breaks` (the candidate alone breaks an invariant), `diverges` (it decides differently
/// and breaks nothing of its own) or `same`.
pub fn verdict_word(review: &ScenarioReview) -> &'static str {
    if !review.new_violations.is_empty() {
        "breaks"
    } else if !review.first_divergences.is_empty() {
        "diverges"
    } else {
        "same"
    }
}

/// Every id of `found`, with its seed count: `` `id` (3) ``.
fn ids_text(found: &std::collections::BTreeMap<String, Vec<u64>>) -> String {
    let ids: Vec<String> = (found.iter())
        .map(|(id, seeds)| format!("`{id}` ({})", seeds.len()))
        .collect();
    if ids.is_empty() {
        "—".to_owned()
    } else {
        ids.join(", ")
    }
}

/// A metric's base → candidate means, `≥` where waits were censored at the end of runs.
fn change_text(review: &ScenarioReview, name: &str) -> String {
    let Some(delta) = review.metric(name) else {
        return "—".to_owned();
    };
    let censored = review.metric("waits_censored");
    let bound = |mean: f64| {
        if name.starts_with("wait_s") && mean > 0.0 {
            "≥"
        } else {
            ""
        }
    };
    let (base_bound, candidate_bound) = match censored {
        Some(censored) => (bound(censored.base_mean), bound(censored.candidate_mean)),
        None => ("", ""),
    };
    format!(
        "{base_bound}{} → {candidate_bound}{}",
        metric_text(name, delta.base_mean),
        metric_text(name, delta.candidate_mean)
    )
}

/// The verdict in one sentence: which defects are the candidate's own, which failures only
/// follow from stopped runs, which figures are bounds.
pub fn verdict_sentence(base: &str, candidate: &str, reviews: &[ScenarioReview]) -> String {
    let breaking: Vec<&ScenarioReview> = (reviews.iter())
        .filter(|review| !review.new_violations.is_empty())
        .collect();
    let mut own: Vec<&str> = (breaking.iter())
        .flat_map(|review| review.new_violations.keys().map(String::as_str))
        .collect();
    own.sort_unstable();
    own.dedup();
    let stopped = reviews
        .iter()
        .any(|review| !review.stop_consequences.is_empty());
    let censored = (reviews.iter())
        .filter_map(|review| review.metric("waits_censored"))
        .any(|delta| delta.candidate_mean > 0.0 || delta.base_mean > 0.0);
    let mut sentence = if own.is_empty() {
        format!("`{candidate}` breaks no invariant that `{base}` keeps")
    } else {
        let ids: Vec<String> = own.iter().map(|id| format!("`{id}`")).collect();
        format!(
            "`{candidate}` alone breaks {} in {} of {} scenario settings",
            ids.join(", "),
            breaking.len(),
            reviews.len()
        )
    };
    let lacks_idle_timeout = crate::allocator::Policy::from_name(candidate)
        .is_some_and(|policy| !policy.has_idle_timeout());
    if lacks_idle_timeout && reviews.iter().any(|review| review.reuse) {
        sentence.push_str(&format!(
            "; `idle-timeout` does not apply: `{candidate}` has no idle timeout (its idle \
             pod-seconds are in the metrics)"
        ));
    }
    if stopped {
        sentence.push_str(&format!(
            "; the failures listed as consequences only follow from runs stopped at the \
             `{STORM}` budget (judged at the stop, not after settling)"
        ));
    }
    if censored {
        sentence.push_str(
            "; waits marked ≥ are lower bounds (jobs never assigned count with their wait so far)",
        );
    }
    sentence.push('.');
    sentence
}

/// The first screen's columns after the verdict column.
pub const SCREEN_COLUMNS: [&str; 7] = [
    "scenario",
    "reuse",
    "first divergent decision",
    "candidate alone breaks",
    "consequences of a stop",
    "p95 wait",
    "pods created",
];

/// One scenario's cells under [`SCREEN_COLUMNS`].
pub fn screen_cells(review: &ScenarioReview) -> Vec<String> {
    let first = (review.first_divergences.first()).map_or("—".to_owned(), |first| {
        let d = &first.divergence;
        format!(
            "seed {}: `{}` → `{}` at {}",
            first.seed, d.base.code, d.candidate.code, d.request
        )
    });
    vec![
        review.scenario.clone(),
        super::reuse_text(review.reuse).to_owned(),
        first,
        ids_text(&review.new_violations),
        ids_text(&review.stop_consequences),
        change_text(review, "wait_s_p95"),
        change_text(review, "pods_created"),
    ]
}

/// The first screen: the verdict, then one row per scenario and reuse setting.
pub fn first_screen(base: &str, candidate: &str, reviews: &[ScenarioReview]) -> String {
    let mut out = format!(
        "# Review of `{candidate}` against `{base}`\n\n**Verdict.** {}\n\n| verdict | {} |\n|{}\n",
        verdict_sentence(base, candidate, reviews),
        SCREEN_COLUMNS.join(" | "),
        "---|".repeat(SCREEN_COLUMNS.len() + 1)
    );
    for review in reviews {
        let cells = screen_cells(review);
        let _ = writeln!(
            out,
            "| **{}** | {} |",
            verdict_word(review),
            cells.join(" | ")
        );
    }
    out
}

/// The opening paragraph: behaviour with the feature off first, then with it on.
pub fn summary_paragraph(base: &str, candidate: &str, reviews: &[ScenarioReview]) -> String {
    let mut text = format!("Review of `{candidate}` against `{base}`, on identical seeds. ");
    for reuse in [false, true] {
        let chosen: Vec<&ScenarioReview> = reviews
            .iter()
            .filter(|review| review.reuse == reuse)
            .collect();
        text.push_str(&setting_sentences(&chosen, reuse, base, candidate));
    }
    text.push_str("Details, repro commands and the decisions side by side follow.");
    text
}

fn violations_section(out: &mut String, reviews: &[ScenarioReview], folder: &str) {
    let _ = writeln!(out, "## New violations (only under the candidate)\n");
    let any = reviews
        .iter()
        .any(|review| !review.new_violations.is_empty());
    if !any {
        let _ = writeln!(
            out,
            "None: every invariant the candidate breaks, the base breaks on the same seed too.\n"
        );
        return;
    }
    let _ = writeln!(
        out,
        "| scenario | invariant | seeds | smallest seed | repro |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for review in reviews {
        for (id, seeds) in &review.new_violations {
            let repro = review.repros.iter().find(|repro| &repro.invariant == id);
            let command = match repro {
                Some(repro) if repro.toml.is_some() => {
                    format!("`{}` ({})", repro.command(folder), repro.size)
                }
                Some(repro) => {
                    format!("shrink failed: {}", repro.error.clone().unwrap_or_default())
                }
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} | `{id}` | {} of {} | {} | {command} |",
                review.label(),
                seeds.len(),
                review.seeds,
                seeds.first().copied().unwrap_or_default()
            );
        }
    }
    out.push('\n');
}

fn consequences_section(out: &mut String, reviews: &[ScenarioReview]) {
    if reviews
        .iter()
        .all(|review| review.stop_consequences.is_empty())
    {
        return;
    }
    let _ = writeln!(
        out,
        "## Consequences of a stopped run\n\nThe candidate's run stopped at the `{STORM}` \
         budget; these eventually- and sometimes-invariants were judged at that instant, not \
         after the settle phase, so they are not findings of their own.\n\n\
         | scenario | invariant | seeds |\n|---|---|---|"
    );
    for review in reviews {
        for (id, seeds) in &review.stop_consequences {
            let _ = writeln!(
                out,
                "| {} | `{id}` | {} of {} |",
                review.label(),
                seeds.len(),
                review.seeds
            );
        }
    }
    out.push('\n');
}

fn metrics_section(out: &mut String, reviews: &[ScenarioReview]) {
    let _ = writeln!(out, "## Metric changes\n");
    let _ = writeln!(
        out,
        "Candidate − base per seed, mean over seeds, with a seeded bootstrap 95 % interval; \
         only detectable changes are listed (every metric is in `review.json`).\n"
    );
    let stopped: usize = reviews
        .iter()
        .filter_map(|review| review.new_violations.get(STORM))
        .map(Vec::len)
        .sum();
    if stopped > 0 {
        let _ = writeln!(
            out,
            "{stopped} candidate runs ended in a request storm and stopped at the `{STORM}` \
             bound: their metrics cover only the time before the stop (fewer pods and waits \
             than the full run would have had).\n"
        );
    }
    let _ = writeln!(
        out,
        "| scenario | metric | base | candidate | change (95 % CI) | judgement |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let mut listed = 0;
    for review in reviews {
        for (name, delta) in &review.metrics {
            let verdict = judgement(name, delta);
            if verdict == "no detectable change" {
                continue;
            }
            listed += 1;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:+.3} ({:+.3} … {:+.3}) | **{verdict}** |",
                review.label(),
                words(name),
                metric_text(name, delta.base_mean),
                metric_text(name, delta.candidate_mean),
                delta.delta,
                delta.ci95_low,
                delta.ci95_high
            );
        }
    }
    if listed == 0 {
        let _ = writeln!(
            out,
            "| every scenario | every metric | | | | no detectable change |"
        );
    }
    out.push('\n');
}

fn one_line(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn clusters_section(out: &mut String, reviews: &[ScenarioReview], base: &str, candidate: &str) {
    let _ = writeln!(out, "## Divergence clusters\n");
    let _ = writeln!(
        out,
        "Decisions aligned by request; a cluster is every seed with the same (base code → \
         candidate code). Intended ones are explained by the candidate's own declaration.\n"
    );
    for review in reviews.iter().filter(|review| !review.clusters.is_empty()) {
        let _ = writeln!(
            out,
            "### {}: {} of {} seeds diverge\n",
            review.label(),
            review.first_divergences.len(),
            review.seeds
        );
        let _ = writeln!(
            out,
            "| {base} → {candidate} | request | seeds | example | {base} said | {candidate} said \
             | intended? |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|");
        for cluster in &review.clusters {
            let example = &cluster.example;
            let _ = writeln!(
                out,
                "| `{}` → `{}` | {} | {} | seed {} | {} | {} | {} |",
                cluster.base_code,
                cluster.candidate_code,
                example.request,
                cluster.seeds,
                cluster.example_seed,
                one_line(&example.base.text),
                one_line(&example.candidate.text),
                example
                    .intended
                    .as_deref()
                    .map_or("**no**".to_owned(), |why| format!("yes: {why}"))
            );
        }
        out.push('\n');
    }
}

fn first_divergence_section(
    out: &mut String,
    reviews: &[ScenarioReview],
    base: &str,
    candidate: &str,
) {
    let _ = writeln!(out, "## First divergence, smallest seed of each scenario\n");
    for review in reviews {
        let Some(first) = review.first_divergences.first() else {
            continue;
        };
        let d = &first.divergence;
        let _ = writeln!(
            out,
            "### {} seed {}: {} at t={}s, job {}, agent {}\n",
            review.label(),
            first.seed,
            d.request,
            crate::report::format::seconds_text(d.t_ms),
            d.job.map_or("-".to_owned(), |job| job.to_string()),
            d.agent.as_deref().unwrap_or("-")
        );
        let _ = writeln!(out, "- {base}: `{}` {}", d.base.code, d.base.text);
        let _ = writeln!(
            out,
            "- {candidate}: `{}` {}",
            d.candidate.code, d.candidate.text
        );
        let _ = writeln!(
            out,
            "- intended: {}\n",
            d.intended
                .as_deref()
                .unwrap_or("no (not declared by the candidate)")
        );
        for (who, lines) in [
            (base, &first.context.base),
            (candidate, &first.context.candidate),
        ] {
            let _ = writeln!(out, "{who}, the trace up to it:\n\n```text");
            for line in lines.iter() {
                let _ = writeln!(out, "{line}");
            }
            let _ = writeln!(out, "```\n");
        }
    }
}

/// `review.md` for `reviews`; `folder` is where the review was written (repro commands).
pub fn review_markdown(
    base: &str,
    candidate: &str,
    reviews: &[ScenarioReview],
    folder: &str,
) -> String {
    let mut out = first_screen(base, candidate, reviews);
    out.push_str("\n## In words\n\n");
    out.push_str(&summary_paragraph(base, candidate, reviews));
    out.push_str("\n\n");
    violations_section(&mut out, reviews, folder);
    consequences_section(&mut out, reviews);
    metrics_section(&mut out, reviews);
    clusters_section(&mut out, reviews, base, candidate);
    first_divergence_section(&mut out, reviews, base, candidate);
    out
}
