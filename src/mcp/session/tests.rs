use super::tools::collect_tools;
use super::*;

fn silent_server() -> Endpoint {
    // Reads nothing, answers nothing: only the windows can end the wait.
    Endpoint::Stdio(SpawnSpec {
        program: "sleep".into(),
        args: vec!["1000".into()],
        ..SpawnSpec::default()
    })
}

#[tokio::test(start_paused = true)]
async fn silence_expires_the_fast_then_the_slow_window() {
    let opts = ConnectOptions {
        slow_window: Duration::from_secs(45),
        ..ConnectOptions::default()
    };
    let started = tokio::time::Instant::now();
    let err = Session::connect(&silent_server(), &opts)
        .await
        .err()
        .expect("a silent server cannot connect");
    // Virtual time: exactly the two windows, and not one more.
    assert_eq!(started.elapsed(), Duration::from_secs(6 + 45));
    assert!(matches!(err, McpError::InitTimeout { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("fast window 6s, then slow window 45s"),
        "{message}"
    );
    assert!(err.help().contains("MCP_INIT_TIMEOUT_SEC"));
}

/// A real server that stops reading stdin after the handshake: its pipe fills, the queue to
/// it fills (as long as the options say), and further requests fail as stalled at their
/// timeout instead of piling up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_stalls_requests_not_memory() {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/fault_server.py"
    );
    let endpoint = Endpoint::Stdio(SpawnSpec {
        program: "python3".into(),
        args: vec![script.into(), "--stop-reading-after-init".into()],
        ..SpawnSpec::default()
    });
    let queue = 32;
    let mut opts = ConnectOptions::default();
    opts.limits.queued_messages = queue;
    let session = Arc::new(
        Session::connect(&endpoint, &opts)
            .await
            .expect("the fault server starts"),
    );
    // 8 KiB each: the 64 KiB pipe takes a handful, the queue `queue` more.
    let message = "x".repeat(8 * 1024);
    let calls: Vec<_> = (0..queue + 64)
        .map(|_| {
            let (session, message) = (Arc::clone(&session), message.clone());
            tokio::spawn(async move {
                let arguments = json!({"message": message});
                session
                    .call_tool("echo", arguments, Duration::from_millis(1500))
                    .await
            })
        })
        .collect();
    let mut stalled = 0;
    for call in calls {
        match call.await.unwrap() {
            Err(McpError::Stalled { queued, .. }) => {
                assert_eq!(queued, queue);
                stalled += 1;
            }
            Err(McpError::Timeout { .. }) => {}
            other => panic!("a stuck server cannot answer: {other:?}"),
        }
    }
    assert!(stalled >= 32, "only {stalled} calls found the queue full");
    Arc::into_inner(session).unwrap().close().await;
}

#[test]
fn the_slow_window_setting_bounds_what_users_set() {
    let opts = ConnectOptions::with_slow_window(INIT_TIMEOUT.parse("2.5").unwrap());
    assert_eq!(opts.slow_window, Duration::from_millis(2500));
    assert_eq!(opts.list_timeout, opts.slow_window);
    assert_eq!(opts.fast_window, INIT_FAST_WINDOW);
    // 1e20 seconds panicked in Duration::from_secs_f64.
    let err = INIT_TIMEOUT.parse("1e20").unwrap_err();
    assert!(err.to_string().contains(INIT_TIMEOUT_ENV), "{err}");
    assert_eq!(INIT_TIMEOUT.default, INIT_SLOW_WINDOW);
}

#[test]
fn malformed_tools_are_skipped_not_the_page() {
    let mut list = ToolList::default();
    let page = json!({"tools": [{"name": "ok"}, {"description": "no name"}, 7, {"name": ""}]});
    collect_tools(&page, &mut list);
    assert_eq!(list.tools, vec![json!({"name": "ok"})]);
    assert_eq!(list.warnings.len(), 3);
}
