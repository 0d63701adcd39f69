//! One embedder of tool vectors at a time, across processes.
//!
//! A first embedding of a big catalog takes minutes (10,000 tools on two cores). `list` and
//! `up` start a detached `model embed` after a live check; `search --wait`, a foreground
//! `model embed` and the gateway embed too. They take turns on one lock per model
//! (`$XDG_CACHE_HOME/mcp-launch/embed-<model>.lock`, through `files::lock`): whoever holds it
//! reads the vector cache only then, so a turn after another's embeds only what is still
//! missing (usually nothing). A background embedder that finds the lock held leaves at once
//! ([`try_turn`]): the holder is doing the work.
//!
//! The holder keeps one line in the lock file, `pid done total`, rewritten in place while it
//! embeds (the lock file is a note, not data: no atomic rename is needed, and a reader that
//! catches it half-written only misses one figure), so a `search` that ranks by words
//! meanwhile can say how far the embedder is ([`at_work`]).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use nix::fcntl::Flock;

use crate::search::semantic::Model;

/// How often the holder rewrites its note and calls its progress callback while embedding.
const REPORT_EVERY: Duration = Duration::from_millis(250);

/// How far an embedding is: `done` of `total` tools, by process `pid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The embedding process.
    pub pid: u32,
    /// Tools embedded so far.
    pub done: usize,
    /// Tools it set out to embed.
    pub total: usize,
}

/// The turn to embed a model's tool vectors: held until dropped.
pub struct Turn {
    /// `None` when there is no cache directory to keep a lock in (nothing is cached either).
    lock: Option<Flock<File>>,
}

/// Waits for the turn to embed `model`'s vectors (the embedder at work, if any, finishes
/// first). Without a lock file to take (no cache directory, an unwritable one), the turn is
/// taken without one: embedding twice is slower, not wrong.
pub fn turn(model: &Model) -> Turn {
    let lock = lock_path(model).and_then(|path| {
        crate::files::lock(&path)
            .map_err(|e| tracing::debug!(error = %e, "embedding without the embedder's lock"))
            .ok()
    });
    Turn { lock }
}

/// The turn when no other process has it; `Err` with the holder's progress (when it wrote
/// one yet) when another embedder is at work.
pub fn try_turn(model: &Model) -> Result<Turn, Option<Progress>> {
    let Some(path) = lock_path(model) else {
        return Ok(Turn { lock: None });
    };
    match crate::files::try_lock(&path) {
        Ok(Some(lock)) => Ok(Turn { lock: Some(lock) }),
        Ok(None) => Err(read_note(&path)),
        Err(e) => {
            tracing::debug!(error = %e, "embedding without the embedder's lock");
            Ok(Turn { lock: None })
        }
    }
}

/// Whether another process is embedding `model`'s vectors now (`Some`), and how far it is.
pub fn at_work(model: &Model) -> Option<Option<Progress>> {
    try_turn(model).err()
}

impl Turn {
    /// Runs `work` (an embedding of `total` tools that adds one to the counter it is given per
    /// tool), keeping the note in the lock file and calling `show` every [`REPORT_EVERY`], at
    /// the start and at the end.
    pub fn embedding<R>(
        &self,
        total: usize,
        show: &(dyn Fn(Progress) + Sync),
        work: impl FnOnce(&AtomicUsize) -> R,
    ) -> R {
        let done = AtomicUsize::new(0);
        let finished = AtomicBool::new(false);
        let report = |done: usize| {
            let progress = Progress {
                pid: std::process::id(),
                done,
                total,
            };
            self.write_note(progress);
            show(progress);
        };
        report(0);
        let result = std::thread::scope(|scope| {
            let reporter = scope.spawn(|| {
                while !finished.load(Ordering::Relaxed) {
                    std::thread::park_timeout(REPORT_EVERY);
                    if !finished.load(Ordering::Relaxed) {
                        report(done.load(Ordering::Relaxed));
                    }
                }
            });
            let result = work(&done);
            finished.store(true, Ordering::Relaxed);
            reporter.thread().unpark();
            result
        });
        report(done.load(Ordering::Relaxed));
        result
    }

    /// Rewrites the note in place: fixed-width fields, so a shorter line never leaves the end
    /// of a longer one behind.
    fn write_note(&self, progress: Progress) {
        let Some(lock) = &self.lock else {
            return;
        };
        let line = format!(
            "{:>10} {:>10} {:>10}\n",
            progress.pid, progress.done, progress.total
        );
        if let Err(e) = lock.write_all_at(line.as_bytes(), 0) {
            tracing::debug!(error = %e, "could not note the embedding's progress");
        }
    }
}

/// `$XDG_CACHE_HOME/mcp-launch/embed-<model>.lock` (its directory made); `None` without a
/// usable cache directory.
fn lock_path(model: &Model) -> Option<PathBuf> {
    let dir = dirs::cache_dir()?.join("mcp-launch");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        tracing::debug!(dir = %dir.display(), error = %e, "no directory for the embedder's lock");
        return None;
    }
    let name = super::vectors::file_safe(&model.card().name);
    Some(dir.join(format!("embed-{name}.lock")))
}

/// The holder's note, when it wrote a whole one.
fn read_note(path: &std::path::Path) -> Option<Progress> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut fields = text.split_whitespace().map(str::parse::<usize>);
    let (pid, done, total) = (fields.next()?, fields.next()?, fields.next()?);
    Some(Progress {
        pid: u32::try_from(pid.ok()?).ok()?,
        done: done.ok()?,
        total: total.ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_embedding_is_shown_from_none_done_to_all_done_and_noted_in_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embed-x.lock");
        let turn = Turn {
            lock: Some(crate::files::lock(&path).unwrap()),
        };
        let seen = std::sync::Mutex::new(Vec::new());
        let result = turn.embedding(
            3,
            &|p| seen.lock().unwrap().push((p.done, p.total)),
            |done| {
                for _ in 0..3 {
                    done.fetch_add(1, Ordering::Relaxed);
                }
                "embedded"
            },
        );
        assert_eq!(result, "embedded");
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.first(), Some(&(0, 3)));
        assert_eq!(seen.last(), Some(&(3, 3)));
        let noted = read_note(&path).unwrap();
        assert_eq!(
            (noted.pid, noted.done, noted.total),
            (std::process::id(), 3, 3)
        );
        // Held, the lock says so to a background embedder.
        assert!(crate::files::try_lock(&path).unwrap().is_none());
        drop(turn);
        assert!(crate::files::try_lock(&path).unwrap().is_some());
    }

    #[test]
    fn a_note_is_read_back_and_a_partial_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embed-x.lock");
        std::fs::write(&path, format!("{:>10} {:>10} {:>10}\n", 42, 7, 900)).unwrap();
        let progress = read_note(&path).unwrap();
        assert_eq!((progress.pid, progress.done, progress.total), (42, 7, 900));
        std::fs::write(&path, "        42      ").unwrap();
        assert_eq!(read_note(&path), None);
        std::fs::write(&path, "").unwrap();
        assert_eq!(read_note(&path), None);
    }
}
