//! Who else runs processes here: on a shared host, anything on a process's command line is
//! readable by every local user (`/proc/PID/cmdline`), so secrets must not travel there.

use std::os::unix::fs::MetadataExt;

/// The first uid of people (below it: system accounts, whose daemons run everywhere).
const FIRST_PERSON_UID: u32 = 1000;

/// `nobody`: an account for unprivileged daemons, not a person.
const NOBODY: u32 = 65534;

/// Overrides the detection: `yes` or `no` (for a machine whose other accounts are not people,
/// or to be careful anyway).
pub const SHARED_HOST_ENV: &str = "MCP_LAUNCH_SHARED_HOST";

/// True when other people (not system accounts) run processes on this machine, or when
/// [`SHARED_HOST_ENV`] says `yes`.
pub fn shared_host() -> bool {
    match std::env::var(SHARED_HOST_ENV).as_deref() {
        Ok("yes" | "1" | "true") => return true,
        Ok("no" | "0" | "false") => return false,
        _ => {}
    }
    let owners = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some(entry.metadata().ok()?.uid())
        });
    others_among(owners, nix::unistd::geteuid().as_raw())
}

/// True when `owners` (uids of processes) include a person other than `me`.
fn others_among(mut owners: impl Iterator<Item = u32>, me: u32) -> bool {
    owners.any(|uid| uid != me && uid >= FIRST_PERSON_UID && uid != NOBODY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_people_make_a_host_shared() {
        assert!(!others_among([0, 0, 1000, 101, 65534].into_iter(), 1000));
        assert!(others_among([0, 1000, 1001].into_iter(), 1000));
        assert!(
            others_among([0, 1001].into_iter(), 0),
            "root on a machine with a user"
        );
        assert!(!others_among([0, 2, 33].into_iter(), 0));
    }

    /// The real scan finds a process of another person (started as uid 4242: the tests run
    /// as root on this project's machines). Only this test binary sees it: the end-to-end
    /// tests, which run `up --controller auto`, are another process run after this one.
    #[test]
    fn a_process_of_another_person_makes_the_host_shared() {
        use std::os::unix::process::CommandExt;
        assert!(
            nix::unistd::geteuid().is_root(),
            "needs root to start a process as uid 4242"
        );
        let mut neighbour = std::process::Command::new("sleep")
            .arg("60")
            .uid(4242)
            .spawn()
            .expect("sleep as uid 4242");
        let seen = shared_host();
        let _ = neighbour.kill();
        let _ = neighbour.wait();
        assert!(seen);
    }
}
