//! Unit tests of the plots' arithmetic; the figures themselves are tested in
//! `tests/commands/plots.rs`.

use super::kit::TimeUnit;
use super::run_charts::cdf_steps;

#[test]
fn the_time_axis_uses_seconds_then_minutes_then_hours() {
    assert_eq!(TimeUnit::for_span(600.0).name, "s");
    assert_eq!(TimeUnit::for_span(601.0).name, "min");
    assert_eq!(TimeUnit::for_span(3.0 * 3600.0).name, "min");
    assert_eq!(TimeUnit::for_span(8.0 * 3600.0).name, "h");
    assert_eq!(TimeUnit::for_span(8.0 * 3600.0).of(5400.0), 1.5);
}

#[test]
fn the_wait_cdf_steps_up_by_one_over_n_at_each_wait() {
    let steps = cdf_steps(&[30.0, 60.0, 60.0, 120.0], 60.0);
    assert_eq!(steps.first(), Some(&(0.0, 0.0)));
    assert_eq!(steps.last(), Some(&(2.0, 1.0)));
    assert_eq!(&steps[1..3], &[(0.5, 0.0), (0.5, 0.25)]);
    assert!(
        steps
            .windows(2)
            .all(|pair| pair[0].0 <= pair[1].0 && pair[0].1 <= pair[1].1)
    );
}

#[test]
fn a_policy_keeps_its_colour_whatever_it_is_compared_with() {
    use super::compare::policy_colour;
    assert_eq!(policy_colour("safe", 0), policy_colour("safe", 2));
    assert_eq!(
        policy_colour("pr355 (candidate)", 1),
        policy_colour("pr355", 0)
    );
    assert_ne!(policy_colour("safe", 0), policy_colour("upstream", 0));
    assert_ne!(policy_colour("fixed", 0), policy_colour("upstream", 0));
}
