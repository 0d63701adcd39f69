//! Process groups we no longer hold a guard for: the ones a previous `up` recorded in the state
//! file. `down` and `status` ask whether they still run and end them.
//!
//! Liveness reads `/proc`: PID 1 on some machines does not reap orphans, so a group whose
//! members are all zombies has ended for every purpose but `kill(2)`, which still finds it.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::signal_group;
use super::vouch::{vouch, Expect, Untrusted};

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
/// seconds. Descendants that left the group (mcpo starts each server in a session of its own)
/// are found first and ended after it: they would outlive a group kill. Returns true when no
/// member and no such descendant remains. For a group we hold a guard of; a group a file
/// recorded goes through [`stop_recorded_group`].
pub async fn stop_group(pgid: i32, grace: Duration) -> bool {
    let strays = strays_of(pgid);
    signal_group(pgid, Signal::SIGTERM);
    let mut gone = wait_gone(pgid, grace).await;
    if !gone {
        signal_group(pgid, Signal::SIGKILL);
        gone = wait_gone(pgid, Duration::from_secs(2)).await;
    }
    gone & end_strays(&strays).await
}

/// Ends group `pgid` that a file recorded (leader started at `started`), as [`stop_group`]
/// does, but only when its leader is vouched for first (see [`vouch`]). When the leader is gone
/// and `expect` names the `up` that started the group, each remaining member is vouched for on
/// its own (by the marker in its environment) and ended one by one; otherwise nothing proves
/// the group is ours and it is left alone.
pub async fn stop_recorded_group(
    pgid: i32,
    started: Option<u64>,
    expect: &Expect,
    grace: Duration,
) -> Result<bool, Untrusted> {
    match vouch(pgid, started, expect) {
        // Vouched just now: the pid cannot be reused while it leads a live group, so the
        // signals reach the group we checked (strays are re-checked one by one).
        Ok(()) => Ok(stop_group(pgid, grace).await),
        Err(Untrusted::Gone(_)) if matches!(expect, Expect::ChildOf { .. }) => {
            let members: Vec<(i32, u64)> = live_members(pgid)
                .into_iter()
                .filter_map(|pid| Some((pid, start_time(pid)?)))
                .filter(|&(pid, started)| vouch(pid, Some(started), expect).is_ok())
                .collect();
            if members.is_empty() {
                return Err(Untrusted::Gone(pgid));
            }
            let mut all = members.clone();
            for &(pid, _) in &members {
                all.extend(strays_of(pid));
            }
            Ok(end_strays(&all).await)
        }
        Err(why) => Err(why),
    }
}

/// Descendants of `pgid`'s leader outside its group, each with its start time, so that each
/// can be checked again right before it is signalled.
fn strays_of(pgid: i32) -> Vec<(i32, u64)> {
    descendants(pgid)
        .into_iter()
        .filter_map(|pid| {
            stat_fields(pid)
                .filter(|f| f.pgrp != pgid)
                .map(|f| (pid, f.start_time))
        })
        .collect()
}

/// Ends processes one by one (strays that left their parent's group, or what remains of a
/// group whose leader is gone): TERM, a short grace (their parent's exit usually closed their
/// stdin and they are leaving anyway), then KILL. Each is signalled only while it is still the
/// process found (same start time, not a zombie).
async fn end_strays(strays: &[(i32, u64)]) -> bool {
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    let pids: Vec<i32> = strays.iter().map(|(pid, _)| *pid).collect();
    for (signal, grace) in [
        (Signal::SIGTERM, Duration::from_millis(500)),
        (Signal::SIGKILL, Duration::from_secs(1)),
    ] {
        if wait_until_dead(&pids, grace).await {
            return true;
        }
        for &(pid, started) in strays {
            if is_running(pid, Some(started)) {
                let _ = kill(Pid::from_raw(pid), signal);
            }
        }
    }
    wait_until_dead(&pids, Duration::from_secs(2)).await
}

async fn wait_until_dead(pids: &[i32], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !pids
            .iter()
            .any(|p| stat_fields(*p).is_some_and(|f| f.state != 'Z'))
        {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Every live descendant of `pid` (children, their children, …), found through `/proc`.
pub fn descendants(pid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(i32, i32)> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| {
            stat_fields(p)
                .filter(|f| f.state != 'Z')
                .map(|f| (p, f.ppid))
        })
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(child, ppid) in &parents {
            if ppid == parent && !found.contains(&child) {
                found.push(child);
                frontier.push(child);
            }
        }
    }
    found
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
    ppid: i32,
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
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{spawn, SpawnSpec};

    #[tokio::test]
    async fn descendants_in_their_own_session_are_ended_too() {
        // `setsid` puts the sleeper in a session (and group) of its own, as mcpo does with
        // its servers; a group kill alone would miss it.
        let spawned = spawn(&SpawnSpec {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "setsid sleep 1000 & echo $! >&2; sleep 1000".into(),
            ],
            ..SpawnSpec::default()
        })
        .unwrap();
        let pgid = spawned.guard.pgid().unwrap();
        let stray: i32 = loop {
            if let Ok(pid) = spawned.guard.stderr_tail(1).trim().parse() {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        for _ in 0..100 {
            if stat_fields(stray).is_some_and(|f| f.pgrp == stray) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(descendants(pgid).contains(&stray));
        assert!(stop_group(pgid, Duration::from_secs(1)).await);
        assert!(
            stat_fields(stray).is_none_or(|f| f.state == 'Z'),
            "the stray survived"
        );
        drop(spawned);
    }

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
