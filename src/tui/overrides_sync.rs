//! One task between the TUI and the overrides file: it writes the app's edits (merged into the
//! file under its lock, see [`Overrides::update`]) and watches the file for changes made
//! outside (another terminal's `mcp-launch tool deny`, an edit by hand), answering both with
//! the file's content. One task, so the answers arrive in the order things happened.
//!
//! Watching is a re-read on a short tick, compared with the last bytes seen: the file is small, every
//! writer replaces it by a rename (a new inode, which some watch backends lose track of), and
//! a poll needs no platform notification service.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::task::TaskTracker;

use crate::catalog::{Edit, Overrides, OVERRIDES_FILE};

use super::msg::Msg;

/// How often the file is looked at: an outside change shows within this.
const WATCH_EVERY: Duration = Duration::from_millis(250);

enum Job {
    Write(Vec<Edit>),
    /// Answered once every write asked for before it is done.
    Flush(oneshot::Sender<()>),
}

/// The handle of the task (cheap to clone).
#[derive(Clone)]
pub(super) struct OverridesSync {
    jobs: mpsc::UnboundedSender<Job>,
}

impl OverridesSync {
    /// Starts the task for the project in `project_dir` on `tasks`; it answers through `tx`
    /// and ends when every handle is dropped (after the writes queued by then).
    pub(super) fn spawn(
        project_dir: PathBuf,
        tx: mpsc::UnboundedSender<Msg>,
        tasks: &TaskTracker,
    ) -> OverridesSync {
        let (jobs, queue) = mpsc::unbounded_channel();
        tasks.spawn(run(project_dir, queue, tx));
        OverridesSync { jobs }
    }

    /// Writes `edits`; answers with [`Msg::Saved`].
    pub(super) fn save(&self, edits: Vec<Edit>) {
        let _ = self.jobs.send(Job::Write(edits));
    }

    /// Returns once every write asked for so far is done (at once if the task has ended).
    pub(super) async fn flushed(&self) {
        let (done, wait) = oneshot::channel();
        if self.jobs.send(Job::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }
}

async fn run(
    project_dir: PathBuf,
    mut queue: mpsc::UnboundedReceiver<Job>,
    tx: mpsc::UnboundedSender<Msg>,
) {
    let path = project_dir.join(OVERRIDES_FILE);
    // The app starts from a read of its own; the first look may re-read it, harmlessly.
    let mut seen = None;
    let mut ticks = tokio::time::interval(WATCH_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let msg = tokio::select! {
            job = queue.recv() => match job {
                None => return,
                Some(Job::Flush(done)) => {
                    let _ = done.send(());
                    continue;
                }
                Some(Job::Write(edits)) => Msg::Saved(write(&project_dir, edits).await),
            },
            _ = ticks.tick() => {
                let now = tokio::fs::read(&path).await.ok();
                if now == seen {
                    continue;
                }
                seen = now;
                Msg::OverridesChanged(read(&project_dir).await)
            }
        };
        // Once the app has gone the answers go nowhere, but queued writes still happen: the
        // runtime waits for them ([`OverridesSync::flushed`]) before it exits.
        let _ = tx.send(msg);
    }
}

/// [`Overrides::update`] on a blocking thread (it waits for the lock).
async fn write(project_dir: &std::path::Path, edits: Vec<Edit>) -> Result<Overrides, String> {
    let dir = project_dir.to_path_buf();
    let updated = tokio::task::spawn_blocking(move || Overrides::update(&dir, &edits)).await;
    match updated {
        Ok(Ok(updated)) => Ok(updated.overrides),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(format!("the write stopped: {e}")),
    }
}

async fn read(project_dir: &std::path::Path) -> Result<Overrides, String> {
    let dir = project_dir.to_path_buf();
    match tokio::task::spawn_blocking(move || Overrides::load(&dir)).await {
        Ok(loaded) => loaded.map_err(|e| e.to_string()),
        Err(e) => Err(format!("the read stopped: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deny(tool: &str) -> Edit {
        Edit::Deny {
            stack: "a".into(),
            server: "s".into(),
            tools: vec![tool.into()],
        }
    }

    fn is_denied(overrides: &Overrides, tool: &str) -> bool {
        overrides
            .for_server("a", "s")
            .is_some_and(|s| !s.is_allowed(tool))
    }

    /// The first answer `wanted` accepts (others, such as re-reads of our own writes, skipped).
    async fn next(rx: &mut mpsc::UnboundedReceiver<Msg>, wanted: impl Fn(&Msg) -> bool) -> Msg {
        let wait = async {
            loop {
                let msg = rx.recv().await.expect("the task answers");
                if wanted(&msg) {
                    return msg;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("answered in time")
    }

    #[tokio::test]
    async fn writes_in_order_reports_outside_changes_and_finishes_writes_after_the_app() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sync = OverridesSync::spawn(dir.path().to_path_buf(), tx, &TaskTracker::new());

        sync.save(vec![deny("echo")]);
        let Msg::Saved(Ok(saved)) = next(&mut rx, |m| matches!(m, Msg::Saved(_))).await else {
            panic!("saved")
        };
        assert!(is_denied(&saved, "echo"));

        // Another process writes: reported with both choices.
        Overrides::update(dir.path(), &[deny("add")]).unwrap();
        let outside = |m: &Msg| matches!(m, Msg::OverridesChanged(Ok(o)) if is_denied(o, "add") && is_denied(o, "echo"));
        next(&mut rx, outside).await;

        // The app has gone (quit): a queued write still lands before `flushed` returns.
        drop(rx);
        sync.save(vec![deny("late")]);
        sync.flushed().await;
        let on_disk = Overrides::load(dir.path()).unwrap();
        assert!(["echo", "add", "late"]
            .iter()
            .all(|t| is_denied(&on_disk, t)));
    }
}
