//! A planted `.mcp-launch/state.json` (it lives in the project, so a checkout can bring one)
//! cannot make `status` fetch an address of its choosing (issue 24, Low 12: blind SSRF): only
//! a loopback front and a public URL of a tunnel's shape are probed.

use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::Cmd;

/// Counts the connections to a loopback port (and what each asked) while it lives.
struct Witness {
    port: u16,
    seen: Arc<AtomicUsize>,
}

impl Witness {
    fn start() -> Witness {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&seen);
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        counted.fetch_add(1, Ordering::SeqCst);
                        let mut buf = [0u8; 512];
                        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                        let _ = stream.read(&mut buf);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Witness { port, seen }
    }
}

#[test]
fn a_planted_state_file_makes_status_fetch_nothing_of_its_choosing() {
    let witness = Witness::start();
    let port = witness.port;
    // An octal host the URL parser reads as 127.0.0.1, and a "tunnel" URL that is no tunnel's.
    let state = json!({"version": 1, "stacks": [{
        "name": "planted", "config": "/nonexistent/c.json",
        "supervisor": {"pgid": 1, "started": null},
        "controller": "native", "controller_process": null, "controller_port": 1,
        "host": "0177.0.0.1", "port": port, "tunnel": "quick", "tunnel_process": null,
        "public_url": format!("http://127.0.0.1:{port}/steal"), "api_key": "k",
        "admin_token": "t", "operations": 0, "started_at": "2026-01-01T00:00:00Z",
    }]});
    let cmd = Cmd::new().file(".mcp-launch/state.json", &state.to_string());
    let out = cmd.cmd().args(["status", "--json"]).status(1).run();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        witness.seen.load(Ordering::SeqCst),
        0,
        "status fetched a planted address: {out}"
    );
}
