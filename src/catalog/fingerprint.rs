//! Stable fingerprints: what keys the token cache and the tool index.
//!
//! A server's identity is a keyed hash (HMAC-SHA256) under a per-user secret kept owner-only
//! beside the caches: the definition it hashes holds resolved env values and headers, and an
//! unkeyed 64-bit hash of those let another user recover a short password by trying them all.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::config::{ServerEntry, ServerSpec};

/// 64-bit FNV-1a: stable across runs and Rust versions (unlike `DefaultHasher`), and plenty
/// for keying cache entries.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A server's identity: its stack, name and everything that decides what runs (command, args,
/// env, cwd) or where it lives (url, headers). Any change gives another identity, so the tool
/// index never answers for a server whose definition moved. `None` for an unusable entry.
///
/// Only the keyed hash is stored: env values and headers often hold secrets.
pub fn server_identity(entry: &ServerEntry) -> Option<String> {
    let spec = entry.spec.as_ref().ok()?;
    let what = match spec {
        ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => json!(["stdio", command, args, env, cwd]),
        ServerSpec::Http { url, headers, .. } => json!(["http", url, headers]),
        ServerSpec::Sse { url, headers } => json!(["sse", url, headers]),
    };
    let definition = json!([entry.stack, entry.name, what]).to_string();
    Some(hex(
        &hmac_sha256(identity_key(), definition.as_bytes())[..16]
    ))
}

/// The file of the per-user identity key, beside the caches it keys.
const KEY_FILE: &str = "identity.key";

/// The per-user secret of [`server_identity`], read once per process: from the cache dir's
/// owner-only key file, created with 32 random bytes when missing (the first of two racing
/// processes wins; the other reads its key). Without a usable cache dir, a key for this process
/// only: identities then match nothing recorded, and the caches are rebuilt, never trusted.
fn identity_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| {
        let path = dirs::cache_dir().map(|d| d.join("mcp-launch").join(KEY_FILE));
        path.and_then(|p| load_or_create_key(&p))
            .unwrap_or_else(random_key)
    })
}

/// The key stored at `path`, created owner-only when missing; `None` (logged) when unusable.
fn load_or_create_key(path: &Path) -> Option<[u8; 32]> {
    if let Some(key) = read_key(path) {
        return Some(key);
    }
    let fresh = random_key();
    match crate::files::create_new_private(path, &fresh) {
        Ok(()) => Some(fresh),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(path),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot store the identity key; the tool index is not reused");
            None
        }
    }
}

/// The key at `path` when it is a regular file of 32 bytes that only its owner can read (one
/// others can read is no secret: a fresh key for this process instead).
fn read_key(path: &Path) -> Option<[u8; 32]> {
    use std::io::Read;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(path = %PathBuf::from(path).display(), "the identity key is not owner-only; ignored");
        return None;
    }
    let mut key = [0u8; 32];
    file.read_exact(&mut key).ok()?;
    Some(key)
}

fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    // getrandom fails only on a broken OS; a panic with the reason beats a guessable key.
    getrandom::fill(&mut key).expect("the operating system's random source failed");
    key
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key` (one block long at most).
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut padded = [0u8; BLOCK];
    padded[..key.len()].copy_from_slice(key);
    let pad = |byte: u8| padded.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(args: &[&str]) -> ServerEntry {
        ServerEntry {
            name: "s".into(),
            qualified: "s".into(),
            stack: "st".into(),
            line: None,
            disabled: false,
            spec: Ok(ServerSpec::Stdio {
                command: "cmd".into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: vec![("TOKEN".into(), "secret".into())],
                cwd: None,
            }),
        }
    }

    #[test]
    fn identity_follows_the_definition() {
        let a = server_identity(&entry(&["x"])).unwrap();
        assert_eq!(a, server_identity(&entry(&["x"])).unwrap());
        assert_ne!(a, server_identity(&entry(&["y"])).unwrap());
        let mut other_stack = entry(&["x"]);
        other_stack.stack = "other".into();
        assert_ne!(a, server_identity(&other_stack).unwrap());
        assert!(!a.contains("secret"));
    }

    /// Issue 24 (Low 13): the identity was the unkeyed FNV of the definition, so anyone who
    /// could read the index could test guesses of the secrets in it.
    #[test]
    fn identity_is_keyed_not_a_plain_hash_of_the_secrets() {
        let e = entry(&["x"]);
        let identity = server_identity(&e).unwrap();
        let ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } = e.spec.as_ref().unwrap()
        else {
            unreachable!()
        };
        let definition = json!([e.stack, e.name, json!(["stdio", command, args, env, cwd])]);
        let unkeyed = format!("{:016x}", fnv1a(definition.to_string().as_bytes()));
        assert_ne!(
            identity, unkeyed,
            "the identity can be recomputed without the key"
        );
        assert_eq!(identity.len(), 32);
    }

    #[test]
    fn hmac_matches_the_rfc_4231_vector() {
        // RFC 4231 test case 2, with its 4-byte key zero-padded to our 32 (HMAC pads it so).
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex(&hmac_sha256(&key, b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_key_file_is_owner_only_and_a_readable_one_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-launch").join(KEY_FILE);
        let key = load_or_create_key(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            load_or_create_key(&path),
            Some(key),
            "the same key next time"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read_key(&path), None);
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
