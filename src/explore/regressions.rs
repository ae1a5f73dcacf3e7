//! Regression entries: runs that once failed (or whose verdict must not change), listed in
//! `scenarios/regressions/regressions.toml` and replayed by `tests/claims/regressions.rs` (and by
//! `nightly`).
//!
//! ```toml
//! [[entry]]
//! scenario = "pr355-burst-serialise.toml"  # relative to regressions.toml
//! seed = 1                                 # default: the scenario's seed
//! policy = "pr355"                         # default: the scenario's policy
//! variant = "agentk-v1"                    # only with [leader]; default: the scenario's
//! verdict = "fail"                         # "pass" or "fail"
//! violated = ["job-wait-bound"]            # each of these must fail (others may too)
//! note = "why this entry exists"
//! ```
//!
//! An entry holds when the replay's verdict equals `verdict` and every id in `violated` is
//! among the replay's failing ids (a `pass` entry lists none).

use crate::allocator::Policy;
use crate::check::InvariantId;
use crate::run::{RunError, run_scenario};
use crate::world::RunSettings;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The file name of the list inside a regressions folder.
pub const LIST_FILE: &str = "regressions.toml";

/// One regression entry, its scenario path resolved against the list's folder.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The scenario file, resolved against the list's folder.
    pub scenario: PathBuf,
    /// The seed to replay; `None`: the scenario's own.
    pub seed: Option<u64>,
    /// The policy to replay under; `None`: the scenario's own.
    pub policy: Option<Policy>,
    /// The leader variant (only with `[leader]`); `None`: the scenario's own.
    pub variant: Option<crate::leader::Variant>,
    /// The expected verdict, `pass` or `fail`.
    pub verdict: String,
    /// Invariant ids that must fail in the replay (others may too).
    #[serde(default)]
    pub violated: Vec<InvariantId>,
    /// Why the entry exists.
    #[serde(default)]
    pub note: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct List {
    #[serde(default)]
    entry: Vec<Entry>,
}

/// Read a regressions list. Errors name the file and what is wrong.
pub fn load(path: &Path) -> Result<Vec<Entry>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let list: List = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let folder = path.parent().unwrap_or(Path::new(""));
    let mut entries = list.entry;
    for (index, entry) in entries.iter_mut().enumerate() {
        if entry.verdict != "pass" && entry.verdict != "fail" {
            return Err(format!(
                "{}: entry {}: verdict must be \"pass\" or \"fail\", found {:?}",
                path.display(),
                index + 1,
                entry.verdict
            ));
        }
        entry.scenario = folder.join(&entry.scenario);
    }
    Ok(entries)
}

/// What replaying an entry gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Replayed {
    /// The seed replayed.
    pub seed: u64,
    /// The policy replayed under.
    pub policy: Policy,
    /// The replay's verdict, `pass` or `fail`.
    pub verdict: String,
    /// The ids of the invariants that failed in the replay.
    pub violated: Vec<InvariantId>,
    /// The replay's trace fingerprint.
    pub fingerprint: String,
}

/// Run an entry's scenario with its seed, policy and variant.
pub fn replay(entry: &Entry) -> Result<Replayed, RunError> {
    let loaded =
        crate::scenario::load(&entry.scenario).map_err(|e| RunError::Input(e.to_string()))?;
    let scenario = loaded.scenario;
    let mut settings = RunSettings::from_scenario(&scenario);
    if let Some(seed) = entry.seed {
        settings.seed = seed;
    }
    if let Some(policy) = entry.policy {
        settings.policy = policy;
    }
    if let Some(variant) = entry.variant {
        settings.variant = Some(variant);
    }
    let (seed, policy) = (settings.seed, settings.policy);
    let outcome = run_scenario(&scenario, settings, None, String::new())?;
    Ok(Replayed {
        seed,
        policy,
        violated: outcome.violated_ids(),
        verdict: outcome.info.verdict.clone(),
        fingerprint: outcome.info.fingerprint,
    })
}

impl Entry {
    /// `None` when `replayed` is what the entry expects, else what differs.
    pub fn mismatch(&self, replayed: &Replayed) -> Option<String> {
        let missing: Vec<&InvariantId> = self
            .violated
            .iter()
            .filter(|id| !replayed.violated.contains(id))
            .collect();
        if replayed.verdict == self.verdict && missing.is_empty() {
            return None;
        }
        Some(format!(
            "{} seed {} policy {}: expected {} violating [{}], got {} violating [{}]",
            self.scenario.display(),
            replayed.seed,
            replayed.policy.name(),
            self.verdict,
            InvariantId::join(&self.violated, ", "),
            replayed.verdict,
            InvariantId::join(&replayed.violated, ", ")
        ))
    }
}

/// Scenario files in `folder` (besides the list) that no entry replays.
pub fn unlisted_files(folder: &Path, entries: &[Entry]) -> Result<Vec<PathBuf>, String> {
    let mut unlisted = Vec::new();
    let reading = |e: std::io::Error| format!("{}: {e}", folder.display());
    for item in std::fs::read_dir(folder).map_err(reading)? {
        let path = item.map_err(reading)?.path();
        let is_scenario = path
            .extension()
            .is_some_and(|extension| extension == "toml")
            && path.file_name().is_some_and(|name| name != LIST_FILE);
        if is_scenario
            && !entries
                .iter()
                .any(|entry| same_file(&entry.scenario, &path))
        {
            unlisted.push(path);
        }
    }
    unlisted.sort();
    Ok(unlisted)
}

fn same_file(left: &Path, right: &Path) -> bool {
    match (left.canonicalize(), right.canonicalize()) {
        (Ok(left), Ok(right)) => left == right,
        _ => left == right,
    }
}
