//! Seed ranges for many-seed runs: `--seeds N` means seeds 1..=N, `--seeds A..B` means A to
//! B-1 (Rust's half-open range notation).

use std::fmt;

/// A half-open range of seeds, `first..end`, never empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRange {
    /// The first seed.
    pub first: u64,
    /// One past the last seed.
    pub end: u64,
}

impl SeedRange {
    /// Parse `N` (1..=N) or `A..B` (A..B-1). Errors say what was expected.
    pub fn parse(text: &str) -> Result<SeedRange, String> {
        let text = text.trim();
        let number = |part: &str| {
            part.trim().parse::<u64>().map_err(|_| {
                format!("--seeds {text:?}: expected N (seeds 1..=N) or A..B (seeds A to B-1)")
            })
        };
        let range = match text.split_once("..") {
            Some((first, end)) => SeedRange {
                first: number(first)?,
                end: number(end)?,
            },
            None => {
                let count = number(text)?;
                SeedRange {
                    first: 1,
                    end: count.saturating_add(1),
                }
            }
        };
        if range.first >= range.end {
            return Err(format!("--seeds {text:?}: the range holds no seed"));
        }
        Ok(range)
    }

    /// How many seeds the range holds.
    pub(crate) fn len(&self) -> u64 {
        self.end - self.first
    }

    /// Always false: a parsed range holds at least one seed.
    pub fn is_empty(&self) -> bool {
        self.first >= self.end
    }

    /// The seeds in order.
    pub fn seeds(&self) -> std::ops::Range<u64> {
        self.first..self.end
    }
}

/// The seeds as people count them, both ends included: `--seeds 40` shows as `1–40`,
/// `--seeds 100..200` as `100–199`, a single seed as `7`.
impl fmt::Display for SeedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = self.end - 1;
        if self.first == last {
            write!(f, "{last}")
        } else {
            write!(f, "{}–{last}", self.first)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SeedRange;

    #[test]
    fn a_count_means_seeds_one_to_n_inclusive() {
        let range = SeedRange::parse("3").expect("3 is a count");
        assert_eq!(range.seeds().collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn a_range_excludes_its_end() {
        let range = SeedRange::parse("100..103").expect("a valid range");
        assert_eq!(range.seeds().collect::<Vec<_>>(), vec![100, 101, 102]);
        assert_eq!(range.len(), 3);
    }

    #[test]
    fn a_range_shows_its_first_and_last_seed_as_people_count_them() {
        let shown = |text: &str| SeedRange::parse(text).expect("valid").to_string();
        assert_eq!(shown("40"), "1–40");
        assert_eq!(shown("100..200"), "100–199");
        assert_eq!(shown("7..8"), "7");
    }

    #[test]
    fn empty_and_malformed_ranges_are_errors() {
        assert!(SeedRange::parse("0").is_err());
        assert!(SeedRange::parse("5..5").is_err());
        assert!(SeedRange::parse("a..b").is_err());
        assert!(SeedRange::parse("1..2..3").is_err());
    }
}
