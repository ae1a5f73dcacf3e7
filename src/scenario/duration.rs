//! Durations as the scenario format writes them: `"250ms"`, `"90s"`, `"2m"`, `"1h30m"`.

/// Why a duration string was rejected; the caller adds file, line and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DurationError {
    /// The string is empty.
    Empty,
    /// A number with no unit after it (`"90"`), or a unit with no number (`"s"`).
    MissingUnit,
    /// A unit with no number before it.
    MissingNumber,
    /// A unit other than `ms`, `s`, `m`, `h`.
    UnknownUnit(String),
    /// A leading minus sign: durations are never negative.
    Negative,
    /// A fraction, whitespace or any other character that is not a digit or a unit.
    UnexpectedCharacter(char),
    /// Larger than `u64::MAX` milliseconds.
    Overflow,
}

impl DurationError {
    /// What was wrong, as a phrase that follows "found".
    pub(crate) fn describe(&self) -> String {
        match self {
            DurationError::Empty => "an empty string".to_owned(),
            DurationError::MissingUnit => "a number without a unit".to_owned(),
            DurationError::MissingNumber => "a unit without a number".to_owned(),
            DurationError::UnknownUnit(unit) => format!("the unknown unit \"{unit}\""),
            DurationError::Negative => "a negative duration".to_owned(),
            DurationError::UnexpectedCharacter(character) => {
                format!("the character {character:?}")
            }
            DurationError::Overflow => "a duration too large to represent".to_owned(),
        }
    }
}

/// Milliseconds per unit, longest unit name first so `ms` is not read as `m` then `s`.
const UNITS_MS: [(&str, u64); 4] = [("ms", 1), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)];

/// Parses a sum of `<digits><unit>` parts, e.g. `"1h30m"` = 5 400 000 ms; `"0s"` is allowed.
pub(crate) fn parse_duration_ms(text: &str) -> Result<u64, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text.starts_with('-') {
        return Err(DurationError::Negative);
    }
    let mut rest = text;
    let mut total_ms: u64 = 0;
    while !rest.is_empty() {
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits_end == 0 {
            let first = rest
                .chars()
                .next()
                .expect("rest is not empty inside the loop");
            return Err(if first.is_ascii_alphabetic() {
                DurationError::MissingNumber
            } else {
                DurationError::UnexpectedCharacter(first)
            });
        }
        let (digits, after_digits) = rest.split_at(digits_end);
        let unit_end = after_digits
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after_digits.len());
        let (unit, after_unit) = after_digits.split_at(unit_end);
        if unit.is_empty() {
            return Err(match after_digits.chars().next() {
                None => DurationError::MissingUnit,
                Some(character) => DurationError::UnexpectedCharacter(character),
            });
        }
        let unit_ms = UNITS_MS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, unit_ms)| *unit_ms)
            .ok_or_else(|| DurationError::UnknownUnit(unit.to_owned()))?;
        // Digits only, so the sole way `parse` fails is a number beyond u64.
        let count: u64 = digits.parse().map_err(|_| DurationError::Overflow)?;
        total_ms = count
            .checked_mul(unit_ms)
            .and_then(|part_ms| total_ms.checked_add(part_ms))
            .ok_or(DurationError::Overflow)?;
        rest = after_unit;
    }
    Ok(total_ms)
}

/// Writes milliseconds in the largest unit that is exact: `"250ms"`, `"2400ms"`, `"90s"`,
/// `"2m"`, `"1h"`, with hours and minutes combined (`"1h30m"`); `"0s"` for zero.
/// [`parse_duration_ms`] reads it back to the same value.
pub(crate) fn format_duration_ms(total_ms: u64) -> String {
    if total_ms == 0 {
        return "0s".to_owned();
    }
    if !total_ms.is_multiple_of(1_000) {
        return format!("{total_ms}ms");
    }
    let seconds = total_ms / 1_000;
    if !seconds.is_multiple_of(60) {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    match (minutes / 60, minutes % 60) {
        (0, minutes) => format!("{minutes}m"),
        (hours, 0) => format!("{hours}h"),
        (hours, minutes) => format!("{hours}h{minutes}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::{DurationError, format_duration_ms, parse_duration_ms};

    #[test]
    fn combined_units_add_up() {
        assert_eq!(parse_duration_ms("1h30m"), Ok(5_400_000));
        assert_eq!(parse_duration_ms("250ms"), Ok(250));
        assert_eq!(parse_duration_ms("90s"), Ok(90_000));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("1h2m3s4ms"), Ok(3_723_004));
        assert_eq!(parse_duration_ms("0s"), Ok(0));
    }

    #[test]
    fn malformed_durations_are_rejected_with_the_reason() {
        assert_eq!(parse_duration_ms(""), Err(DurationError::Empty));
        assert_eq!(parse_duration_ms("90"), Err(DurationError::MissingUnit));
        assert_eq!(parse_duration_ms("s"), Err(DurationError::MissingNumber));
        assert_eq!(
            parse_duration_ms("5d"),
            Err(DurationError::UnknownUnit("d".to_owned()))
        );
        assert_eq!(parse_duration_ms("-5s"), Err(DurationError::Negative));
        assert_eq!(
            parse_duration_ms("1.5s"),
            Err(DurationError::UnexpectedCharacter('.'))
        );
        assert_eq!(
            parse_duration_ms("5 s"),
            Err(DurationError::UnexpectedCharacter(' '))
        );
        assert_eq!(
            parse_duration_ms("99999999999999999999ms"),
            Err(DurationError::Overflow)
        );
        assert_eq!(
            parse_duration_ms("9999999999999999h"),
            Err(DurationError::Overflow)
        );
    }

    #[test]
    fn formatted_durations_read_back_to_the_same_milliseconds() {
        assert_eq!(format_duration_ms(5_400_000), "1h30m");
        assert_eq!(format_duration_ms(90_000), "90s");
        assert_eq!(format_duration_ms(120_000), "2m");
        assert_eq!(format_duration_ms(2_400), "2400ms");
        assert_eq!(format_duration_ms(3_600_000), "1h");
        assert_eq!(format_duration_ms(250), "250ms");
        assert_eq!(format_duration_ms(0), "0s");
        for total_ms in [1, 999, 1_000, 59_999, 3_600_001, u64::MAX, u64::MAX - 1] {
            assert_eq!(
                parse_duration_ms(&format_duration_ms(total_ms)),
                Ok(total_ms)
            );
        }
    }
}
