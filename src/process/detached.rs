//! A process started to outlive us on purpose (the gateway daemon): its own process group, so
//! our terminal's signals and our own exit leave it running, stdin closed, its output appended
//! to a private log. It is never killed or reaped by us: it ends itself (idle exit, `daemon
//! stop`), and its own children are its to reap.

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::WITHHELD_ENV;

/// Starts `program args…` detached, its stdout and stderr appended to `log` (0600). Returns
/// its pid.
pub fn spawn_detached(program: &Path, args: &[String], log: &Path) -> io::Result<u32> {
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(log)?;
    let err = out.try_clone()?;
    let mut command = Command::new(program);
    for key in WITHHELD_ENV {
        command.env_remove(key);
    }
    let child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()?;
    Ok(child.id())
}
