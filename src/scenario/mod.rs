//! Scenarios: the TOML format of `docs/scenario-format.md`, parsed and validated with file,
//! line, column and key in every error.
//!
//! [`load`] reads a file, [`parse`] reads text, [`to_toml`] writes a scenario back so that
//! `parse(to_toml(s)) == s`. Errors are [`ScenarioError`]s (exit code 2); warnings are lines
//! in [`Loaded::warnings`], already prefixed with `file:line:column: warning:`.

pub(crate) mod duration;
mod error;
mod fault_kind;
mod fault_type;
mod faults;
mod leader;
pub(crate) mod model;
mod parse;
mod reader;
mod swarm_draw;
mod write;

#[cfg(test)]
mod tests;

pub(crate) use duration::{format_duration_ms, parse_duration_ms};
pub use error::{ErrorDetail, ErrorKind, ScenarioError};
pub use fault_kind::{ElasticFault, FaultKind, LeaderFault, NetworkFault};
pub use fault_type::{ElasticKind, FaultType, LeaderKind, NetworkKind};
pub use faults::{FAULT_KINDS, NODE_REPLACE_AFTER_MS, PARTITION_GROUPS, replica_group};
pub use leader::{INVARIANT_IDS, VARIANTS};
pub use model::{
    Cluster, ClusterProfileChanges, Fault, Invariants, JobSource, JobTarget, Kube, Leader,
    LeaderConfigChange, LeaderModule, LeaseCrate, OutageMode, Plugin, PodTarget, Profile, Range,
    ReplicaRef, Scenario, Server, Swarm,
};
pub use parse::{JOB_KINDS, POLICIES};
pub(crate) use swarm_draw::{DrawKind, SwarmDraw};
pub use write::to_toml;

use std::path::Path;

/// A valid scenario and the warnings (already located) found while reading it.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The parsed, defaulted and validated scenario.
    pub scenario: Scenario,
    /// Warnings found while reading it (each already names file and line).
    pub warnings: Vec<String>,
}

/// Parses scenario text; `path` names the file in messages and anchors trace paths.
pub fn parse(text: &str, path: &Path) -> Result<Loaded, ScenarioError> {
    let source = error::Source { text, file: path };
    let root = toml::de::DeTable::parse(text).map_err(|syntax| {
        let span = syntax.span().unwrap_or(0..0);
        let key = syntax_key(text, span.start);
        let mut error = source.error(ErrorKind::Syntax, span, &key, "", "");
        error.expected = format!("invalid TOML: {}", syntax.message().trim_end());
        error
    })?;
    let folder = path.parent().unwrap_or(Path::new(""));
    parse::scenario(source, &root, folder)
}

/// Parses scenario bytes, reporting where the first non-UTF-8 byte is.
pub(crate) fn parse_bytes(bytes: &[u8], path: &Path) -> Result<Loaded, ScenarioError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text, path),
        Err(utf8) => Err(error::encoding_error(bytes, path, utf8)),
    }
}

/// Reads and parses a scenario file; an unreadable file is an error too.
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let bytes = std::fs::read(path).map_err(|io| {
        ScenarioError::from(ErrorDetail {
            kind: ErrorKind::Unreadable,
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            key: String::new(),
            expected: "a readable scenario file".to_owned(),
            found: io.to_string(),
            choices: Vec::new(),
        })
    })?;
    parse_bytes(&bytes, path)
}

/// The key whose value holds a syntax error at byte `offset` (`key = <bad value>` on that
/// line), with its enclosing `[table]` or `[[array]]` entry, so that even a syntax error
/// names its key (`docs/cli.md`, exit code 2). Empty when the error is not inside a value.
fn syntax_key(text: &str, offset: usize) -> String {
    let Some(before) = text.get(..offset) else {
        return String::new();
    };
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let Some(equals) = line.find('=').filter(|e| line_start + e < offset) else {
        return String::new();
    };
    let key = line[..equals].trim();
    let bare = |name: &str| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    if !bare(key) {
        return String::new();
    }
    // The nearest header above; an array of tables is indexed by its earlier headers.
    let headers: Vec<&str> = text[..line_start]
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| l.starts_with('[') && l.ends_with(']'))
        .collect();
    let Some(header) = headers.last() else {
        return key.to_owned();
    };
    let name = header.trim_matches(|c| c == '[' || c == ']').trim();
    if !bare(name) {
        return key.to_owned();
    }
    if header.starts_with("[[") {
        let index = headers.iter().filter(|h| *h == header).count() - 1;
        format!("{name}[{index}].{key}")
    } else {
        format!("{name}.{key}")
    }
}
