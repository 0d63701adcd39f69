//! The handle store: full outputs kept on disk so a client can read what a budget cut.
//!
//! One file per handle in `$XDG_STATE_HOME/mcp-launch/outputs/` (0700 directory, 0600 files,
//! written atomically through `crate::files`): a one-line JSON header (the reader's scope as
//! a hash, creation time, kind, size, lines) and the body. Handles are content-addressed
//! (`h_` + 24 hex digits of SHA-256 over scope, kind and body), so the same output for the
//! same client is kept once, and a handle names no file of another client: the scope is in
//! the hash and checked again on read. The file's mtime is its creation (expiry), its atime
//! the last use (eviction, least recently used first, once the store is over its cap).
//!
//! With a shared state store (`serve --http --state redis://…`, [`crate::state`]) the same
//! record — header line and body — is kept at `mcp-launch:output:<handle>` instead, written
//! once (`SET NX`) to expire after the TTL, so a handle cut on one replica reads through any
//! other; the cap is then Redis's own (`maxmemory`, docs/DEPLOY.md).

use std::fs::{File, FileTimes};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::OutputsError;
use crate::state::Redis;

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

/// A handle opened for reading: its header, and the record positioned at the body.
pub(crate) struct Opened {
    pub header: Header,
    pub body: Box<dyn BufRead + Send>,
}

/// The store of full outputs behind handles.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    ttl: Duration,
    max_bytes: u64,
    /// The shared store the records live in instead of `dir`, with `--state`.
    shared: Option<Arc<Redis>>,
}

impl Store {
    /// The user's store: `$XDG_STATE_HOME/mcp-launch/outputs` (else the local data dir).
    /// With a shared state store installed ([`crate::state::install`]), the records go there.
    pub fn open_default() -> Result<Store, OutputsError> {
        let store = Store::open(&crate::files::state_dir().join("outputs"))?;
        Ok(match crate::state::shared() {
            Some(shared) => store.in_shared(shared),
            None => store,
        })
    }

    /// The same store keeping its records in `shared` (the directory is then unused).
    pub fn in_shared(mut self, shared: Arc<Redis>) -> Store {
        self.shared = Some(shared);
        self
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
            shared: None,
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
        if let Some(shared) = &self.shared {
            let record = record_of(scope, kind, body, created);
            let key = Redis::key("output", &handle);
            let left = self
                .ttl
                .saturating_sub(created.elapsed().unwrap_or_default());
            shared
                .blocking(shared.put(&key, &record, Some(left), true))
                .map_err(OutputsError::Shared)?;
            return Ok(handle);
        }
        let path = self.dir.join(&handle);
        let fresh = std::fs::metadata(&path)
            .ok()
            .and_then(|m| m.modified().ok())
            .is_some_and(|made| !self.is_expired(made, SystemTime::now()));
        if fresh {
            touch(&path);
        } else {
            let bytes = record_of(scope, kind, body, created);
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
        if let Some(shared) = &self.shared {
            let key = Redis::key("output", handle);
            let record = shared
                .blocking(shared.get(&key))
                .map_err(OutputsError::Shared)?;
            let mut body = std::io::Cursor::new(record.ok_or_else(unknown)?);
            let header = self.header_of(&mut body, handle, scope, &key)?;
            return Ok(Opened {
                header,
                body: Box::new(body),
            });
        }
        let path = self.dir.join(handle);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(unknown()),
            Err(e) => return Err(OutputsError::store(&path, e)),
        };
        let mut body = BufReader::with_capacity(1 << 20, file);
        let header = self.header_of(&mut body, handle, scope, &path)?;
        touch(&path);
        Ok(Opened {
            header,
            body: Box::new(body),
        })
    }

    /// Reads the header line of `handle`'s record at `place` and checks it is `scope`'s and
    /// fresh (an expired file is removed).
    fn header_of(
        &self,
        body: &mut impl BufRead,
        handle: &str,
        scope: &ClientScope,
        place: impl AsRef<Path>,
    ) -> Result<Header, OutputsError> {
        let unknown = || OutputsError::Unknown {
            handle: handle.to_string(),
        };
        let mut line = Vec::new();
        body.take(HEADER_MAX_BYTES)
            .read_until(b'\n', &mut line)
            .map_err(|e| OutputsError::store(place.as_ref(), e))?;
        let header: Header = serde_json::from_slice(&line).map_err(|_| unknown())?;
        if header.scope != scope.0 {
            return Err(unknown());
        }
        let created = UNIX_EPOCH + Duration::from_secs(header.created);
        if self.is_expired(created, SystemTime::now()) {
            if self.shared.is_none() {
                let _ = std::fs::remove_file(place.as_ref());
            }
            return Err(OutputsError::Expired {
                handle: handle.to_string(),
                ttl: super::envelope::human_duration(self.ttl),
            });
        }
        Ok(header)
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

/// A handle's record: its header line, then the body.
fn record_of(scope: &ClientScope, kind: Kind, body: &[u8], created: SystemTime) -> Vec<u8> {
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
    bytes
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

    /// Two replicas' stores over one Redis, each with a directory of its own: a handle put
    /// through one reads through the other, for its client only, and expires there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_handle_put_on_one_replica_reads_through_another() {
        let Some(server) = crate::state::tests::RedisServer::start() else {
            return;
        };
        use crate::error::Actionable;
        let replica = |dir: &Path| Store::open(dir).unwrap();
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let one = replica(a.path()).in_shared(Redis::connect(&server.url).await.unwrap());
        let two = replica(b.path()).in_shared(Redis::connect(&server.url).await.unwrap());
        let (alice, bob) = (ClientScope::new("alice"), ClientScope::new("bob"));
        let handle = tokio::task::spawn_blocking(move || {
            let handle = one.put(&alice, Kind::Text, b"a\nb\n").unwrap();
            assert_eq!(read_all(&two, &handle, &alice).unwrap(), b"a\nb\n");
            let err = read_all(&two, &handle, &bob).unwrap_err();
            assert!(matches!(err, OutputsError::Unknown { .. }), "{err}");
            let old = SystemTime::now() - Duration::from_secs(7200);
            let two = two.with_ttl(Duration::from_secs(3600));
            let stale = two.put_at(&alice, Kind::Text, b"old", old).unwrap();
            let err = read_all(&two, &stale, &alice).unwrap_err();
            let gone = ["expired_handle", "unknown_handle"];
            assert!(gone.contains(&err.kind()), "{err}");
            handle
        })
        .await
        .unwrap();
        assert!(
            std::fs::read_dir(a.path()).unwrap().next().is_none(),
            "no file kept"
        );
        assert!(is_handle(&handle));
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
