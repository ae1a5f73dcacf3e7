//! Serde helpers for `shard.json`: values that must come back bit for bit, so that a merged
//! run writes the same tables as an unsharded one.
//!
//! Floats are written as text with Rust's shortest round-trip formatting and read back with
//! Rust's correctly rounded parser: serde_json's own float parser is best-effort (its
//! `float_roundtrip` feature is off here), and one unit in the last place is enough to move a
//! mean across a rounding boundary in a table.

use crate::report::Metrics;
use std::collections::BTreeMap;

/// A float as exact text.
pub(crate) fn float_text(value: f64) -> String {
    format!("{value:?}")
}

/// The float that [`float_text`] wrote.
pub(crate) fn float_from_text(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .map_err(|_| format!("{text:?} is not a number"))
}

/// `#[serde(with = "exact::float")]`: one `f64` as exact text.
pub(crate) mod float {
    use super::{float_from_text, float_text};
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Write `value` as its exact text.
    pub(crate) fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        float_text(*value).serialize(serializer)
    }

    /// Read a value written by [`serialize`].
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        let text = String::deserialize(deserializer)?;
        float_from_text(&text).map_err(D::Error::custom)
    }
}

/// `#[serde(with = "exact::metrics")]`: every metric by name, each as exact text.
pub(crate) mod metrics {
    use super::{float_from_text, float_text, metrics_from_values};
    use crate::report::Metrics;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    /// Write every metric by name, each as its exact text.
    pub(crate) fn serialize<S: Serializer>(
        value: &Metrics,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let texts: BTreeMap<&str, String> = value
            .entries()
            .into_iter()
            .map(|(name, value)| (name, float_text(value)))
            .collect();
        texts.serialize(serializer)
    }

    /// Read metrics written by [`serialize`]; every metric must be there.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Metrics, D::Error> {
        let texts = BTreeMap::<String, String>::deserialize(deserializer)?;
        let mut values = BTreeMap::new();
        for (name, text) in texts {
            values.insert(name, float_from_text(&text).map_err(D::Error::custom)?);
        }
        metrics_from_values(&values).map_err(D::Error::custom)
    }
}

/// Rebuild [`Metrics`] from [`Metrics::entries`]' names and values. The struct literal lists
/// every field, so a metric added to `Metrics` fails to compile here until it is read back.
pub(crate) fn metrics_from_values(values: &BTreeMap<String, f64>) -> Result<Metrics, String> {
    let real = |name: &str| {
        values
            .get(name)
            .copied()
            .ok_or_else(|| format!("the metric {name} is missing"))
    };
    // Counts were written as floats by `entries`; below 2^53 that is exact.
    let count = |name: &str| real(name).map(|value| value as u64);
    Ok(Metrics {
        jobs_total: count("jobs_total")?,
        jobs_completed: count("jobs_completed")?,
        job_instances: count("job_instances")?,
        reuse_ratio: real("reuse_ratio")?,
        pods_created: count("pods_created")?,
        pods_per_job: real("pods_per_job")?,
        wait_s_p50: real("wait_s_p50")?,
        wait_s_p95: real("wait_s_p95")?,
        wait_s_p99: real("wait_s_p99")?,
        wait_s_max: real("wait_s_max")?,
        // Shard folders written before this metric existed read as no censored wait.
        waits_censored: real("waits_censored").map_or(0, |value| value as u64),
        pod_seconds_busy: real("pod_seconds_busy")?,
        pod_seconds_idle: real("pod_seconds_idle")?,
        pod_seconds_pending: real("pod_seconds_pending")?,
        agent_utilisation: real("agent_utilisation")?,
        failovers: count("failovers")?,
        failover_s_max: real("failover_s_max")?,
        failover_s_p95: real("failover_s_p95")?,
        leader_changes: count("leader_changes")?,
        no_leader_s: real("no_leader_s")?,
        two_acting_s: real("two_acting_s")?,
        events: count("events")?,
        sim_s: real("sim_s")?,
        wall_s: real("wall_s")?,
        events_per_s: real("events_per_s")?,
        compression: real("compression")?,
    })
}

#[cfg(test)]
mod tests {
    use super::{float_from_text, float_text, metrics_from_values};
    use crate::report::Metrics;
    use std::collections::BTreeMap;

    #[test]
    fn floats_that_serde_json_may_round_differently_come_back_bit_for_bit() {
        let values = [
            0.1,
            1.0 / 3.0,
            2.2250738585072014e-308,
            9007199254740993.0,
            123.456_789_012_345_68,
            0.0,
        ];
        for value in values {
            let back = float_from_text(&float_text(value)).expect("our own text parses");
            assert_eq!(back.to_bits(), value.to_bits(), "{value}");
        }
    }

    #[test]
    fn every_metric_survives_the_trip_through_its_names() {
        let metrics = Metrics {
            jobs_total: 40,
            reuse_ratio: 0.123_456_789,
            wait_s_p95: 14.2,
            events: 51_234,
            compression: 41_000.5,
            ..Metrics::default()
        };
        let values = metrics
            .entries()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        assert_eq!(metrics_from_values(&values), Ok(metrics));
        let error = metrics_from_values(&BTreeMap::new()).expect_err("nothing to read");
        assert!(error.contains("jobs_total"), "{error}");
    }
}
