//! The Redis store against a real `redis-server` (Debian's package; scripts/install-test-deps.sh
//! installs it). Other rooms' tests start one through [`RedisServer`].

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

/// A `redis-server` of the test's own on a free loopback port, killed on drop.
pub(crate) struct RedisServer {
    child: Child,
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts one, or `None` (with a note) when `redis-server` is not installed and this is
    /// not CI; on CI a missing server fails the test.
    pub(crate) fn start() -> Option<RedisServer> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            assert!(
                std::env::var_os("CI").is_none(),
                "redis-server is missing on CI: scripts/install-test-deps.sh installs it"
            );
            eprintln!("skipped: redis-server is not installed (apt-get install redis-server)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(RedisServer {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            _dir: dir,
        })
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn urls_are_shown_without_their_password() {
    assert_eq!(
        redacted("redis://:s3cret@10.0.0.1:6379/2"),
        "redis://:***@10.0.0.1:6379/2"
    );
    assert_eq!(
        redacted("redis://app:s3cret@redis:6379"),
        "redis://app:***@redis:6379"
    );
    assert_eq!(redacted("redis://redis:6379/0"), "redis://redis:6379/0");
    assert_eq!(
        redacted("redis://h/0?pass=s3cret&db=1"),
        "redis://h/0?pass=***&db=1"
    );
}

#[tokio::test]
async fn a_bad_url_is_refused_naming_it_without_its_password() {
    let err = Redis::connect("http://:hunter2@host").await.unwrap_err();
    assert_eq!(err.kind(), "invalid_state_url");
    assert!(err.to_string().contains("http://:***@host"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(err.help().contains("redis://"), "{}", err.help());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_expire_lists_are_capped_and_updates_are_atomic() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let store = Redis::connect(&server.url).await.unwrap();
    assert!(store.is_reachable());
    let key = Redis::key("test", "a");
    assert_eq!(key, "mcp-launch:test:a");
    store
        .put(&key, b"one", Some(Duration::from_millis(300)), false)
        .await
        .unwrap();
    store.put(&key, b"two", None, true).await.unwrap();
    assert_eq!(store.get(&key).await.unwrap().as_deref(), Some(&b"one"[..]));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(store.get(&key).await.unwrap(), None, "expired");

    let list = Redis::key("test", "list");
    for n in 0..5u8 {
        store.append_capped(&list, &[n], 3).await.unwrap();
    }
    assert_eq!(
        store.list(&list).await.unwrap(),
        vec![vec![2], vec![3], vec![4]]
    );

    // Eight writers add one each, concurrently: none is lost.
    let (record, stamp) = (Redis::key("test", "n"), Redis::key("test", "n-stamp"));
    let mut writers = Vec::new();
    for _ in 0..8 {
        let (store, record, stamp) = (Arc::clone(&store), record.clone(), stamp.clone());
        writers.push(tokio::spawn(async move {
            store
                .update(&record, &stamp, &mut |old| {
                    let n: u32 = old
                        .and_then(|b| String::from_utf8(b).ok()?.parse().ok())
                        .unwrap_or(0);
                    Ok((n + 1).to_string().into_bytes())
                })
                .await
                .unwrap()
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(
        store.get(&record).await.unwrap().as_deref(),
        Some(&b"8"[..])
    );
    assert_eq!(store.stamp(&stamp).await.unwrap(), 8);
    // From code that is not async.
    let blocking = Arc::clone(&store);
    let got = tokio::task::spawn_blocking(move || blocking.blocking(blocking.get(&record)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.as_deref(), Some(&b"8"[..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_goes_away_fails_bounded_and_says_unreachable() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let url = server.url.replace("redis://", "redis://:pw@");
    let store = Redis::connect(&server.url).await.unwrap();
    drop(server);
    let started = Instant::now();
    let err = store.get("mcp-launch:test:x").await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.kind(), "state_unreachable");
    assert!(!store.is_reachable());
    // Never the password.
    let other = Redis::connect(&url).await.unwrap();
    let err = other.get("k").await.unwrap_err();
    assert!(!err.to_string().contains(":pw@"), "{err}");
}
