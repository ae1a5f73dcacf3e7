//! `summary.json` (for machines; keys per `docs/cli.md`) and `summary.md` (for people: verdict
//! first, then metrics, then each violation with its context, then the reproduce command).

use super::RunInfo;
use super::format::{duration_text, number_text, seconds_text};
use super::metrics::{Metrics, seconds};
use super::plots::PlotFile;
use crate::ablation::Ablations;
use crate::allocator::Policy;
use crate::check::{InvariantId, Kind, Violation};
use crate::leader::Variant;
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Serialize)]
struct ViolationJson<'a> {
    id: InvariantId,
    kind: Kind,
    at_s: f64,
    objects: &'a [String],
    message: &'a str,
    context: &'a [String],
    expected: bool,
}

impl<'a> ViolationJson<'a> {
    fn from(violation: &'a Violation) -> ViolationJson<'a> {
        ViolationJson {
            id: violation.id,
            kind: violation.kind,
            at_s: seconds(violation.at_ms),
            objects: &violation.objects,
            message: &violation.message,
            context: &violation.context,
            expected: violation.expected,
        }
    }
}

#[derive(Serialize)]
struct SometimesJson {
    id: InvariantId,
    hit: bool,
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    scenario: &'a str,
    seed: u64,
    policy: Policy,
    variant: Option<Variant>,
    version: &'a str,
    verdict: &'a str,
    failure_class: Option<&'a str>,
    fingerprint: &'a str,
    events: u64,
    sim_s: f64,
    wall_s: f64,
    max_job_wait_s: f64,
    metrics: &'a Metrics,
    violations: Vec<ViolationJson<'a>>,
    expected_violations: Vec<ViolationJson<'a>>,
    sometimes: Vec<SometimesJson>,
    /// Invariants the policy has no setting for, with why and the measured figure; absent
    /// when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_applicable: Vec<NotApplicableJson<'a>>,
    drawn: &'a [String],
    reproduce: &'a str,
    /// Rules or fixes switched off (`--ablate`); absent when none.
    #[serde(skip_serializing_if = "no_ablations")]
    ablations: &'a Ablations,
}

/// `skip_serializing_if` of the ablations: nothing switched off.
fn no_ablations(ablations: &&Ablations) -> bool {
    ablations.is_empty()
}

/// An invariant not judged because the policy has no such setting.
#[derive(Serialize)]
struct NotApplicableJson<'a> {
    id: InvariantId,
    why: &'a str,
    measured: String,
}

/// The figure a report gives in place of a not-applicable invariant's verdict.
pub fn measured_instead(id: InvariantId, metrics: &Metrics) -> String {
    if id == InvariantId::IdleTimeout {
        format!(
            "{} idle pod-seconds",
            crate::report::format::number_text(metrics.pod_seconds_idle.round())
        )
    } else {
        String::new()
    }
}

/// `summary.json`, pretty-printed, ending with a newline.
pub(crate) fn summary_json(info: &RunInfo, metrics: &Metrics) -> Vec<u8> {
    let summary = SummaryJson {
        scenario: &info.scenario,
        seed: info.seed,
        policy: info.policy,
        variant: info.variant,
        version: &info.version,
        verdict: &info.verdict,
        failure_class: info.failure_class.as_deref(),
        fingerprint: &info.fingerprint,
        events: info.events,
        sim_s: seconds(info.sim_ms),
        wall_s: info.wall_s,
        max_job_wait_s: seconds(info.max_job_wait_ms),
        metrics,
        violations: info.violations.iter().map(ViolationJson::from).collect(),
        expected_violations: info
            .expected_violations
            .iter()
            .map(ViolationJson::from)
            .collect(),
        sometimes: info
            .sometimes
            .iter()
            .map(|&(id, hit)| SometimesJson { id, hit })
            .collect(),
        not_applicable: info
            .not_applicable
            .iter()
            .map(|(id, why)| NotApplicableJson {
                id: *id,
                why,
                measured: measured_instead(*id, metrics),
            })
            .collect(),
        drawn: &info.drawn,
        reproduce: &info.reproduce,
        ablations: &info.ablations,
    };
    let mut bytes = serde_json::to_vec_pretty(&summary)
        .expect("the summary has string keys and finite numbers only");
    bytes.push(b'\n');
    bytes
}

/// `PASS burst (policy upstream, seed 7)`, or `PASS leader-chaos (variant fixed, seed 7)` for
/// a leader run: the verdict line shared by the Markdown and terminal summaries.
pub(crate) fn verdict_line(info: &RunInfo) -> String {
    let verdict = if info.verdict == "pass" {
        "PASS"
    } else {
        "FAIL"
    };
    let ablated = if info.ablations.is_empty() {
        String::new()
    } else {
        format!(", ablate {}", info.ablations.label())
    };
    match info.variant {
        Some(variant) => format!(
            "{verdict} {} (variant {}{ablated}, seed {})",
            info.scenario,
            variant.name(),
            info.seed
        ),
        None => format!(
            "{verdict} {} (policy {}{ablated}, seed {})",
            info.scenario,
            info.policy.name(),
            info.seed
        ),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Always => "always",
        Kind::Eventually => "eventually",
        Kind::Sometimes => "sometimes",
    }
}

fn write_violation_markdown(out: &mut String, violation: &Violation) {
    let objects: Vec<String> = violation
        .objects
        .iter()
        .map(|object| format!("`{object}`"))
        .collect();
    // Writing to a String cannot fail, so the fmt::Result of each writeln! is always Ok.
    let _ = writeln!(
        out,
        "### `{}` ({}) at {}s\n",
        violation.id,
        kind_name(violation.kind),
        seconds_text(violation.at_ms)
    );
    let _ = writeln!(out, "{}\n", violation.message);
    if !objects.is_empty() {
        let _ = writeln!(out, "Objects: {}\n", objects.join(", "));
    }
    if !violation.context.is_empty() {
        let _ = writeln!(out, "```\n{}\n```\n", violation.context.join("\n"));
    }
}

/// A leader run: the real build its verdict describes and the defects behind its failing
/// violations, grouped by hazard.
fn write_leader_markdown(out: &mut String, info: &RunInfo) {
    let Some(variant) = info.variant else {
        return;
    };
    let _ = writeln!(out, "Build: {}\n", variant.build());
    if info.violations.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Defects: {}\n",
        crate::check::defect_count_text(&info.violations)
    );
    for line in crate::check::hazard_lines(&info.violations) {
        let _ = writeln!(out, "- {line}");
    }
    out.push('\n');
}

/// `summary.md` without plots.
pub fn summary_markdown(info: &RunInfo, metrics: &Metrics) -> String {
    summary_markdown_with_plots(info, metrics, &[])
}

/// The plots section: each figure's SVG embedded by a relative link, with its PNG linked.
fn write_plots_markdown(out: &mut String, plots: &[PlotFile]) {
    if plots.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Plots\n");
    for plot in plots {
        let _ = writeln!(
            out,
            "![{title}]({svg})\n\n{title} ([PNG]({png}))\n",
            title = plot.title,
            svg = plot.svg_name(),
            png = plot.png_name()
        );
    }
}

/// The invariants the policy has no setting for, with the figure measured instead.
fn write_not_applicable_markdown(out: &mut String, info: &RunInfo, metrics: &Metrics) {
    if info.not_applicable.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Not applicable\n\n| invariant | why | measured |\n|---|---|---|"
    );
    for (id, why) in &info.not_applicable {
        let measured = measured_instead(*id, metrics);
        let _ = writeln!(out, "| {id} | {why} | {measured} |");
    }
    out.push('\n');
}

/// `summary.md`: verdict, metrics, the `plots` drawn into the same folder (relative links),
/// violations, coverage, reproduce command.
pub(crate) fn summary_markdown_with_plots(
    info: &RunInfo,
    metrics: &Metrics,
    plots: &[PlotFile],
) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail, so the fmt::Result of each writeln! is always Ok.
    let _ = writeln!(out, "# {}\n", verdict_line(info));
    write_leader_markdown(&mut out, info);
    if let Some(class) = &info.failure_class {
        let _ = writeln!(out, "Failure class: **{class}**\n");
    }
    let _ = writeln!(
        out,
        "Version {} · {} events · {} simulated in {} wall · max job wait {}\n",
        info.version,
        info.events,
        duration_text(seconds(info.sim_ms)),
        duration_text(info.wall_s),
        duration_text(seconds(info.max_job_wait_ms)),
    );
    if !info.drawn.is_empty() {
        let _ = writeln!(out, "Swarm drew: {}\n", info.drawn.join(", "));
    }
    let _ = writeln!(out, "## Metrics\n\n| metric | value |\n|---|---:|");
    let entries = if info.is_leader_run() {
        metrics.leader_entries()
    } else {
        metrics.entries()
    };
    for (name, value) in entries {
        let _ = writeln!(out, "| {name} | {} |", number_text(value));
    }
    out.push('\n');
    write_plots_markdown(&mut out, plots);
    let _ = writeln!(out, "## Violations\n");
    if info.violations.is_empty() {
        let _ = writeln!(out, "None: every invariant held.\n");
    }
    info.violations
        .iter()
        .for_each(|violation| write_violation_markdown(&mut out, violation));
    if !info.expected_violations.is_empty() {
        let _ = writeln!(out, "## Expected violations (outside the fault budget)\n");
        for violation in &info.expected_violations {
            write_violation_markdown(&mut out, violation);
        }
    }
    write_not_applicable_markdown(&mut out, info, metrics);
    if !info.sometimes.is_empty() {
        let _ = writeln!(
            out,
            "## Coverage (`sometimes` invariants)\n\n| invariant | hit |\n|---|---|"
        );
        for (id, hit) in &info.sometimes {
            let _ = writeln!(out, "| {id} | {} |", if *hit { "yes" } else { "no" });
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "## Reproduce\n\n```\n{}\n```\n\nFingerprint `{}`",
        info.reproduce, info.fingerprint
    );
    out
}
