//! A sharded nightly: what a shard keeps in `shard.json`, and [`merge`], which folds every
//! shard's seeds into the outcome the unsharded run would have had and writes its files.
//!
//! A shard judges violations and regression entries for its own seeds, but not baselines:
//! means over a shard's seeds are not the means the baseline was made from. It keeps the
//! text of `nightly.toml` and of every baseline it read, so the merge judges the merged means
//! with exactly what the shards saw, wherever the merge runs.

use super::outputs;
use super::runner::SeedResult;
use super::{Baseline, Group, NightlyConfig, NightlyError, NightlyOptions, NightlyOutcome};
use crate::explore::shard::{self, Assembled, Placed, ShardFile};
use crate::explore::{Cell, CommandKind, Shard};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file as the shard read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct FileText {
    path: PathBuf,
    text: String,
}

/// What the nightly's files depend on besides the seeds' results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct NightlyShardPlan {
    groups: Vec<Group>,
    /// Warnings of planning (unreadable regression entries, scenario warnings).
    warnings: Vec<String>,
    /// `nightly.toml`, if there was one: its tolerances judge the merged means.
    config: Option<FileText>,
    /// Scenario suite → its baseline file, for suites that have one.
    baselines: BTreeMap<String, FileText>,
}

/// One shard's run, ready to be written down.
pub(super) struct ShardRun<'a> {
    pub options: &'a NightlyOptions,
    pub shard: Shard,
    /// `nightly.toml`'s path and text, if it exists.
    pub config: Option<(PathBuf, String)>,
    pub groups: &'a [Group],
    /// The canonical position of each result's task.
    pub positions: &'a [usize],
    pub results: &'a [SeedResult],
}

impl ShardRun<'_> {
    /// Note on every scenario group that its baseline is judged at merge, and write
    /// `shard.json`. A baseline that does not parse is bad input here, as in an unsharded run.
    pub(crate) fn write(&self, outcome: &mut NightlyOutcome) -> Result<(), NightlyError> {
        let mut baselines = BTreeMap::new();
        for suite in outputs::scenario_suites(outcome) {
            let dir = &self.options.baselines_dir;
            if let Some(text) = Baseline::read_text(dir, &suite).map_err(NightlyError::Input)? {
                let path = Baseline::path(dir, &suite);
                Baseline::parse(&text, &path).map_err(NightlyError::Input)?;
                baselines.insert(suite, FileText { path, text });
            }
        }
        for group in outcome.groups.iter_mut() {
            if group.suite != "regressions" {
                group.note = Some(format!(
                    "baselines are compared when the shards are merged (this is shard {})",
                    self.shard
                ));
            }
        }
        let plan = NightlyShardPlan {
            groups: self.groups.to_vec(),
            warnings: outcome.warnings.clone(),
            config: self
                .config
                .clone()
                .map(|(path, text)| FileText { path, text }),
            baselines,
        };
        let cells = self
            .groups
            .iter()
            .flat_map(|group| {
                group.seeds.iter().map(|seed| Cell {
                    suite: group.suite.clone(),
                    case: group.case.clone(),
                    seed: *seed,
                })
            })
            .collect();
        let rows = self
            .positions
            .iter()
            .zip(self.results)
            .map(|(position, result)| Placed {
                position: *position,
                row: result.clone(),
            })
            .collect();
        let out = &self.options.out_dir;
        ShardFile::new(CommandKind::Nightly, self.shard, plan, cells, rows)
            .write(out)
            .map_err(|e| NightlyError::Internal(format!("writing {}: {e}", out.display())))
    }
}

/// Merge nightly shards into `out`: fold every seed, judge the means against the baselines
/// the shards read, copy every failing seed's report folder, and write `junit.xml`,
/// `nightly.md`, `index.html` and the charts with the same writers as an unsharded run.
pub(crate) fn merge(assembled: &Assembled, out: &Path) -> Result<NightlyOutcome, NightlyError> {
    let (plan, placed): (NightlyShardPlan, Vec<(SeedResult, PathBuf)>) =
        assembled.typed().map_err(NightlyError::Input)?;
    let config = match &plan.config {
        Some(file) => NightlyConfig::parse(&file.text, &file.path).map_err(NightlyError::Input)?,
        None => NightlyConfig::default(),
    };
    let mut baselines = BTreeMap::new();
    for (suite, file) in &plan.baselines {
        let baseline = Baseline::parse(&file.text, &file.path).map_err(NightlyError::Input)?;
        baselines.insert(suite.clone(), baseline);
    }
    let mut warnings = plan.warnings.clone();
    copy_reports(&placed, out, &mut warnings)?;
    std::fs::create_dir_all(out)
        .map_err(|e| NightlyError::Internal(format!("cannot create {}: {e}", out.display())))?;
    let results: Vec<SeedResult> = placed.into_iter().map(|(result, _)| result).collect();
    let mut outcome = super::fold(&plan.groups, &results, warnings);
    outputs::judge(&config.metrics, &baselines, &mut outcome);
    outputs::write_all(out, &mut outcome)?;
    Ok(outcome)
}

/// Copy every failing seed's report folder from its shard into `out`, at the same relative
/// path, so the merged index links work; a folder the shard lost becomes a warning.
fn copy_reports(
    placed: &[(SeedResult, PathBuf)],
    out: &Path,
    warnings: &mut Vec<String>,
) -> Result<(), NightlyError> {
    let reports: Vec<(&SeedResult, &PathBuf, &String)> = placed
        .iter()
        .filter_map(|(result, folder)| Some((result, folder, result.report.as_ref()?)))
        .collect();
    // A report folder is named by the shard file: it must stay inside both output folders.
    // All are checked before anything is written.
    for (result, folder, report) in &reports {
        let inside = Path::new(report)
            .components()
            .all(|part| matches!(part, std::path::Component::Normal(_)));
        if !inside {
            return Err(NightlyError::Input(format!(
                "{}: the report folder {report:?} of seed {} is not a relative path inside \
                 the shard folder",
                folder.join(shard::SHARD_FILE).display(),
                result.seed
            )));
        }
    }
    for (_, folder, report) in reports {
        let from = folder.join(report);
        if !from.is_dir() {
            warnings.push(format!("{} is missing: no report to link", from.display()));
            continue;
        }
        shard::copy_folder(&from, &out.join(report))
            .map_err(|e| NightlyError::Internal(format!("copying {}: {e}", from.display())))?;
    }
    Ok(())
}
