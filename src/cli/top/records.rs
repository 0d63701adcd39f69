//! How `top` finds an `up` anywhere on the machine: each `up` leaves `up-<pid>.json` (0600)
//! in the user's socket directory (`gateway::daemon::runtime_dir`, 0700) while it serves —
//! its pid, its start time in clock ticks since boot (`/proc/PID/stat`), and its project's
//! directory, whose `.mcp-launch/state.json` says the rest (stacks, fronts, keys, servers).
//!
//! Gateways need no record of their own: every `serve` already listens on a socket in that
//! directory (`g-<pid>.sock`, `d-<key>.sock`), and a socket no process answers on is removed
//! when found. A record whose pid is gone, or now belongs to another process (its start time
//! differs), is removed when found too.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One `up`'s record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// `up` (the only kind that needs one; see the module doc).
    pub kind: String,
    /// Its process id.
    pub pid: i32,
    /// Its start time in clock ticks since boot (`process::start_time`), to tell a reused pid.
    pub started: Option<u64>,
    /// The project directory it runs in (its state file is under it).
    pub cwd: PathBuf,
}

/// Removes the record when `up` ends (any return path).
#[derive(Debug)]
pub struct RecordGuard {
    path: Option<PathBuf>,
}

impl Drop for RecordGuard {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Leaves this `up`'s record for `top` (failing quietly: `top` is a view, `up` must run).
pub fn announce_up(cwd: &Path) -> RecordGuard {
    let pid = std::process::id() as i32;
    let record = Record {
        kind: "up".into(),
        pid,
        started: crate::process::start_time(pid),
        cwd: cwd.to_path_buf(),
    };
    let path = crate::gateway::daemon::runtime_dir()
        .map(|dir| dir.join(format!("up-{pid}.json")))
        .ok();
    let written = path.filter(|path| {
        let bytes = serde_json::to_vec(&record).unwrap_or_default();
        crate::files::write_private(path, &bytes)
            .inspect_err(|e| tracing::debug!(error = %e, "no record for `top`"))
            .is_ok()
    });
    RecordGuard { path: written }
}

/// The live records in `dir`; stale ones (unreadable, dead pid, reused pid) are removed.
pub fn live(dir: &Path) -> Vec<Record> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut records = Vec::new();
    for path in entries.flatten().map(|e| e.path()) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.starts_with("up-") && name.ends_with(".json")) {
            continue;
        }
        match read(&path) {
            Some(record) if crate::process::is_running(record.pid, record.started) => {
                records.push(record);
            }
            _ => {
                tracing::debug!(record = %path.display(), "stale record removed");
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    records.sort_by_key(|r| r.pid);
    records
}

fn read(path: &Path) -> Option<Record> {
    let bytes = std::fs::read(path).ok()?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    // A record must carry a start time: without one a reused pid could not be told apart.
    (record.kind == "up" && record.started.is_some()).then_some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, record: &Record) {
        std::fs::write(dir.join(name), serde_json::to_vec(record).unwrap()).unwrap();
    }

    #[test]
    fn dead_and_reused_pids_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id() as i32;
        let started = crate::process::start_time(me);
        let live_one = Record {
            kind: "up".into(),
            pid: me,
            started,
            cwd: dir.path().to_path_buf(),
        };
        write(dir.path(), "up-1.json", &live_one);
        let reused = Record {
            started: started.map(|s| s + 1),
            ..live_one.clone()
        };
        write(dir.path(), "up-2.json", &reused);
        let dead = Record {
            pid: i32::MAX - 1,
            ..live_one.clone()
        };
        write(dir.path(), "up-3.json", &dead);
        std::fs::write(dir.path().join("up-4.json"), b"{not json").unwrap();
        assert_eq!(live(dir.path()), vec![live_one]);
        assert!(dir.path().join("up-1.json").exists());
        for gone in ["up-2.json", "up-3.json", "up-4.json"] {
            assert!(!dir.path().join(gone).exists(), "{gone} removed");
        }
    }
}
