//! `trace.jsonl`: one JSON object per line, written to a temporary file and renamed into place
//! when the run ends, so a crash never leaves a half-written trace.

use super::{Record, TraceEvent};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Streams records to `<path>.tmp`, renamed to `path` by [`JsonlWriter::finish`].
pub struct JsonlWriter {
    out: BufWriter<File>,
    temporary: PathBuf,
    path: PathBuf,
}

impl JsonlWriter {
    /// Create the temporary file next to `path`.
    pub fn create(path: &Path) -> std::io::Result<JsonlWriter> {
        let temporary = path.with_extension("jsonl.tmp");
        let out = BufWriter::new(File::create(&temporary)?);
        Ok(JsonlWriter {
            out,
            temporary,
            path: path.to_owned(),
        })
    }

    /// Append one record.
    pub fn write(&mut self, t_ms: u64, node: &str, record: &Record) -> std::io::Result<()> {
        if matches!(record, Record::Sample) {
            return Ok(());
        }
        serde_json::to_writer(&mut self.out, &TraceEvent { t_ms, node, record })?;
        self.out.write_all(b"\n")
    }

    /// Flush, sync and rename into place.
    pub fn finish(self) -> std::io::Result<()> {
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&self.temporary, &self.path)
    }
}
