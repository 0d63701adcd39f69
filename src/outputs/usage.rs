//! The usage record: one JSON line per tool call in `$XDG_STATE_HOME/mcp-launch/usage.jsonl`
//! (0600), rotated to `usage.jsonl.1` past [`ROTATE_BYTES`]. A line holds what a call cost —
//! tool, server, the client's scope hash, bytes and tokens sent, whether it was cut, how long
//! it took — and never its arguments or content.
//!
//! With a shared state store (`serve --http --state`), the lines go to the Redis list
//! `mcp-launch:usage:calls` instead, capped at [`SHARED_KEEP`] lines: every replica's calls in
//! one record.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{ClientScope, Stats};
use crate::state::Redis;

/// Lines the shared record keeps (the newest): as many as the two rotated files hold.
pub const SHARED_KEEP: usize = 80_000;

/// Past this size the log is rotated (the previous `.1` is dropped): two files of ~8 MB hold
/// ~80,000 calls, weeks of use, and read in milliseconds.
pub const ROTATE_BYTES: u64 = 8 << 20;

/// One call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// Seconds since the epoch, when the call ended.
    pub at: u64,
    /// The tool.
    pub tool: String,
    /// The server (`tools` for the lean tools server).
    pub server: String,
    /// The client's scope hash (never the key or session id itself).
    pub client: String,
    /// Bytes of the result as sent.
    pub bytes: usize,
    /// Bytes of the result as it came.
    pub bytes_total: usize,
    /// Tokens sent, when they were counted (results over the budget in bytes).
    pub tokens: Option<usize>,
    /// True when the result was cut.
    pub is_cut: bool,
    /// Milliseconds the call took.
    pub ms: u64,
}

impl UsageRecord {
    /// The record of a call of `server`'s `tool` by `client` that took `took`, from the
    /// stats of its budget.
    pub fn new(
        server: &str,
        tool: &str,
        client: &ClientScope,
        stats: &Stats,
        took: Duration,
    ) -> UsageRecord {
        UsageRecord {
            at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs(),
            tool: tool.to_string(),
            server: server.to_string(),
            client: client.hash().to_string(),
            bytes: stats.bytes_sent,
            bytes_total: stats.bytes_total,
            tokens: stats.tokens_sent,
            is_cut: stats.is_cut,
            ms: took.as_millis().min(u64::MAX as u128) as u64,
        }
    }
}

/// The log file.
#[derive(Debug, Clone)]
pub struct UsageLog {
    path: PathBuf,
    rotate_bytes: u64,
    /// The shared store the lines go to instead, with `--state`.
    shared: Option<Arc<Redis>>,
}

impl UsageLog {
    /// `$XDG_STATE_HOME/mcp-launch/usage.jsonl` (else the local data dir).
    /// With a shared state store installed ([`crate::state::install`]), the lines go there.
    pub fn open_default() -> UsageLog {
        let mut log = UsageLog::at(&crate::files::state_dir().join("usage.jsonl"));
        log.shared = crate::state::shared();
        log
    }

    /// The log at `path`.
    pub fn at(path: &Path) -> UsageLog {
        UsageLog {
            path: path.to_path_buf(),
            rotate_bytes: ROTATE_BYTES,
            shared: None,
        }
    }

    /// The same log rotated past `bytes`.
    pub fn with_rotate_bytes(mut self, bytes: u64) -> UsageLog {
        self.rotate_bytes = bytes;
        self
    }

    fn rotated(&self) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(".1");
        PathBuf::from(name)
    }

    /// Appends one line (one `write` on an append-only file: concurrent writers never
    /// interleave inside a line), rotating first when the log is full.
    pub fn append(&self, record: &UsageRecord) -> std::io::Result<()> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends one line per record, in one `write` on an append-only file (whole lines:
    /// concurrent writers never interleave inside one), rotating first when the log is full.
    /// A batch costs the file's handful of system calls (directory, size, open, write, close)
    /// once, not once per call.
    pub fn append_all(&self, records: &[UsageRecord]) -> std::io::Result<()> {
        if let Some(shared) = &self.shared {
            let key = Redis::key("usage", "calls");
            for record in records {
                let line = serde_json::to_vec(record)?;
                shared
                    .blocking(shared.append_capped(&key, &line, SHARED_KEEP))
                    .map_err(std::io::Error::other)?;
            }
            return Ok(());
        }
        if records.is_empty() {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        if std::fs::metadata(&self.path).is_ok_and(|m| m.len() >= self.rotate_bytes) {
            std::fs::rename(&self.path, self.rotated())?;
        }
        let mut lines = Vec::with_capacity(records.len() * 160);
        for record in records {
            serde_json::to_writer(&mut lines, record)?;
            lines.push(b'\n');
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)?;
        file.write_all(&lines)
    }

    /// The records since `since`, oldest first (unreadable lines skipped).
    pub fn read_since(&self, since: SystemTime) -> Vec<UsageRecord> {
        let from = since
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let mut records = Vec::new();
        if let Some(shared) = &self.shared {
            let lines = shared.blocking(shared.list(&Redis::key("usage", "calls")));
            for line in lines.unwrap_or_default() {
                if let Ok(record) = serde_json::from_slice::<UsageRecord>(&line) {
                    records.extend((record.at >= from).then_some(record));
                }
            }
            return records;
        }
        for path in [self.rotated(), self.path.clone()] {
            let Ok(file) = std::fs::File::open(&path) else {
                continue;
            };
            for line in BufReader::new(file).lines().map_while(Result::ok) {
                if let Ok(record) = serde_json::from_str::<UsageRecord>(&line) {
                    if record.at >= from {
                        records.push(record);
                    }
                }
            }
        }
        records
    }
}

/// Totals of one server's tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageTotal {
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// Calls.
    pub calls: usize,
    /// Calls whose result was cut.
    pub cut: usize,
    /// Bytes sent.
    pub bytes: usize,
    /// Bytes the results had before cuts.
    pub bytes_total: usize,
    /// Tokens sent, over the calls that counted them.
    pub tokens: usize,
    /// Calls whose tokens were counted (a result within its budget is not, unless the
    /// tokenizer was loaded anyway): `tokens` covers these only.
    pub counted: usize,
    /// Median duration, milliseconds.
    pub p50_ms: u64,
}

/// Totals per server and tool, most bytes first.
pub fn totals(records: &[UsageRecord]) -> Vec<UsageTotal> {
    let mut groups: BTreeMap<(String, String), (UsageTotal, Vec<u64>)> = BTreeMap::new();
    for r in records {
        let (total, times) = groups
            .entry((r.server.clone(), r.tool.clone()))
            .or_insert_with(|| {
                (
                    UsageTotal {
                        server: r.server.clone(),
                        tool: r.tool.clone(),
                        ..UsageTotal::default()
                    },
                    Vec::new(),
                )
            });
        total.calls += 1;
        total.cut += usize::from(r.is_cut);
        total.bytes += r.bytes;
        total.bytes_total += r.bytes_total;
        total.tokens += r.tokens.unwrap_or(0);
        total.counted += usize::from(r.tokens.is_some());
        times.push(r.ms);
    }
    let mut out: Vec<UsageTotal> = groups
        .into_values()
        .map(|(mut total, mut times)| {
            times.sort_unstable();
            total.p50_ms = times[times.len() / 2];
            total
        })
        .collect();
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.tool.cmp(&b.tool)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn record(tool: &str, at: u64, bytes: usize, is_cut: bool) -> UsageRecord {
        UsageRecord {
            at,
            tool: tool.into(),
            server: "tools".into(),
            client: ClientScope::local().hash().into(),
            bytes,
            bytes_total: bytes * 2,
            tokens: Some(bytes / 4),
            is_cut,
            ms: bytes as u64,
        }
    }

    #[test]
    fn appends_rotates_and_reads_since() {
        let dir = tempfile::tempdir().unwrap();
        let log = UsageLog::at(&dir.path().join("state/usage.jsonl")).with_rotate_bytes(400);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        for i in 0..6 {
            log.append(&record("grep", now - 100 + i, 100 + i as usize, i % 2 == 0))
                .unwrap();
        }
        log.append(&record("cat", now - 10_000, 5, false)).unwrap();
        let mode = std::fs::metadata(dir.path().join("state/usage.jsonl"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(dir.path().join("state/usage.jsonl.1").exists(), "rotated");
        let recent = log.read_since(SystemTime::now() - Duration::from_secs(1000));
        assert!(recent.iter().all(|r| r.tool == "grep"));
        let all = log.read_since(UNIX_EPOCH);
        let totals = totals(&all);
        let grep = totals.iter().find(|t| t.tool == "grep").unwrap();
        assert!(grep.calls >= 3 && grep.cut >= 1);
        let text = std::fs::read_to_string(dir.path().join("state/usage.jsonl")).unwrap();
        assert!(!text.contains("pattern") && !text.contains("arguments"));
    }
}
