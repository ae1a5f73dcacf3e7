//! What the CLI prints after a run: the verdict first, key metrics on a few aligned lines,
//! each violation on one line, then the fingerprint and the reproduce command. Plain text.

use super::RunInfo;
use super::format::{duration_text, number_text, seconds_text};
use super::metrics::Metrics;
use super::summary::verdict_line;
use crate::check::Violation;
use std::fmt::Write as _;

/// `job-wait-bound at 301.5s: job 17 waited 5m01s … [job:17]`.
pub(crate) fn violation_line(violation: &Violation) -> String {
    format!(
        "{} at {}s: {} [{}]",
        violation.id,
        seconds_text(violation.at_ms),
        violation.message,
        violation.objects.join(", ")
    )
}

/// Events per second for people: `2.1M`, `35.2k`, `812`.
fn rate_text(per_s: f64) -> String {
    if per_s >= 1e6 {
        format!("{:.1}M", per_s / 1e6)
    } else if per_s >= 1e3 {
        format!("{:.1}k", per_s / 1e3)
    } else {
        format!("{per_s:.0}")
    }
}

/// A leader run's lines: leadership instead of jobs, waits and pods.
fn leader_lines(out: &mut String, m: &Metrics) {
    let _ = writeln!(
        out,
        "  failovers    {}  p95 {}  max {}",
        m.failovers,
        duration_text(m.failover_s_p95),
        duration_text(m.failover_s_max)
    );
    let _ = writeln!(
        out,
        "  leadership   {} leader changes, no leader {}, two acting {}",
        m.leader_changes,
        duration_text(m.no_leader_s),
        duration_text(m.two_acting_s)
    );
}

fn metric_lines(out: &mut String, info: &RunInfo, metrics: &Metrics) {
    let m = metrics;
    if info.is_leader_run() {
        leader_lines(out, m);
        events_line(out, m);
        return;
    }
    // Writing to a String cannot fail, so the fmt::Result of each writeln! is always Ok.
    let _ = writeln!(
        out,
        "  jobs         {} total, {} completed ({} instances)",
        m.jobs_total, m.jobs_completed, m.job_instances
    );
    let at_least = if m.waits_censored > 0 { "≥" } else { "" };
    let _ = writeln!(
        out,
        "  waits        p50 {at_least}{}  p95 {at_least}{}  max {at_least}{}  (bound {}){}",
        duration_text(m.wait_s_p50),
        duration_text(m.wait_s_p95),
        duration_text(m.wait_s_max),
        duration_text(info.max_job_wait_ms as f64 / 1000.0),
        censored_text(m.waits_censored)
    );
    let _ = writeln!(
        out,
        "  pods         {} created, {} per job, reuse ratio {}",
        m.pods_created,
        number_text(m.pods_per_job),
        number_text(m.reuse_ratio)
    );
    let _ = writeln!(
        out,
        "  pod-seconds  busy {}  idle {}  pending {}",
        number_text(m.pod_seconds_busy),
        number_text(m.pod_seconds_idle),
        number_text(m.pod_seconds_pending)
    );
    if m.leader_changes > 0 || m.no_leader_s > 0.0 {
        let _ = writeln!(
            out,
            "  leadership   {} failovers (max {}), no leader {}, two acting {}",
            m.failovers,
            duration_text(m.failover_s_max),
            duration_text(m.no_leader_s),
            duration_text(m.two_acting_s)
        );
    }
    events_line(out, m);
}

fn events_line(out: &mut String, m: &Metrics) {
    let _ = writeln!(
        out,
        "  events       {} in {} wall, {} events/s, compression {}x",
        m.events,
        duration_text(m.wall_s),
        rate_text(m.events_per_s),
        number_text(m.compression.round())
    );
}

/// The post-run summary.
pub(crate) fn summary(info: &RunInfo, metrics: &Metrics) -> String {
    let mut out = verdict_line(info);
    if let Some(class) = &info.failure_class {
        let _ = write!(out, " [{class}]");
    }
    out.push('\n');
    build_and_defect_lines(&mut out, info);
    metric_lines(&mut out, info, metrics);
    // Writing to a String cannot fail, so the fmt::Result of each writeln! is always Ok.
    if !info.violations.is_empty() {
        let _ = writeln!(out, "violations:");
        for violation in &info.violations {
            let _ = writeln!(out, "  {}", violation_line(violation));
        }
    }
    if !info.expected_violations.is_empty() {
        let _ = writeln!(out, "expected (outside the fault budget, not failures):");
        for violation in &info.expected_violations {
            let _ = writeln!(out, "  {}", violation_line(violation));
        }
    }
    if !info.sometimes.is_empty() {
        let coverage: Vec<String> = info
            .sometimes
            .iter()
            .map(|(id, hit)| format!("{id} {}", if *hit { "hit" } else { "missed" }))
            .collect();
        let _ = writeln!(out, "sometimes: {}", coverage.join(", "));
    }
    for (id, why) in &info.not_applicable {
        let measured = super::summary::measured_instead(*id, metrics);
        let _ = writeln!(out, "not applicable: {id} ({why}); measured {measured}");
    }
    if !info.drawn.is_empty() {
        let _ = writeln!(out, "swarm drew: {}", info.drawn.join(", "));
    }
    let _ = writeln!(out, "fingerprint {}", info.fingerprint);
    let _ = writeln!(out, "reproduce: {}", info.reproduce);
    out
}

/// A leader run: which real build the verdict describes and, when it failed, the defects
/// behind its violations (`docs/policies.md`, "Hazards"), one line per hazard.
fn build_and_defect_lines(out: &mut String, info: &RunInfo) {
    let Some(variant) = info.variant else {
        return;
    };
    let _ = writeln!(out, "  build        {}", variant.build());
    if info.violations.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "  defects      {}",
        crate::check::defect_count_text(&info.violations)
    );
    for line in crate::check::hazard_lines(&info.violations) {
        let _ = writeln!(out, "    {line}");
    }
}

/// `; N jobs never assigned (waits so far)` when some waits are censored.
fn censored_text(censored: u64) -> String {
    if censored == 0 {
        String::new()
    } else {
        format!("; {censored} never assigned, counted with their wait so far")
    }
}
