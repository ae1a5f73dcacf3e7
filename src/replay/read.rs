//! Reading a recorded trace: every error names the file and line and says what was expected.

use super::{FORMAT, Header, TraceLine, VERSION};
use std::path::{Path, PathBuf};

/// A whole trace, in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The first line.
    pub header: Header,
    /// Every pod change after it, in file order.
    pub lines: Vec<TraceLine>,
}

/// Why a trace could not be read. Displayed as `file:line: message`.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The trace file could not be read.
    #[error("{}: cannot read the trace: {message}", path.display())]
    Io {
        /// The trace file.
        path: PathBuf,
        /// The I/O error's message.
        message: String,
    },
    /// One line is malformed.
    #[error("{}:{line}: {message}", path.display())]
    Line {
        /// The trace file.
        path: PathBuf,
        /// The line's number, 1-based.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// Read and check the trace at `path`.
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|e| TraceError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    parse_trace(&text, path)
}

/// Parse trace text; `path` only names the source in errors. Lines must be in time order (a
/// recorder writes them as it observes them); blank lines are skipped.
pub fn parse_trace(text: &str, path: &Path) -> Result<Trace, TraceError> {
    let error = |line: usize, message: String| TraceError::Line {
        path: path.to_owned(),
        line,
        message,
    };
    let mut numbered = text
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line))
        .filter(|(_, line)| !line.trim().is_empty());
    let Some((first, header_text)) = numbered.next() else {
        return Err(error(1, "empty trace: expected a header line".to_owned()));
    };
    let header = parse_header(header_text).map_err(|message| error(first, message))?;
    let mut lines: Vec<TraceLine> = Vec::new();
    for (number, text) in numbered {
        let line: TraceLine = serde_json::from_str(text).map_err(|e| {
            let what = if e.is_eof() {
                "truncated line".to_owned()
            } else {
                e.to_string()
            };
            error(
                number,
                format!("{what}; expected a pod observation {EXAMPLE}"),
            )
        })?;
        if let Some(previous) = lines.last()
            && line.t_ms < previous.t_ms
        {
            return Err(error(
                number,
                format!(
                    "t_ms {} goes back in time (the line before has {}); \
                     lines must be in time order",
                    line.t_ms, previous.t_ms
                ),
            ));
        }
        lines.push(line);
    }
    Ok(Trace { header, lines })
}

const EXAMPLE: &str = "like {\"t_ms\": 1234, \"event\": \"added|modified|deleted\", \
     \"pod\": \"name\", \"phase\": \"Pending\", \"job_id\": \"7\", \"job_identifier\": null, \
     \"config_hash\": null, \"restarts\": 0, \"node\": null}";

fn parse_header(text: &str) -> Result<Header, String> {
    let header: Header = serde_json::from_str(text).map_err(|e| {
        format!(
            "bad header ({e}); expected {{\"format\":\"{FORMAT}\",\"version\":{VERSION},\
             \"source\":\"…\",\"namespace\":\"…\",\"started_at\":\"RFC3339\"}}"
        )
    })?;
    if header.format != FORMAT {
        return Err(format!(
            "format {:?} is not a recorded trace; expected \"{FORMAT}\"",
            header.format
        ));
    }
    if header.version != VERSION {
        return Err(format!(
            "trace version {} is not supported; this build reads version {VERSION}",
            header.version
        ));
    }
    Ok(header)
}
