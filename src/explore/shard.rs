//! Scale-out: `--shard K/N` runs one shard of a many-seed run, and `merge` checks that a set
//! of shard folders is every shard of one run exactly once before rebuilding its outputs.
//!
//! The rule: a many-seed command lists its cells (one seed of one scenario under one policy)
//! in a canonical order that depends only on its flags and files, never on threads:
//! - `sim --seeds`: the seeds, ascending;
//! - `compare`: the policies in flag order, each with every seed ascending;
//! - `nightly`: the regression entries in file order, then the scenario files sorted by path,
//!   each with its policies in `nightly.toml` order and every seed ascending.
//!
//! Cell `i` (0-based) belongs to shard `i mod N`; shards are numbered 0 to N-1, as a
//! Kubernetes Indexed Job numbers its completions. Round robin spreads every group's seeds
//! over all shards, so the shards take about equally long.
//!
//! Each shard writes its usual outputs for its own cells plus `shard.json`: the command, the
//! shard, the unsharded run's full cell list, the plan every output depends on (titles,
//! configuration) and one row per cell it ran, with everything the tables need.

use crate::report::atomic;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The file a shard writes next to its outputs.
pub(crate) const SHARD_FILE: &str = "shard.json";

/// The environment variable a Kubernetes Indexed Job sets to the pod's completion index.
pub(crate) const COMPLETION_INDEX_VARIABLE: &str = "JOB_COMPLETION_INDEX";

const FORMAT: &str = "elasticsim-shard";
const FORMAT_VERSION: u32 = 1;

/// Shard `index` of `count`, 0-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shard {
    /// This shard's number, `0..count`.
    pub index: u64,
    /// How many shards the run is split into.
    pub count: u64,
}

impl Shard {
    /// Parse `K/N`, or `auto/N` with K taken from `completion_index` (the value of
    /// `JOB_COMPLETION_INDEX`, if set). Errors name the flag and what was expected.
    pub fn parse(text: &str, completion_index: Option<&str>) -> Result<Shard, String> {
        let expected = "expected K/N with 0 ≤ K < N (shards are numbered from 0, e.g. 0/4 … \
                        3/4), or auto/N to take K from JOB_COMPLETION_INDEX";
        let Some((index_text, count_text)) = text.trim().split_once('/') else {
            return Err(format!("--shard {text:?}: {expected}"));
        };
        let count: u64 = count_text
            .trim()
            .parse()
            .map_err(|_| format!("--shard {text:?}: N is not a whole number; {expected}"))?;
        if count == 0 {
            return Err(format!("--shard {text:?}: N must be at least 1"));
        }
        let automatic = index_text.trim() == "auto";
        let index: u64 = if automatic {
            let value = completion_index.ok_or_else(|| {
                format!(
                    "--shard {text:?}: {COMPLETION_INDEX_VARIABLE} is not set (auto takes K \
                     from the completion index a Kubernetes Indexed Job gives each pod; \
                     elsewhere give K/N)"
                )
            })?;
            value.trim().parse().map_err(|_| {
                format!(
                    "--shard {text:?}: {COMPLETION_INDEX_VARIABLE}={value:?} is not a whole \
                     number"
                )
            })?
        } else {
            index_text
                .trim()
                .parse()
                .map_err(|_| format!("--shard {text:?}: K is not a whole number; {expected}"))?
        };
        if index >= count {
            let source = if automatic {
                format!(" ({COMPLETION_INDEX_VARIABLE}; the Job's completions must equal N)")
            } else {
                String::new()
            };
            return Err(format!(
                "--shard {text:?}: K = {index}{source} is not below N = {count}; shards are \
                 numbered 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// True when the cell at `position` of the canonical order is this shard's.
    pub(crate) fn owns(&self, position: usize) -> bool {
        position as u64 % self.count == self.index
    }

    /// The shard a cell belongs to.
    pub(crate) fn of(position: usize, count: u64) -> u64 {
        position as u64 % count
    }

    /// `shard-K-of-N`: the subfolder a shard writes in, so shards never overwrite each other.
    pub(crate) fn folder_name(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Which command wrote a shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommandKind {
    /// `sim --seeds`.
    Sweep,
    /// `compare`.
    Compare,
    /// `nightly`.
    Nightly,
    /// `review`.
    Review,
}

impl fmt::Display for CommandKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            CommandKind::Sweep => "sim --seeds",
            CommandKind::Compare => "compare",
            CommandKind::Nightly => "nightly",
            CommandKind::Review => "review",
        };
        f.write_str(name)
    }
}

/// One cell of a many-seed run: a seed of a group (a scenario under a policy, or a
/// regression entry).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cell {
    /// The scenario's name (or `regressions`).
    pub suite: String,
    /// The policy (or the regression entry's label).
    pub case: String,
    /// The seed.
    pub seed: u64,
}

/// One cell's result, with its position in the canonical order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Placed<R> {
    /// The cell's index in the canonical order of the unsharded run.
    pub position: usize,
    /// The cell's result.
    pub row: R,
}

/// `shard.json`. `P` is the plan (equal in every shard of a run), `R` one cell's row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ShardFile<P, R> {
    /// Always `elasticsim-shard`, so a stray JSON file is refused.
    pub format: String,
    /// The shard file format's version.
    pub version: u32,
    /// The version of the binary that ran the shard.
    pub elasticsim: String,
    /// The command that ran the shard.
    pub command: CommandKind,
    /// Which shard this is.
    pub shard: Shard,
    /// The command's plan, equal in every shard of a run.
    pub plan: P,
    /// Every cell of the unsharded run, in canonical order.
    pub cells: Vec<Cell>,
    /// The cells this shard ran, in canonical order.
    pub rows: Vec<Placed<R>>,
}

impl<P: Serialize, R: Serialize> ShardFile<P, R> {
    /// A shard file of this binary's format and version.
    pub(crate) fn new(
        command: CommandKind,
        shard: Shard,
        plan: P,
        cells: Vec<Cell>,
        rows: Vec<Placed<R>>,
    ) -> ShardFile<P, R> {
        ShardFile {
            format: FORMAT.to_owned(),
            version: FORMAT_VERSION,
            elasticsim: env!("CARGO_PKG_VERSION").to_owned(),
            command,
            shard,
            plan,
            cells,
            rows,
        }
    }

    /// Write `folder/shard.json` atomically.
    pub(crate) fn write(&self, folder: &Path) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        atomic::write_file(&folder.join(SHARD_FILE), &bytes)
    }
}

/// A shard folder as `merge` read it.
#[derive(Clone, Debug)]
pub(crate) struct ShardInput {
    /// The shard folder.
    pub folder: PathBuf,
    /// Its `shard.json`, plan and rows still untyped.
    pub file: ShardFile<Value, Value>,
}

/// The folders to merge: each argument is a shard folder (with `shard.json`) or a folder
/// whose subfolders are shard folders (a shared results volume, downloaded CI artifacts).
/// Errors name the folder and what was expected.
pub(crate) fn shard_folders(arguments: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut folders = Vec::new();
    for argument in arguments {
        if argument.join(SHARD_FILE).is_file() {
            folders.push(argument.clone());
            continue;
        }
        let entries = std::fs::read_dir(argument)
            .map_err(|e| format!("{}: cannot read the folder: {e}", argument.display()))?;
        let mut inner: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.join(SHARD_FILE).is_file())
            .collect();
        if inner.is_empty() {
            return Err(format!(
                "{}: no {SHARD_FILE}, in it or in its subfolders; expected a folder written \
                 by a --shard run, or a folder holding such folders",
                argument.display()
            ));
        }
        inner.sort();
        folders.extend(inner);
    }
    Ok(folders)
}

/// Read one folder's `shard.json`.
pub(crate) fn read_shard(folder: &Path) -> Result<ShardInput, String> {
    let path = folder.join(SHARD_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let file: ShardFile<Value, Value> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a shard file: {e}", path.display()))?;
    if file.format != FORMAT || file.version != FORMAT_VERSION {
        return Err(format!(
            "{}: format {:?} version {}, expected {FORMAT:?} version {FORMAT_VERSION}",
            path.display(),
            file.format,
            file.version
        ));
    }
    Ok(ShardInput {
        folder: folder.to_path_buf(),
        file,
    })
}

/// Every cell's row of a merged run, in canonical order, each with the folder it came from.
#[derive(Clone, Debug)]
pub(crate) struct Assembled {
    /// The command every shard ran.
    pub command: CommandKind,
    /// The shard count.
    pub count: u64,
    /// The plan, as every shard has it.
    pub plan: Value,
    /// Every cell of the run, in canonical order.
    pub cells: Vec<Cell>,
    /// One row per cell, in canonical order, with the shard folder it came from.
    pub rows: Vec<(Value, PathBuf)>,
    /// The shard folders merged, in the order read.
    pub folders: Vec<PathBuf>,
}

impl Assembled {
    /// The plan and rows as the command's own types.
    pub(crate) fn typed<P: DeserializeOwned, R: DeserializeOwned>(
        &self,
    ) -> Result<(P, Vec<(R, PathBuf)>), String> {
        let plan = serde_json::from_value(self.plan.clone())
            .map_err(|e| format!("the shards' plan is not a {} plan: {e}", self.command))?;
        let rows = self
            .rows
            .iter()
            .zip(&self.cells)
            .map(|((row, folder), cell)| {
                let row = serde_json::from_value(row.clone()).map_err(|e| {
                    format!(
                        "{}: the row of {} is unreadable: {e}",
                        folder.join(SHARD_FILE).display(),
                        cell_text(cell)
                    )
                })?;
                Ok((row, folder.clone()))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok((plan, rows))
    }
}

fn cell_text(cell: &Cell) -> String {
    format!("{} / {} seed {}", cell.suite, cell.case, cell.seed)
}

fn folders_text(folders: &[&Path]) -> String {
    let names: Vec<String> = folders
        .iter()
        .map(|folder| folder.display().to_string())
        .collect();
    names.join(", ")
}

/// The first way `input` is not a shard of the same run as `first`, if any.
fn mismatch(first: &ShardInput, input: &ShardInput) -> Option<String> {
    let (a, b) = (&first.file, &input.file);
    let what = if a.command != b.command {
        format!("commands differ ({} and {})", a.command, b.command)
    } else if a.shard.count != b.shard.count {
        format!(
            "shard counts differ (shard {} and shard {})",
            a.shard, b.shard
        )
    } else if a.elasticsim != b.elasticsim {
        format!(
            "they were written by elasticsim {} and {}",
            a.elasticsim, b.elasticsim
        )
    } else if a.cells != b.cells {
        format!(
            "their unsharded cell lists differ ({} and {} cells: other seeds, policies or \
             scenarios)",
            a.cells.len(),
            b.cells.len()
        )
    } else if a.plan != b.plan {
        "their plans differ (scenario, title, seeds or configuration)".to_owned()
    } else {
        return None;
    };
    Some(format!(
        "{} and {} are not shards of the same run: {what}",
        first.folder.display(),
        input.folder.display()
    ))
}

/// Cells as text grouped by (suite, case): `burst / upstream seeds 2, 6, 10`, at most
/// `listed_max` seeds per group before "… and N more".
pub(crate) fn cells_text(cells: &[&Cell], listed_max: usize) -> String {
    let mut groups: Vec<((&str, &str), Vec<u64>)> = Vec::new();
    for cell in cells {
        let key = (cell.suite.as_str(), cell.case.as_str());
        match groups.last_mut() {
            Some((last, seeds)) if *last == key => seeds.push(cell.seed),
            _ => groups.push((key, vec![cell.seed])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|((suite, case), seeds)| {
            let mut listed: Vec<String> =
                seeds.iter().take(listed_max).map(u64::to_string).collect();
            if seeds.len() > listed_max {
                listed.push(format!("… and {} more", seeds.len() - listed_max));
            }
            let noun = if seeds.len() == 1 { "seed" } else { "seeds" };
            format!("{suite} / {case} {noun} {}", listed.join(", "))
        })
        .collect();
    parts.join("; ")
}

/// Seeds listed per group in coverage errors.
const LISTED_MAX: usize = 50;

/// Check that `inputs` are every shard of one run exactly once and that their rows cover
/// every cell exactly once; return the rows in canonical order. The error lists every
/// problem: which shard indices are missing or repeated (in which folders), which cells are
/// missing or duplicated, and rows filed under the wrong shard.
pub(crate) fn assemble(inputs: Vec<ShardInput>) -> Result<Assembled, String> {
    let first = inputs.first().ok_or("no shard folder to merge")?;
    if let Some(problem) = inputs.iter().find_map(|input| mismatch(first, input)) {
        return Err(problem);
    }
    let (command, count) = (first.file.command, first.file.shard.count);
    let cells = first.file.cells.clone();
    let mut problems = shard_index_problems(&inputs, count);
    let mut placed: Vec<Vec<(&Value, &Path)>> = vec![Vec::new(); cells.len()];
    for input in &inputs {
        let shard = input.file.shard;
        for Placed { position, row } in &input.file.rows {
            let Some(cell) = cells.get(*position) else {
                problems.push(format!(
                    "{}: a row at position {position}, but the run has {} cells",
                    input.folder.display(),
                    cells.len()
                ));
                continue;
            };
            if !shard.owns(*position) {
                problems.push(format!(
                    "{} (shard {shard}) holds {}, which belongs to shard {}/{count}",
                    input.folder.display(),
                    cell_text(cell),
                    Shard::of(*position, count)
                ));
            }
            placed[*position].push((row, &input.folder));
        }
    }
    coverage_problems(&cells, &placed, count, &mut problems);
    if !problems.is_empty() {
        let folders: Vec<&Path> = inputs.iter().map(|input| input.folder.as_path()).collect();
        return Err(format!(
            "cannot merge the {command} shards in {} (N = {count}):\n  {}",
            folders_text(&folders),
            problems.join("\n  ")
        ));
    }
    Ok(Assembled {
        command,
        count,
        plan: first.file.plan.clone(),
        rows: placed
            .into_iter()
            .map(|mut rows| {
                let (row, folder) = rows.pop().expect("coverage checked one row per cell");
                (row.clone(), folder.to_path_buf())
            })
            .collect(),
        cells,
        folders: inputs.into_iter().map(|input| input.folder).collect(),
    })
}

/// Shard indices that no folder holds, or that several folders hold.
fn shard_index_problems(inputs: &[ShardInput], count: u64) -> Vec<String> {
    let mut holders: BTreeMap<u64, Vec<&Path>> = BTreeMap::new();
    for input in inputs {
        holders
            .entry(input.file.shard.index)
            .or_default()
            .push(&input.folder);
    }
    let mut problems = Vec::new();
    for index in 0..count {
        match holders.get(&index).map(Vec::as_slice) {
            None | Some([]) => problems.push(format!("shard {index}/{count} is missing")),
            Some([_]) => {}
            Some(folders) => problems.push(format!(
                "shard {index}/{count} appears in {} folders: {}",
                folders.len(),
                folders_text(folders)
            )),
        }
    }
    problems
}

/// Missing cells per shard index, and duplicated cells per set of folders holding them.
fn coverage_problems(
    cells: &[Cell],
    placed: &[Vec<(&Value, &Path)>],
    count: u64,
    problems: &mut Vec<String>,
) {
    let mut missing: BTreeMap<u64, Vec<&Cell>> = BTreeMap::new();
    let mut duplicated: BTreeMap<Vec<&Path>, Vec<&Cell>> = BTreeMap::new();
    for (position, (cell, rows)) in cells.iter().zip(placed).enumerate() {
        match rows.len() {
            0 => missing
                .entry(Shard::of(position, count))
                .or_default()
                .push(cell),
            1 => {}
            _ => duplicated
                .entry(rows.iter().map(|(_, folder)| *folder).collect())
                .or_default()
                .push(cell),
        }
    }
    for (index, cells) in missing {
        problems.push(format!(
            "{} seeds of shard {index}/{count} are missing: {}",
            cells.len(),
            cells_text(&cells, LISTED_MAX)
        ));
    }
    for (folders, cells) in duplicated {
        problems.push(format!(
            "{} seeds are in more than one folder ({}): {}",
            cells.len(),
            folders_text(&folders),
            cells_text(&cells, LISTED_MAX)
        ));
    }
}

/// Read, check and assemble the shard folders named on the command line.
pub(crate) fn read_and_assemble(arguments: &[PathBuf]) -> Result<Assembled, String> {
    let folders = shard_folders(arguments)?;
    let inputs = folders
        .iter()
        .map(|folder| read_shard(folder))
        .collect::<Result<Vec<_>, String>>()?;
    assemble(inputs)
}

/// Copy a report folder (files and subfolders) into `to`, each file written atomically.
pub(crate) fn copy_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(from)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .expect("a folder entry always has a file name");
        if path.is_dir() {
            copy_folder(&path, &to.join(name))?;
        } else {
            atomic::write_file(&to.join(name), &std::fs::read(&path)?)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
