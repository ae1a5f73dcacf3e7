//! A walker over the spanned TOML tree: typed getters that know their key path and location,
//! so every error says where it is and what was wanted.

use super::duration::parse_duration_ms;
use super::error::{ErrorKind, ScenarioError, Source};
use super::model::Range;
use std::ops;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

pub(crate) type Result<T> = std::result::Result<T, ScenarioError>;
pub(crate) type Value<'i> = Spanned<DeValue<'i>>;

/// One TOML table being read, with its key path (`faults[2]`, `cluster`, or empty for the
/// top level).
pub(crate) struct Table<'a, 'i> {
    pub source: Source<'a>,
    pub table: &'a DeTable<'i>,
    pub span: ops::Range<usize>,
    pub path: String,
}

impl<'a, 'i> Table<'a, 'i> {
    /// The key path of `key` inside this table.
    pub(crate) fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a Value<'i>> {
        self.table
            .iter()
            .find(|(name, _)| name.get_ref() == key)
            .map(|(_, value)| value)
    }

    /// Rejects the first key (in file order) that is not in `allowed`.
    pub(crate) fn expect_keys(&self, allowed: &[&str]) -> Result<()> {
        let unknown = self
            .table
            .iter()
            .map(|(name, _)| name)
            .filter(|name| !allowed.contains(&name.get_ref().as_ref()))
            .min_by_key(|name| name.span().start);
        match unknown {
            None => Ok(()),
            Some(name) => {
                let mut error = self.source.error(
                    ErrorKind::UnknownKey,
                    name.span(),
                    &self.key_path(name.get_ref()),
                    format!("a key of {}", self.describe()),
                    format!("\"{}\"", name.get_ref().escape_debug()),
                );
                error.choices = allowed.iter().map(|&key| key.to_owned()).collect();
                Err(error)
            }
        }
    }

    fn describe(&self) -> String {
        if self.path.is_empty() {
            "the top level".to_owned()
        } else {
            format!("[{}]", self.path)
        }
    }

    /// An error about the value of `key`.
    pub(crate) fn invalid(&self, key: &str, value: &Value<'_>, expected: &str) -> ScenarioError {
        self.source.error(
            ErrorKind::InvalidValue,
            value.span(),
            &self.key_path(key),
            expected,
            describe_value(value.get_ref()),
        )
    }

    fn wrong_type(&self, key: &str, value: &Value<'_>, expected: &str) -> ScenarioError {
        let mut error = self.invalid(key, value, expected);
        error.kind = ErrorKind::WrongType;
        error
    }

    pub(crate) fn missing(&self, key: &str, expected: &str) -> ScenarioError {
        self.source.error(
            ErrorKind::MissingKey,
            self.span.clone(),
            &self.key_path(key),
            format!("{} needs `{key}` ({expected})", self.describe()),
            "",
        )
    }

    /// A semantic error at the value of `key` (or at the table when it is absent).
    pub(crate) fn semantic(&self, key: &str, expected: &str, found: &str) -> ScenarioError {
        let span = self
            .get(key)
            .map_or_else(|| self.span.clone(), Spanned::span);
        self.source.error(
            ErrorKind::Semantic,
            span,
            &self.key_path(key),
            expected,
            found,
        )
    }

    /// A warning at the value of `key` (or at the table when it is absent).
    pub(crate) fn warning(&self, key: &str, message: &str) -> String {
        let span = self
            .get(key)
            .map_or_else(|| self.span.clone(), Spanned::span);
        self.source.warning(span, &self.key_path(key), message)
    }

    pub(crate) fn required<T>(&self, key: &str, expected: &str, read: Reader<'_, T>) -> Result<T> {
        match self.get(key) {
            None => Err(self.missing(key, expected)),
            Some(value) => read(self, key, value),
        }
    }

    pub(crate) fn optional<T>(&self, key: &str, read: Reader<'_, T>) -> Result<Option<T>> {
        self.get(key)
            .map(|value| read(self, key, value))
            .transpose()
    }

    pub(crate) fn or<T>(&self, key: &str, default: T, read: Reader<'_, T>) -> Result<T> {
        Ok(self.optional(key, read)?.unwrap_or(default))
    }

    /// A sub-table, e.g. `[cluster]`; `None` when absent.
    pub(crate) fn table(&self, key: &str) -> Result<Option<Table<'a, 'i>>> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => Ok(Some(self.nested(key, value, self.key_path(key))?)),
        }
    }

    /// A value that must itself be a table, read with `path` as its key path.
    pub(crate) fn nested(
        &self,
        key: &str,
        value: &'a Value<'i>,
        path: String,
    ) -> Result<Table<'a, 'i>> {
        match value.get_ref() {
            DeValue::Table(table) => Ok(Table {
                source: self.source,
                table,
                span: value.span(),
                path,
            }),
            _ => Err(self.wrong_type(key, value, "a table")),
        }
    }

    /// The entries of an array of tables, e.g. `[[faults]]`; empty when absent.
    pub(crate) fn tables(&self, key: &str) -> Result<Vec<Table<'a, 'i>>> {
        let Some(value) = self.get(key) else {
            return Ok(Vec::new());
        };
        let DeValue::Array(items) = value.get_ref() else {
            let expected = format!("an array of tables ([[{}]])", self.key_path(key));
            return Err(self.wrong_type(key, value, &expected));
        };
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let path = format!("{}[{index}]", self.key_path(key));
                match item.get_ref() {
                    DeValue::Table(table) => Ok(Table {
                        source: self.source,
                        table,
                        span: item.span(),
                        path,
                    }),
                    _ => Err(self.source.error(
                        ErrorKind::WrongType,
                        item.span(),
                        &path,
                        "a table",
                        describe_value(item.get_ref()),
                    )),
                }
            })
            .collect()
    }

    /// A string that must be one of `choices`.
    pub(crate) fn choice(&self, key: &str, choices: &[&str]) -> Result<Option<String>> {
        let Some(text) = self.optional(key, &string)? else {
            return Ok(None);
        };
        if choices.contains(&text.as_str()) {
            return Ok(Some(text));
        }
        let value = self
            .get(key)
            .expect("optional returned a value, so the key is present");
        let mut error = self.invalid(key, value, "one of the listed choices");
        error.choices = choices.iter().map(|&choice| choice.to_owned()).collect();
        Err(error)
    }

    /// [`Table::choice`] over a vocabulary: the value of `all` that `name` calls `key`'s
    /// string, or the error listing every name.
    pub(crate) fn choice_of<T: Copy>(
        &self,
        key: &str,
        all: &[T],
        name: fn(T) -> &'static str,
    ) -> Result<Option<T>> {
        let names: Vec<&str> = all.iter().map(|&value| name(value)).collect();
        let chosen = self.choice(key, &names)?;
        Ok(chosen.and_then(|text| all.iter().copied().find(|&value| name(value) == text)))
    }
}

/// Reads one value of a table at `key`.
pub(crate) type Reader<'r, T> = &'r dyn Fn(&Table<'_, '_>, &str, &Value<'_>) -> Result<T>;

/// How a value is shown after "found": strings quoted, scalars with their type.
pub(crate) fn describe_value(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(text) => {
            let shown: String = text.chars().take(80).collect();
            format!("\"{}\"", shown.escape_debug())
        }
        DeValue::Integer(integer) => format!("the integer {integer}"),
        DeValue::Float(float) => format!("the float {}", float.as_str()),
        DeValue::Boolean(flag) => format!("the boolean {flag}"),
        DeValue::Datetime(datetime) => format!("the datetime {datetime}"),
        DeValue::Array(_) => "an array".to_owned(),
        DeValue::Table(_) => "a table".to_owned(),
    }
}

pub(crate) fn string(table: &Table<'_, '_>, key: &str, value: &Value<'_>) -> Result<String> {
    match value.get_ref() {
        DeValue::String(text) => Ok(text.to_string()),
        _ => Err(table.wrong_type(key, value, "a string")),
    }
}

pub(crate) fn boolean(table: &Table<'_, '_>, key: &str, value: &Value<'_>) -> Result<bool> {
    match value.get_ref() {
        DeValue::Boolean(flag) => Ok(*flag),
        _ => Err(table.wrong_type(key, value, "true or false")),
    }
}

/// A non-negative integer up to `u64::MAX`.
pub(crate) fn unsigned(table: &Table<'_, '_>, key: &str, value: &Value<'_>) -> Result<u64> {
    let DeValue::Integer(integer) = value.get_ref() else {
        return Err(table.wrong_type(key, value, "a non-negative integer"));
    };
    if integer.as_str().starts_with('-') {
        return Err(table.invalid(key, value, "a non-negative integer"));
    }
    u64::from_str_radix(integer.as_str(), integer.radix())
        .map_err(|_| table.invalid(key, value, "an integer at most 18446744073709551615"))
}

/// An integer in `[minimum, u32::MAX]`.
/// A positive integer (`u64`).
pub(crate) fn positive(table: &Table<'_, '_>, key: &str, value: &Value<'_>) -> Result<u64> {
    match unsigned(table, key, value)? {
        0 => Err(table.invalid(key, value, "a positive integer")),
        number => Ok(number),
    }
}

pub(crate) fn count_at_least(
    minimum: u32,
) -> impl Fn(&Table<'_, '_>, &str, &Value<'_>) -> Result<u32> {
    move |table, key, value| {
        let number = unsigned(table, key, value);
        let expected = format!("an integer from {minimum} to {}", u32::MAX);
        match number {
            Ok(number) if number >= u64::from(minimum) => {
                u32::try_from(number).map_err(|_| table.invalid(key, value, &expected))
            }
            Ok(_) => Err(table.invalid(key, value, &expected)),
            Err(error) if error.kind == ErrorKind::WrongType => Err(error),
            Err(_) => Err(table.invalid(key, value, &expected)),
        }
    }
}

/// A finite number; integers are accepted where a float is wanted.
pub(crate) fn number(table: &Table<'_, '_>, key: &str, value: &Value<'_>) -> Result<f64> {
    let parsed = match value.get_ref() {
        DeValue::Float(float) => float.as_str().parse::<f64>().ok(),
        DeValue::Integer(integer) => i64::from_str_radix(integer.as_str(), integer.radix())
            .ok()
            .map(|whole| whole as f64),
        _ => return Err(table.wrong_type(key, value, "a number")),
    };
    match parsed {
        Some(number) if number.is_finite() => Ok(number),
        _ => Err(table.invalid(key, value, "a finite number")),
    }
}

pub(crate) fn duration(table: &Table<'_, '_>, key: &str, value: &Value<'_>) -> Result<u64> {
    const EXPECTED: &str = "a duration such as \"250ms\", \"90s\", \"2m\" or \"1h30m\"";
    let DeValue::String(text) = value.get_ref() else {
        return Err(table.wrong_type(key, value, EXPECTED));
    };
    parse_duration_ms(text).map_err(|reason| {
        let mut error = table.invalid(key, value, EXPECTED);
        error.found = format!("{} ({})", error.found, reason.describe());
        error
    })
}

/// A range: `{ min = "2s", max = "15s" }` or one duration string (fixed).
pub(crate) fn range(table: &Table<'_, '_>, key: &str, value: &Value<'_>) -> Result<Range> {
    if let DeValue::String(_) = value.get_ref() {
        return duration(table, key, value).map(Range::fixed);
    }
    let DeValue::Table(_) = value.get_ref() else {
        let expected = "a duration string or a table { min = \"…\", max = \"…\" }";
        return Err(table.wrong_type(key, value, expected));
    };
    let bounds = table.nested(key, value, table.key_path(key))?;
    bounds.expect_keys(&["min", "max"])?;
    let min_ms = bounds.required("min", "the lower bound, a duration", &duration)?;
    let max_ms = bounds.required("max", "the upper bound, a duration", &duration)?;
    if min_ms > max_ms {
        let found = format!("min = {} > max = {}", format_ms(min_ms), format_ms(max_ms));
        return Err(bounds.semantic("min", "min <= max", &found));
    }
    Ok(Range { min_ms, max_ms })
}

fn format_ms(total_ms: u64) -> String {
    format!("\"{}\"", super::duration::format_duration_ms(total_ms))
}

/// A list of strings.
pub(crate) fn strings(table: &Table<'_, '_>, key: &str, value: &Value<'_>) -> Result<Vec<String>> {
    let DeValue::Array(items) = value.get_ref() else {
        return Err(table.wrong_type(key, value, "an array of strings"));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item.get_ref() {
            DeValue::String(text) => Ok(text.to_string()),
            other => Err(table.source.error(
                ErrorKind::WrongType,
                item.span(),
                &format!("{}[{index}]", table.key_path(key)),
                "a string",
                describe_value(other),
            )),
        })
        .collect()
}

/// A list of strings, each one of `choices`; the error points at the offending item.
pub(crate) fn choice_list(
    table: &Table<'_, '_>,
    key: &str,
    choices: &[&str],
) -> Result<Option<Vec<String>>> {
    let Some(value) = table.get(key) else {
        return Ok(None);
    };
    let texts = strings(table, key, value)?;
    let DeValue::Array(items) = value.get_ref() else {
        unreachable!("strings() accepted the value, so it is an array")
    };
    for (index, (text, item)) in texts.iter().zip(items.iter()).enumerate() {
        if !choices.contains(&text.as_str()) {
            let mut error = table.source.error(
                ErrorKind::InvalidValue,
                item.span(),
                &format!("{}[{index}]", table.key_path(key)),
                "one of the listed choices",
                describe_value(item.get_ref()),
            );
            error.choices = choices.iter().map(|&choice| choice.to_owned()).collect();
            return Err(error);
        }
    }
    Ok(Some(texts))
}

/// [`choice_list`] over a vocabulary: the values of `all` that `name` calls the strings.
pub(crate) fn choice_list_of<T: Copy>(
    table: &Table<'_, '_>,
    key: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<Option<Vec<T>>> {
    let names: Vec<&str> = all.iter().map(|&value| name(value)).collect();
    let texts = choice_list(table, key, &names)?;
    Ok(texts.map(|texts| {
        texts
            .iter()
            .filter_map(|text| all.iter().copied().find(|&value| name(value) == text))
            .collect()
    }))
}
