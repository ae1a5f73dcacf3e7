//! Entries of `scenarios/regressions/regressions.toml`: runs that once failed, each with the
//! verdict (and violated invariant ids) it must have now. The nightly run replays them first.
//!
//! The reader is lenient because the file's format is owned elsewhere: it takes the first
//! array of tables in the file, and in each entry the keys `scenario` (or `file`), `seed`
//! (default: the scenario's own),
//! `policy`, optional `variant`, `verdict` (or `expected`/`expect`, default `pass`) and
//! `violated` (or `expected_violations`). A missing or unreadable file, or an entry it cannot
//! use, is a warning, never an error of the nightly run.

use crate::allocator::Policy;
use crate::check::InvariantId;
use crate::leader::Variant;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One replayable entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RegressionEntry {
    /// The scenario file, resolved.
    pub file: PathBuf,
    /// The seed to replay.
    pub seed: u64,
    /// The policy to replay under; `None`: the scenario's own.
    pub policy: Option<Policy>,
    /// The leader variant; `None`: the scenario's own.
    pub variant: Option<Variant>,
    /// `"pass"` or `"fail"`.
    pub verdict: String,
    /// Expected violated invariant ids, sorted; `None` when the entry does not say.
    pub violated: Option<Vec<InvariantId>>,
}

fn text(table: &toml::Table, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|key| table.get(*key)?.as_str().map(str::to_owned))
}

/// The value of `key` read into a vocabulary (`None` when absent), or why it is unknown.
fn named<T: Copy>(
    table: &toml::Table,
    key: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<Option<T>, String> {
    let Some(text) = text(table, &[key]) else {
        return Ok(None);
    };
    let found = all.iter().copied().find(|&value| name(value) == text);
    let names: Vec<&str> = all.iter().map(|&value| name(value)).collect();
    found
        .map(Some)
        .ok_or_else(|| format!("unknown {key} `{text}` (one of {})", names.join(", ")))
}

/// Violated ids read into invariants, sorted, without repeats; an unknown one is an error.
fn invariant_ids(ids: &[toml::Value]) -> Result<Vec<InvariantId>, String> {
    let mut parsed = Vec::new();
    for text in ids.iter().filter_map(toml::Value::as_str) {
        let id = InvariantId::from_name(text).ok_or_else(|| {
            let names = InvariantId::join(&InvariantId::ALL, ", ");
            format!("unknown violated id `{text}` (one of {names})")
        })?;
        parsed.push(id);
    }
    parsed.sort_unstable();
    parsed.dedup();
    Ok(parsed)
}

/// The scenario file an entry names: relative to the regressions folder, else to the
/// scenarios folder, with `.toml` added to a bare name.
fn resolve(name: &str, regressions_dir: &Path, scenarios_dir: &Path) -> Option<PathBuf> {
    let mut names = vec![name.to_owned()];
    if !name.ends_with(".toml") {
        names.push(format!("{name}.toml"));
    }
    let folders = [regressions_dir, scenarios_dir, Path::new("")];
    folders
        .iter()
        .flat_map(|folder| names.iter().map(move |name| folder.join(name)))
        .find(|path| path.is_file())
}

fn entry(
    table: &toml::Table,
    regressions_dir: &Path,
    scenarios_dir: &Path,
) -> Result<RegressionEntry, String> {
    let name = text(table, &["scenario", "file", "path"]).ok_or("no `scenario` key")?;
    let file = resolve(&name, regressions_dir, scenarios_dir)
        .ok_or_else(|| format!("scenario `{name}` not found"))?;
    // Without `seed`, an entry means the scenario's own seed (`scenarios/regressions/`).
    let seed = match table.get("seed") {
        Some(value) => value
            .as_integer()
            .and_then(|seed| u64::try_from(seed).ok())
            .ok_or("`seed` is not a non-negative integer")?,
        None => {
            crate::scenario::load(&file)
                .map_err(|error| error.to_string())?
                .scenario
                .seed
        }
    };
    let verdict = text(
        table,
        &["verdict", "expected", "expect", "expected_verdict"],
    )
    .unwrap_or_else(|| "pass".to_owned())
    .to_lowercase();
    if verdict != "pass" && verdict != "fail" {
        return Err(format!("verdict `{verdict}` is neither pass nor fail"));
    }
    let violated = [
        "violated",
        "expected_violations",
        "violations",
        "expected_violated",
    ]
    .iter()
    .find_map(|key| table.get(*key)?.as_array())
    .map(|ids| invariant_ids(ids))
    .transpose()?;
    Ok(RegressionEntry {
        file,
        seed,
        policy: named(table, "policy", &Policy::ALL, Policy::name)?,
        variant: named(table, "variant", &Variant::ALL, Variant::name)?,
        verdict,
        violated,
    })
}

/// The entries of `<scenarios_dir>/regressions/regressions.toml`, and warnings for what was
/// skipped.
pub(crate) fn load(scenarios_dir: &Path) -> (Vec<RegressionEntry>, Vec<String>) {
    let regressions_dir = scenarios_dir.join("regressions");
    let path = regressions_dir.join("regressions.toml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return (Vec::new(), Vec::new());
    };
    let document: toml::Table = match toml::from_str(&text) {
        Ok(document) => document,
        Err(error) => {
            let warning = format!("{}: not readable, skipped: {error}", path.display());
            return (Vec::new(), vec![warning]);
        }
    };
    let Some(tables) = document.values().find_map(|value| {
        let array = value.as_array()?;
        array.iter().all(toml::Value::is_table).then_some(array)
    }) else {
        let warning = format!("{}: no list of entries found, skipped", path.display());
        return (Vec::new(), vec![warning]);
    };
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    for (position, value) in tables.iter().enumerate() {
        let table = value
            .as_table()
            .expect("every element was checked to be a table");
        match entry(table, &regressions_dir, scenarios_dir) {
            Ok(entry) => entries.push(entry),
            Err(why) => warnings.push(format!(
                "{}: entry {} skipped: {why}",
                path.display(),
                position + 1
            )),
        }
    }
    (entries, warnings)
}
