//! The key `serve --http` uses on loopback when none is given: kept owner-only in the state
//! directory, made on first use (the one time it is shown), reused after.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::serve::{AuthMode, ServeArgs};
use super::CliError;

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

/// A non-loopback address needs a key of at least [`crate::auth::MIN_KEY_LEN`] characters:
/// the gateway runs tools on this machine.
fn refuse_open_without_key(addr: SocketAddr, key: Option<&str>) -> Result<(), CliError> {
    refuse_short_key(addr, key, addr.ip().is_loopback())
}

/// As [`refuse_open_without_key`], `is_local` saying whether only this machine reaches the
/// listener (false with a tunnel, on loopback too).
fn refuse_short_key(addr: SocketAddr, key: Option<&str>, is_local: bool) -> Result<(), CliError> {
    let min = crate::auth::MIN_KEY_LEN;
    let length = key.map_or(0, |k| k.chars().count());
    if is_local || length >= min {
        return Ok(());
    }
    let message = match length {
        0 => format!("--http {addr} is reachable from other machines and no key is set"),
        n => format!("--http {addr} is reachable from other machines and its key has {n} characters (at least {min} needed)"),
    };
    Err(CliError::Usage {
        message,
        help: format!(
            "set --api-key KEY (or MCP_LAUNCH_API_KEY) to a random key of {min}+ characters, e.g. this fresh one: {}; or bind 127.0.0.1",
            crate::auth::generate_key()
        ),
    })
}

/// Where the key of `serve --http` on loopback is kept when none is given.
fn key_file() -> PathBuf {
    crate::files::state_dir().join("serve-key")
}

/// The key HTTP clients must send: `--api-key`; none with `--no-auth` (loopback only, warned);
/// else on loopback the kept one (loopback is not a user boundary: any local user can
/// connect, and the gateway runs tools as you). Off loopback a key must be given.
/// With a tunnel the listener is public: a key given must be long enough there too (the kept
/// one is).
pub(super) fn http_key(
    addr: SocketAddr,
    args: &ServeArgs,
    tunnel: bool,
) -> Result<Option<String>, CliError> {
    let given = args.api_key.as_deref().filter(|k| !k.is_empty());
    match (tunnel, given) {
        (true, Some(_)) => refuse_short_key(addr, given, false)?,
        _ => refuse_open_without_key(addr, given)?,
    }
    if let Some(key) = given {
        return Ok(Some(key.to_string()));
    }
    if args.no_auth || args.auth == Some(AuthMode::None) {
        eprintln!(
            "mcp-launch serve: warning: --no-auth: any user of this machine can call every tool \
             at http://{addr}/mcp"
        );
        return Ok(None);
    }
    let path = key_file();
    let stored = stored_key(&path).map_err(|e| CliError::Usage {
        message: format!("no key for --http: {e}"),
        help: "fix or remove the key file, or pass --api-key KEY".into(),
    })?;
    if stored.is_new {
        eprintln!(
            "mcp-launch serve: a key for HTTP clients, shown this once: {}\n  kept owner-only in \
             {}; clients send `Authorization: Bearer <key>` (`mcp-launch serve --http {addr} \
             --print-config CLIENT` puts it into a client's config)",
            stored.key,
            path.display()
        );
    } else {
        eprintln!(
            "mcp-launch serve: clients send the key kept in {} as `Authorization: Bearer <key>`",
            path.display()
        );
    }
    Ok(Some(stored.key))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Low 14 of issue 24: `serve --http 0.0.0.0:… --api-key a` was accepted.
    #[test]
    fn a_short_key_is_refused_off_loopback_with_a_fresh_one_offered() {
        let open: SocketAddr = "0.0.0.0:8000".parse().unwrap();
        let Err(CliError::Usage { message, help }) = refuse_open_without_key(open, Some("a"))
        else {
            panic!("a one-character key was accepted off loopback");
        };
        assert!(message.contains("1 characters"), "{message}");
        let offered = help
            .split("fresh one: ")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap();
        assert_eq!(offered.len(), crate::auth::KEY_LEN, "{help}");
        assert!(refuse_open_without_key(open, None).is_err());
        assert!(refuse_open_without_key(open, Some("0123456789abcdef")).is_ok());
        let loopback: SocketAddr = "127.0.0.1:8000".parse().unwrap();
        assert!(refuse_open_without_key(loopback, Some("a")).is_ok());
    }

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
