//! Process groups we no longer hold a guard for: the ones a previous `up` recorded in the state
//! file. `down` and `status` ask whether they still run and end them.
//!
//! Liveness reads `/proc`: PID 1 on some machines does not reap orphans, so a group whose
//! members are all zombies has ended for every purpose but `kill(2)`, which still finds it.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::signal_group;

/// The pids of the running (not zombie) processes of group `pgid`.
pub fn live_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        // No procfs: fall back to what kill(2) says about the group as a whole.
        let alive = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_ok();
        return if alive { vec![pgid] } else { Vec::new() };
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| stat_fields(pid).is_some_and(|f| f.state != 'Z' && f.pgrp == pgid))
        .collect()
}

/// When process `pid` started, in clock ticks since boot — recorded next to a pid so that a
/// reused pid is never mistaken for ours.
pub fn start_time(pid: i32) -> Option<u64> {
    stat_fields(pid).map(|f| f.start_time)
}

/// True when group `pgid` still has a live member and its leader, if alive, is the process that
/// started at `started` (when known).
pub fn is_ours(pgid: i32, started: Option<u64>) -> bool {
    if let (Some(expected), Some(actual)) = (started, start_time(pgid)) {
        if expected != actual {
            return false;
        }
    }
    !live_members(pgid).is_empty()
}

/// True when process `pid` runs (not a zombie) and started at `started` (when known). For
/// processes that do not lead a group of their own, such as a supervising `mcp-launch up`.
pub fn is_running(pid: i32, started: Option<u64>) -> bool {
    stat_fields(pid)
        .is_some_and(|f| f.state != 'Z' && started.is_none_or(|expected| expected == f.start_time))
}

/// Ends group `pgid`: SIGTERM, up to `grace` for it to go, then SIGKILL and up to two more
/// seconds. Returns true when no member remains.
pub async fn stop_group(pgid: i32, grace: Duration) -> bool {
    signal_group(pgid, Signal::SIGTERM);
    if wait_gone(pgid, grace).await {
        return true;
    }
    signal_group(pgid, Signal::SIGKILL);
    wait_gone(pgid, Duration::from_secs(2)).await
}

/// Waits up to `limit` for group `pgid` to have no live member.
pub async fn wait_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if live_members(pgid).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

struct StatFields {
    state: char,
    pgrp: i32,
    start_time: u64,
}

fn stat_fields(pid: i32) -> Option<StatFields> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: parse after the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) … starttime(22).
    Some(StatFields {
        state: fields.first()?.chars().next()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{spawn, SpawnSpec};

    #[tokio::test]
    async fn a_group_is_found_checked_and_stopped() {
        let spawned = spawn(&SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), "sleep 1000 & sleep 1000".into()],
            ..SpawnSpec::default()
        })
        .unwrap();
        let pgid = spawned.guard.pgid().unwrap();
        let started = start_time(pgid);
        assert!(started.is_some());
        assert!(is_ours(pgid, started));
        assert!(
            !is_ours(pgid, started.map(|t| t + 1)),
            "another start time is not ours"
        );
        // Wait for the background sleep to join the group.
        for _ in 0..100 {
            if live_members(pgid).len() >= 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(live_members(pgid).len() >= 2, "{:?}", live_members(pgid));
        let guard = spawned.guard;
        assert!(stop_group(pgid, Duration::from_secs(2)).await);
        assert!(live_members(pgid).is_empty());
        drop(guard);
    }
}
