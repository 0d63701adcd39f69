//! Human tables, `--json` rendering and the one error envelope `{type, message, help}`.
//!
//! Colour goes through `anstream`, which strips it when stdout is not a terminal and honours
//! `NO_COLOR`. Human errors go to stderr; JSON (errors included) goes to stdout, so scripts
//! read one stream.

use std::io::{self, Write};

use anstyle::{AnsiColor, Style};
use serde_json::{json, Value};
use unicode_width::UnicodeWidthStr;

use crate::error::Actionable;

/// Styles used in human output.
pub mod style {
    use super::*;
    /// Success (connected).
    pub const GOOD: Style = AnsiColor::Green.on_default();
    /// Failure (error).
    pub const BAD: Style = AnsiColor::Red.on_default().bold();
    /// Warnings.
    pub const WARN: Style = AnsiColor::Yellow.on_default();
    /// Secondary information.
    pub const DIM: Style = Style::new().dimmed();
    /// Headings.
    pub const HEAD: Style = Style::new().bold();
}

/// The `{type, message, help}` object of an error.
pub fn error_object(err: &dyn Actionable) -> Value {
    json!({"type": err.kind(), "message": err.to_string(), "help": err.help()})
}

/// The full JSON error envelope: `{"success": false, "error": {...}}`.
pub fn error_envelope(err: &dyn Actionable) -> Value {
    json!({"success": false, "error": error_object(err)})
}

/// Writes `value` as pretty JSON to stdout.
pub fn print_json(value: &Value) -> io::Result<()> {
    // One write: stdout is line-buffered, and a pipe would otherwise get a write per line.
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    anstream::stdout().lock().write_all(&text)
}

/// Prints a command's `--json` answer with `success` first (agents read it before anything
/// else): true when the command did what it was asked, i.e. when it exits 0.
pub fn print_answer(success: bool, value: Value) -> io::Result<()> {
    let mut answer = serde_json::Map::new();
    answer.insert("success".into(), Value::Bool(success));
    match value {
        Value::Object(fields) => answer.extend(fields),
        other => {
            answer.insert("result".into(), other);
        }
    }
    print_json(&Value::Object(answer))
}

/// A cut result's envelope in the command line's words: each `read_output {"handle": …}` an
/// MCP client would send becomes the `mcp-launch output HANDLE …` that reads the same part
/// (`offset` N → `--range N+1:`, `grep`, `jsonpath`). Text without one is returned as is.
pub fn in_cli_words(text: &str) -> String {
    const CALL: &str = "read_output {";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(CALL) {
        let object = &rest[at + CALL.len() - 1..];
        let mut read = serde_json::Deserializer::from_str(object).into_iter::<Value>();
        let Some(Ok(request)) = read.next() else {
            out.push_str(&rest[..at + CALL.len()]);
            rest = &rest[at + CALL.len()..];
            continue;
        };
        out.push_str(&rest[..at]);
        out.push_str(&output_command(&request));
        rest = &object[read.byte_offset()..];
    }
    out.push_str(rest);
    out
}

/// `mcp-launch output HANDLE [--range A:] [--grep RE] [--jsonpath P]` for a `read_output`
/// request.
fn output_command(request: &Value) -> String {
    let text = |key: &str| request.get(key).and_then(Value::as_str);
    let quoted = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    let mut command = format!("mcp-launch output {}", text("handle").unwrap_or("HANDLE"));
    if let Some(offset) = request.get("offset").and_then(Value::as_u64) {
        command.push_str(&format!(" --range {}:", offset + 1));
    }
    if let Some(grep) = text("grep") {
        command.push_str(&format!(" --grep {}", quoted(grep)));
    }
    if let Some(path) = text("jsonpath") {
        command.push_str(&format!(" --jsonpath {}", quoted(path)));
    }
    command
}

/// Prints `value` as one compact line (a stream of results, one per line).
pub fn print_json_line(value: &Value) -> io::Result<()> {
    let mut text = serde_json::to_vec(value)?;
    text.push(b'\n');
    let mut out = anstream::stdout().lock();
    out.write_all(&text)?;
    out.flush()
}

/// Human output on stdout, made safe for a terminal ([`TerminalSafe`]): every human renderer
/// writes through this (or [`stderr`]); `--json` output does not (it stays exact JSON).
pub fn stdout() -> TerminalSafe<anstream::AutoStream<io::StdoutLock<'static>>> {
    TerminalSafe::new(anstream::stdout().lock())
}

/// Human output on stderr, made safe for a terminal like [`stdout`].
pub fn stderr() -> TerminalSafe<anstream::AutoStream<io::StderrLock<'static>>> {
    TerminalSafe::new(anstream::stderr().lock())
}

/// Reports an error: the envelope on stdout with `--json`, else a styled message on stderr.
pub fn print_error(err: &dyn Actionable, json: bool) -> io::Result<()> {
    if json {
        return print_json(&error_envelope(err));
    }
    let mut out = stderr();
    let bad = style::BAD;
    writeln!(out, "{bad}error:{bad:#} {err}")?;
    let help = err.help();
    if !help.is_empty() {
        let dim = style::HEAD;
        let help = help.replace('\n', "\n        ");
        writeln!(out, "  {dim}help:{dim:#} {help}")?;
    }
    Ok(())
}

/// A warning line on stderr.
pub fn warn(message: &str) -> io::Result<()> {
    let w = style::WARN;
    writeln!(stderr(), "{w}warning:{w:#} {message}")
}

/// A writer that makes what servers, configs and state files say safe to show on a terminal:
/// every control character but newline and tab is written visibly escaped (`\x1b`, `\x07`,
/// and the C1 controls as `\u{9b}`), so a description or result cannot write the clipboard
/// (OSC 52), retitle the window or move the cursor. Only our own styles' sequences pass: SGR
/// with reset, bold, dim, italic, underline and colour parameters (never conceal or blink).
/// Escape sequences split across writes are held until complete; what is held at the end is
/// written escaped.
pub struct TerminalSafe<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

/// The longest style sequence we emit is far shorter; a longer one is not ours.
const STYLE_SEQUENCE_MAX: usize = 32;

impl<W: Write> TerminalSafe<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        TerminalSafe {
            inner,
            pending: Vec::new(),
        }
    }

    /// Writes what can be decided of the pending bytes; at the end, all of them.
    fn drain(&mut self, at_end: bool) -> io::Result<()> {
        let (safe, used) = make_safe(&self.pending, at_end);
        self.pending.drain(..used);
        self.inner.write_all(&safe)
    }
}

impl<W: Write> Write for TerminalSafe<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        self.drain(false)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain(true)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for TerminalSafe<W> {
    fn drop(&mut self) {
        let _ = self.drain(true);
    }
}

/// `text` made safe for a terminal, as [`TerminalSafe`] writes it.
pub fn terminal_safe(text: &str) -> String {
    String::from_utf8_lossy(&make_safe(text.as_bytes(), true).0).into_owned()
}

/// The safe form of `bytes` and how many were used (fewer than all when `at_end` is false and
/// they end inside an escape sequence or a UTF-8 C1 control).
fn make_safe(bytes: &[u8], at_end: bool) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            0x1b => match style_sequence(&bytes[i..]) {
                Sequence::Ours(len) => {
                    out.extend_from_slice(&bytes[i..i + len]);
                    i += len;
                    continue;
                }
                Sequence::Unfinished if !at_end => break,
                _ => out.extend_from_slice(b"\\x1b"),
            },
            b'\n' | b'\t' => out.push(b),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            // C1 controls (U+0080–U+009F) in UTF-8; some terminals obey them (U+009B is CSI).
            0xc2 => match bytes.get(i + 1) {
                None if !at_end => break,
                Some(&next @ 0x80..=0x9f) => {
                    out.extend_from_slice(format!("\\u{{{next:02x}}}").as_bytes());
                    i += 2;
                    continue;
                }
                _ => out.push(b),
            },
            _ => out.push(b),
        }
        i += 1;
    }
    (out, i)
}

enum Sequence {
    /// One of our style sequences, this many bytes long.
    Ours(usize),
    /// It may become one with more bytes.
    Unfinished,
    /// Anything else.
    Foreign,
}

/// Whether `bytes` (starting with ESC) open one of our style sequences: `ESC [ params m` with
/// parameters from reset, bold, dim, italic, underline, their ends and the colours.
fn style_sequence(bytes: &[u8]) -> Sequence {
    let is_ours = |param: &[u8]| {
        let n: u32 = std::str::from_utf8(param)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        param.is_empty() || matches!(n, 0..=4 | 22..=24 | 30..=39 | 40..=49 | 90..=97 | 100..=107)
    };
    match bytes.get(1) {
        None => return Sequence::Unfinished,
        Some(b'[') => {}
        Some(_) => return Sequence::Foreign,
    }
    for (at, &b) in bytes.iter().enumerate().skip(2).take(STYLE_SEQUENCE_MAX) {
        match b {
            b'0'..=b'9' | b';' => {}
            b'm' if bytes[2..at].split(|&c| c == b';').all(is_ours) => {
                return Sequence::Ours(at + 1)
            }
            _ => return Sequence::Foreign,
        }
    }
    if bytes.len() < STYLE_SEQUENCE_MAX + 2 {
        Sequence::Unfinished
    } else {
        Sequence::Foreign
    }
}

/// `n` and its noun, plural unless one: `1 tool`, `12,345 tokens`.
pub fn counted(n: usize, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", thousands(n))
}

/// `n` with thousands separators: `12,345`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Cuts `text` to at most `width` display columns, ending with `…` when cut; the first line only.
pub fn clip(text: &str, width: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    if line.width() <= width && !text.trim().contains('\n') {
        return line.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in line.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// The terminal width, or 100 when stdout is not a terminal (`COLUMNS` wins when set).
pub fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100)
}

/// A table with aligned columns; each cell may carry a style.
pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<(String, Style)>>,
    /// Columns aligned right (numbers).
    right: Vec<bool>,
}

impl Table {
    /// A table with these headers; columns listed in `right_aligned` are aligned right.
    pub fn new(headers: Vec<&'static str>, right_aligned: &[usize]) -> Self {
        let right = (0..headers.len())
            .map(|i| right_aligned.contains(&i))
            .collect();
        Self {
            headers,
            rows: Vec::new(),
            right,
        }
    }

    /// Adds a row of plain cells.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows
            .push(cells.into_iter().map(|c| (c, Style::new())).collect());
    }

    /// Adds a row of styled cells.
    pub fn styled_row(&mut self, cells: Vec<(String, Style)>) {
        self.rows.push(cells);
    }

    /// Renders the table with two spaces between columns and no trailing spaces.
    pub fn render(&self) -> String {
        let cols = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.width()).collect();
        for row in &self.rows {
            for (i, (cell, _)) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(cell.width());
            }
        }
        let mut out = String::new();
        let head: Vec<(String, Style)> = self
            .headers
            .iter()
            .map(|h| (h.to_string(), style::HEAD))
            .collect();
        for row in std::iter::once(&head).chain(&self.rows) {
            let mut line = String::new();
            for (i, (cell, st)) in row.iter().enumerate().take(cols) {
                let pad = widths[i].saturating_sub(cell.width());
                let last = i + 1 == row.len().min(cols);
                if self.right[i] {
                    line.push_str(&" ".repeat(pad));
                }
                line.push_str(&format!("{st}{cell}{st:#}"));
                if !self.right[i] && !last {
                    line.push_str(&" ".repeat(pad));
                }
                if !last {
                    line.push_str("  ");
                }
            }
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_envelope_reads_in_the_command_lines_words() {
        let envelope = r#"[mcp-launch: kept lines 1-730 of 20,000 lines. More: read_output {"handle": "h_1", "offset": 730}, or grep. Handles last 24 h.]"#;
        assert_eq!(
            super::in_cli_words(envelope),
            "[mcp-launch: kept lines 1-730 of 20,000 lines. More: mcp-launch output h_1 --range 731:, or grep. Handles last 24 h.]"
        );
        let json = r#"More: read_output {"handle": "h_2", "jsonpath": "$.items[5:]"}"#;
        assert_eq!(
            super::in_cli_words(json),
            "More: mcp-launch output h_2 --jsonpath '$.items[5:]'"
        );
        assert_eq!(
            super::in_cli_words("read_output {oops"),
            "read_output {oops"
        );
    }

    /// Issue 24 (Low 18): escapes in what servers send were printed raw on a terminal.
    #[test]
    fn terminal_escapes_are_shown_not_obeyed_and_our_styles_pass() {
        use super::*;
        let hostile = "a\x1b]52;c;aGk=\x07b\x1b]0;title\x1b\\c\x1b[2J\x1b[8m\r\u{9b}31m\x7f";
        let safe = terminal_safe(hostile);
        assert!(
            !safe.contains('\x1b') && !safe.contains('\x07') && !safe.contains('\r'),
            "{safe:?}"
        );
        assert!(
            !safe.contains('\u{9b}') && !safe.contains('\x7f'),
            "{safe:?}"
        );
        assert!(safe.starts_with("a\\x1b]52;c;aGk=\\x07b"), "{safe:?}");
        assert!(
            safe.contains("\\x1b[2J") && safe.contains("\\u{9b}31m"),
            "{safe:?}"
        );
        let styled = format!(
            "{}bad{:#} {}dim{:#}\tcafé\n",
            style::BAD.render(),
            style::BAD,
            style::DIM.render(),
            style::DIM
        );
        assert_eq!(terminal_safe(&styled), styled);
        // Split across writes, whole at the end.
        let mut out = Vec::new();
        {
            let mut safe = TerminalSafe::new(&mut out);
            let pieces: [&[u8]; 6] = [
                b"x\x1b",
                b"[3",
                b"2mgreen\x1b[0m \x1b",
                b"]52;c;",
                b"aGk=\x07 \xc3\xa9\xc2",
                b"\x85\x1b",
            ];
            for piece in pieces {
                safe.write_all(piece).unwrap();
            }
        }
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            "x\x1b[32mgreen\x1b[0m \\x1b]52;c;aGk=\\x07 é\\u{85}\\x1b"
        );
    }

    use super::*;

    #[test]
    fn tables_align_and_trim() {
        let mut t = Table::new(vec!["NAME", "TOOLS", "NOTE"], &[1]);
        t.row(vec!["a".into(), "5".into(), "x".into()]);
        t.row(vec!["longer".into(), "123".into(), "".into()]);
        let plain = anstream::adapter::strip_str(&t.render()).to_string();
        assert_eq!(
            plain,
            "NAME    TOOLS  NOTE\na           5  x\nlonger    123  \n"
        );
    }

    #[test]
    fn numbers_and_clipping() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("a very long description", 8), "a very …");
        assert_eq!(clip("first line\nsecond", 40), "first line…");
        assert_eq!(clip("日本語のテキスト", 7), "日本語…");
    }
}
