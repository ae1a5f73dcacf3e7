//! `elasticsim compare FILE --policies … --seeds …`: the same seeds under each policy, side
//! by side; `compare.csv` and `compare.md` in `reports/<scenario>/compare/`.
//! Exits 1 when any seed under any policy violated an invariant, as every command does.

use super::Failure;
use super::args::CompareArgs;
use super::sim::load;
use super::sweep::{parse_seeds, run_seeds};
use crate::allocator::Policy;
use crate::explore::{compare_markdown, compare_rows, compare_table, write_compare_csv};
use crate::live::wall::Stopwatch;
use crate::report::atomic;
use crate::world::RunSettings;
use std::path::PathBuf;

pub(super) fn run(args: &CompareArgs) -> Result<(), Failure> {
    let seeds = parse_seeds(&args.seeds)?;
    let scenario = load(&args.file)?;
    let base = RunSettings::from_scenario(&scenario).map_err(|e| Failure::Input(e.to_string()))?;
    let stopwatch = Stopwatch::start();
    let mut runs = Vec::new();
    for policy in &args.policies {
        let mut settings = base.clone();
        settings.policy = Policy::from_name(policy).expect("clap checked the policy name");
        let rows = run_seeds(&args.file, &scenario, &settings, seeds, args.threads, None)?;
        runs.push((policy.clone(), rows));
    }
    let wall_s = stopwatch.seconds();
    let rows = compare_rows(&runs);
    let folder = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports")
            .join(&scenario.name)
            .join("compare")
    });
    let failed =
        |e: std::io::Error| Failure::Internal(format!("writing {}: {e}", folder.display()));
    std::fs::create_dir_all(&folder).map_err(failed)?;
    atomic::write_with(&folder.join("compare.csv"), |out| {
        write_compare_csv(out, &rows)
    })
    .map_err(failed)?;
    let title = format!("{} (seeds {seeds})", scenario.name);
    atomic::write_file(
        &folder.join("compare.md"),
        compare_markdown(&title, &rows).as_bytes(),
    )
    .map_err(failed)?;
    let chart_rows: Vec<crate::report::plots::PolicyRow> = rows
        .iter()
        .map(|row| crate::report::plots::PolicyRow {
            policy: row.policy.clone(),
            reuse_ratio: row.reuse_ratio,
            wait_s_p95: row.wait_s_p95,
            pods_created: row.pods_created_mean,
            pod_seconds: row.pod_seconds_mean(),
            pass_rate: row.pass_rate,
            invariant_pass_rates: row
                .invariant_pass_rates
                .iter()
                .map(|(id, rate)| ((*id).to_owned(), *rate))
                .collect(),
        })
        .collect();
    // A chart that cannot be drawn is a warning: the tables above are the result.
    if let Err(error) = crate::report::plots::compare_charts(&folder, &chart_rows) {
        eprintln!("warning: compare chart not drawn: {error}");
    }
    println!("compare {} over seeds {seeds}", scenario.name);
    print!("{}", compare_table(&rows));
    let total = seeds.len() * args.policies.len() as u64;
    println!("{total} runs in {wall_s:.2}s");
    println!("report: {}", folder.join("compare.md").display());
    if rows.iter().all(|row| row.passed == row.seeds) {
        Ok(())
    } else {
        Err(Failure::Violated)
    }
}
