//! Trusting a directory before running what its files say.
//!
//! A config file found by discovery in the working directory, and a `./.env` there, may come
//! with someone else's checkout: the config's commands run as the user, and a `.env` can set
//! variables servers read. Careful tools ask once (Claude Code's "trust this folder?", direnv's
//! `allow`); so do we. Such files are used only after `mcp-launch trust` recorded the directory
//! with a hash of their content; any change to them asks again. A file named with `--config` or
//! `--env-file`, and the home directory's files, are the user's own choice and need no trust.
//!
//! The project's overrides (`./.mcp-launch/overrides.json`: servers switched on, descriptions
//! agents read) come with a checkout too: they are used only when their digest is recorded,
//! by `mcp-launch trust` or by our own commands that wrote them ([`TrustPolicy::trust_overrides`]).
//!
//! The store is `trusted.json` in the user's config directory (`$XDG_CONFIG_HOME/mcp-launch/`),
//! written atomically.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The files of one directory that need the user's trust, and their content's hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The directory, canonical.
    pub dir: PathBuf,
    /// The files, in the order hashed (a discovered config, then `.env`).
    pub files: Vec<PathBuf>,
    /// SHA-256 over each file's name and content.
    pub fingerprint: String,
}

impl Subject {
    /// The subject made of `files` (existing ones only) in `dir`; `None` when there is none.
    pub fn of(dir: &Path, files: &[PathBuf]) -> Option<Subject> {
        let files: Vec<PathBuf> = files.iter().filter(|f| f.is_file()).cloned().collect();
        if files.is_empty() {
            return None;
        }
        let mut hash = Sha256::new();
        for file in &files {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            let content = std::fs::read(file).unwrap_or_default();
            hash.update((name.len() as u64).to_le_bytes());
            hash.update(name.as_bytes());
            hash.update((content.len() as u64).to_le_bytes());
            hash.update(&content);
        }
        Some(Subject {
            dir: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
            files,
            fingerprint: hex(&hash.finalize()),
        })
    }
}

/// The SHA-256 of `bytes`, in hex: what trust records of an overrides file.
pub fn digest(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where trust is recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TrustPolicy {
    /// The store at this path (normally [`TrustPolicy::from_user_dirs`]).
    Store(PathBuf),
    /// No store could be located (no config or home directory): nothing is trusted.
    #[default]
    Nowhere,
    /// Everything is trusted: only for `mcp-launch trust` itself, to show what it is about to
    /// trust.
    Everything,
}

impl TrustPolicy {
    /// The user's store: `$XDG_CONFIG_HOME/mcp-launch/trusted.json` (or the platform's config
    /// directory).
    pub fn from_user_dirs() -> TrustPolicy {
        match dirs::config_dir() {
            Some(dir) => TrustPolicy::Store(dir.join("mcp-launch").join("trusted.json")),
            None => TrustPolicy::Nowhere,
        }
    }

    /// True when `subject` was trusted with exactly this content.
    pub fn trusts(&self, subject: &Subject) -> bool {
        let path = match self {
            TrustPolicy::Store(path) => path,
            TrustPolicy::Nowhere => return false,
            TrustPolicy::Everything => return true,
        };
        read(path)
            .entries
            .get(&key(&subject.dir))
            .is_some_and(|fingerprint| *fingerprint == subject.fingerprint)
    }

    /// The policy a project's overrides are checked against: the user's store. In this crate's
    /// unit tests, everything: they write overrides in temporary directories, and must neither
    /// depend on nor touch the user's store (the binary's tests check the policy).
    pub fn for_overrides() -> TrustPolicy {
        if cfg!(test) {
            TrustPolicy::Everything
        } else {
            TrustPolicy::from_user_dirs()
        }
    }

    /// True when the overrides of `project_dir` were trusted (or written by us) with exactly
    /// the content whose [`digest`] is `digest`.
    pub fn trusts_overrides(&self, project_dir: &Path, digest: &str) -> bool {
        let path = match self {
            TrustPolicy::Store(path) => path,
            TrustPolicy::Nowhere => return false,
            TrustPolicy::Everything => return true,
        };
        read(path)
            .overrides
            .get(&key(&canonical(project_dir)))
            .is_some_and(|recorded| recorded == digest)
    }

    /// Records the overrides of `project_dir` with content digest `digest` as trusted. A
    /// no-op for [`TrustPolicy::Everything`].
    pub fn trust_overrides(&self, project_dir: &Path, digest: &str) -> std::io::Result<()> {
        if *self == TrustPolicy::Everything {
            return Ok(());
        }
        self.change(|store| {
            store
                .overrides
                .insert(key(&canonical(project_dir)), digest.to_string());
        })
    }

    /// Records `subject` as trusted (replacing an earlier record of its directory).
    pub fn trust(&self, subject: &Subject) -> std::io::Result<()> {
        self.change(|store| {
            store
                .entries
                .insert(key(&subject.dir), subject.fingerprint.clone());
        })
    }

    /// Forgets `dir`; true when it was trusted.
    pub fn revoke(&self, dir: &Path) -> std::io::Result<bool> {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let mut removed = false;
        self.change(|store| {
            let config = store.entries.remove(&key(&dir)).is_some();
            let overrides = store.overrides.remove(&key(&dir)).is_some();
            removed = config || overrides;
        })?;
        Ok(removed)
    }

    /// The store's path, for messages.
    pub fn path(&self) -> Option<&Path> {
        match self {
            TrustPolicy::Store(path) => Some(path),
            TrustPolicy::Nowhere | TrustPolicy::Everything => None,
        }
    }

    fn change(&self, apply: impl FnOnce(&mut Store)) -> std::io::Result<()> {
        let TrustPolicy::Store(path) = self else {
            return Err(std::io::Error::other(
                "no config directory to keep trusted directories in (set HOME or XDG_CONFIG_HOME)",
            ));
        };
        let mut store = read(path);
        apply(&mut store);
        write(path, &store)
    }
}

fn canonical(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

fn key(dir: &Path) -> String {
    dir.to_string_lossy().into_owned()
}

/// Trusted directories and the fingerprint each was trusted with.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Store {
    /// Directory → fingerprint of its discovered config and `.env`.
    #[serde(default)]
    entries: BTreeMap<String, String>,
    /// Directory → digest of its `.mcp-launch/overrides.json`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    overrides: BTreeMap<String, String>,
}

/// The store; a missing or unreadable one trusts nothing.
fn read(path: &Path) -> Store {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn write(path: &Path, store: &Store) -> std::io::Result<()> {
    crate::files::write(path, &serde_json::to_vec_pretty(store)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_holds_for_the_content_it_was_given_only() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("p");
        std::fs::create_dir(&project).unwrap();
        let config = project.join(".mcp.json");
        let env = project.join(".env");
        std::fs::write(&config, "{}").unwrap();
        let policy = TrustPolicy::Store(root.path().join("store/trusted.json"));
        let subject = Subject::of(&project, &[config.clone(), env.clone()]).unwrap();
        assert_eq!(
            subject.files,
            std::slice::from_ref(&config),
            "only existing files"
        );
        assert!(!policy.trusts(&subject));
        policy.trust(&subject).unwrap();
        assert!(policy.trusts(&Subject::of(&project, &[config.clone(), env.clone()]).unwrap()));
        // A new .env, or a changed config, asks again.
        std::fs::write(&env, "NODE_OPTIONS=--require ./evil.js\n").unwrap();
        assert!(!policy.trusts(&Subject::of(&project, &[config.clone(), env.clone()]).unwrap()));
        std::fs::remove_file(&env).unwrap();
        std::fs::write(&config, "{\"mcpServers\": {}}").unwrap();
        assert!(!policy.trusts(&Subject::of(&project, std::slice::from_ref(&config)).unwrap()));
        assert!(policy.revoke(&project).unwrap());
        assert!(!policy.revoke(&project).unwrap());
        assert!(!TrustPolicy::Nowhere.trusts(&subject));
    }

    #[test]
    fn overrides_are_trusted_for_their_digest_only_and_revoked_with_the_directory() {
        let root = tempfile::tempdir().unwrap();
        let policy = TrustPolicy::Store(root.path().join("store/trusted.json"));
        let (first, second) = (digest(b"{}"), digest(b"{\"version\": 1}"));
        assert!(!policy.trusts_overrides(root.path(), &first));
        policy.trust_overrides(root.path(), &first).unwrap();
        assert!(policy.trusts_overrides(root.path(), &first));
        assert!(!policy.trusts_overrides(root.path(), &second));
        assert!(policy.revoke(root.path()).unwrap());
        assert!(!policy.trusts_overrides(root.path(), &first));
        assert!(TrustPolicy::Everything.trusts_overrides(root.path(), &second));
    }
}
