//! The effects runner without a terminal: each effect's work happens in a task and comes back
//! as a message; quitting ends every task, a check of a server that never answers included.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::{LoadOptions, TrustPolicy};
use crate::tui::effects::{Context, Effects};
use crate::tui::msg::LaunchMsg;
use crate::tui::screens::collector::CollectorMsg;

/// Options loading files of `dir` (the test's own, trusted).
pub(super) fn opts(dir: &std::path::Path) -> LoadOptions {
    LoadOptions {
        configs: Vec::new(),
        env_files: Vec::new(),
        cwd: dir.to_path_buf(),
        home: None,
        process_env: BTreeMap::new(),
        trust: TrustPolicy::Everything,
    }
}

/// The first message `wanted` picks out (others skipped), within 10 s.
pub(super) async fn next<T>(
    rx: &mut mpsc::UnboundedReceiver<Msg>,
    wanted: impl Fn(Msg) -> Option<T>,
) -> T {
    let wait = async {
        loop {
            if let Some(found) = wanted(rx.recv().await.expect("the runner answers")) {
                return found;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .expect("answered in time")
}

fn collector(msg: Msg) -> Option<CollectorMsg> {
    match msg {
        Msg::Collector(news) => Some(news),
        _ => None,
    }
}

const ONE_SERVER: &str = r#"{"mcpServers": {"echo": {"command": "/bin/cat"}}}"#;

#[tokio::test]
async fn file_work_runs_in_tasks_that_answer_with_messages() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("configs")).unwrap();
    std::fs::write(dir.path().join("configs/work.json"), ONE_SERVER).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let context = Context::new(opts(dir.path()), None, CancellationToken::new(), tx.clone());
    let runner = Effects::start(context.clone(), tx);

    // No stacks chosen yet: discovery's files come first (none exist here).
    let discovered = next(&mut rx, |m| match collector(m) {
        Some(CollectorMsg::Discovered(found)) => Some(found),
        _ => None,
    })
    .await;
    assert!(discovered.is_empty());

    runner.run(Effect::CompletePath("configs/w".into()));
    let completed = next(&mut rx, |m| match collector(m) {
        Some(CollectorMsg::Completions { candidates, .. }) => Some(candidates),
        _ => None,
    })
    .await;
    assert_eq!(completed, ["configs/work.json"]);

    runner.run(Effect::CheckConfig("configs/work.json".into()));
    let checked = next(&mut rx, |m| match collector(m) {
        Some(CollectorMsg::Checked { result, .. }) => Some(result),
        _ => None,
    })
    .await;
    assert_eq!(checked, Ok(1));

    assert!(context.chosen().is_none());
    runner.run(Effect::LoadConfigs(vec![dir
        .path()
        .join("configs/work.json")]));
    let loaded = next(&mut rx, |m| match m {
        Msg::ConfigsLoaded(result) => Some(result),
        _ => None,
    })
    .await;
    assert_eq!(loaded.unwrap().len(), 1);
    assert!(context.chosen().is_some(), "kept for the launch");

    runner.run(Effect::SaveLog(vec!["one".into(), "two".into()]));
    let saved = next(&mut rx, |m| match m {
        Msg::Launch(LaunchMsg::LogSaved(result)) => Some(result),
        _ => None,
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(saved.unwrap()).unwrap(),
        "one\ntwo\n"
    );
}

/// The state letter of `pid` in /proc (`None` once it is gone).
fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(") ").next()?.chars().next()
}

/// Polls `condition` every 20 ms for up to 10 s.
async fn eventually(condition: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_joins_every_task_and_ends_a_check_under_way() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/fault_server.py"
    );
    let mut server = entry("a", "silent");
    server.spec = Ok(crate::config::ServerSpec::Stdio {
        command: "python3".into(),
        args: vec![
            script.into(),
            "--no-answer".into(),
            "--grandchild".into(),
            pidfile.display().to_string(),
        ],
        env: Vec::new(),
        cwd: None,
    });
    let stop = CancellationToken::new();
    let (tx, _rx) = mpsc::unbounded_channel();
    let context = Context::new(opts(dir.path()), None, stop.clone(), tx.clone());
    let runner = Effects::start(context.clone(), tx);
    runner.run(Effect::Check {
        row: 0,
        entry: server,
    });
    // The server runs (and will never answer: its check would wait out both init windows).
    assert!(
        eventually(|| std::fs::read_to_string(&pidfile).is_ok_and(|p| p.lines().count() == 2))
            .await
    );
    let pids = std::fs::read_to_string(&pidfile).unwrap();
    let grandchild: i32 = pids.lines().next().unwrap().parse().unwrap();

    let started = Instant::now();
    stop.cancel();
    drop(runner);
    let tasks = context.tasks.clone();
    drop(context);
    tasks.close();
    tokio::time::timeout(Duration::from_secs(5), tasks.wait())
        .await
        .expect("every task ends once stopped, long before the 6 s init window");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The check's session went with its task: the server's whole process group is ended.
    assert!(
        eventually(|| matches!(process_state(grandchild), None | Some('Z' | 'X'))).await,
        "the server's grandchild {grandchild} still runs"
    );
}
