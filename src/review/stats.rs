//! Metric changes over seeds: paired differences (candidate − base, seed by seed), their mean,
//! a seeded bootstrap 95 % confidence interval and a judgement in plain words.
//!
//! The interval resamples the seeds' differences with replacement [`RESAMPLES`] times (a fixed
//! xoshiro256++ seed, so the same rows give the same interval) and takes the 2.5th and 97.5th
//! percentiles of the resampled means (nearest rank). A change is detectable when the
//! interval excludes zero and the mean change is at least [`MATERIAL`] of the base mean (a
//! millisecond of busy time over an hour is not a change anyone would review); its direction
//! says better or worse by the metric's own sense.

use crate::report::Metrics;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// Bootstrap resamples per metric.
pub(crate) const RESAMPLES: usize = 1000;

/// The smallest change, relative to the base mean, that a review reports.
pub(crate) const MATERIAL: f64 = 0.01;

const BOOTSTRAP_SEED: u64 = 0x5245_5649_4557_0001;

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Better {
    Lower,
    Higher,
}

/// The metrics a review compares, with the direction each improves in.
pub(crate) const REVIEW_METRICS: [(&str, Better); 9] = [
    ("wait_s_p50", Better::Lower),
    ("wait_s_p95", Better::Lower),
    ("waits_censored", Better::Lower),
    ("pods_created", Better::Lower),
    ("pods_per_job", Better::Lower),
    ("pod_seconds_busy", Better::Lower),
    ("pod_seconds_idle", Better::Lower),
    ("pod_seconds_pending", Better::Lower),
    ("reuse_ratio", Better::Higher),
];

/// One metric's change over the seeds of a review.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    /// Mean over seeds under the base policy.
    pub base_mean: f64,
    /// Mean over seeds under the candidate policy.
    pub candidate_mean: f64,
    /// Mean of candidate − base over seeds.
    pub delta: f64,
    /// Lower end of the bootstrap 95 % confidence interval of `delta`.
    pub ci95_low: f64,
    /// Upper end of the bootstrap 95 % confidence interval of `delta`.
    pub ci95_high: f64,
}

/// `name`'s value in `metrics` (0 for a name `Metrics` does not have).
pub(crate) fn metric(metrics: &Metrics, name: &str) -> f64 {
    metrics
        .entries()
        .into_iter()
        .find(|(entry, _)| *entry == name)
        .map_or(0.0, |(_, value)| value)
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// The change of paired values (`base[i]` and `candidate[i]` from the same seed).
pub(crate) fn delta(base: &[f64], candidate: &[f64]) -> MetricDelta {
    let differences: Vec<f64> = base.iter().zip(candidate).map(|(b, c)| c - b).collect();
    let (ci95_low, ci95_high) = bootstrap_ci95(&differences);
    MetricDelta {
        base_mean: mean(base),
        candidate_mean: mean(candidate),
        delta: mean(&differences),
        ci95_low,
        ci95_high,
    }
}

/// The seeded bootstrap 95 % interval of the mean of `values`; (0, 0) for no values.
pub(crate) fn bootstrap_ci95(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    if values.iter().all(|value| *value == values[0]) {
        return (values[0], values[0]);
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(BOOTSTRAP_SEED);
    let count = values.len();
    let mut means: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let sum: f64 = (0..count)
                .map(|_| values[(rng.next_u64() % count as u64) as usize])
                .sum();
            sum / count as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let rank = |percent: f64| {
        let rank = (percent / 100.0 * RESAMPLES as f64).ceil() as usize;
        means[rank.clamp(1, RESAMPLES) - 1]
    };
    (rank(2.5), rank(97.5))
}

/// `better`, `worse` or `no detectable change`, by the interval and the metric's sense.
pub(crate) fn judgement(name: &str, delta: &MetricDelta) -> &'static str {
    let better = REVIEW_METRICS
        .iter()
        .find(|(metric, _)| *metric == name)
        .map_or(Better::Lower, |(_, better)| *better);
    let material = delta.delta.abs() >= MATERIAL * delta.base_mean.abs() && delta.delta != 0.0;
    let (up, down) = (
        material && delta.ci95_low > 0.0,
        material && delta.ci95_high < 0.0,
    );
    match (up, down, better) {
        (true, _, Better::Higher) | (_, true, Better::Lower) => "better",
        (true, _, Better::Lower) | (_, true, Better::Higher) => "worse",
        _ => "no detectable change",
    }
}

#[cfg(test)]
mod tests {
    use super::{bootstrap_ci95, delta, judgement};

    #[test]
    fn equal_runs_give_a_zero_delta_and_a_zero_interval() {
        let values = [3.0, 5.0, 8.0];
        let change = delta(&values, &values);
        assert_eq!(
            (change.delta, change.ci95_low, change.ci95_high),
            (0.0, 0.0, 0.0)
        );
        assert_eq!(judgement("wait_s_p95", &change), "no detectable change");
    }

    #[test]
    fn a_consistent_increase_is_detected_and_judged_by_the_metrics_sense() {
        let base = [10.0, 12.0, 11.0, 9.0, 10.0, 13.0];
        let candidate = [20.0, 25.0, 19.0, 22.0, 21.0, 30.0];
        let change = delta(&base, &candidate);
        assert!(change.ci95_low > 0.0 && change.ci95_low <= change.delta);
        assert!(change.ci95_high >= change.delta);
        assert_eq!(judgement("wait_s_p95", &change), "worse");
        assert_eq!(judgement("reuse_ratio", &change), "better");
        let tiny = delta(&[3845.9, 3845.9], &[3845.89, 3845.893]);
        assert!(tiny.ci95_high < 0.0);
        assert_eq!(judgement("pod_seconds_busy", &tiny), "no detectable change");
    }

    #[test]
    fn noise_around_zero_is_no_detectable_change_and_the_interval_is_seeded() {
        let differences = [1.0, -1.0, 2.0, -2.0, 0.5, -0.5];
        let interval = bootstrap_ci95(&differences);
        assert!(interval.0 < 0.0 && interval.1 > 0.0);
        assert_eq!(interval, bootstrap_ci95(&differences));
    }
}
