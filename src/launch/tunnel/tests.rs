//! `start` against `tests/fixtures/fake_cloudflared.py`, which logs, serves its metrics and
//! fails the way cloudflared does, and records each start (argv, pid, whether a token was set)
//! in a file we read back.

use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use super::*;
use crate::process::wait_gone;

const FAKE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/fake_cloudflared.py"
);

/// Long enough for the fake (a Python start-up and a few hundred milliseconds) on a busy
/// two-core machine; tests that expect a timeout use [`SHORT`].
const GENEROUS: Duration = Duration::from_secs(15);

/// The ready timeout of tests that expect one: short, but above the fake's start-up.
const SHORT: Duration = Duration::from_millis(1500);

/// A fake cloudflared run: the spec to start it with and the file it records starts in.
struct Fake {
    spec: TunnelSpec,
    dir: tempfile::TempDir,
}

impl Fake {
    fn new(kind: TunnelKind, knobs: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut env = vec![
            // Whatever the developer's shell has must not change the fake's behaviour.
            ("TUNNEL_LOGLEVEL".to_string(), "info".to_string()),
            (
                "FAKE_CLOUDFLARED_LOG".to_string(),
                dir.path().join("starts.jsonl").display().to_string(),
            ),
        ];
        env.extend(knobs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let spec = TunnelSpec {
            program: FAKE.into(),
            kind,
            local_port: free_port(),
            metrics_port: free_port(),
            ready_timeout: GENEROUS,
            env,
        };
        Fake { spec, dir }
    }

    fn quick(knobs: &[(&str, &str)]) -> Self {
        Self::new(TunnelKind::Quick, knobs)
    }

    fn timeout(mut self, limit: Duration) -> Self {
        self.spec.ready_timeout = limit;
        self
    }

    /// One JSON object per start, in order.
    fn starts(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("starts.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn argv(&self, start: usize) -> Vec<String> {
        serde_json::from_value(self.starts()[start]["argv"].clone()).unwrap()
    }

    fn pid(&self, start: usize) -> i32 {
        self.starts()[start]["pid"].as_i64().unwrap() as i32
    }
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A sink that keeps every line.
fn collecting() -> (LineSink, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink: LineSink = {
        let lines = Arc::clone(&lines);
        Arc::new(move |line: &str| lines.lock().unwrap().push(line.to_string()))
    };
    (sink, lines)
}

fn ignoring() -> LineSink {
    Arc::new(|_: &str| {})
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn a_quick_tunnel_reports_the_fakes_url_and_gets_the_right_arguments() {
    let fake = Fake::quick(&[]);
    let (sink, lines) = collecting();
    let tunnel = start(&fake.spec, sink).await.unwrap();

    let hostname = fake.starts()[0]["hostname"].as_str().unwrap().to_string();
    assert_eq!(tunnel.url, Some(format!("https://{hostname}")));
    assert_eq!(tunnel.metrics_port, fake.spec.metrics_port);
    let metrics = format!("127.0.0.1:{}", fake.spec.metrics_port);
    let local = format!("http://127.0.0.1:{}", fake.spec.local_port);
    assert_eq!(
        fake.argv(0),
        strings(&[
            "tunnel",
            "--no-autoupdate",
            "--grace-period",
            "1s",
            "--metrics",
            &metrics,
            "--url",
            &local
        ])
    );
    assert!(
        lines.lock().unwrap().iter().any(|l| l.contains(&hostname)),
        "the caller's sink gets every line"
    );
    tunnel.guard.shutdown().await;
}

#[tokio::test]
async fn the_metrics_server_wins_over_a_disagreeing_log() {
    let fake = Fake::quick(&[
        (
            "FAKE_CLOUDFLARED_HOSTNAME",
            "served-one-two-three.trycloudflare.com",
        ),
        (
            "FAKE_CLOUDFLARED_BOX_HOSTNAME",
            "logged-one-two-three.trycloudflare.com",
        ),
    ]);
    let tunnel = start(&fake.spec, ignoring()).await.unwrap();
    assert_eq!(
        tunnel.url.as_deref(),
        Some("https://served-one-two-three.trycloudflare.com")
    );
    tunnel.guard.shutdown().await;
}

#[tokio::test]
async fn a_quiet_log_still_gives_url_and_readiness_through_the_metrics_server() {
    let fake = Fake::quick(&[
        ("TUNNEL_LOGLEVEL", "warn"),
        (
            "FAKE_CLOUDFLARED_HOSTNAME",
            "quiet-log-only-metrics.trycloudflare.com",
        ),
    ]);
    let (sink, lines) = collecting();
    let tunnel = start(&fake.spec, sink).await.unwrap();
    assert_eq!(
        tunnel.url.as_deref(),
        Some("https://quiet-log-only-metrics.trycloudflare.com")
    );
    assert!(
        lines.lock().unwrap().is_empty(),
        "{:?}",
        lines.lock().unwrap()
    );
    tunnel.guard.shutdown().await;
}

#[tokio::test]
async fn an_early_exit_carries_the_status_and_the_error_line() {
    let fake = Fake::quick(&[("FAKE_CLOUDFLARED_MODE", "exit")]);
    let err = start(&fake.spec, ignoring()).await.err().unwrap();
    let TunnelError::Exited { exit, tail, kind } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*exit, Exit::Code(1));
    assert_eq!(*kind, TunnelKind::Quick);
    assert!(
        tail.contains("ERR failed to request quick Tunnel"),
        "{tail}"
    );
    assert_eq!(err.kind(), "tunnel_exited");
}

#[tokio::test]
async fn no_url_times_out_and_leaves_nothing_running() {
    let fake = Fake::quick(&[("FAKE_CLOUDFLARED_MODE", "no-url")]).timeout(SHORT);
    let began = Instant::now();
    let err = start(&fake.spec, ignoring()).await.err().unwrap();
    let TunnelError::Timeout {
        waited,
        saw_url,
        tail,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*waited, SHORT);
    assert!(!saw_url);
    assert!(tail.contains("Requesting new quick Tunnel"), "{tail}");
    assert!(began.elapsed() < SHORT + Duration::from_secs(3));
    let pgid = fake.pid(0);
    // The leader's pid is the group id; `start` has shut the group down before returning.
    assert_eq!(crate::process::live_members(pgid), Vec::<i32>::new());
}

#[tokio::test]
async fn decoys_alone_are_not_a_url() {
    let fake = Fake::quick(&[("FAKE_CLOUDFLARED_MODE", "decoys-only")]).timeout(SHORT);
    let err = start(&fake.spec, ignoring()).await.err().unwrap();
    assert!(
        matches!(err, TunnelError::Timeout { saw_url: false, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_url_without_a_registered_connection_is_not_ready() {
    let fake = Fake::quick(&[("FAKE_CLOUDFLARED_REGISTER_DELAY", "30")]).timeout(SHORT);
    let err = start(&fake.spec, ignoring()).await.err().unwrap();
    assert!(
        matches!(err, TunnelError::Timeout { saw_url: true, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("registered no connection"),
        "{err}"
    );
}

#[tokio::test]
async fn a_named_tunnel_runs_by_name_without_a_url() {
    let kind = TunnelKind::Named {
        name: Some("web".into()),
    };
    let fake = Fake::new(kind, &[]);
    let tunnel = start(&fake.spec, ignoring()).await.unwrap();
    assert_eq!(tunnel.url, None);
    let argv = fake.argv(0);
    assert_eq!(argv[argv.len() - 2..], strings(&["run", "web"]));
    assert!(!argv.contains(&"--url".to_string()), "{argv:?}");
    tunnel.guard.shutdown().await;
}

#[tokio::test]
async fn a_named_tunnel_without_name_or_token_is_refused_before_spawning() {
    // An empty TUNNEL_TOKEN in the overlay hides whatever the test's environment holds.
    let fake = Fake::new(TunnelKind::Named { name: None }, &[(TOKEN_ENV, "")]);
    let err = start(&fake.spec, ignoring()).await.err().unwrap();
    assert!(matches!(err, TunnelError::NoToken), "{err:?}");
    assert!(fake.starts().is_empty());
}

#[tokio::test]
async fn a_token_travels_in_the_environment_only() {
    let secret = "eyJhIjoic2VjcmV0LXRva2VuIn0";
    let fake = Fake::new(TunnelKind::Named { name: None }, &[(TOKEN_ENV, secret)]);
    let (sink, lines) = collecting();
    let tunnel = start(&fake.spec, sink).await.unwrap();
    let start_record = &fake.starts()[0];
    assert_eq!(start_record["token_set"], Value::Bool(true));
    let argv = fake.argv(0);
    assert!(
        argv.iter().all(|a| !a.contains(secret) && a != "--token"),
        "{argv:?}"
    );
    assert_eq!(argv.last().map(String::as_str), Some("run"));
    assert!(lines.lock().unwrap().iter().all(|l| !l.contains(secret)));
    tunnel.guard.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_the_tunnel_promptly_through_sigterm() {
    let fake = Fake::quick(&[]);
    let tunnel = start(&fake.spec, ignoring()).await.unwrap();
    let pgid = tunnel.guard.pgid().unwrap();
    let exit = tunnel.guard.exit_watch();
    let began = Instant::now();
    tunnel.guard.shutdown().await;
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    // Code 0 rather than SIGKILL: the fake handled SIGTERM itself.
    assert_eq!(*exit.borrow(), Some(Exit::Code(0)));
    assert!(wait_gone(pgid, Duration::from_secs(2)).await);
}

#[tokio::test]
async fn start_can_be_called_again_after_a_crash() {
    let fake = Fake::quick(&[
        ("FAKE_CLOUDFLARED_MODE", "crash-after"),
        ("FAKE_CLOUDFLARED_CRASH_AFTER", "0.3"),
    ]);
    let first = start(&fake.spec, ignoring()).await.unwrap();
    let mut exit = first.guard.exit_watch();
    // The crash comes 0.3 s after registration; the limit only guards against a hang.
    tokio::time::timeout(GENEROUS, exit.wait_for(Option::is_some))
        .await
        .expect("the fake crashes")
        .unwrap();
    assert_eq!(first.guard.exit_status(), Some(Exit::Code(1)));
    drop(first);

    let second = start(&fake.spec, ignoring()).await.unwrap();
    assert!(second.url.is_some());
    let starts = fake.starts();
    assert_eq!(starts.len(), 2);
    assert_ne!(starts[0]["pid"], starts[1]["pid"]);
    second.guard.shutdown().await;
}

#[tokio::test]
async fn a_busy_metrics_port_is_refused() {
    let fake = Fake::quick(&[]);
    let _taken = TcpListener::bind((Ipv4Addr::LOCALHOST, fake.spec.metrics_port)).unwrap();
    let err = start(&fake.spec, ignoring()).await.err().unwrap();
    assert!(
        matches!(err, TunnelError::MetricsPortInUse { port } if port == fake.spec.metrics_port),
        "{err:?}"
    );
    assert!(fake.starts().is_empty());
}

#[tokio::test]
async fn a_missing_program_is_not_installed() {
    let mut fake = Fake::quick(&[]);
    fake.spec.program = fake.dir.path().join("no-cloudflared");
    let err = start(&fake.spec, ignoring()).await.err().unwrap();
    assert!(
        matches!(&err, TunnelError::NotInstalled { program: Some(p) } if *p == fake.spec.program),
        "{err:?}"
    );
}

#[test]
fn a_token_tunnel_runs_without_a_name() {
    let fake = Fake::new(TunnelKind::Named { name: None }, &[]);
    let args = cloudflared_args(&fake.spec);
    assert_eq!(args.first().map(String::as_str), Some("tunnel"));
    assert_eq!(args.last().map(String::as_str), Some("run"));
}

#[test]
fn the_overlay_decides_whether_a_token_is_there() {
    let set = |v: &str| vec![(TOKEN_ENV.to_string(), v.to_string())];
    assert!(token_available(&set("t"), None));
    assert!(token_available(&[], Some("t".into())));
    assert!(!token_available(&set(""), Some("t".into())));
    assert!(!token_available(&[], Some(String::new())));
    assert!(!token_available(&[], None));
}

#[test]
fn the_configured_program_wins_over_path() {
    let dir = tempfile::tempdir().unwrap();
    let on_path = dir.path().join("cloudflared");
    std::fs::copy(FAKE, &on_path).unwrap();
    let path = dir.path().as_os_str();
    assert_eq!(locate(None, Some(path)), Some(on_path.clone()));
    assert_eq!(locate(Some("".into()), Some(path)), Some(on_path));
    assert_eq!(
        locate(Some("/opt/cf".into()), Some(path)),
        Some(PathBuf::from("/opt/cf"))
    );
    assert_eq!(locate(None, Some("/nonexistent".as_ref())), None);
}

#[test]
fn log_signals_take_the_url_and_the_registration() {
    let mut signals = LogSignals::default();
    assert!(!signals.observe("INF Requesting new quick Tunnel on trycloudflare.com..."));
    assert!(signals.observe("INF |  https://a-b.trycloudflare.com   |"));
    assert!(!signals.observe("INF |  https://a-b.trycloudflare.com   |"));
    assert!(signals.observe("INF Registered tunnel connection connIndex=0 ip=198.41.192.7"));
    assert_eq!(
        signals,
        LogSignals {
            url: Some("https://a-b.trycloudflare.com".into()),
            registered: true
        }
    );
}

#[test]
fn choose_url_prefers_the_metrics_server() {
    let s = |v: &str| Some(v.to_string());
    assert_eq!(choose_url(s("a"), s("b")), s("b"));
    assert_eq!(choose_url(s("a"), None), s("a"));
    assert_eq!(choose_url(None, s("b")), s("b"));
    assert_eq!(choose_url(None, None), None);
}

/// A process that takes the metrics port before cloudflared binds it would answer
/// `/quicktunnel` with its own hostname: the tunnel is refused as squatted, naming that
/// process, and its URL is never handed out.
#[tokio::test]
async fn a_squatter_on_the_metrics_port_is_refused_and_named() {
    let mut fake = Fake::quick(&[]);
    fake.spec.program = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/port_squatter.py"
    )
    .into();
    let (log, pidfile) = (
        fake.dir.path().join("squatter.log"),
        fake.dir.path().join("squatter.pid"),
    );
    fake.spec
        .env
        .push(("SQUATTER_LOG".into(), log.display().to_string()));
    fake.spec
        .env
        .push(("SQUATTER_PID".into(), pidfile.display().to_string()));
    let result = start(&fake.spec, ignoring()).await;
    let squatter: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(squatter),
        nix::sys::signal::Signal::SIGKILL,
    );
    let Err(error) = result else {
        panic!("a squatter's URL was taken as the tunnel's");
    };
    assert_eq!(error.kind(), "port_squatted", "{error}");
    assert!(
        error.to_string().contains(&format!("process {squatter}")),
        "{error}"
    );
    assert!(
        error.help().contains(&format!("ps -p {squatter}")),
        "{}",
        error.help()
    );
}
