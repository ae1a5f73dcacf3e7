//! Atomic file writes: a report file is either the previous complete version or the new
//! complete version, never a torn mix, whatever happens to the process mid-write.
//!
//! The rule: write everything to `<path>.tmp` in the same folder (a rename is atomic only
//! within one file system), `sync_all` it so its bytes are on disk before the rename makes
//! them visible, then rename it over `path`.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The temporary file that [`write_file`] and [`write_with`] fill before renaming:
/// `<path>.tmp`, next to `path`.
pub(crate) fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Write `bytes` to `path` atomically.
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |out| out.write_all(bytes))
}

/// Stream a file into place atomically: `fill` writes to a buffered temporary file; only if it
/// returns `Ok` is the file synced and renamed over `path`. On any error the temporary file is
/// removed and `path` is left as it was.
pub(crate) fn write_with<F>(path: &Path, fill: F) -> io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let temporary = temporary_path(path);
    let result = fill_and_sync(&temporary, fill).and_then(|()| fs::rename(&temporary, path));
    match result {
        Ok(()) => {
            sync_parent_folder(path);
            Ok(())
        }
        Err(error) => {
            // The temporary file is garbage now; a failure to remove it must not hide the
            // error that caused it, so the removal's own result is deliberately dropped.
            let _ = fs::remove_file(&temporary);
            Err(error)
        }
    }
}

fn fill_and_sync<F>(temporary: &Path, fill: F) -> io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let mut out = BufWriter::new(File::create(temporary)?);
    fill(&mut out)?;
    let file = out.into_inner().map_err(|error| error.into_error())?;
    file.sync_all()
}

/// Make the rename itself durable by syncing the folder entry. This is best effort: some
/// platforms cannot open a folder as a file, and the file's content is already synced, so a
/// failure here only weakens durability after a power loss, never atomicity.
fn sync_parent_folder(path: &Path) {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if let Ok(folder) = File::open(parent) {
        let _ = folder.sync_all();
    }
}
