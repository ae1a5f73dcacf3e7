//! The run's fingerprint: SHA-256 over the canonical encoding of every record.

use super::Record;
use sha2::{Digest, Sha256};

/// Accumulates records into a SHA-256. The encoding is postcard (a stable, documented wire
/// format) of `(t_ms, node, record)`; it does not depend on platform, build profile or
/// allocation addresses.
pub struct Fingerprint {
    hasher: Sha256,
    buffer: Vec<u8>,
    count: u64,
}

impl Default for Fingerprint {
    fn default() -> Self {
        Fingerprint {
            hasher: Sha256::new(),
            buffer: Vec::with_capacity(256),
            count: 0,
        }
    }
}

impl Fingerprint {
    /// Fold one record in.
    pub fn add(&mut self, t_ms: u64, node: &str, record: &Record) {
        if matches!(record, Record::Sample) {
            return;
        }
        self.buffer.clear();
        self.buffer = postcard::to_extend(&(t_ms, node, record), std::mem::take(&mut self.buffer))
            .expect("postcard encodes every record: no maps with non-string keys, no floats NaN");
        self.hasher.update(&self.buffer);
        self.count += 1;
    }

    /// Fold in a note that is not a record (what a run was told, e.g. its ablations).
    pub fn add_note(&mut self, note: &str) {
        self.hasher.update(b"note:");
        self.hasher.update(note.as_bytes());
    }

    /// Number of records folded in.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The hex digest so far.
    pub fn hex(&self) -> String {
        let digest = self.hasher.clone().finalize();
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}
