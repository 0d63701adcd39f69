//! Process and port helpers: pids the fault server reports, whether a process is gone, free
//! ports, and shell words of printed command lines.

use std::path::Path;
use std::time::{Duration, Instant};

/// Reads `--grandchild PIDFILE`: (grandchild pid, server pid), waiting up to 5 s for it.
pub fn read_pidfile(path: &Path) -> (i32, i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if let [grandchild, server] = pids[..] {
                return (grandchild, server);
            }
        }
        assert!(
            Instant::now() < deadline,
            "pid file {} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The state letter of a process from `/proc/PID/stat`, `None` when it does not exist.
fn process_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S …`: comm may hold spaces and parentheses; the state follows the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.trim_start().chars().next()
}

/// True while `pid` runs (a zombie counts as gone: PID 1 here does not reap).
pub fn pid_alive(pid: i32) -> bool {
    !matches!(process_state(pid), None | Some('Z') | Some('X'))
}

/// True when `pid` is gone within ~5 s.
pub fn pid_gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pid_alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Panics unless `pid` is gone within ~5 s.
pub fn assert_pid_gone(pid: i32, what: &str) {
    assert!(
        pid_gone(pid),
        "{what} (pid {pid}) is still alive: state {:?}",
        process_state(pid)
    );
}

/// A port nothing listens on right now (bound, then released).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// The first of `count` consecutive ports nothing listens on right now. `up` gives the stacks
/// after the first the ports after `--port` and `--mcpo-port`, and fails a stack whose
/// explicit port is taken (the ephemeral ports of the suite's own connections included).
pub fn free_ports(count: u16) -> u16 {
    for _ in 0..100 {
        let base = free_port();
        let free = |port: u16| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
        if base.checked_add(count).is_some() && (base + 1..base + count).all(free) {
            return base;
        }
    }
    panic!("no {count} consecutive free ports in 100 tries");
}

/// Splits a POSIX shell command line into words (single quotes, double quotes, backslashes).
pub fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                if !"\"\\$`".contains(n) {
                                    word.push('\\');
                                }
                                word.push(n);
                            }
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[test]
fn shell_words_undo_the_quoting_of_example_calls() {
    assert_eq!(
        shell_words(r#"mcp-launch --config 'my dir/c.json' call s t '{"a":"it'\''s"}'"#),
        vec![
            "mcp-launch",
            "--config",
            "my dir/c.json",
            "call",
            "s",
            "t",
            r#"{"a":"it's"}"#
        ]
    );
    assert_eq!(
        shell_words(r#"a "b \" c" d\ e ''"#),
        vec!["a", "b \" c", "d e", ""]
    );
}
