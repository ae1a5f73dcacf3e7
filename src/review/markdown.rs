//! `review.md`: a review comment ready to paste into the pull request. It opens with the
//! verdict, a table with the feature off (the default) and one with it on, each row with its
//! cause in one sentence, and "In words" (at most 150 words, no harness vocabulary); then the
//! new violations with repro commands, the metric changes, the divergence clusters with the
//! two decisions side by side, and each scenario's first divergence with the trace lines
//! before it.

use super::ScenarioReview;
use super::cause::{cause_sentence, invariant_words, policy_words, verdict_word};
use super::stats::judgement;
use crate::check::InvariantId;
use crate::report::format::{duration_text, number_text};
use std::fmt::Write as _;

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

/// The invariant whose violation stops a run (a request storm): metrics cover less time.
const STORM: InvariantId = super::summary::STOP;

/// Every id of `found`, with its seed count: `` `id` (3) ``.
fn ids_text(found: &std::collections::BTreeMap<InvariantId, Vec<u64>>) -> String {
    let counted: Vec<String> = (found.iter())
        .map(|(id, seeds)| format!("`{id}` ({})", seeds.len()))
        .collect();
    if counted.is_empty() {
        "—".to_owned()
    } else {
        counted.join(", ")
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
    let mut verdict = String::new();
    for reuse in [false, true] {
        verdict.push_str(&setting_verdict(base, candidate, reviews, reuse));
    }
    verdict.push_str(&overall_verdict(base, candidate, reviews));
    verdict
}

/// One reuse setting's clause of the verdict: which scenarios the candidate alone breaks.
fn setting_verdict(base: &str, candidate: &str, reviews: &[ScenarioReview], reuse: bool) -> String {
    let rows: Vec<&ScenarioReview> = (reviews.iter())
        .filter(|review| review.reuse == reuse)
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let setting = if reuse {
        "With the feature on"
    } else {
        "With the feature off (the default)"
    };
    let breaking: Vec<String> = (rows.iter())
        .filter(|review| !review.new_violations.is_empty())
        .map(|review| review.scenario.clone())
        .collect();
    let differ = rows
        .iter()
        .filter(|review| verdict_word(review) != "same")
        .count();
    if !breaking.is_empty() {
        format!(
            "{setting}, `{candidate}` fails where `{base}` passes in {} of {} scenarios ({}). ",
            breaking.len(),
            rows.len(),
            breaking.join(", ")
        )
    } else if differ > 0 {
        format!(
            "{setting}, `{candidate}` decides differently in {differ} of {} scenarios and \
             fails nothing `{base}` passes. ",
            rows.len()
        )
    } else {
        format!(
            "{setting}, `{candidate}` decides exactly as `{base}` in all {} scenarios. ",
            rows.len()
        )
    }
}

/// The verdict over both settings: which defects are the candidate's own, which failures only
/// follow from stopped runs, which figures are bounds.
fn overall_verdict(base: &str, candidate: &str, reviews: &[ScenarioReview]) -> String {
    let breaking: Vec<&ScenarioReview> = (reviews.iter())
        .filter(|review| !review.new_violations.is_empty())
        .collect();
    let mut own: Vec<InvariantId> = (breaking.iter())
        .flat_map(|review| review.new_violations.keys().copied())
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
        let quoted: Vec<String> = own.iter().map(|id| format!("`{id}`")).collect();
        format!(
            "`{candidate}` alone breaks {} in {} of {} scenario settings",
            quoted.join(", "),
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

/// The columns of the first screen's two tables after the verdict column.
pub(crate) const SCREEN_COLUMNS: [&str; 5] = [
    "scenario",
    "cause",
    "candidate alone breaks",
    "p95 wait",
    "pods created",
];

/// One scenario's cells under [`SCREEN_COLUMNS`].
pub(crate) fn screen_cells(review: &ScenarioReview, base: &str, candidate: &str) -> Vec<String> {
    vec![
        review.scenario.clone(),
        cause_sentence(review, base, candidate),
        ids_text(&review.new_violations),
        change_text(review, "wait_s_p95"),
        change_text(review, "pods_created"),
    ]
}

/// The heading of the table of one reuse setting.
pub(crate) fn setting_heading(reuse: bool) -> &'static str {
    if reuse {
        "Feature on (`enable_agent_reuse = true`)"
    } else {
        "Feature off (`enable_agent_reuse = false`, the default: what every current user gets)"
    }
}

/// The first screen: the verdict, then one table with the feature off and one with it on,
/// a row per scenario with its cause.
pub(crate) fn first_screen(base: &str, candidate: &str, reviews: &[ScenarioReview]) -> String {
    let mut out = format!(
        "# Review of `{candidate}` against `{base}`\n\n**Verdict.** {}\n",
        verdict_sentence(base, candidate, reviews),
    );
    for reuse in [false, true] {
        let rows: Vec<&ScenarioReview> = (reviews.iter())
            .filter(|review| review.reuse == reuse)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "\n## {}\n\n| verdict | {} |\n|{}\n",
            setting_heading(reuse),
            SCREEN_COLUMNS.join(" | "),
            "---|".repeat(SCREEN_COLUMNS.len() + 1)
        );
        for review in rows {
            let cells: Vec<String> = (screen_cells(review, base, candidate).iter())
                .map(|cell| one_line(cell))
                .collect();
            let _ = writeln!(
                out,
                "| **{}** | {} |",
                verdict_word(review),
                cells.join(" | ")
            );
        }
    }
    out
}

/// The most words "In words" may take.
pub const IN_WORDS_MAX: usize = 150;

/// One reuse setting in plain words, naming at most `named` workloads that break.
fn setting_words(
    reviews: &[&ScenarioReview],
    reuse: bool,
    base: &str,
    candidate: &str,
    named: usize,
) -> String {
    let setting = if reuse {
        "With the feature on".to_owned()
    } else {
        "With the feature off, which every current user gets,".to_owned()
    };
    let differ = (reviews.iter())
        .filter(|review| verdict_word(review) != "same")
        .count();
    let worse: Vec<&&ScenarioReview> = (reviews.iter())
        .filter(|review| !review.new_violations.is_empty())
        .collect();
    if differ == 0 {
        return format!(
            "{setting} {candidate} behaves exactly like {base} in all {} workloads.",
            reviews.len()
        );
    }
    let mut text = format!(
        "{setting} {candidate} behaves differently from {base} in {differ} of {} workloads",
        reviews.len()
    );
    if worse.is_empty() {
        text.push_str(&format!(" and fails nothing {base} passes."));
        return text;
    }
    text.push_str(&format!(
        " and fails where {base} passes in {}",
        worse.len()
    ));
    let examples: Vec<String> = (worse.iter().take(named))
        .map(|review| {
            let broken: Vec<String> = review
                .new_violations
                .keys()
                .map(|&id| invariant_words(id))
                .collect();
            let name = if review.description.is_empty() {
                review.scenario.clone()
            } else {
                review.description.clone()
            };
            format!("“{name}”: {}", broken.join(" and "))
        })
        .collect();
    if examples.is_empty() {
        text.push('.');
    } else {
        text.push_str(&format!(", for example {}.", examples.join("; ")));
    }
    text
}

/// "In words": the feature off first, then on, in at most [`IN_WORDS_MAX`] words and without
/// the harness's own vocabulary (no invariant ids, decision codes or seeds).
pub fn summary_paragraph(base: &str, candidate: &str, reviews: &[ScenarioReview]) -> String {
    let (base, candidate) = (&policy_words(base), &policy_words(candidate));
    let paragraph = |named: usize| {
        let mut parts = Vec::new();
        for reuse in [false, true] {
            let chosen: Vec<&ScenarioReview> = (reviews.iter())
                .filter(|review| review.reuse == reuse)
                .collect();
            if !chosen.is_empty() {
                parts.push(setting_words(&chosen, reuse, base, candidate, named));
            }
        }
        parts.join(" ")
    };
    (0..=2)
        .rev()
        .map(paragraph)
        .find(|text| text.split_whitespace().count() <= IN_WORDS_MAX)
        .unwrap_or_else(|| paragraph(0))
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
            let repro = review.repros.iter().find(|repro| repro.invariant == *id);
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
        .filter_map(|review| review.new_violations.get(&STORM))
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
