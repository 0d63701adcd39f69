//! The key `serve --http` uses on loopback when none is given: kept owner-only in the state
//! directory, made on first use (the one time it is shown), reused after.

/// The fewest characters a key may have: shorter ones are guessed too fast.
pub const MIN_KEY_LEN: usize = 16;

/// A key kept in a file (see [`stored_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// The key.
    pub key: String,
    /// True when this call generated it (the one time it may be shown).
    pub is_new: bool,
}

/// The key kept owner-only (0600) at `path`, generated and stored on first use, so that a
/// loopback listener has a key by default and clients keep working across restarts
/// (loopback is not a user boundary: any local user can connect). A file others may read,
/// or that holds no usable key, is refused rather than trusted or replaced.
pub fn stored_key(path: &std::path::Path) -> std::io::Result<StoredKey> {
    if let Some(key) = read_key(path)? {
        return Ok(StoredKey { key, is_new: false });
    }
    let key = crate::auth::generate_key();
    match crate::files::create_new_private(path, key.as_bytes()) {
        Ok(()) => Ok(StoredKey { key, is_new: true }),
        // Another process made it meanwhile: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(StoredKey {
            key: read_key(path)?.ok_or(e)?,
            is_new: false,
        }),
        Err(e) => Err(e),
    }
}

/// The key in `path`; `None` when there is no file.
fn read_key(path: &std::path::Path) -> std::io::Result<Option<String>> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let bad = |why: &str| {
        std::io::Error::other(format!(
            "{} {why}: remove it, and a new key is made",
            path.display()
        ))
    };
    if !meta.is_file() {
        return Err(bad("is not a regular file"));
    }
    if meta.mode() & 0o077 != 0 || meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(bad("is readable by others or not yours"));
    }
    let text = std::fs::read_to_string(path)?;
    let key = text.trim();
    if key.len() < MIN_KEY_LEN || !key.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(bad("holds no usable key"));
    }
    Ok(Some(key.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_key_is_made_once_owner_only_and_reused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/serve-key");
        let first = stored_key(&path).unwrap();
        assert!(first.is_new);
        assert_eq!(first.key.len(), crate::auth::KEY_LEN);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = stored_key(&path).unwrap();
        assert_eq!(
            (again.key.as_str(), again.is_new),
            (first.key.as_str(), false)
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = stored_key(&path).unwrap_err();
        assert!(err.to_string().contains("readable by others"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "short").unwrap();
        assert!(stored_key(&path).is_err(), "a weak key is refused");
    }
}
