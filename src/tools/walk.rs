//! Walking a tree the way every tool does: gitignore-aware, hidden files skipped, symlinks not
//! followed (a link out of the roots is never entered), and bounded in time and files.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ignore::WalkBuilder;

/// How far one operation may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time of one call: a client waits for the answer, and a slow disk must not hang it.
    pub deadline: Duration,
    /// Files and directories one call may visit (~/.cargo/registry/src has ~150,000).
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_secs(20),
            max_entries: 2_000_000,
        }
    }
}

/// The walker every tool uses from `start`.
pub(crate) fn walker(start: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(start);
    builder.follow_links(false);
    builder
}

/// Counts entries and time against [`Limits`]; shared by the walking threads.
pub(crate) struct Bounds {
    limits: Limits,
    started: Instant,
    visited: AtomicUsize,
    is_out_of_time: AtomicBool,
}

impl Bounds {
    pub fn new(limits: Limits) -> Bounds {
        Bounds {
            limits,
            started: Instant::now(),
            visited: AtomicUsize::new(0),
            is_out_of_time: AtomicBool::new(false),
        }
    }

    /// Counts one entry; false once a bound is reached (the walk should stop).
    pub fn visit(&self) -> bool {
        let visited = self.visited.fetch_add(1, Ordering::Relaxed) + 1;
        if visited > self.limits.max_entries {
            return false;
        }
        // Checking the clock every 64 entries keeps it off the hot path.
        if visited.is_multiple_of(64) && self.started.elapsed() > self.limits.deadline {
            self.is_out_of_time.store(true, Ordering::Relaxed);
        }
        !self.is_out_of_time.load(Ordering::Relaxed)
    }

    /// Why the walk stopped early, if it did.
    pub fn stopped(&self) -> Option<String> {
        if self.is_out_of_time.load(Ordering::Relaxed) {
            Some(format!(
                "after {}",
                humantime::format_duration(self.limits.deadline)
            ))
        } else if self.visited.load(Ordering::Relaxed) > self.limits.max_entries {
            Some(format!(
                "after {} files",
                crate::output::thousands(self.limits.max_entries)
            ))
        } else {
            None
        }
    }
}
