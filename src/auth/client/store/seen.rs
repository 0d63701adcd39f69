//! The store as this process last read it. Every request to a remote server asks for its
//! token: reading and parsing the file (and asking the keyring) per request was a quarter of
//! the gateway's upstream HTTP client's instructions per call (issue 23). The file's metadata
//! is read instead, and the file again only when that changed: every writer replaces the
//! file whole (`files::write_private`: a new file renamed over it), so a login, refresh or
//! logout by any process — this one included — is seen by the next request.
//!
//! Held in memory: the access token, its expiry, whether the keyring withheld it. Nothing here
//! is logged (no `Debug`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;

/// What a request needs of a grant.
#[derive(Clone)]
pub(super) struct Held {
    pub(super) access_token: String,
    expires_at: Option<u64>,
    /// Its secrets are in a keyring that did not give them (see `Grant::lacks_secrets`).
    pub(super) lacks_secrets: bool,
}

impl Held {
    /// Whether the access token is expired or about to be.
    pub(super) fn expires_soon(&self) -> bool {
        super::expires_soon(self.expires_at)
    }
}

/// Which version of the file was read: a replaced file is a new inode; its size and times
/// tell a rewrite in place (which no writer of ours does) too.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    /// The file's stamp; `None` when there is no file (nothing stored).
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            device: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        })
    }
}

/// The grants read from one version of the file, by URL (`None`: none stored for it).
struct Seen {
    stamp: Option<Stamp>,
    grants: HashMap<String, Option<Held>>,
}

/// By the store's path (one in a process; tests have their own), compared as bytes.
static SEEN: Mutex<Vec<(OsString, Seen)>> = Mutex::new(Vec::new());

/// Stores kept at most: more are forgotten all at once.
const MAX_STORES: usize = 8;

fn seen() -> std::sync::MutexGuard<'static, Vec<(OsString, Seen)>> {
    SEEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the store at `path` holds for `url`, with its secrets: as read before while the file
/// is the same, else read now.
pub(super) async fn held(path: &Path, url: &str) -> Option<Held> {
    // The stamp is taken before the read: a file replaced in between is read again next time.
    let stamp = Stamp::of(path);
    {
        let seen = seen();
        let same = seen
            .iter()
            .find(|(at, _)| at == path.as_os_str())
            .filter(|(_, s)| s.stamp == stamp);
        if let Some(held) = same.and_then(|(_, s)| s.grants.get(url)) {
            return held.clone();
        }
    }
    let held = match stamp {
        None => None,
        Some(_) => read(path, url).await,
    };
    let mut stores = seen();
    let at = match stores.iter().position(|(at, _)| at == path.as_os_str()) {
        Some(at) => at,
        None => {
            if stores.len() >= MAX_STORES {
                stores.clear();
            }
            let empty = Seen {
                stamp,
                grants: HashMap::new(),
            };
            stores.push((path.as_os_str().to_owned(), empty));
            stores.len() - 1
        }
    };
    let store = &mut stores[at].1;
    if store.stamp != stamp {
        *store = Seen {
            stamp,
            grants: HashMap::new(),
        };
    }
    store.grants.insert(url.to_string(), held.clone());
    held
}

/// The grant of `url` in the file at `path`, with its secrets.
async fn read(path: &Path, url: &str) -> Option<Held> {
    let grant = super::read_at(path).remove(url)?;
    let grant = super::with_secrets(grant).await;
    Some(Held {
        lacks_secrets: grant.lacks_secrets(),
        expires_at: grant.expires_at,
        access_token: grant.access_token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::client::Grant;

    fn grant(url: &str, token: &str) -> Grant {
        serde_json::from_value(serde_json::json!({
            "server": "prot", "url": url, "resource": url, "issuer": "https://as.example",
            "token_endpoint": "https://as.example/token", "client_id": "c",
            "access_token": token, "expires_at": 4_000_000_000u64, "obtained_at": 1,
        }))
        .unwrap()
    }

    fn store(path: &Path, grants: &[Grant]) {
        let map: super::super::Grants = grants.iter().map(|g| (g.url.clone(), g.clone())).collect();
        crate::files::write_private(path, &serde_json::to_vec(&map).unwrap()).unwrap();
    }

    fn token(held: Option<Held>) -> Option<String> {
        held.map(|held| held.access_token)
    }

    /// A login, a refresh and a logout by another process (the file replaced or removed) are
    /// what the next request sees; the same file is not read again.
    #[tokio::test]
    async fn a_token_another_process_stored_is_used_once_the_store_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let (url, other) = ("https://a.example/mcp", "https://b.example/mcp");
        assert_eq!(token(held(&path, url).await), None, "nothing stored");

        store(&path, &[grant(url, "first")]);
        assert_eq!(token(held(&path, url).await).as_deref(), Some("first"));
        assert_eq!(token(held(&path, other).await), None);

        // Another process refreshes: same size, a new file.
        store(&path, &[grant(url, "fresh"), grant(other, "b")]);
        assert_eq!(token(held(&path, url).await).as_deref(), Some("fresh"));
        assert_eq!(token(held(&path, other).await).as_deref(), Some("b"));

        std::fs::remove_file(&path).unwrap();
        assert_eq!(token(held(&path, url).await), None, "logged out");
    }

    /// While the file is the one read, it is not read again: its contents are what this
    /// process saw (here changed behind its back, keeping every stamp, which no writer does).
    #[tokio::test]
    async fn an_unchanged_store_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let url = "https://c.example/mcp";
        store(&path, &[grant(url, "kept")]);
        assert_eq!(token(held(&path, url).await).as_deref(), Some("kept"));
        let stamp = Stamp::of(&path);
        // The same stamp with other contents: what a read per request would notice.
        let memory = Some(Held {
            access_token: "from memory".into(),
            expires_at: None,
            lacks_secrets: false,
        });
        {
            let mut stores = seen();
            let at = stores.iter().position(|(at, _)| at == path.as_os_str());
            stores[at.unwrap()].1.grants.insert(url.to_string(), memory);
        }
        assert!(stamp == Stamp::of(&path));
        assert_eq!(
            token(held(&path, url).await).as_deref(),
            Some("from memory")
        );
    }
}
