//! Baselines (`reports/baselines/<scenario>.json`): per policy, the mean of every
//! deterministic metric over the seeds the baseline was made with.

use super::config::Tolerance;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Metrics that measure the machine, not the system under test: never in a baseline.
pub(crate) const WALL_CLOCK_METRICS: [&str; 3] = ["wall_s", "events_per_s", "compression"];

/// One scenario's baseline file.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub(crate) struct Baseline {
    /// The scenario's name.
    pub scenario: String,
    /// Seeds 1..=seeds were averaged.
    pub seeds: u64,
    /// The elasticsim version that wrote the baseline.
    pub version: String,
    /// policy → metric → mean over seeds.
    pub policies: BTreeMap<String, BTreeMap<String, f64>>,
}

impl Baseline {
    /// The baseline file of `scenario` in `dir`: `<scenario>.json`.
    pub(crate) fn path(dir: &Path, scenario: &str) -> std::path::PathBuf {
        dir.join(format!("{scenario}.json"))
    }

    /// The baseline of `scenario` in `dir`: `Ok(None)` if there is none.
    pub(crate) fn load(dir: &Path, scenario: &str) -> Result<Option<Baseline>, String> {
        let path = Baseline::path(dir, scenario);
        Baseline::read_text(dir, scenario)?
            .map(|text| Baseline::parse(&text, &path))
            .transpose()
    }

    /// The text of the baseline file of `scenario` in `dir`: `Ok(None)` if there is none.
    /// A shard keeps this text, so a merge judges with exactly what the shard read.
    pub(crate) fn read_text(dir: &Path, scenario: &str) -> Result<Option<String>, String> {
        let path = Baseline::path(dir, scenario);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(format!("{}: {error}", path.display())),
        }
    }

    /// Parse a baseline file's text; errors name `path`.
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Baseline, String> {
        serde_json::from_str(text).map_err(|error| format!("{}: {error}", path.display()))
    }

    /// Write the baseline, pretty-printed, atomically.
    pub(crate) fn save(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut bytes =
            serde_json::to_vec_pretty(self).expect("a baseline has string keys and numbers only");
        bytes.push(b'\n');
        crate::report::atomic::write_file(&Baseline::path(dir, &self.scenario), &bytes)
    }
}

/// A metric worse than its baseline beyond tolerance.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Regression {
    /// The scenario's name.
    pub scenario: String,
    /// The case the metric was measured under: a policy's name, or a leader scenario's variant.
    pub case: String,
    /// The metric's name, as in `summary.json`.
    pub metric: String,
    /// The baseline's mean.
    pub baseline: f64,
    /// The mean measured now.
    pub value: f64,
    /// The tolerance it broke.
    pub tolerance: Tolerance,
}

impl Regression {
    /// One line naming scenario, policy, metric, baseline, new value and tolerance.
    pub(crate) fn message(&self) -> String {
        format!(
            "regression: scenario {}, policy {}, metric {}: baseline {}, new {}, \
             tolerance {}% + {} ({})",
            self.scenario,
            self.case,
            self.metric,
            number(self.baseline),
            number(self.value),
            number(self.tolerance.tolerance * 100.0),
            number(self.tolerance.absolute),
            self.tolerance.worse.text()
        )
    }
}

fn number(value: f64) -> String {
    crate::report::format::number_text(value)
}

/// Compare one policy's means with its baseline, for every metric with a tolerance. Metrics
/// missing on either side are not compared.
pub(crate) fn compare(
    scenario: &str,
    case: &str,
    baseline: &BTreeMap<String, f64>,
    means: &BTreeMap<String, f64>,
    tolerances: &BTreeMap<String, Tolerance>,
) -> Vec<Regression> {
    tolerances
        .iter()
        .filter_map(|(metric, tolerance)| {
            let (base, value) = (*baseline.get(metric)?, *means.get(metric)?);
            tolerance.regressed(base, value).then(|| Regression {
                scenario: scenario.to_owned(),
                case: case.to_owned(),
                metric: metric.clone(),
                baseline: base,
                value,
                tolerance: *tolerance,
            })
        })
        .collect()
}

/// Every metric whose mean differs from the baseline's, or is in only one of them, as
/// `metric: baseline X, now Y` lines (wall-clock metrics aside). Runs are deterministic, so
/// equal means equal up to a JSON round trip of the number (a relative 1e-12).
pub(crate) fn moved_metrics(
    baseline: &BTreeMap<String, f64>,
    means: &BTreeMap<String, f64>,
) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = baseline.keys().chain(means.keys()).collect();
    names
        .into_iter()
        .filter(|name| !WALL_CLOCK_METRICS.contains(&name.as_str()))
        .filter_map(|name| match (baseline.get(name), means.get(name)) {
            (Some(&base), Some(&value)) if same(base, value) => None,
            (Some(&base), Some(&value)) => Some(format!("{name}: baseline {base}, now {value}")),
            (Some(_), None) => Some(format!("{name}: in the baseline, not measured now")),
            (None, _) => Some(format!("{name}: measured now, not in the baseline")),
        })
        .collect()
}

fn same(base: f64, value: f64) -> bool {
    (base - value).abs() <= 1e-12 * base.abs().max(value.abs()).max(1.0)
}
