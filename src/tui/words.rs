//! Messages from the layers below, in the TUI's words: an error in one line for a table cell,
//! and a launch warning whose fix names a key of this TUI rather than an `mcp-launch` command
//! (the commands stay right for the CLI and the log; here the key is one press away).

/// `message` in one line: its first, and when that only announces the stderr tail
/// (`…; last stderr lines:`), the tail's last line after it — where a crash says why.
pub fn one_line(message: &str) -> String {
    let mut lines = message.lines();
    let first = lines.next().unwrap_or_default();
    let Some(head) = first.strip_suffix("; last stderr lines:") else {
        return first.to_string();
    };
    match lines.map(str::trim).rfind(|l| !l.is_empty()) {
        Some(last) => format!("{head}: {last}"),
        None => head.to_string(),
    }
}

/// `warning` with each backquoted `mcp-launch …` fix this TUI has a key for replaced by that
/// key; others are kept as written.
pub fn in_tui_words(warning: &str) -> String {
    let mut out = String::with_capacity(warning.len());
    let mut rest = warning;
    while let Some(start) = rest.find("`mcp-launch ") {
        let Some(len) = rest[start + 1..].find('`') else {
            break;
        };
        let command = &rest[start + 1..start + 1 + len];
        out.push_str(&rest[..start]);
        match key_for(command) {
            Some(key) => out.push_str(&key),
            None => out.push_str(&rest[start..start + len + 2]),
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The keys that do what `command` does, when the TUI has them.
fn key_for(command: &str) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let server_screen = |s: &str| format!("in {s}'s screen (esc, then enter on {s})");
    match words[1..] {
        ["tool", "describe", server, tool, ..] => Some(format!(
            "t (trim) or i (edit) on {tool} {}",
            server_screen(server)
        )),
        ["tool", "deny", "SERVER", "TOOL"] => {
            Some("space on the tool in its server's screen".to_string())
        }
        ["tool", "deny", server, tool] => {
            Some(format!("space on {tool} {}", server_screen(server)))
        }
        ["server", "enable" | "disable", server] => Some(format!("e {}", server_screen(server))),
        ["list", server, "--refresh"] => Some(format!("r on {server} in the preflight (esc)")),
        ["list", server] => Some(format!("{server}'s row in the preflight (esc, then d)")),
        ["up", "-v"] => Some("the log (l)".to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_reads_in_one_line_with_its_last_stderr_line() {
        let crash = "server exited with code 3 during initialize; last stderr lines:\n    \
                     Traceback (most recent call last):\n    sqlite3.OperationalError: cannot open database";
        assert_eq!(
            one_line(crash),
            "server exited with code 3 during initialize: sqlite3.OperationalError: cannot open database"
        );
        assert_eq!(one_line("no tools\nmore"), "no tools");
    }

    #[test]
    fn launch_warnings_name_the_tuis_keys() {
        let cut = "fs/read_text_file: description cut from 400 to 300 characters; set a shorter \
                   one with `mcp-launch tool describe fs read_text_file --text \"…\"`";
        assert_eq!(
            in_tui_words(cut),
            "fs/read_text_file: description cut from 400 to 300 characters; set a shorter one \
             with t (trim) or i (edit) on read_text_file in fs's screen (esc, then enter on fs)"
        );
        let none = "x: see why with `mcp-launch list x` or `mcp-launch up -v`";
        assert_eq!(
            in_tui_words(none),
            "x: see why with x's row in the preflight (esc, then d) or the log (l)"
        );
        let kept = "stop it with `mcp-launch down` first";
        assert_eq!(in_tui_words(kept), kept);
    }
}
