//! Delta debugging (Zeller and Hildebrandt's ddmin) and a bisection for numbers: the two
//! reductions `shrink` is built from. Both only ever move to a candidate the predicate
//! accepted, so whatever they return still fails, even when they stop early.

/// Reduce `items` to a smaller list that still `fails`, assuming `fails(items)` holds.
/// The result is 1-minimal (removing any single item makes it pass) unless `out_of_time`
/// said stop first. The empty list is tried first: often none of a kind of entry matters.
pub(crate) fn ddmin<T: Clone>(
    items: Vec<T>,
    fails: &mut dyn FnMut(&[T]) -> bool,
    out_of_time: &dyn Fn() -> bool,
) -> Vec<T> {
    if items.is_empty() || out_of_time() {
        return items;
    }
    if fails(&[]) {
        return Vec::new();
    }
    let mut current = items;
    let mut granularity = 2usize;
    while current.len() >= 2 {
        let chunks = split(current.len(), granularity);
        match reduce_once(&current, &chunks, fails, out_of_time) {
            Step::Subset(subset) => {
                current = subset;
                granularity = 2;
            }
            Step::Complement(complement) => {
                current = complement;
                granularity = (granularity - 1).max(2);
            }
            Step::Stop => break,
            Step::Refine => {
                if granularity >= current.len() {
                    break;
                }
                granularity = (granularity * 2).min(current.len());
            }
        }
    }
    current
}

enum Step<T> {
    Subset(Vec<T>),
    Complement(Vec<T>),
    Refine,
    Stop,
}

fn reduce_once<T: Clone>(
    current: &[T],
    chunks: &[std::ops::Range<usize>],
    fails: &mut dyn FnMut(&[T]) -> bool,
    out_of_time: &dyn Fn() -> bool,
) -> Step<T> {
    for chunk in chunks {
        if out_of_time() {
            return Step::Stop;
        }
        let subset = current[chunk.clone()].to_vec();
        if fails(&subset) {
            return Step::Subset(subset);
        }
    }
    // With two chunks each complement is the other chunk, already tried above.
    if chunks.len() > 2 {
        for chunk in chunks {
            if out_of_time() {
                return Step::Stop;
            }
            let mut complement = current[..chunk.start].to_vec();
            complement.extend_from_slice(&current[chunk.end..]);
            if fails(&complement) {
                return Step::Complement(complement);
            }
        }
    }
    Step::Refine
}

/// `len` positions in `parts` contiguous chunks whose sizes differ by at most one.
fn split(len: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.clamp(1, len.max(1));
    (0..parts)
        .map(|part| (part * len / parts)..((part + 1) * len / parts))
        .filter(|range| !range.is_empty())
        .collect()
}

/// The smallest value in `lower..=current`, in steps of `step`, that still `fails`, found by
/// bisection; `fails(current)` is assumed. Failure need not be monotonic in the value: the
/// result is a value that was seen failing, not necessarily the least such value.
pub(crate) fn bisect_down(
    current: u64,
    lower: u64,
    step: u64,
    fails: &mut dyn FnMut(u64) -> bool,
    out_of_time: &dyn Fn() -> bool,
) -> u64 {
    assert!(step > 0, "a bisection step must be positive");
    if lower >= current || out_of_time() {
        return current;
    }
    if fails(lower) {
        return lower;
    }
    // Invariant: `low` passed (or is the untried floor), `high` failed.
    let (mut low, mut high) = (lower, current);
    while high - low > step && !out_of_time() {
        let middle = low + (high - low) / 2;
        let middle = (middle / step * step).max(low + 1);
        if middle >= high {
            break;
        }
        if fails(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::{bisect_down, ddmin, split};

    fn never() -> bool {
        false
    }

    #[test]
    fn ddmin_finds_the_two_items_that_together_fail() {
        let items: Vec<u32> = (0..40).collect();
        let mut runs = 0;
        let mut fails = |subset: &[u32]| {
            runs += 1;
            subset.contains(&7) && subset.contains(&31)
        };
        let reduced = ddmin(items, &mut fails, &never);
        assert_eq!(reduced, vec![7, 31]);
        assert!(runs < 100, "ddmin took {runs} runs for 40 items");
    }

    #[test]
    fn ddmin_returns_nothing_when_no_item_matters() {
        let reduced = ddmin(vec![1, 2, 3], &mut |_: &[i32]| true, &never);
        assert!(reduced.is_empty());
    }

    #[test]
    fn ddmin_out_of_time_returns_the_input_unchanged() {
        let reduced = ddmin(vec![1, 2, 3], &mut |_: &[i32]| true, &|| true);
        assert_eq!(reduced, vec![1, 2, 3]);
    }

    #[test]
    fn split_covers_every_position_once() {
        let chunks = split(10, 3);
        let covered: Vec<usize> = chunks.into_iter().flatten().collect();
        assert_eq!(covered, (0..10).collect::<Vec<_>>());
        assert_eq!(split(2, 8).len(), 2);
    }

    #[test]
    fn bisection_finds_the_threshold_within_one_step() {
        let found = bisect_down(600_000, 1_000, 1_000, &mut |value| value >= 123_400, &never);
        assert!((123_400..124_400).contains(&found), "found {found}");
        assert_eq!(found % 1_000, 0);
    }

    #[test]
    fn bisection_keeps_the_current_value_when_nothing_smaller_fails() {
        assert_eq!(bisect_down(50, 1, 1, &mut |value| value == 50, &never), 50);
    }
}
