//! Who listens on a loopback port: before we trust a child's readiness answer on a port it
//! was told to bind (mcpo's, cloudflared's metrics), the listener must belong to the child's
//! process group. Between our check that the port is free and the child's bind, anyone may
//! take it; whatever answers there would receive the internal key or publish its own URL.
//!
//! Linux only: `/proc/net/tcp` and `/proc/net/tcp6` list the LISTEN sockets with their inodes,
//! and `/proc/<pid>/fd/*` links read `socket:[inode]`. Where `/proc/net` cannot be read the
//! check passes (there is nothing to verify with), with a debug line.

use std::collections::HashSet;

use super::group::live_members;

/// A port answered, but not from the process group we started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("port {port} is not held by the process we started but by {}", holder(*.squatter))]
pub struct Squatted {
    /// The port.
    pub port: u16,
    /// The process listening there, when it is visible to us (another user's is not).
    pub squatter: Option<i32>,
}

impl Squatted {
    /// What the user can do: look at the squatter and stop it, or find it.
    pub fn next_step(&self) -> String {
        match self.squatter {
            Some(pid) => {
                format!("See what process {pid} is (`ps -p {pid} -o user,args`) and stop it")
            }
            None => "Find who listens there (`ss -ltnp`)".to_string(),
        }
    }
}

fn holder(squatter: Option<i32>) -> String {
    match squatter {
        Some(pid) => format!("process {pid}"),
        None => "a process we cannot see (another user's?) or by nobody any more".to_string(),
    }
}

/// Checks that every socket listening on `port` where a connection to 127.0.0.1 could land
/// (127.0.0.0/8, `0.0.0.0`, `::`, `::ffff:127.x`) belongs to a live member of group `pgid`, and
/// that there is one.
pub fn verify_listener(port: u16, pgid: i32) -> Result<(), Squatted> {
    let Some(inodes) = loopback_listeners(port) else {
        tracing::debug!(
            port,
            "no /proc/net/tcp: the listener's owner is not verified"
        );
        return Ok(());
    };
    let mut foreign: HashSet<u64> = inodes.iter().copied().collect();
    for pid in live_members(pgid) {
        for inode in socket_inodes(pid) {
            foreign.remove(&inode);
        }
    }
    if inodes.is_empty() || !foreign.is_empty() {
        let squatter = owner_of(&foreign);
        return Err(Squatted { port, squatter });
    }
    Ok(())
}

/// The inodes of the LISTEN sockets on `port` that take connections to 127.0.0.1; `None`
/// when `/proc/net/tcp` cannot be read.
fn loopback_listeners(port: u16) -> Option<Vec<u64>> {
    let v4 = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let v6 = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    Some(
        v4.lines()
            .chain(v6.lines())
            .filter_map(|line| listener_on(line, port))
            .collect(),
    )
}

/// The inode of a `/proc/net/tcp{,6}` line when it is a LISTEN socket on `port` reachable at
/// 127.0.0.1.
fn listener_on(line: &str, port: u16) -> Option<u64> {
    const LISTEN: &str = "0A";
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (local, state, inode) = (fields.get(1)?, fields.get(3)?, fields.get(9)?);
    let (address, hex_port) = local.split_once(':')?;
    if *state != LISTEN || u16::from_str_radix(hex_port, 16).ok()? != port {
        return None;
    }
    reaches_loopback(address).then(|| inode.parse().ok())?
}

/// Whether a socket bound to `address` (kernel hex: 32-bit words in host order, so
/// little-endian here) takes connections to 127.0.0.1.
fn reaches_loopback(address: &str) -> bool {
    let ipv4_word = |word: &str| {
        // 127.a.b.c is stored as the bytes c b a 7F; 0.0.0.0 as zeros.
        word == "00000000" || word.ends_with("7F")
    };
    match address.len() {
        8 => ipv4_word(address),
        32 => {
            let (prefix, last) = address.split_at(24);
            prefix == "000000000000000000000000" && last == "00000000"
                || prefix == "0000000000000000FFFF0000" && ipv4_word(last)
        }
        _ => false,
    }
}

/// The socket inodes among `pid`'s open files.
fn socket_inodes(pid: i32) -> Vec<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.filter_map(|fd| {
        let target = std::fs::read_link(fd.ok()?.path()).ok()?;
        let text = target.to_str()?;
        text.strip_prefix("socket:[")?
            .strip_suffix(']')?
            .parse()
            .ok()
    })
    .collect()
}

/// A process that holds one of `inodes`, among those whose files we may read.
fn owner_of(inodes: &HashSet<u64>) -> Option<i32> {
    let entries = std::fs::read_dir("/proc").ok()?;
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|&pid| socket_inodes(pid).iter().any(|i| inodes.contains(i)))
}

#[cfg(test)]
mod tests {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn proc_net_lines_are_read() {
        let line = "   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0";
        assert_eq!(listener_on(line, 8080), Some(4242));
        assert_eq!(listener_on(line, 8081), None);
        let established = line.replace(" 0A ", " 01 ");
        assert_eq!(listener_on(&established, 8080), None);
        for (address, reaches) in [
            ("0100007F", true),
            ("00000000", true),
            ("0101A8C0", false), // 192.168.1.1
            ("00000000000000000000000000000000", true),
            ("00000000000000000000000001000000", false), // ::1
            ("0000000000000000FFFF00000100007F", true),
        ] {
            assert_eq!(reaches_loopback(address), reaches, "{address}");
        }
    }

    /// A listener in a process group of its own (a python one-liner), on a port we picked.
    struct Listener {
        child: std::process::Child,
        port: u16,
    }

    impl Listener {
        fn start() -> Listener {
            let script = "import socket,sys\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen()\nprint(s.getsockname()[1],flush=True)\nsys.stdin.read()";
            let mut child = Command::new("python3")
                .args(["-c", script])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .process_group(0)
                .spawn()
                .expect("python3 runs");
            let mut line = String::new();
            let stdout = child.stdout.take().unwrap();
            std::io::BufReader::new(stdout)
                .read_line(&mut line)
                .unwrap();
            let port = line.trim().parse().expect("python prints its port");
            Listener { child, port }
        }
    }

    impl Drop for Listener {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    #[test]
    fn a_listener_of_the_group_passes_and_anyone_elses_is_named() {
        let listener = Listener::start();
        let pid = listener.child.id() as i32;
        assert_eq!(verify_listener(listener.port, pid), Ok(()));
        // Our own group (the test binary's) does not hold that port: a squatter, named.
        let ours = nix::unistd::getpgrp().as_raw();
        assert_eq!(
            verify_listener(listener.port, ours),
            Err(Squatted {
                port: listener.port,
                squatter: Some(pid),
            })
        );
        let message = verify_listener(listener.port, ours)
            .unwrap_err()
            .to_string();
        assert!(message.contains(&format!("process {pid}")), "{message}");
    }

    #[test]
    fn nothing_listening_is_not_ours_either() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let ours = nix::unistd::getpgrp().as_raw();
        assert_eq!(
            verify_listener(port, ours),
            Err(Squatted {
                port,
                squatter: None
            })
        );
    }
}
