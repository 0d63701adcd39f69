//! The persisted search index of a project: what `search` loads to answer in milliseconds.
//!
//! One file per set of servers and overrides (`$XDG_CACHE_HOME/mcp-launch/search-<key>.idx`,
//! the key hashing every enabled server's identity and the overrides file), so projects with
//! other configs never see each other's tools. It holds the exposed tools only (denied ones
//! out, overridden descriptions in) and stays fresh while its oldest server check is younger
//! than the tool index TTL; then, or on `--refresh`, it is rebuilt from [`resolve`] (fresh
//! servers from the tool index, the rest live). Servers that failed during a build are listed
//! as unavailable, so a broken server does not force a live check on every search.
//! Depends on the pure `search` module; `search` knows nothing of catalogs.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::config::ServerEntry;
use crate::search::{SearchIndex, ToolDoc};

use super::approvals::Approvals;
use super::expose::{expose, ExposedTool};
use super::fingerprint::{fnv1a, server_identity};
use super::index::unix_secs;
use super::overrides::Overrides;
use super::preflight::{ServerReport, Status};
use super::resolve::{resolve, ResolveOptions};

/// Marks the file's format; another prefix means rebuild.
const MAGIC: &[u8; 8] = b"MCPLSRC1";

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    /// Seconds since the epoch of the oldest server check the index was built from.
    oldest_check: u64,
    /// Servers that failed during the build.
    unavailable: Vec<String>,
    /// The server of each tool the overrides deny (not searched).
    #[serde(default)]
    denied: Vec<String>,
    /// The tools whose definitions differed from the approved ones at the build.
    #[serde(default)]
    changed: Vec<ChangedTool>,
}

/// A tool whose definition was not the approved one when the index was built, and the approved
/// digest it was compared with: a `tool approve` since replaces that digest, and the mark goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangedTool {
    /// The server's name as searched (qualified where two stacks share it).
    pub server: String,
    /// The tool's name.
    pub tool: String,
    stack: String,
    config_name: String,
    /// The approved digest at the build (`None`: the approvals could not be read).
    approved: Option<String>,
    /// Pinned strictly: the gateway withholds it until approved.
    pub withheld: bool,
}

impl ChangedTool {
    /// Still changed under the approvals as they are now.
    fn still(&self, approvals: &Approvals) -> bool {
        if approvals.problem().is_some() {
            return true;
        }
        let now = approvals.approved(&self.stack, &self.config_name, &self.tool);
        now.map(|a| &a.digest) == self.approved.as_ref()
    }
}

/// A loaded (or freshly built) search index for a set of servers.
pub struct SearchCatalog {
    /// The index to query.
    pub index: SearchIndex,
    /// Servers whose tools are missing because they failed when the index was built.
    pub unavailable: Vec<String>,
    /// The server of each tool the overrides deny (not searched; `search` says how many).
    pub denied: Vec<String>,
    /// Tools changed since approved when the index was built (see [`SearchCatalog::changed`]).
    changed: Vec<ChangedTool>,
    /// Where the index is kept (its tool vectors are kept beside it).
    pub(crate) path: Option<PathBuf>,
    /// The checksum of the index's encoding: what the vectors beside it were lined up with.
    pub(crate) fingerprint: u64,
}

impl SearchCatalog {
    /// The persisted index for `entries` under `overrides` when it is fresh (nothing else is
    /// read or started), else a rebuilt one (saved for the next search).
    pub async fn open(entries: &[ServerEntry], overrides: &Overrides, refresh: bool) -> Self {
        let opts = ResolveOptions::from_env(refresh).without_tokens();
        let path = index_path(entries, overrides);
        if !refresh {
            if let Some(found) = path.as_deref().and_then(|p| load(p, opts.ttl)) {
                return found;
            }
        }
        let (header, mut built) = build(entries, overrides, &opts).await;
        let encoded = built.index.to_bytes();
        built.fingerprint = fingerprint_of(&encoded).unwrap_or_default();
        if let Some(path) = &path {
            save(path, &header, &encoded);
            prune_others(path, opts.ttl);
        }
        built.path = path;
        built
    }

    /// The changes since approved among `found` (server, tool) pairs, as the approvals say now;
    /// the approvals file is read only when the index holds a change.
    pub fn changed<'a>(
        &'a self,
        found: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Vec<Option<&'a ChangedTool>> {
        let approvals = (!self.changed.is_empty()).then(Approvals::load);
        found
            .into_iter()
            .map(|(server, tool)| {
                let approvals = approvals.as_ref()?;
                let change = self
                    .changed
                    .iter()
                    .find(|c| c.server == server && c.tool == tool)?;
                change.still(approvals).then_some(change)
            })
            .collect()
    }
}

async fn build(
    entries: &[ServerEntry],
    overrides: &Overrides,
    opts: &ResolveOptions,
) -> (Header, SearchCatalog) {
    let now = SystemTime::now();
    let reports = resolve(entries, opts).await;
    let exposed = expose(&reports, overrides).await;
    let approvals = Approvals::load();
    let mut docs = Vec::new();
    let mut denied = Vec::new();
    let mut changed = Vec::new();
    let mut oldest = unix_secs(now);
    for (report, tools) in reports.iter().zip(&exposed) {
        if !report.has_tools() {
            continue;
        }
        oldest = oldest.min(report.checked_at.map_or(unix_secs(now), unix_secs));
        let refused = tools.iter().filter(|t| !t.is_allowed);
        denied.extend(refused.map(|_| report.name.clone()));
        changed.extend(changes(report, tools, &approvals));
        docs.extend(
            tools
                .iter()
                .filter(|t| t.is_allowed)
                .map(|t| ToolDoc::from_definition(&report.name, &t.definition)),
        );
    }
    let unavailable: Vec<String> = reports
        .iter()
        .filter(|r| r.status == Status::Error)
        .map(|r| r.name.clone())
        .collect();
    let index = tokio::task::spawn_blocking(move || SearchIndex::build(docs))
        .await
        .unwrap_or_else(|_| SearchIndex::build(Vec::new()));
    let header = Header {
        oldest_check: oldest,
        unavailable: unavailable.clone(),
        denied: denied.clone(),
        changed: changed.clone(),
    };
    let catalog = SearchCatalog {
        index,
        unavailable,
        denied,
        changed,
        path: None,
        fingerprint: 0,
    };
    (header, catalog)
}

/// The searched tools of `report` whose definitions are not the approved ones.
fn changes<'a>(
    report: &'a ServerReport,
    tools: &'a [ExposedTool],
    approvals: &'a Approvals,
) -> impl Iterator<Item = ChangedTool> + 'a {
    let changed = tools
        .iter()
        .filter(|t| t.is_allowed && t.approval.is_changed());
    changed.map(move |t| ChangedTool {
        server: report.name.clone(),
        tool: t.name.clone(),
        stack: report.stack.clone(),
        config_name: report.config_name.clone(),
        approved: approvals
            .approved(&report.stack, &report.config_name, &t.name)
            .map(|a| a.digest.clone()),
        withheld: t.is_withheld,
    })
}

/// Where the index of this set of servers and overrides lives.
fn index_path(entries: &[ServerEntry], overrides: &Overrides) -> Option<PathBuf> {
    let servers: Vec<_> = entries
        .iter()
        .filter(|e| !e.disabled)
        .map(|e| json!([e.qualified, server_identity(e)]))
        .collect();
    let key = json!([servers, overrides.fingerprint()]).to_string();
    let dir = dirs::cache_dir()?.join("mcp-launch");
    Some(dir.join(format!("search-{:016x}.idx", fnv1a(key.as_bytes()))))
}

fn load(path: &Path, ttl: std::time::Duration) -> Option<SearchCatalog> {
    let bytes = bytes::Bytes::from(std::fs::read(path).ok()?);
    tracing::debug!(bytes = bytes.len(), "search index read");
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    let header: Header = serde_json::from_slice(rest.get(..len)?).ok()?;
    let index = bytes.slice_ref(rest.get(len..)?);
    let age = unix_secs(SystemTime::now()).saturating_sub(header.oldest_check);
    if age >= ttl.as_secs() {
        return None;
    }
    let fingerprint = fingerprint_of(&index).unwrap_or_default();
    match SearchIndex::from_bytes(index) {
        Ok(index) => Some(SearchCatalog {
            index,
            unavailable: header.unavailable,
            denied: header.denied,
            changed: header.changed,
            path: Some(path.to_path_buf()),
            fingerprint,
        }),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "the search index is unreadable; rebuilding it");
            None
        }
    }
}

/// The checksum an encoded index carries (after its magic and version).
fn fingerprint_of(encoded: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(
        *encoded.get(12..20)?.first_chunk::<8>()?,
    ))
}

fn save(path: &Path, header: &Header, encoded: &[u8]) {
    let header_bytes = serde_json::to_vec(header).unwrap_or_default();
    let mut bytes = Vec::with_capacity(header_bytes.len() + 64 * 1024);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(header_bytes.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&header_bytes);
    bytes.extend_from_slice(encoded);
    if let Err(e) = crate::files::write_private(path, &bytes) {
        tracing::warn!(path = %path.display(), error = %e, "could not save the search index");
    }
}

/// Removes other projects' search indexes that have expired (they would be rebuilt anyway).
fn prune_others(keep: &Path, ttl: std::time::Duration) {
    let Some(dir) = keep.parent() else { return };
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    for file in listing.flatten() {
        let path = file.path();
        // Indexes, and the tool vectors kept beside them.
        let is_index = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.starts_with("search-") && (n.ends_with(".idx") || n.ends_with(".vec"))
        });
        let expired = file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > ttl);
        let beside_kept = path.with_extension("") == keep.with_extension("")
            || path.file_stem().and_then(|s| Path::new(s).file_stem()) == keep.file_stem();
        if is_index && expired && path != keep && !beside_kept {
            let _ = std::fs::remove_file(path);
        }
    }
}
