//! `scenarios/nightly.toml`: seed counts, policies per scenario, and the per-metric
//! tolerances the nightly run compares baselines with.
//!
//! ```toml
//! seeds = 200                 # seeds per (scenario, policy); `--seeds` overrides
//! baseline_seeds = 20         # seeds `--update-baseline` and `--check-baseline` use
//! baselines = ["capacity"]    # the scenarios with a baseline (default: every scenario)
//! [scenarios.burst]
//! policies = ["upstream", "safe"]   # default: the scenario's own `[plugin] policy`
//! seeds = 100                 # optional, overrides `seeds` for this scenario
//! [metrics]
//! wait_s_p95 = { worse = "higher", tolerance = 0.10, absolute = 1.0 }
//! ```
//!
//! A metric regresses when its mean over seeds is worse than the baseline's by more than
//! `|baseline| × tolerance + absolute` (`absolute` defaults to 0).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Seeds per (scenario, policy) when neither the flags nor `nightly.toml` say.
pub(crate) const SEEDS_DEFAULT: u64 = 200;

/// Which direction of change is a regression.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Worse {
    /// A rise is a regression (waits, pods created).
    Higher,
    /// A fall is a regression (reuse ratio, utilisation).
    Lower,
}

impl Worse {
    /// How the direction reads in a message: `higher is worse` or `lower is worse`.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Worse::Higher => "higher is worse",
            Worse::Lower => "lower is worse",
        }
    }
}

/// How far a metric may move in its worse direction before it is a regression.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    /// Which direction of change is a regression.
    pub worse: Worse,
    /// Relative slack, a fraction of the baseline (0.10 = 10 %).
    pub tolerance: f64,
    /// Absolute slack added to the relative one (for metrics whose baseline may be 0).
    #[serde(default)]
    pub absolute: f64,
}

impl Tolerance {
    /// True when `value` is worse than `baseline` by more than the slack.
    pub(crate) fn regressed(&self, baseline: f64, value: f64) -> bool {
        // A hair of slack so a value equal to the baseline after a JSON round trip never
        // counts as worse.
        let slack = baseline.abs() * self.tolerance + self.absolute + 1e-9;
        match self.worse {
            Worse::Higher => value > baseline + slack,
            Worse::Lower => value < baseline - slack,
        }
    }
}

/// One `[scenarios.<name>]` table.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScenarioPlan {
    /// The policies to run; `None`: the scenario's own `[plugin] policy`.
    pub policies: Option<Vec<crate::allocator::Policy>>,
    /// Seeds for this scenario; `None`: the file's `seeds`.
    pub seeds: Option<u64>,
}

/// The whole file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NightlyConfig {
    /// Seeds per (scenario, policy); `--seeds` overrides it.
    #[serde(default = "seeds_default")]
    pub seeds: u64,
    /// Seeds `--update-baseline` and `--check-baseline` use when `--seeds` is not given.
    #[serde(default = "baseline_seeds_default")]
    pub baseline_seeds: u64,
    /// The scenarios (by name) that keep a baseline; `None`: every scenario.
    #[serde(default)]
    pub baselines: Option<Vec<String>>,
    /// Per-scenario plans, by scenario name.
    #[serde(default)]
    pub scenarios: BTreeMap<String, ScenarioPlan>,
    /// The tolerance of each compared metric, by metric name.
    #[serde(default)]
    pub metrics: BTreeMap<String, Tolerance>,
}

fn seeds_default() -> u64 {
    SEEDS_DEFAULT
}

fn baseline_seeds_default() -> u64 {
    20
}

impl Default for NightlyConfig {
    fn default() -> NightlyConfig {
        NightlyConfig {
            seeds: SEEDS_DEFAULT,
            baseline_seeds: baseline_seeds_default(),
            baselines: None,
            scenarios: BTreeMap::new(),
            metrics: BTreeMap::new(),
        }
    }
}

impl NightlyConfig {
    /// True when scenario `name` keeps a baseline.
    pub(crate) fn has_baseline(&self, name: &str) -> bool {
        self.baselines
            .as_ref()
            .is_none_or(|names| names.iter().any(|listed| listed == name))
    }

    /// Parse `nightly.toml` text; the error names the file and what is wrong.
    pub fn parse(text: &str, path: &Path) -> Result<NightlyConfig, String> {
        let config: NightlyConfig =
            toml::from_str(text).map_err(|error| format!("{}: {error}", path.display()))?;
        for (name, tolerance) in &config.metrics {
            if !(tolerance.tolerance >= 0.0 && tolerance.absolute >= 0.0) {
                return Err(format!(
                    "{}: metrics.{name}: tolerance and absolute must be ≥ 0",
                    path.display()
                ));
            }
        }
        if config.seeds == 0 || config.baseline_seeds == 0 {
            return Err(format!("{}: seed counts must be ≥ 1", path.display()));
        }
        Ok(config)
    }

    /// `path` if it exists, else the defaults.
    pub fn load(path: &Path) -> Result<NightlyConfig, String> {
        match NightlyConfig::read_text(path)? {
            Some(text) => NightlyConfig::parse(&text, path),
            None => Ok(NightlyConfig::default()),
        }
    }

    /// The text of `path`: `Ok(None)` if there is no such file.
    pub(crate) fn read_text(path: &Path) -> Result<Option<String>, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Some(text)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(format!("{}: {error}", path.display())),
        }
    }
}
#[cfg(test)]
mod tests {
    use super::{NightlyConfig, Tolerance, Worse};
    use std::path::Path;

    #[test]
    fn a_metric_regresses_only_beyond_relative_plus_absolute_slack_in_its_worse_direction() {
        let higher = Tolerance {
            worse: Worse::Higher,
            tolerance: 0.10,
            absolute: 1.0,
        };
        assert!(!higher.regressed(100.0, 111.0));
        assert!(higher.regressed(100.0, 111.5));
        assert!(
            !higher.regressed(100.0, 0.0),
            "better is never a regression"
        );
        let lower = Tolerance {
            worse: Worse::Lower,
            tolerance: 0.05,
            absolute: 0.0,
        };
        assert!(lower.regressed(0.8, 0.75));
        assert!(!lower.regressed(0.8, 0.77));
        assert!(!lower.regressed(0.8, 0.8));
    }

    #[test]
    fn nightly_toml_rejects_unknown_keys_and_defaults_seeds_to_200() {
        let path = Path::new("nightly.toml");
        let config = NightlyConfig::parse(
            "[metrics]\nwait_s_p95 = { worse = \"higher\", tolerance = 0.1 }\n",
            path,
        )
        .expect("a metrics table alone is valid");
        assert_eq!(config.seeds, 200);
        assert_eq!(config.metrics["wait_s_p95"].worse, Worse::Higher);
        let error = NightlyConfig::parse("sedes = 3\n", path).expect_err("a typo is an error");
        assert!(
            error.contains("nightly.toml") && error.contains("sedes"),
            "{error}"
        );
    }
}
