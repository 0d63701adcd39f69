//! Atomic file writes: every file the catalog writes (tool index, token counts, search index,
//! overrides) is written to a temporary file beside its target, flushed to disk, then renamed
//! into place, so a reader sees the old file or the new one, never half of one.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// Writes `value` as compact JSON to `path`, atomically.
pub(crate) fn write_atomically<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    write_bytes_atomically(path, &serde_json::to_vec(value)?)
}

/// Writes `bytes` to `path`, atomically (parent directories created when missing).
pub(crate) fn write_bytes_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, 0o644)
}

/// Like [`write_bytes_atomically`], readable and writable by the owner only (0600): for files
/// that hold keys. The temporary file is created with that mode, so the secret is never
/// readable by others, not even for a moment.
pub(crate) fn write_private_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, 0o600)
}

fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    // Unique per process and write, so two writers never share a temporary file.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("f.json");
        write_bytes_atomically(&path, b"one").unwrap();
        write_atomically(&path, &serde_json::json!({"two": 2})).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"two":2}"#);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn private_files_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_private_atomically(&path, b"{}").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
