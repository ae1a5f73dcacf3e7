//! The one error type of scenario loading: every message names the file, the line and column,
//! the key, what was expected and what was found, so a user can fix the file without guessing.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What went wrong, for callers that branch on it (tests, `elasticsim check`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The file could not be read.
    Unreadable,
    /// The file is not UTF-8.
    Encoding,
    /// The file is not valid TOML.
    Syntax,
    /// A key the format does not define.
    UnknownKey,
    /// A required key is absent.
    MissingKey,
    /// A value of the wrong TOML type.
    WrongType,
    /// A value of the right type that is out of range or malformed.
    InvalidValue,
    /// Values that are fine alone but contradict each other or the rest of the file.
    Semantic,
}

/// A scenario that cannot be loaded; `Display` gives one line a user can act on. The details
/// are boxed (read them through `Deref`, e.g. `error.line`) so `Result`s stay small.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(Box<ErrorDetail>);

impl From<ErrorDetail> for ScenarioError {
    fn from(detail: ErrorDetail) -> Self {
        ScenarioError(Box::new(detail))
    }
}

impl std::ops::Deref for ScenarioError {
    type Target = ErrorDetail;

    fn deref(&self) -> &ErrorDetail {
        &self.0
    }
}

impl std::ops::DerefMut for ScenarioError {
    fn deref_mut(&mut self) -> &mut ErrorDetail {
        &mut self.0
    }
}

/// Where and what: every part of a [`ScenarioError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorDetail {
    /// What is wrong.
    pub kind: ErrorKind,
    /// The scenario file it is wrong in.
    pub file: PathBuf,
    /// 1-based; 0 when the error has no position (an unreadable file).
    pub line: usize,
    /// 1-based, in characters (in bytes for encoding errors); 0 when there is no position.
    pub column: usize,
    /// The key path, e.g. `faults[2].downtime`; empty for whole-file errors.
    pub key: String,
    /// What the format wants there.
    pub expected: String,
    /// What the file has there.
    pub found: String,
    /// For enum-like values and unknown keys: every valid choice.
    pub choices: Vec<String>,
}

impl fmt::Display for ErrorDetail {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.file.display())?;
        if self.line > 0 {
            write!(formatter, ":{}:{}", self.line, self.column)?;
        }
        write!(formatter, ": ")?;
        if !self.key.is_empty() {
            write!(formatter, "{}: ", self.key)?;
        }
        match self.kind {
            ErrorKind::UnknownKey => {
                write!(formatter, "unknown key {}; valid keys here: ", self.found)?;
                write_list(formatter, &self.choices)
            }
            ErrorKind::MissingKey => write!(formatter, "missing required key; {}", self.expected),
            _ if !self.choices.is_empty() => {
                write!(formatter, "expected one of ")?;
                write_list(formatter, &self.choices)?;
                write!(formatter, "; found {}", self.found)
            }
            _ if self.found.is_empty() => write!(formatter, "{}", self.expected),
            _ => write!(
                formatter,
                "expected {}; found {}",
                self.expected, self.found
            ),
        }
    }
}

fn write_list(formatter: &mut fmt::Formatter<'_>, items: &[String]) -> fmt::Result {
    for (index, item) in items.iter().enumerate() {
        if index > 0 {
            write!(formatter, ", ")?;
        }
        write!(formatter, "\"{item}\"")?;
    }
    Ok(())
}

/// The text being parsed and its file name: turns byte spans into line and column.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Source<'a> {
    pub text: &'a str,
    pub file: &'a Path,
}

impl Source<'_> {
    /// 1-based line and character column of a byte offset (clamped to the text).
    pub(crate) fn position(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        let column = before[line_start..].chars().count() + 1;
        (line, column)
    }

    /// An error at `span` about `key`.
    pub(crate) fn error(
        &self,
        kind: ErrorKind,
        span: Range<usize>,
        key: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ScenarioError {
        let (line, column) = self.position(span.start);
        ScenarioError::from(ErrorDetail {
            kind,
            file: self.file.to_path_buf(),
            line,
            column,
            key: key.to_owned(),
            expected: expected.into(),
            found: found.into(),
            choices: Vec::new(),
        })
    }

    /// A warning line at `span` about `key`, in the same `file:line:column: key:` shape.
    pub(crate) fn warning(&self, span: Range<usize>, key: &str, message: &str) -> String {
        let (line, column) = self.position(span.start);
        format!(
            "{}:{line}:{column}: warning: {key}: {message}",
            self.file.display()
        )
    }
}

/// An error for a file that is not UTF-8, pointing at the first bad byte.
pub(crate) fn encoding_error(
    bytes: &[u8],
    file: &Path,
    error: std::str::Utf8Error,
) -> ScenarioError {
    let valid = &bytes[..error.valid_up_to()];
    let line = valid.iter().filter(|&&byte| byte == b'\n').count() + 1;
    let line_start = valid
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |newline| newline + 1);
    ScenarioError::from(ErrorDetail {
        kind: ErrorKind::Encoding,
        file: file.to_path_buf(),
        line,
        column: valid.len() - line_start + 1,
        key: String::new(),
        expected: "UTF-8 text".to_owned(),
        found: bytes.get(error.valid_up_to()).map_or_else(
            || "a truncated character".to_owned(),
            |byte| format!("byte 0x{byte:02x}"),
        ),
        choices: Vec::new(),
    })
}
