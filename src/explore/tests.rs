//! Aggregation rules of sweeps and comparisons, on hand-made rows.

use super::{
    FAILING_LISTED_MAX, PolicyRow, SeedRow, SweepSummary, ViolatedId, compare_rows, sweep_table,
    write_compare_csv, write_sweep_csv,
};
use crate::check::{InvariantId, Kind};
use crate::report::Metrics;

fn row(seed: u64, violated: &[(InvariantId, Kind)], waits_ms: &[u64]) -> SeedRow {
    let mut violated: Vec<ViolatedId> = violated
        .iter()
        .map(|&(id, kind)| ViolatedId { id, kind })
        .collect();
    // Rows keep their ids sorted, as `SeedRow::from_outcome` does.
    violated.sort_unstable();
    let safety = violated.iter().any(|v| v.kind == Kind::Always);
    let liveness = violated.iter().any(|v| v.kind != Kind::Always);
    let class = match (safety, liveness) {
        (false, false) => None,
        (true, false) => Some("safety"),
        (false, true) => Some("liveness"),
        (true, true) => Some("both"),
    };
    SeedRow {
        seed,
        verdict: if class.is_some() { "fail" } else { "pass" }.to_owned(),
        failure_class: class.map(str::to_owned),
        first_violated: None,
        violated,
        fingerprint: format!("f{seed}"),
        metrics: Metrics {
            pods_created: seed,
            pod_seconds_busy: 10.0 * seed as f64,
            ..Metrics::default()
        },
        waits_ms: waits_ms.to_vec(),
        assigned: waits_ms.len() as u64,
        reused: 1,
        reproduce: format!("cargo xtask sim x.toml --seed {seed}"),
        variant: None,
        failover_ms: Vec::new(),
        hazards: Vec::new(),
    }
}

const WAIT: (InvariantId, Kind) = (InvariantId::JobWaitBound, Kind::Always);
const COMPLETE: (InvariantId, Kind) = (InvariantId::AllJobsComplete, Kind::Eventually);

#[test]
fn a_sweep_summary_counts_seeds_per_invariant_and_per_class() {
    let rows = [
        row(1, &[], &[]),
        row(2, &[WAIT], &[]),
        row(3, &[WAIT, COMPLETE], &[]),
        row(4, &[COMPLETE], &[]),
    ];
    let summary = SweepSummary::of(&rows);
    assert_eq!((summary.seeds, summary.passed, summary.failed()), (4, 1, 3));
    let counts: Vec<(InvariantId, &str, u64)> = summary
        .invariants
        .iter()
        .map(|c| (c.id, c.class, c.seeds_violated))
        .collect();
    assert_eq!(
        counts,
        vec![
            (InvariantId::AllJobsComplete, "liveness", 2),
            (InvariantId::JobWaitBound, "safety", 2)
        ]
    );
    let classes: Vec<(&str, u64)> = summary
        .classes
        .iter()
        .map(|(class, n)| (class.as_str(), *n))
        .collect();
    assert_eq!(classes, vec![("both", 1), ("liveness", 1), ("safety", 1)]);
    assert_eq!(summary.failing_seeds, vec![2, 3, 4]);
}

#[test]
fn the_sweep_table_lists_at_most_twenty_failing_seeds_then_says_how_many_more() {
    let rows: Vec<SeedRow> = (1..=25).map(|seed| row(seed, &[WAIT], &[])).collect();
    let table = sweep_table(&SweepSummary::of(&rows), &rows);
    assert!(table.contains("--seed 20\n"), "{table}");
    assert!(!table.contains("--seed 21\n"), "{table}");
    assert!(table.contains(&format!("… and {} more", 25 - FAILING_LISTED_MAX)));
}

#[test]
fn sweep_csv_lists_violated_ids_separated_by_semicolons() {
    let rows = [row(3, &[WAIT, COMPLETE], &[])];
    let mut bytes = Vec::new();
    write_sweep_csv(&mut bytes, &rows).expect("writing to memory cannot fail");
    let text = String::from_utf8(bytes).expect("CSV is UTF-8");
    let line = text.lines().nth(1).expect("one data row");
    assert!(
        line.starts_with("3,fail,all-jobs-complete;job-wait-bound,f3,both,"),
        "{line}"
    );
}

#[test]
fn a_leader_sweeps_table_and_csv_carry_the_variant_and_leader_metrics() {
    let rows: Vec<SeedRow> = (1..=2)
        .map(|seed| {
            let mut row = row(seed, &[], &[]);
            row.variant = Some(crate::leader::Variant::AgentkV1);
            row.metrics.failovers = seed;
            row.metrics.failover_s_max = 10.0 * seed as f64;
            row.metrics.leader_changes = 2 * seed;
            row.failover_ms = vec![2_000 * (seed + 1), 10_000 * seed];
            row
        })
        .collect();
    let mut bytes = Vec::new();
    write_sweep_csv(&mut bytes, &rows).expect("writing to memory cannot fail");
    let text = String::from_utf8(bytes).expect("CSV is UTF-8");
    let header = text.lines().next().expect("a header");
    assert_eq!(
        header,
        "seed,variant,verdict,violated,fingerprint,failure_class,failovers,failover_s_p95,\
         failover_s_max,leader_changes,no_leader_s,two_acting_s,events,sim_s"
    );
    let second = text.lines().nth(2).expect("two data rows");
    assert!(
        second.starts_with("2,agentk-v1,pass,,f2,,2,0,20,4,"),
        "{second}"
    );
    assert!(
        !header.contains("pods") && !header.contains("wait"),
        "no elastic columns"
    );
    let table = sweep_table(&SweepSummary::of(&rows), &rows);
    assert!(
        table.contains("variant agentk-v1: failovers 3,") && table.contains("leader changes 6"),
        "{table}"
    );
    // Pooled failovers 4, 6, 10 and 20 s: nearest rank 2 for p50, rank 4 for p95.
    assert!(
        table.contains("failover p50 6 s, p95 20 s, max 20 s (pooled)"),
        "{table}"
    );
}

#[test]
fn compare_pools_waits_over_all_seeds_and_averages_pod_costs_per_seed() {
    let runs = vec![
        (
            "pr355".to_owned(),
            vec![
                row(1, &[WAIT], &[1_000, 2_000]),
                row(2, &[], &[3_000, 400_000]),
            ],
        ),
        (
            "safe".to_owned(),
            vec![row(1, &[], &[500]), row(3, &[], &[700])],
        ),
    ];
    let rows: Vec<PolicyRow> = compare_rows(&runs);
    let pr355 = &rows[0];
    assert_eq!(pr355.pass_rate, 0.5);
    assert_eq!(pr355.wait_s_p50, 2.0, "the 2nd of 4 pooled waits");
    assert_eq!(pr355.wait_s_max, 400.0);
    assert_eq!(pr355.reuse_ratio, 0.5, "2 reused of 4 assigned");
    assert_eq!(pr355.pods_created_mean, 1.5);
    assert_eq!(pr355.pod_seconds_mean(), 15.0);
    // An invariant failing under one policy gets a pass rate under every policy.
    assert_eq!(
        pr355.invariant_pass_rates.get(&InvariantId::JobWaitBound),
        Some(&0.5)
    );
    assert_eq!(
        rows[1].invariant_pass_rates.get(&InvariantId::JobWaitBound),
        Some(&1.0)
    );
    let mut bytes = Vec::new();
    write_compare_csv(&mut bytes, &rows).expect("writing to memory cannot fail");
    let text = String::from_utf8(bytes).expect("CSV is UTF-8");
    assert!(text.starts_with("metric,pr355,safe\nseeds,2,2\npass_rate,0.5000,1.0000\n"));
    assert!(
        text.contains("pass_rate:job-wait-bound,0.5000,1.0000"),
        "{text}"
    );
}

/// A leader sweep counts the seeds per hazard its failing seeds name, in both tables.
#[test]
fn a_leader_sweep_counts_its_defects_by_hazard() {
    let rows: Vec<SeedRow> = (1..=3)
        .map(|seed| {
            let mut row = row(
                seed,
                &[(InvariantId::SingleLeaderActing, Kind::Always)],
                &[],
            );
            row.variant = Some(crate::leader::Variant::AgentkHead);
            row.hazards = if seed == 3 {
                vec!["H3".to_owned(), "H8".to_owned()]
            } else {
                vec!["H8".to_owned()]
            };
            row
        })
        .collect();
    let table = sweep_table(&SweepSummary::of(&rows), &rows);
    assert!(
        table.contains("defects: 2 defects, H3 (1 seeds), H8 (3 seeds)"),
        "{table}"
    );
    let one = &rows[..2];
    let table = sweep_table(&SweepSummary::of(one), one);
    assert!(
        table.contains("defects: one defect, H8 (2 seeds)"),
        "{table}"
    );
    let markdown = super::tables::sweep_markdown("t", &SweepSummary::of(one), one);
    assert!(
        markdown.contains("defects: one defect, H8 (2 seeds)"),
        "{markdown}"
    );
}

/// A regressions list names invariants by id: one no monitor has is refused where the list
/// is read, naming the file, the place and the id, never kept as text.
#[test]
fn a_regressions_list_with_an_unknown_invariant_id_is_refused_naming_the_file() {
    let path = std::env::temp_dir().join(format!(
        "elasticsim-regressions-{}-unknown-id.toml",
        std::process::id()
    ));
    let text = "[[entry]]\nscenario = \"burst.toml\"\nverdict = \"fail\"\n\
                violated = [\"job-wait\"]\n";
    std::fs::write(&path, text).expect("the temp folder is writable");
    let error = super::regressions::load(&path).expect_err("no invariant is called job-wait");
    let _ = std::fs::remove_file(&path);
    assert!(error.starts_with(&path.display().to_string()), "{error}");
    assert!(error.contains("line 4"), "{error}");
    assert!(
        error.contains("unknown invariant id \"job-wait\""),
        "{error}"
    );
}
