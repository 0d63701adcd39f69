//! The least any process between an MCP client and its stdio server can do: start the server
//! and copy bytes both ways, unread, one blocking thread per direction (a read, a write, no
//! event loop, no parsing). `bench/real_clients.py --floor` puts it where the gateway goes, to
//! measure what one more process costs on this machine before the gateway does any work.
//!
//! Usage: null_relay COMMAND [ARGS…]

use std::io::{self, Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::thread;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: null_relay COMMAND [ARGS…]");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(&program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "null_relay: cannot start {}: {e}",
                program.to_string_lossy()
            );
            return ExitCode::FAILURE;
        }
    };
    let (Some(to_server), Some(from_server)) = (child.stdin.take(), child.stdout.take()) else {
        return ExitCode::FAILURE;
    };
    // The server's stdin closes when the client's does, which ends the server.
    thread::spawn(move || pump(io::stdin(), to_server));
    pump(from_server, io::stdout());
    let _ = child.wait();
    ExitCode::SUCCESS
}

/// Copies `from` to `to` as each read arrives, until either end closes.
fn pump(mut from: impl Read, mut to: impl Write) {
    let mut buf = vec![0_u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
            return;
        }
    }
}
