//! The tool index: each server's tools as last seen live, in the user cache dir, so `list`,
//! `inspect` and `search` can answer without starting anything.
//!
//! Entries are keyed by `stack/name` and carry the server's identity (a hash of its
//! definition, see [`server_identity`]); an entry answers only while that identity matches and
//! it is younger than the TTL (24 h unless `MCP_LAUNCH_INDEX_TTL` says otherwise). Only servers
//! that connected are recorded. A refresh replaces one entry and keeps the others; tools that
//! vanish are remembered as stale names. The file is a cache: a corrupt or unreadable one is
//! rebuilt with a warning, never a crash; writes are atomic (temp file + rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::ServerEntry;
use crate::duration::Setting;

use super::fingerprint::server_identity;
use super::needs::{self, Listing, Needs};
use super::preflight::{ItemLists, ServerReport, Status};
use super::tool;

/// Bumped when the file's shape changes; another version is ignored (and rebuilt).
const FORMAT_VERSION: u32 = 1;

/// How long an entry answers for its server by default.
pub const DEFAULT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Environment variable overriding the TTL: `90s`, `30m`, `12h`, `7d`, or seconds; `0`
/// disables answering from the index.
pub const TTL_ENV: &str = "MCP_LAUNCH_INDEX_TTL";

/// Stale tool names remembered per server at most (a server that renames tools on every start
/// must not grow the file forever).
const MAX_STALE: usize = 200;

/// One server as last seen live.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexEntry {
    /// The server's identity when it was checked.
    pub identity: String,
    /// When it was checked, in seconds since the Unix epoch.
    pub checked_at: u64,
    /// `stdio`, `http` or `sse`.
    pub transport: String,
    /// The protocol version it chose.
    pub protocol_version: Option<String>,
    /// Time to its `initialize` answer, in milliseconds.
    pub init_ms: Option<u64>,
    /// Tool definitions as sent.
    pub tools: Vec<Value>,
    /// Token cost of each tool, parallel to `tools` (empty if not counted).
    pub tool_tokens: Vec<usize>,
    /// Names of tools it offered before and no longer does.
    #[serde(default)]
    pub stale: Vec<String>,
    /// Warnings of that check.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The client capabilities the tools were listed with (absent: not recorded, an older
    /// file). A gateway, which offers its servers more, can tell a listing made for less.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed_with: Option<Value>,
    /// Its resources, resource templates and prompts at the check (absent: not listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<ItemLists>,
    /// The client capabilities of the plainest listing known, when plainer than
    /// `listed_with` (the richest): see [`super::needs`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plainest: Option<Value>,
    /// The tools only a richer listing showed, with the client capabilities each needs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub needs: Needs,
}

impl IndexEntry {
    /// Its tools and the capabilities behind them.
    fn listing(&self) -> Listing {
        Listing {
            tools: self.tools.clone(),
            tool_tokens: self.tool_tokens.clone(),
            listed_with: self.listed_with.clone(),
            plainest: self.plainest.clone(),
            needs: self.needs.clone(),
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    servers: BTreeMap<String, IndexEntry>,
}

/// The index file, loaded.
pub struct ToolIndex {
    path: Option<PathBuf>,
    file: IndexFile,
    /// Keys of the entries recorded since the last save (what a save merges into the file).
    recorded: std::collections::BTreeSet<String>,
}

impl ToolIndex {
    /// The index in the user cache dir (`$XDG_CACHE_HOME/mcp-launch/tool-index.json`); empty
    /// when there is none, or when it is unreadable (with a warning).
    pub fn open() -> Self {
        Self::open_at(dirs::cache_dir().map(|d| d.join("mcp-launch").join("tool-index.json")))
    }

    /// The index at `path` (`None`: an in-memory index that is never saved).
    pub fn open_at(path: Option<PathBuf>) -> Self {
        let file = path.as_deref().map(read_file).unwrap_or_default();
        Self {
            path,
            file,
            recorded: std::collections::BTreeSet::new(),
        }
    }

    /// The entry for `entry` if it matches the server's identity and is younger than `ttl`.
    pub fn fresh(
        &self,
        entry: &ServerEntry,
        ttl: Duration,
        now: SystemTime,
    ) -> Option<&IndexEntry> {
        let found = self.file.servers.get(&key(entry))?;
        let identity = server_identity(entry)?;
        let age = unix_secs(now).saturating_sub(found.checked_at);
        (found.identity == identity && Duration::from_secs(age) < ttl).then_some(found)
    }

    /// Records a live check and returns the server's stale tool names. Only connected servers
    /// are recorded; tools the previous entry had and this one lacks become stale names (until
    /// they come back).
    pub fn record(
        &mut self,
        entry: &ServerEntry,
        report: &ServerReport,
        now: SystemTime,
    ) -> Vec<String> {
        let (Status::Connected, Some(identity)) = (report.status, server_identity(entry)) else {
            return Vec::new();
        };
        let key = key(entry);
        let current: std::collections::HashSet<&str> =
            report.tools.iter().map(tool::name).collect();
        let previous = self.file.servers.get(&key);
        let same = previous
            .filter(|p| p.identity == identity)
            .map(IndexEntry::listing);
        let listed = Listing {
            tools: report.tools.clone(),
            tool_tokens: report.tool_tokens.clone(),
            listed_with: report.listed_with.clone(),
            ..Listing::default()
        };
        let (listing, mut vanished) = needs::merge(same.as_ref(), listed);
        if let Some(other) = previous.filter(|p| p.identity != identity) {
            // Another definition of the server: what it listed before and not now is stale.
            vanished.extend(other.tools.iter().map(tool::name).map(str::to_owned));
        }
        let mut stale: Vec<String> = Vec::new();
        let before = previous.map(|p| p.stale.clone()).unwrap_or_default();
        for name in before.into_iter().chain(vanished) {
            if !current.contains(name.as_str()) && !stale.contains(&name) {
                stale.push(name);
            }
        }
        stale.truncate(MAX_STALE);
        // A check that did not list them (the gateway's own) keeps the last lists.
        let items = report.items.clone().or_else(|| {
            let previous = self.file.servers.get(&key)?;
            (previous.identity == identity).then(|| previous.items.clone())?
        });
        self.recorded.insert(key.clone());
        self.file.servers.insert(
            key,
            IndexEntry {
                identity,
                checked_at: unix_secs(now),
                transport: report.transport.to_string(),
                protocol_version: report.protocol_version.clone(),
                init_ms: report.init_time.map(|t| t.as_millis() as u64),
                tools: listing.tools,
                tool_tokens: listing.tool_tokens,
                stale: stale.clone(),
                warnings: report.warnings.clone(),
                listed_with: listing.listed_with,
                items,
                plainest: listing.plainest,
                needs: listing.needs,
            },
        );
        stale
    }

    /// The protocol version `entry` last spoke, when the entry is still the server's (its
    /// identity unchanged), however old: the era a connect reuses instead of probing.
    pub fn protocol_version_of(&self, entry: &ServerEntry) -> Option<&str> {
        let found = self.file.servers.get(&key(entry))?;
        (Some(&found.identity) == server_identity(entry).as_ref())
            .then_some(found.protocol_version.as_deref())
            .flatten()
    }

    /// What the tools of `entry` need of their client, as far as the listings recorded tell.
    pub fn needs_of(&self, entry: &ServerEntry) -> Needs {
        let found = self.file.servers.get(&key(entry));
        found.map(|f| f.needs.clone()).unwrap_or_default()
    }

    /// Merges the entries recorded since the last save into the file as it is now (another
    /// process may have recorded other servers meanwhile), under the file's lock, and writes it
    /// atomically. Failures are logged: the index is a cache and the command's answer does not
    /// depend on it.
    pub fn save(&mut self) {
        let Some(path) = &self.path else { return };
        if self.recorded.is_empty() {
            return;
        }
        let mine = &self.file.servers;
        let recorded = &self.recorded;
        let mut merged = None;
        let written = crate::files::update_locked(path, |current| {
            let mut file = current.map_or_else(IndexFile::default, |b| parse(path, &b));
            file.version = FORMAT_VERSION;
            for key in recorded {
                if let Some(entry) = mine.get(key) {
                    file.servers.insert(key.clone(), entry.clone());
                }
            }
            let bytes = serde_json::to_vec(&file).ok();
            merged = Some(file);
            bytes
        });
        match written {
            Ok(()) => {
                self.file = merged.unwrap_or_default();
                self.recorded.clear();
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "could not save the tool index")
            }
        }
    }
}

/// How long an entry stays fresh, as a user sets it through [`TTL_ENV`]: zero (always check
/// live) to a year.
pub const TTL: Setting = Setting::new(TTL_ENV, DEFAULT_TTL, Duration::ZERO, MAX_TTL);

/// The longest TTL accepted: an index older than a year says nothing about today's servers.
const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The TTL from `MCP_LAUNCH_INDEX_TTL`, or [`DEFAULT_TTL`].
pub fn ttl_from_env() -> Duration {
    TTL.from_env_or_default()
}

/// Builds the report a fresh entry gives a client offering `offered`: `Status::Cached`, no
/// process started, the tools it can call; `None` when the entry was listed only for clients
/// offering more (see [`super::needs`]).
pub(crate) fn cached_report(
    entry: &ServerEntry,
    found: &IndexEntry,
    offered: &Value,
) -> Option<ServerReport> {
    let (tools, tool_tokens) = needs::visible(&found.listing(), offered)?;
    let mut report = ServerReport::blank(entry, super::preflight::transport_of(entry));
    report.status = Status::Cached;
    report.tools = tools;
    report.tool_tokens = tool_tokens;
    report.needs = found.needs.clone();
    report.init_time = found.init_ms.map(Duration::from_millis);
    report.protocol_version = found.protocol_version.clone();
    report.warnings = found.warnings.clone();
    report.stale = found.stale.clone();
    report.checked_at = Some(UNIX_EPOCH + Duration::from_secs(found.checked_at));
    report.listed_with = found.listed_with.clone();
    report.items = found.items.clone();
    Some(report)
}

fn key(entry: &ServerEntry) -> String {
    format!("{}/{}", entry.stack, entry.name)
}

pub(crate) fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn read_file(path: &Path) -> IndexFile {
    match std::fs::read(path) {
        Ok(bytes) => parse(path, &bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => IndexFile::default(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "cannot read the tool index; rebuilding it");
            IndexFile::default()
        }
    }
}

/// The index in `bytes`; another format version or a corrupt file reads as empty (rebuilt).
fn parse(path: &Path, bytes: &[u8]) -> IndexFile {
    match serde_json::from_slice::<IndexFile>(bytes) {
        Ok(file) if file.version == FORMAT_VERSION => file,
        Ok(_) => IndexFile::default(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "the tool index is corrupt; rebuilding it");
            IndexFile::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServerSpec;
    use serde_json::json;

    fn entry(arg: &str) -> ServerEntry {
        ServerEntry {
            name: "srv".into(),
            qualified: "srv".into(),
            stack: "stack".into(),
            line: None,
            disabled: false,
            spec: Ok(ServerSpec::Stdio {
                command: "cmd".into(),
                args: vec![arg.into()],
                env: vec![],
                cwd: None,
            }),
        }
    }

    fn connected(entry: &ServerEntry, tools: &[&str]) -> ServerReport {
        let mut r = ServerReport::blank(entry, "stdio");
        r.status = Status::Connected;
        r.tools = tools.iter().map(|n| json!({"name": n})).collect();
        r.tool_tokens = vec![5; tools.len()];
        r
    }

    #[test]
    fn a_check_records_its_capabilities_and_items_and_one_without_items_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx.json");
        let (now, e) = (SystemTime::now(), entry("a"));
        let mut index = ToolIndex::open_at(Some(path.clone()));
        let mut checked = connected(&e, &["t1"]);
        checked.listed_with = Some(json!({}));
        let prompts = vec![json!({"name": "p"})];
        checked.items = Some([("prompts".to_string(), prompts.clone())].into());
        index.record(&e, &checked, now);
        let mut relisted = connected(&e, &["t1", "t2"]);
        relisted.listed_with = Some(json!({"sampling": {}}));
        index.record(&e, &relisted, now);
        index.save();

        let index = ToolIndex::open_at(Some(path));
        let found = index.fresh(&e, Duration::from_secs(60), now).unwrap();
        let report = cached_report(&e, found, &json!({"sampling": {}})).unwrap();
        assert_eq!(report.listed_with, Some(json!({"sampling": {}})));
        assert_eq!(report.items.unwrap()["prompts"], prompts);
    }

    /// Issue 24 (Low 13): the index (tools and identities) was readable by every user.
    #[test]
    fn the_index_file_is_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx.json");
        let e = entry("a");
        let mut index = ToolIndex::open_at(Some(path.clone()));
        index.record(&e, &connected(&e, &["t1"]), SystemTime::now());
        index.save();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
    }

    #[test]
    fn fresh_until_the_ttl_or_the_identity_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx.json");
        let now = SystemTime::now();
        let e = entry("a");
        let mut index = ToolIndex::open_at(Some(path.clone()));
        index.record(&e, &connected(&e, &["t1"]), now);
        index.save();

        let index = ToolIndex::open_at(Some(path));
        let ttl = Duration::from_secs(3600);
        assert!(index.fresh(&e, ttl, now).is_some());
        assert!(index
            .fresh(&e, ttl, now + Duration::from_secs(3599))
            .is_some());
        assert!(
            index
                .fresh(&e, ttl, now + Duration::from_secs(3600))
                .is_none(),
            "expired"
        );
        assert!(
            index.fresh(&entry("b"), ttl, now).is_none(),
            "identity changed"
        );
        assert!(
            index.fresh(&e, Duration::ZERO, now).is_none(),
            "TTL 0 disables"
        );
    }

    #[test]
    fn two_processes_recording_different_servers_keep_both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx.json");
        let now = SystemTime::now();
        let (a, mut b) = (entry("a"), entry("b"));
        b.name = "other".into();
        // Both opened before either saved: each holds the file as it was.
        let mut first = ToolIndex::open_at(Some(path.clone()));
        let mut second = ToolIndex::open_at(Some(path.clone()));
        first.record(&a, &connected(&a, &["t1"]), now);
        second.record(&b, &connected(&b, &["t2"]), now);
        first.save();
        second.save();
        let index = ToolIndex::open_at(Some(path));
        assert!(index.fresh(&a, DEFAULT_TTL, now).is_some(), "first kept");
        assert!(index.fresh(&b, DEFAULT_TTL, now).is_some(), "second kept");
        // The saver sees the merged file too.
        assert!(second.fresh(&a, DEFAULT_TTL, now).is_some());
    }

    #[test]
    fn errors_are_not_recorded_and_vanished_tools_turn_stale() {
        let e = entry("a");
        let now = SystemTime::now();
        let mut index = ToolIndex::open_at(None);
        index.record(&e, &ServerReport::blank(&e, "stdio"), now);
        assert!(index.fresh(&e, DEFAULT_TTL, now).is_none());

        index.record(&e, &connected(&e, &["keep", "gone"]), now);
        index.record(&e, &connected(&e, &["keep", "new"]), now);
        assert_eq!(
            index.fresh(&e, DEFAULT_TTL, now).unwrap().stale,
            vec!["gone"]
        );
        index.record(&e, &connected(&e, &["keep", "gone"]), now);
        assert_eq!(
            index.fresh(&e, DEFAULT_TTL, now).unwrap().stale,
            vec!["new"]
        );
    }

    #[test]
    fn a_corrupt_or_foreign_file_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idx.json");
        std::fs::write(&path, b"{broken").unwrap();
        let e = entry("a");
        let mut index = ToolIndex::open_at(Some(path.clone()));
        assert!(index.fresh(&e, DEFAULT_TTL, SystemTime::now()).is_none());
        index.record(&e, &connected(&e, &["t"]), SystemTime::now());
        index.save();
        assert!(ToolIndex::open_at(Some(path.clone()))
            .fresh(&e, DEFAULT_TTL, SystemTime::now())
            .is_some());
        std::fs::write(&path, br#"{"version": 999, "servers": {}}"#).unwrap();
        assert!(ToolIndex::open_at(Some(path))
            .fresh(&e, DEFAULT_TTL, SystemTime::now())
            .is_none());
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["idx.json", "idx.json.lock"],
            "no temp files left behind"
        );
    }

    #[test]
    fn ttl_parsing() {
        assert_eq!(TTL.parse("90"), Ok(Duration::from_secs(90)));
        assert_eq!(TTL.parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(TTL.parse("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(TTL.parse("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(TTL.parse("7d"), Ok(Duration::from_secs(604_800)));
        assert_eq!(TTL.parse("0"), Ok(Duration::ZERO));
        assert!(TTL.parse("soon").is_err());
        // Multiplied without a check before: 2^64/86400 days wrapped around.
        assert!(TTL.parse("213503982334601d").is_err());
        assert!(TTL.parse("366d").is_err());
    }
}
