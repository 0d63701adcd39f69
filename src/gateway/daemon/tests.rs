use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::*;

#[test]
fn the_same_config_set_gives_the_same_socket_and_another_set_another() {
    let dir = Path::new("/run/x");
    let (a, b) = (
        vec![PathBuf::from("/work/p/a.json")],
        vec![PathBuf::from("/work/p/b.json")],
    );
    let env = vec![PathBuf::from("/work/p/.env")];
    let servers = vec!["identity-1".to_string()];
    let changed = vec!["identity-2".to_string()];
    let set = |cwd: &'static str, configs, env_files, servers| ConfigSet {
        cwd: Path::new(cwd),
        configs,
        env_files,
        servers,
    };
    let first = daemon_socket(dir, &set("/work/p", &a, &[], &servers));
    assert_eq!(
        first,
        daemon_socket(dir, &set("/work/p", &a, &[], &servers))
    );
    assert_ne!(
        first,
        daemon_socket(dir, &set("/work/p", &b, &[], &servers))
    );
    assert_ne!(
        first,
        daemon_socket(dir, &set("/elsewhere", &a, &[], &servers))
    );
    assert_ne!(
        first,
        daemon_socket(dir, &set("/work/p", &a, &env, &servers))
    );
    assert_ne!(
        first,
        daemon_socket(dir, &set("/work/p", &a, &[], &changed))
    );
    let name = first.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("d-") && name.ends_with(".sock"), "{name}");
}

#[test]
fn kinds_from_the_wire_are_known_or_read_daemon_error() {
    assert_eq!(remote_kind("tool_denied"), "tool_denied");
    assert_eq!(remote_kind("made_up"), "daemon_error");
}

#[tokio::test]
async fn a_live_socket_is_refused_and_a_dead_ones_file_replaced() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("d-test.sock");
    let live = bind(&socket).await.unwrap();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // A gateway greets every connection.
    let greeter = tokio::spawn(async move {
        while let Ok((mut stream, _)) = live.accept().await {
            let _ = stream.write_all(b"{\"mcp-launch\": \"gateway\"}\n").await;
        }
    });
    assert!(matches!(
        bind(&socket).await,
        Err(DaemonError::AlreadyRunning { .. })
    ));
    greeter.abort();
    let _ = greeter.await;
    // The file is left behind, as when a gateway is killed: the next bind takes its place.
    assert!(socket.exists());
    assert!(Client::connect(&socket).await.unwrap().is_none());
    bind(&socket).await.unwrap();
}

#[tokio::test]
async fn a_socket_that_takes_connections_but_never_greets_is_no_gateway_and_is_not_removed() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("d-silent.sock");
    let _silent = tokio::net::UnixListener::bind(&socket).unwrap();
    assert!(Client::connect(&socket).await.unwrap().is_none());
    assert!(socket.exists(), "someone holds it: not ours to remove");
    assert!(matches!(bind(&socket).await, Err(DaemonError::Io { .. })));
}

/// A socket appears at its path only once it listens: a `status` that connects in between
/// would be refused, take the file for a dead gateway's and remove it, and the daemon would
/// listen on a path nobody can find (CI once waited 60 s for a daemon that was up).
#[test]
fn a_socket_never_shows_at_its_path_before_it_listens() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("d-race.sock");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let prober = {
        let (socket, done, refused) = (socket.clone(), done.clone(), refused.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Err(e) = std::os::unix::net::UnixStream::connect(&socket) {
                    if e.kind() == std::io::ErrorKind::ConnectionRefused && socket.exists() {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
    };
    for _ in 0..2_000 {
        let listener = runtime.block_on(bind(&socket)).unwrap();
        // Unlinked while it still listens: a refusal can only come from within `bind`.
        std::fs::remove_file(&socket).unwrap();
        drop(listener);
    }
    done.store(true, Ordering::Relaxed);
    prober.join().unwrap();
    assert_eq!(
        refused.load(Ordering::Relaxed),
        0,
        "connections refused at a bound path"
    );
}
