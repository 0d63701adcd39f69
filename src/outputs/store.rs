//! The handle store: full outputs kept on disk so a client can read what a budget cut.
//!
//! One file per handle in `$XDG_STATE_HOME/mcp-launch/outputs/` (0700 directory, 0600 files,
//! written atomically through `crate::files`): a one-line JSON header (the reader's scope as
//! a hash, creation time, kind, size, lines) and the body. Handles are content-addressed
//! (`h_` + 24 hex digits of SHA-256 over scope, kind and body), so the same output for the
//! same client is kept once, and a handle names no file of another client: the scope is in
//! the hash and checked again on read. The file's mtime is its creation (expiry), its atime
//! the last use (eviction, least recently used first, once the store is over its cap).

use std::fs::{File, FileTimes};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::OutputsError;

/// How long a handle lasts unless the store is opened with another TTL.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The store's size cap unless opened with another: past it, the least recently used
/// handles are removed.
pub const DEFAULT_MAX_BYTES: u64 = 512 << 20;

/// A header longer than this is not ours (the file is refused, never parsed further).
const HEADER_MAX_BYTES: u64 = 4096;

/// Who may read a handle: a hash of the client's identity (an HTTP session, an API key, or
/// `local` for the user's own CLI and stdio servers). The identity itself is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientScope(String);

impl ClientScope {
    /// The scope of a client known by `client_id` (a session id, a key).
    pub fn new(client_id: &str) -> ClientScope {
        let mut hash = Sha256::new();
        hash.update(b"mcp-launch/outputs/scope\0");
        hash.update(client_id.as_bytes());
        ClientScope(hex(&hash.finalize()[..16]))
    }

    /// The scope's hash (what the store and the usage record keep).
    pub fn hash(&self) -> &str {
        &self.0
    }

    /// The local user: the CLI (`call`, `output`), stdio gateways and the lean tools server.
    pub fn local() -> ClientScope {
        // Hashed once: every call of a stdio gateway is the local user's.
        static LOCAL: std::sync::LazyLock<ClientScope> =
            std::sync::LazyLock::new(|| ClientScope::new("local"));
        LOCAL.clone()
    }
}

/// What a handle holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Text, read by lines.
    Text,
    /// One JSON document, read by lines, grep or JSONPath.
    Json,
    /// One content block (an image, audio, an embedded resource) as JSON, returned whole.
    Blob,
}

/// The first line of a handle's file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Header {
    /// The format's version.
    pub v: u8,
    /// [`ClientScope`]'s hash.
    pub scope: String,
    /// Seconds since the epoch.
    pub created: u64,
    pub kind: Kind,
    /// Bytes of the body.
    pub bytes: u64,
    /// Lines of the body.
    pub lines: u64,
}

/// A handle opened for reading: its header, and the file positioned at the body.
pub(crate) struct Opened {
    pub header: Header,
    pub body: BufReader<File>,
}

/// The store of full outputs behind handles.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    ttl: Duration,
    max_bytes: u64,
}

impl Store {
    /// The user's store: `$XDG_STATE_HOME/mcp-launch/outputs` (else the local data dir).
    pub fn open_default() -> Result<Store, OutputsError> {
        Store::open(&crate::files::state_dir().join("outputs"))
    }

    /// A store in `dir` (created 0700 when missing), with the default TTL and cap.
    pub fn open(dir: &Path) -> Result<Store, OutputsError> {
        std::fs::create_dir_all(dir).map_err(|e| OutputsError::store(dir, e))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| OutputsError::store(dir, e))?;
        Ok(Store {
            dir: dir.to_path_buf(),
            ttl: DEFAULT_TTL,
            max_bytes: DEFAULT_MAX_BYTES,
        })
    }

    /// The same store with handles lasting `ttl`.
    pub fn with_ttl(mut self, ttl: Duration) -> Store {
        self.ttl = ttl;
        self
    }

    /// The same store capped at `max_bytes` in all.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Store {
        self.max_bytes = max_bytes;
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How long handles last.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Keeps `body` for `scope` and returns its handle (the same handle for the same body).
    pub fn put(
        &self,
        scope: &ClientScope,
        kind: Kind,
        body: &[u8],
    ) -> Result<String, OutputsError> {
        self.put_at(scope, kind, body, SystemTime::now())
    }

    pub(crate) fn put_at(
        &self,
        scope: &ClientScope,
        kind: Kind,
        body: &[u8],
        created: SystemTime,
    ) -> Result<String, OutputsError> {
        let handle = handle_of(scope, kind, body);
        let path = self.dir.join(&handle);
        let fresh = std::fs::metadata(&path)
            .ok()
            .and_then(|m| m.modified().ok())
            .is_some_and(|made| !self.is_expired(made, SystemTime::now()));
        if fresh {
            touch(&path);
        } else {
            let header = Header {
                v: 1,
                scope: scope.0.clone(),
                created: secs(created),
                kind,
                bytes: body.len() as u64,
                lines: super::cut::count_lines(body) as u64,
            };
            let mut bytes = serde_json::to_vec(&header).unwrap_or_default();
            bytes.push(b'\n');
            bytes.extend_from_slice(body);
            crate::files::write_private(&path, &bytes)
                .map_err(|e| OutputsError::store(&path, e))?;
            let file = File::options().write(true).open(&path);
            if let Ok(file) = file {
                let _ = file.set_times(
                    FileTimes::new()
                        .set_modified(created)
                        .set_accessed(SystemTime::now()),
                );
            }
        }
        self.sweep(&handle, SystemTime::now());
        Ok(handle)
    }

    /// Opens `handle` for `scope`: unknown, another client's and expired handles are errors
    /// (another client's reads exactly like an unknown one).
    pub(crate) fn open_handle(
        &self,
        handle: &str,
        scope: &ClientScope,
    ) -> Result<Opened, OutputsError> {
        let unknown = || OutputsError::Unknown {
            handle: handle.to_string(),
        };
        if !is_handle(handle) {
            return Err(unknown());
        }
        let path = self.dir.join(handle);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(unknown()),
            Err(e) => return Err(OutputsError::store(&path, e)),
        };
        let mut body = BufReader::with_capacity(1 << 20, file);
        let mut line = Vec::new();
        (&mut body)
            .take(HEADER_MAX_BYTES)
            .read_until(b'\n', &mut line)
            .map_err(|e| OutputsError::store(&path, e))?;
        let header: Header = serde_json::from_slice(&line).map_err(|_| unknown())?;
        if header.scope != scope.0 {
            return Err(unknown());
        }
        let created = UNIX_EPOCH + Duration::from_secs(header.created);
        if self.is_expired(created, SystemTime::now()) {
            let _ = std::fs::remove_file(&path);
            return Err(OutputsError::Expired {
                handle: handle.to_string(),
                ttl: super::envelope::human_duration(self.ttl),
            });
        }
        touch(&path);
        Ok(Opened { header, body })
    }

    fn is_expired(&self, created: SystemTime, now: SystemTime) -> bool {
        now.duration_since(created).unwrap_or_default() >= self.ttl
    }

    /// Removes expired handles, then the least recently used ones while the store is over
    /// its cap (never `keep`, the handle just written).
    fn sweep(&self, keep: &str, now: SystemTime) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut live = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(meta) = entry.metadata() else { continue };
            if !is_handle(&name) || !meta.is_file() {
                continue;
            }
            let made = meta.modified().unwrap_or(now);
            if name != keep && self.is_expired(made, now) {
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            let used = meta.accessed().unwrap_or(made);
            live.push((name, used, meta.len()));
        }
        let mut total: u64 = live.iter().map(|(_, _, len)| len).sum();
        live.sort_by_key(|(_, used, _)| *used);
        for (name, _, len) in live {
            if total <= self.max_bytes {
                break;
            }
            if name != keep && std::fs::remove_file(self.dir.join(&name)).is_ok() {
                total -= len;
            }
        }
    }
}

/// Marks a handle as just used (its atime), for eviction.
fn touch(path: &Path) {
    if let Ok(file) = File::options().write(true).open(path) {
        let _ = file.set_times(FileTimes::new().set_accessed(SystemTime::now()));
    }
}

fn secs(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

fn handle_of(scope: &ClientScope, kind: Kind, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(scope.0.as_bytes());
    hash.update([0, kind as u8, 0]);
    hash.update(body);
    format!("h_{}", hex(&hash.finalize()[..12]))
}

/// `h_` and 24 lowercase hex digits: nothing else ever reaches the file system.
pub fn is_handle(text: &str) -> bool {
    text.strip_prefix("h_").is_some_and(|hex| {
        hex.len() == 24 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(store: &Store, handle: &str, scope: &ClientScope) -> Result<Vec<u8>, OutputsError> {
        let mut opened = store.open_handle(handle, scope)?;
        let mut body = Vec::new();
        opened.body.read_to_end(&mut body).unwrap();
        Ok(body)
    }

    #[test]
    fn handles_survive_a_new_store_and_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("outputs");
        let me = ClientScope::local();
        let handle = Store::open(&root)
            .unwrap()
            .put(&me, Kind::Text, b"a\nb\n")
            .unwrap();
        assert!(is_handle(&handle), "{handle}");
        // A new store over the same directory: as after a restart.
        let again = Store::open(&root).unwrap();
        assert_eq!(read_all(&again, &handle, &me).unwrap(), b"a\nb\n");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join(&handle)), 0o600);
        assert_eq!(
            again.put(&me, Kind::Text, b"a\nb\n").unwrap(),
            handle,
            "content-addressed"
        );
    }

    #[test]
    fn another_client_cannot_read_a_handle() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let alice = ClientScope::new("session-alice");
        let bob = ClientScope::new("session-bob");
        let handle = store.put(&alice, Kind::Text, b"secret").unwrap();
        let err = read_all(&store, &handle, &bob).unwrap_err();
        assert!(matches!(err, OutputsError::Unknown { .. }), "{err}");
        assert_ne!(store.put(&bob, Kind::Text, b"secret").unwrap(), handle);
        for bad in ["../x", "h_../../etc/passwd", "h_ABC", ""] {
            assert!(matches!(
                read_all(&store, bad, &alice),
                Err(OutputsError::Unknown { .. })
            ));
        }
    }

    #[test]
    fn expired_handles_say_so_and_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path())
            .unwrap()
            .with_ttl(Duration::from_secs(3600));
        let me = ClientScope::local();
        let old = SystemTime::now() - Duration::from_secs(7200);
        let handle = store.put_at(&me, Kind::Text, b"old", old).unwrap();
        let err = read_all(&store, &handle, &me).unwrap_err();
        assert!(matches!(err, OutputsError::Expired { .. }), "{err}");
        assert!(err.to_string().contains("1 h"), "{err}");
        assert!(!dir.path().join(&handle).exists());
        // Expired handles are swept when others are written.
        let stale = store.put_at(&me, Kind::Text, b"stale", old).unwrap();
        store.put(&me, Kind::Text, b"new").unwrap();
        assert!(!dir.path().join(stale).exists());
    }

    #[test]
    fn the_least_recently_used_are_evicted_over_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap().with_max_bytes(2500);
        let me = ClientScope::local();
        let body = |c: u8| vec![c; 1000];
        let a = store.put(&me, Kind::Text, &body(b'a')).unwrap();
        let b = store.put(&me, Kind::Text, &body(b'b')).unwrap();
        // Make `a` the most recently used, `b` the least.
        let past = SystemTime::now() - Duration::from_secs(60);
        File::options()
            .write(true)
            .open(dir.path().join(&b))
            .unwrap()
            .set_times(FileTimes::new().set_accessed(past))
            .unwrap();
        let c = store.put(&me, Kind::Text, &body(b'c')).unwrap();
        assert!(dir.path().join(&a).exists());
        assert!(
            !dir.path().join(&b).exists(),
            "the least recently used goes"
        );
        assert!(dir.path().join(&c).exists());
        assert!(matches!(
            read_all(&store, &b, &me),
            Err(OutputsError::Unknown { .. })
        ));
    }
}
