//! Reading a client's file, backing it up and writing it back through [`crate::files`], keeping
//! it as private as it was (`~/.claude.json` holds account data; configs hold API keys).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::ClientError;

/// The file a symlink points to (dotfile managers link configs), so the rename replaces the
/// real file rather than the link; `path` itself when it is no link or the target is missing.
pub(super) fn resolve(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// The file's text, or `None` when it does not exist yet.
pub(super) fn read(path: &Path) -> Result<Option<String>, ClientError> {
    let unreadable = |reason: String| ClientError::Unreadable {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| unreadable("not UTF-8".into())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unreadable(e.to_string())),
    }
}

/// Whether no one but the owner may read the file (its backup and new version stay so);
/// `None` when it does not exist.
pub(super) fn is_private(path: &Path) -> Option<bool> {
    let meta = std::fs::metadata(path).ok()?;
    Some(meta.permissions().mode() & 0o077 == 0)
}

/// Copies the old text to `<file>.bak-<UTC time>` (`-2`, `-3`… when that name is taken); never
/// replaces an earlier backup.
pub(super) fn backup(path: &Path, old: &[u8], private: bool) -> Result<PathBuf, ClientError> {
    let stamp: String = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    for n in 1..100 {
        let suffix = if n == 1 {
            String::new()
        } else {
            format!("-{n}")
        };
        let candidate = path.with_file_name(format!("{name}.bak-{stamp}{suffix}"));
        let made = if private {
            crate::files::create_new_private(&candidate, old)
        } else {
            crate::files::create_new(&candidate, old)
        };
        match made {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(write_error(&candidate, e)),
        }
    }
    let last = path.with_file_name(format!("{name}.bak-{stamp}-99"));
    Err(write_error(&last, io::ErrorKind::AlreadyExists.into()))
}

/// Writes the new text atomically, private when the old file was.
pub(super) fn write(path: &Path, text: &[u8], private: bool) -> Result<(), ClientError> {
    let written = if private {
        crate::files::write_private(path, text)
    } else {
        crate::files::write(path, text)
    };
    written.map_err(|e| write_error(path, e))
}

fn write_error(path: &Path, e: io::Error) -> ClientError {
    ClientError::Write {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}
