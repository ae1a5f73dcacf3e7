//! Figures: the median of several repetitions with their min and max, a target and a verdict.

use serde::Serialize;

/// The spread of one figure over its repetitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub samples: usize,
}

/// Median, min and max of `values`; the median of an even count is the mean of the two middle
/// values. `None` for no values (a figure that could not be measured).
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    let median = if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    };
    Some(Summary {
        median,
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        samples: sorted.len(),
    })
}

/// What a figure should reach; checked against its median.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Target {
    AtLeast(f64),
    AtMost(f64),
    Below(f64),
}

impl Target {
    pub fn is_met(self, value: f64) -> bool {
        match self {
            Target::AtLeast(bound) => value >= bound,
            Target::AtMost(bound) => value <= bound,
            Target::Below(bound) => value < bound,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Target::AtLeast(bound) => format!(">= {}", format_number(bound)),
            Target::AtMost(bound) => format!("<= {}", format_number(bound)),
            Target::Below(bound) => format!("< {}", format_number(bound)),
        }
    }
}

/// One row of the bench table.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub name: String,
    pub unit: &'static str,
    /// `None` when the figure could not be measured (see `note`).
    pub summary: Option<Summary>,
    pub target: Option<Target>,
    /// "pass", "fail", "info" (no target) or "missing".
    pub status: &'static str,
    pub note: String,
}

impl Figure {
    /// A measured figure, judged against `target` by its median.
    pub fn measured(
        name: &str,
        unit: &'static str,
        values: &[f64],
        target: Option<Target>,
    ) -> Figure {
        let summary = summarize(values);
        let status = match (summary, target) {
            (None, _) => "missing",
            (Some(_), None) => "info",
            (Some(summary), Some(target)) if target.is_met(summary.median) => "pass",
            (Some(_), Some(_)) => "fail",
        };
        Figure {
            name: name.to_owned(),
            unit,
            summary,
            target,
            status,
            note: String::new(),
        }
    }

    /// A figure that could not be measured, with the reason.
    pub fn missing(name: &str, unit: &'static str, target: Option<Target>, why: &str) -> Figure {
        Figure {
            note: why.to_owned(),
            ..Figure::measured(name, unit, &[], target)
        }
    }

    #[must_use]
    pub fn with_note(mut self, note: impl Into<String>) -> Figure {
        self.note = note.into();
        self
    }
}

/// A number for a table: three significant digits, thousands grouped by spaces above 10^4.
pub fn format_number(value: f64) -> String {
    if !value.is_finite() {
        return format!("{value}");
    }
    let magnitude = value.abs();
    if magnitude >= 10_000.0 {
        group_thousands(value.round() as i64)
    } else if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

fn group_thousands(value: i64) -> String {
    let digits = value.unsigned_abs().to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(' ');
        }
        grouped.push(digit);
    }
    if value < 0 {
        grouped.insert(0, '-');
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_odd_count_has_its_middle_value_as_median() {
        let summary = summarize(&[5.0, 1.0, 9.0, 3.0, 7.0]).expect("five values");
        assert_eq!(summary.median, 5.0);
        assert_eq!(summary.min, 1.0);
        assert_eq!(summary.max, 9.0);
        assert_eq!(summary.samples, 5);
    }

    #[test]
    fn an_even_count_has_the_mean_of_the_two_middle_values_as_median() {
        let summary = summarize(&[4.0, 1.0, 2.0, 10.0]).expect("four values");
        assert_eq!(summary.median, 3.0);
        assert_eq!(summary.min, 1.0);
        assert_eq!(summary.max, 10.0);
    }

    #[test]
    fn a_single_value_is_its_own_median_min_and_max() {
        let summary = summarize(&[2.5]).expect("one value");
        assert_eq!((summary.median, summary.min, summary.max), (2.5, 2.5, 2.5));
    }

    #[test]
    fn no_values_make_a_missing_figure() {
        assert_eq!(summarize(&[]), None);
        let figure = Figure::missing("x", "s", Some(Target::Below(2.0)), "file absent");
        assert_eq!(figure.status, "missing");
        assert_eq!(figure.note, "file absent");
    }

    #[test]
    fn a_figure_is_judged_by_its_median_not_its_extremes() {
        let figure = Figure::measured("ratio", "x", &[1.0, 2.0, 9.0], Some(Target::AtMost(3.0)));
        assert_eq!(figure.status, "pass");
        let figure = Figure::measured("ratio", "x", &[1.0, 4.0, 9.0], Some(Target::AtMost(3.0)));
        assert_eq!(figure.status, "fail");
        let figure = Figure::measured("speed", "x", &[1.0], None);
        assert_eq!(figure.status, "info");
    }

    #[test]
    fn below_excludes_the_bound_and_at_most_includes_it() {
        assert!(!Target::Below(2.0).is_met(2.0));
        assert!(Target::AtMost(2.0).is_met(2.0));
        assert!(Target::AtLeast(2.0).is_met(2.0));
    }

    #[test]
    fn large_numbers_are_grouped_by_thousands() {
        assert_eq!(format_number(1_234_567.0), "1 234 567");
        assert_eq!(format_number(12.34), "12.3");
        assert_eq!(format_number(0.1234), "0.123");
    }
}
