//! More of what replicas of `serve --http --state redis://…` share (the setup of
//! `replicas.rs`: Debian's `redis-server` and `haproxy` on loopback, each replica with an empty
//! state directory of its own): a session's DELETE sent to any replica ends it on every
//! replica, names given with `--allowed-host` pass the Host check through HAProxy, and
//! `usage` / `auth clients` with `--state` read what replicas recorded, from a machine whose
//! state directory is empty.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::launch_util::http;
use crate::replicas::{mcp, programs, start_haproxy, start_redis, Started, KEY};
use crate::serve::eventually;
use crate::util::*;

/// The name the balancer is reached by in the Host test (never resolved: sent as `Host`).
const PUBLIC_NAME: &str = "mcp.example.test";

/// Replica `n` on `port`, with an empty state directory of its own and `extra` serve flags.
fn replica_with(cmd: &Cmd, n: usize, port: u16, redis: &str, extra: &[&str]) -> Running {
    let state = cmd.path(&format!("replica-{n}"));
    std::fs::create_dir_all(&state).unwrap();
    let running = cmd
        .cmd()
        .args(["--config", "config.json", "serve", "--mode", "full"])
        .args(["--http", &format!("127.0.0.1:{port}"), "--state", redis])
        .args(extra)
        .env("XDG_STATE_HOME", &state.display().to_string())
        .stderr_any()
        .spawn();
    let ready = format!("http://127.0.0.1:{port}/readyz");
    eventually(30, "the replica is ready", || {
        http("GET", &ready, &[], None).0 == 200
    });
    running
}

/// Redis and replicas of it, each with its flags: what lives as long as the test.
pub(crate) struct Fleet {
    /// The Redis URL.
    url: String,
    /// The replicas' ports.
    pub(crate) ports: Vec<u16>,
    /// A free port after them (for a balancer).
    spare: u16,
    running: Vec<Running>,
    _redis: Started,
}

impl Fleet {
    /// Kills replica `n` at once (SIGKILL: nothing said to the store), as a lost machine.
    pub(crate) fn kill(&self, n: usize) {
        let pid = nix::unistd::Pid::from_raw(self.running[n].pid());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill the replica");
    }
}

/// Redis and one replica per entry of `flags`.
pub(crate) fn fleet(cmd: &Cmd, flags: &[&[&str]]) -> Fleet {
    let count = flags.len() as u16;
    let first = free_ports(count + 2);
    let _redis = start_redis(cmd.dir(), first);
    let url = format!("redis://127.0.0.1:{first}");
    let ports: Vec<u16> = (1..=count).map(|n| first + n).collect();
    let running = flags
        .iter()
        .enumerate()
        .map(|(n, flags)| replica_with(cmd, n, ports[n], &url, flags))
        .collect();
    let spare = first + count + 1;
    Fleet {
        url,
        ports,
        spare,
        running,
        _redis,
    }
}

fn more_client(dir: &Path, args: &[&str]) -> Value {
    let script = manifest_dir().join("tests/fixtures/replicas_more.py");
    let mut command = Command::new(sdk_python());
    command.arg(script).args(args).args(["--key", KEY]);
    client_json(command, dir, "the replicas_more client")
}

/// A DELETE sent to a replica that never held the session (begun on A, continued on C, ended
/// through B) ends it everywhere: every replica then answers 404 for it (it answered 404 to
/// the DELETE itself, and the session went on through A and C).
#[test]
fn a_sessions_delete_through_another_replica_ends_it_on_every_replica() {
    let Some(()) = programs() else { return };
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let keyed: &[&str] = &["--api-key", KEY];
    let fleet = fleet(&cmd, &[keyed, keyed, keyed]);
    let urls: Vec<String> = fleet.ports.iter().map(|p| mcp(*p)).collect();
    let urls = urls.join(",");
    let seen = more_client(cmd.dir(), &["ended", "--urls", &urls]);
    let shown = serde_json::to_string_pretty(&seen).unwrap();
    assert_eq!(seen["continued"], 200, "{shown}");
    assert!(
        seen["deleted"]
            .as_u64()
            .is_some_and(|s| (200..300).contains(&s)),
        "the DELETE through B was refused: {shown}"
    );
    for after in seen["after"].as_array().unwrap() {
        assert_eq!(
            after[2], 404,
            "a replica still serves the ended session: {shown}"
        );
        assert!(after[3].as_f64().unwrap() < 1.0, "ended late: {shown}");
    }
    assert_eq!(seen["deleted_again"], 404, "{shown}");
}

/// `--allowed-host NAME`: a client reaching the balancer by a name (sent as `Host`, and its
/// page's `Origin`) is served by every replica; another name is still refused.
#[test]
fn an_allowed_host_passes_the_host_check_through_haproxy() {
    let Some(()) = programs() else { return };
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let flags: &[&str] = &["--api-key", KEY, "--allowed-host", PUBLIC_NAME];
    let fleet = fleet(&cmd, &[flags, flags, flags]);
    let _haproxy = start_haproxy(cmd.dir(), fleet.spare, &fleet.ports);
    let url = mcp(fleet.spare);
    let other = "other.example.test";
    let named = [PUBLIC_NAME, PUBLIC_NAME, PUBLIC_NAME, other];
    let args: Vec<&str> = ["host", "--url", &url]
        .into_iter()
        .chain(named.iter().flat_map(|n| ["--host", *n]))
        .collect();
    let seen = more_client(cmd.dir(), &args);
    let statuses: Vec<&Value> = seen["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h[1])
        .collect();
    assert_eq!(statuses, [200, 200, 200, 403], "{seen}");
}

/// `usage --state URL` and `auth clients --state URL` read the usage record and the OAuth
/// clients the replicas keep in Redis, with a state directory of their own that is empty
/// (before, they read only local files: no calls, no clients).
#[test]
fn usage_and_auth_clients_read_the_shared_store_with_state() {
    let Some(()) = programs() else { return };
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let fleet = fleet(&cmd, &[&["--api-key", KEY], &["--auth", "oauth"]]);
    let (url, ports) = (&fleet.url, &fleet.ports);
    let seen = more_client(cmd.dir(), &["echo", "--url", &mcp(ports[0])]);
    assert_eq!(seen["status"], 200, "{seen}");
    let registration = json!({"redirect_uris": ["http://127.0.0.1:9/callback"],
        "client_name": "replicas-more", "token_endpoint_auth_method": "none"});
    let register = format!("http://127.0.0.1:{}/register", ports[1]);
    let (status, client) = http("POST", &register, &[], Some(registration));
    assert_eq!(status, 201, "{client}");

    let reader = cmd.mkdir("reader-state");
    let reading = |args: &[&str]| {
        cmd.cmd()
            .args(args)
            .args(["--state", url, "--json"])
            .env("XDG_STATE_HOME", &reader.display().to_string())
            .stderr_any()
            .run()
            .json()
    };
    eventually(10, "usage --state shows the replica's call", || {
        let usage = reading(&["usage"]);
        usage["calls"] == 1 && usage["tools"][0]["tool"] == "echo"
    });
    let clients = reading(&["auth", "clients"]);
    let ids: Vec<&Value> = clients["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["client_id"])
        .collect();
    assert_eq!(ids, [&client["client_id"]], "{clients}");
    let files = std::fs::read_dir(&reader).unwrap().count();
    assert_eq!(files, 0, "the reader wrote state of its own");
}

/// An authorization code issued by one replica of `--auth oauth` is redeemed at another's
/// `/token` (it was kept in the issuing replica's memory: `invalid_grant` elsewhere), and only
/// once across replicas.
#[test]
fn an_authorization_code_from_one_replica_is_redeemed_at_another() {
    let Some(()) = programs() else { return };
    let cmd = Cmd::new().config_json(json!({"mcpServers": {"fault": fault(&[])}}));
    let oauth: &[&str] = &["--auth", "oauth"];
    let fleet = fleet(&cmd, &[oauth, oauth]);
    let [a, b] = [fleet.ports[0], fleet.ports[1]];
    let bases = format!("http://127.0.0.1:{a},http://127.0.0.1:{b}");
    let args = [
        "code", "--urls", &bases, "--bin", BIN, "--state", &fleet.url,
    ];
    let seen = more_client(cmd.dir(), &args);
    let shown = serde_json::to_string_pretty(&seen).unwrap();
    assert_eq!(seen["registered"], 201, "{shown}");
    assert_eq!(seen["consent"], 200, "{shown}");
    assert_eq!(seen["approved"], 0, "{shown}");
    assert_eq!(
        seen["redirected"],
        json!([303, "http://127.0.0.1:9/callback"]),
        "{shown}"
    );
    assert_eq!(seen["token_elsewhere"][0], 200, "{shown}");
    assert_eq!(seen["token_elsewhere"][1], true, "{shown}");
    assert_eq!(seen["again_here"][0], 400, "a code redeemed twice: {shown}");
}
