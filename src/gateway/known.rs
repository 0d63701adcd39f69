//! What the gateway knows of each server's resources, templates and prompts without starting
//! it: the lists it last saw from a running server, kept in
//! `$XDG_CACHE_HOME/mcp-launch/gateway-items.json` (0600) for as long as the server's
//! definition is unchanged (the tool index's identity). A gateway answers `prompts/list` and
//! `resources/list` from it for servers that are not running, so a client sees them at once;
//! a call starts the server as usual. A cache: a failed write is logged, never an error, and
//! two gateways writing at once may drop each other's newest lists (each re-reads the file
//! and changes only its own entries). A server no gateway has listed yet starts with the lists
//! its check recorded in the tool index (`mcp-launch list` records them).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::ServerReport;
use crate::config::ServerEntry;

use super::items::Kind;

/// One server's lists, as last seen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct ServerItems {
    /// The server's definition when they were seen.
    identity: String,
    /// Item lists by kind key (`prompts`, `resources`, `resourceTemplates`).
    #[serde(default)]
    lists: BTreeMap<String, Vec<Value>>,
}

/// The cache of the gateway's servers (by qualified name).
pub struct Known {
    path: Option<PathBuf>,
    identities: HashMap<String, String>,
    items: Mutex<HashMap<String, ServerItems>>,
}

impl Known {
    /// The lists kept for `entries` whose definition is unchanged; for a server seen by
    /// none of the gateways yet, the lists its check recorded in the tool index (`reports`,
    /// parallel to `entries`).
    pub fn load(entries: &[ServerEntry], reports: &[ServerReport]) -> Known {
        let path = dirs::cache_dir().map(|d| d.join("mcp-launch").join("gateway-items.json"));
        let identities: HashMap<String, String> = entries
            .iter()
            .filter_map(|e| crate::catalog::server_identity(e).map(|id| (e.qualified.clone(), id)))
            .collect();
        let mut items = read(path.as_ref());
        items.retain(|name, kept| identities.get(name) == Some(&kept.identity));
        for (entry, report) in entries.iter().zip(reports) {
            let (Some(identity), Some(lists)) = (identities.get(&entry.qualified), &report.items)
            else {
                continue;
            };
            items
                .entry(entry.qualified.clone())
                .or_insert_with(|| ServerItems {
                    identity: identity.clone(),
                    lists: lists.clone(),
                });
        }
        Known {
            path,
            identities,
            items: Mutex::new(items),
        }
    }

    /// The `kind` items last seen from `server`.
    pub fn items(&self, server: &str, kind: Kind) -> Vec<Value> {
        let items = self
            .items
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        items
            .get(server)
            .and_then(|kept| kept.lists.get(kind.key()))
            .cloned()
            .unwrap_or_default()
    }

    /// Remembers `server`'s `kind` list as seen now; written when it changed.
    pub fn remember(&self, server: &str, kind: Kind, list: &[Value]) {
        let Some(identity) = self.identities.get(server) else {
            return;
        };
        let changed = {
            let mut items = self
                .items
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let kept = items.entry(server.to_string()).or_default();
            let mine = &mut kept.lists;
            let was = mine.insert(kind.key().to_string(), list.to_vec());
            let changed = was.as_deref() != Some(list) || kept.identity != *identity;
            kept.identity = identity.clone();
            changed.then(|| kept.clone())
        };
        if let (Some(mine), Some(path)) = (changed, &self.path) {
            save(path, server, mine);
        }
    }
}

fn read(path: Option<&PathBuf>) -> HashMap<String, ServerItems> {
    let Some(text) = path.and_then(|p| std::fs::read(p).ok()) else {
        return HashMap::new();
    };
    serde_json::from_slice(&text).unwrap_or_else(|e| {
        tracing::debug!(error = %e, "the gateway's item cache is unreadable; starting afresh");
        HashMap::new()
    })
}

/// Writes `server`'s entry into the file as it is now (others' entries kept).
fn save(path: &PathBuf, server: &str, mine: ServerItems) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let mut all = read(Some(path));
    all.insert(server.to_string(), mine);
    let written = serde_json::to_vec(&all)
        .map_err(std::io::Error::other)
        .and_then(|bytes| crate::files::write_private(path, &bytes));
    if let Err(e) = written {
        tracing::warn!(path = %path.display(), error = %e, "could not save the gateway's item cache");
    }
}
