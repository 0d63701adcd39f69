//! Reading a handle: a range of lines, the lines matching a regex, or the nodes a JSONPath
//! selects, each answer within the reader's budget and saying where to go on.

use std::io::{BufRead, Read};

use serde_json::{json, Value};

use super::cut::{cut_json, parse_json_text};
use super::measure::{cost_within, prefix_within, window};
use super::store::{ClientScope, Kind, Store};
use super::{Budget, OutputsError};

/// A matching line longer than this is shown as a window around its match.
const LINE_SHOWN_BYTES: usize = 400;

/// Patterns and paths longer than this are refused (they come from a model).
const PATTERN_MAX_BYTES: usize = 4096;

/// What to read of a handle. Without `grep` or `jsonpath`: lines `offset..offset+limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadRequest {
    /// The first line (0-based) or, with `grep`, the first match to show.
    pub offset: Option<usize>,
    /// At most this many lines (or matches); as many as fit the budget when absent.
    pub limit: Option<usize>,
    /// Only the lines matching this regex, numbered.
    pub grep: Option<String>,
    /// The nodes this JSONPath selects (JSON outputs), as a JSON array.
    pub jsonpath: Option<String>,
}

impl ReadRequest {
    /// The handle and request from `read_output`'s arguments.
    pub fn from_arguments(arguments: &Value) -> Result<(String, ReadRequest), OutputsError> {
        let handle = arguments
            .get("handle")
            .and_then(Value::as_str)
            .ok_or_else(|| OutputsError::invalid("`handle` (a string like h_…) is required"))?;
        let count = |name: &str| -> Result<Option<usize>, OutputsError> {
            match arguments.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v.as_u64().map(|n| Some(n as usize)).ok_or_else(|| {
                    OutputsError::invalid(format!("`{name}` must be a whole number ≥ 0"))
                }),
            }
        };
        let text = |name: &str| -> Result<Option<String>, OutputsError> {
            match arguments.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(OutputsError::invalid(format!("`{name}` must be a string"))),
            }
        };
        Ok((
            handle.to_string(),
            ReadRequest {
                offset: count("offset")?,
                limit: count("limit")?,
                grep: text("grep")?,
                jsonpath: text("jsonpath")?,
            },
        ))
    }
}

/// What a read found.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadOutput {
    /// The lines, matches or JSON read.
    pub text: String,
    /// One line saying what this is and where to go on (`[lines 1-200 of 48,113; …]`).
    pub note: String,
    /// Where the next read starts (an `offset`), when there is more.
    pub next_offset: Option<usize>,
    /// The content block itself, for an image, audio or embedded resource handle.
    pub block: Option<Value>,
}

impl ReadOutput {
    /// As a `CallToolResult`: the block, or the text followed by the note.
    pub fn to_result(&self) -> Value {
        match &self.block {
            Some(block) => json!({"content": [block]}),
            None => {
                let mut text = self.text.clone();
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&self.note);
                json!({"content": [{"type": "text", "text": text}]})
            }
        }
    }
}

/// The whole `read_output` tool: its arguments in, a `CallToolResult` out — the answer, or
/// `isError: true` with what went wrong and what to do. Blocking.
pub fn read_output(store: &Store, scope: &ClientScope, arguments: &Value, budget: Budget) -> Value {
    as_result(read_checked(store, scope, arguments, budget))
}

/// [`read_output`] with its error kept typed (for an HTTP status).
pub fn read_checked(
    store: &Store,
    scope: &ClientScope,
    arguments: &Value,
    budget: Budget,
) -> Result<Value, OutputsError> {
    let (handle, request) = ReadRequest::from_arguments(arguments)?;
    Ok(store.read(&handle, scope, &request, budget)?.to_result())
}

/// A read as the `read_output` tool answers it: the part, or the error as `isError`.
pub(super) fn as_result(read: Result<Value, OutputsError>) -> Value {
    use crate::error::Actionable;
    read.unwrap_or_else(|error| {
        json!({
            "content": [{"type": "text", "text": format!("{error}\nhelp: {}", error.help())}],
            "isError": true,
        })
    })
}

impl Store {
    /// Reads `handle` for `scope`, within `budget` (0 reads what was asked, unbounded).
    pub fn read(
        &self,
        handle: &str,
        scope: &ClientScope,
        request: &ReadRequest,
        budget: Budget,
    ) -> Result<ReadOutput, OutputsError> {
        let mut opened = self.open_handle(handle, scope)?;
        let limit = if budget.is_off() {
            usize::MAX / 64
        } else {
            budget
                .max_tokens
                .saturating_sub(super::ENVELOPE_TOKENS)
                .max(1)
        };
        let store_error = |e| OutputsError::store(self.dir().join(handle), e);
        if opened.header.kind == Kind::Blob {
            let mut body = Vec::new();
            opened.body.read_to_end(&mut body).map_err(store_error)?;
            let block =
                serde_json::from_slice(&body).map_err(|e| OutputsError::invalid(e.to_string()))?;
            return Ok(ReadOutput {
                text: String::new(),
                note: String::new(),
                next_offset: None,
                block: Some(block),
            });
        }
        if let Some(path) = &request.jsonpath {
            let mut body = String::new();
            opened.body.read_to_string(&mut body).map_err(store_error)?;
            return read_jsonpath(&body, path, limit);
        }
        let total = opened.header.lines as usize;
        match &request.grep {
            Some(pattern) => read_grep(opened.body, pattern, request, limit),
            None => read_lines(opened.body, total, request, limit),
        }
    }
}

fn read_lines(
    mut body: impl BufRead,
    total: usize,
    request: &ReadRequest,
    limit: usize,
) -> Result<ReadOutput, OutputsError> {
    let offset = request.offset.unwrap_or(0);
    if offset > total {
        return Err(OutputsError::invalid(format!(
            "offset {offset} is past the end ({total} lines)"
        )));
    }
    let io = |e: std::io::Error| OutputsError::invalid(e.to_string());
    for _ in 0..offset {
        body.skip_until(b'\n').map_err(io)?;
    }
    let wanted = request.limit.unwrap_or(usize::MAX);
    let (mut text, mut used, mut shown) = (String::new(), 0usize, 0usize);
    let mut line = Vec::new();
    let mut mid_line = None;
    while shown < wanted {
        line.clear();
        if body.read_until(b'\n', &mut line).map_err(io)? == 0 {
            break;
        }
        let piece = String::from_utf8_lossy(&line);
        match cost_within(&piece, limit - used) {
            Some(cost) => {
                used += cost;
                text.push_str(&piece);
                shown += 1;
            }
            None if shown == 0 => {
                let end = prefix_within(&piece, limit);
                text.push_str(&piece[..end]);
                mid_line = Some((end, piece.len()));
                shown = 1;
                break;
            }
            None => break,
        }
    }
    let end = offset + shown;
    let next_offset = (end < total).then_some(end);
    let mut note = if shown == 0 {
        format!("[no lines from offset {offset}; the output has {total}]")
    } else {
        format!(
            "[lines {}-{end} of {}",
            offset + 1,
            crate::output::thousands(total)
        )
    };
    if let Some((kept, of)) = mid_line {
        note.push_str(&format!(
            "; line {end} is long: its first {kept} of {} bytes shown, use grep to find more in it",
            crate::output::thousands(of)
        ));
    }
    if shown > 0 {
        match next_offset {
            Some(next) => note.push_str(&format!("; more: offset {next}]")),
            None => note.push_str("; the end]"),
        }
    }
    Ok(ReadOutput {
        text,
        note,
        next_offset,
        block: None,
    })
}

fn read_grep(
    mut body: impl BufRead,
    pattern: &str,
    request: &ReadRequest,
    limit: usize,
) -> Result<ReadOutput, OutputsError> {
    if pattern.len() > PATTERN_MAX_BYTES {
        return Err(OutputsError::invalid("the grep pattern is too long"));
    }
    let regex = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| OutputsError::invalid(format!("grep: {e}")))?;
    let skip = request.offset.unwrap_or(0);
    let wanted = request.limit.unwrap_or(usize::MAX);
    let io = |e: std::io::Error| OutputsError::invalid(e.to_string());
    let (mut text, mut used, mut shown, mut matches) = (String::new(), 0usize, 0usize, 0usize);
    let mut is_full = false;
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        if body.read_until(b'\n', &mut line).map_err(io)? == 0 {
            break;
        }
        number += 1;
        let piece = String::from_utf8_lossy(&line);
        let piece = piece.trim_end_matches(['\n', '\r']);
        if !regex.is_match(piece) {
            continue;
        }
        matches += 1;
        if matches <= skip || is_full || shown >= wanted {
            continue;
        }
        let found = regex.find(piece).map_or((0, 0), |m| (m.start(), m.end()));
        let mut entry = format!(
            "{number}:{}",
            window(piece, found.0, found.1, LINE_SHOWN_BYTES)
        );
        entry.push('\n');
        match cost_within(&entry, limit - used) {
            Some(cost) => {
                used += cost;
                text.push_str(&entry);
                shown += 1;
            }
            None if shown == 0 => {
                let end = prefix_within(&entry, limit.saturating_sub(1));
                text.push_str(&entry[..end]);
                text.push_str("…\n");
                shown = 1;
                is_full = true;
            }
            None => is_full = true,
        }
    }
    let end = skip + shown;
    let next_offset = (end < matches).then_some(end);
    let note = match next_offset {
        _ if matches == 0 => format!("[no line matches {pattern:?}]"),
        Some(next) => format!(
            "[matches {}-{end} of {}; more: grep with offset {next}]",
            skip + 1,
            crate::output::thousands(matches)
        ),
        None => format!(
            "[matches {}-{end} of {}]",
            (skip + 1).min(matches),
            crate::output::thousands(matches)
        ),
    };
    Ok(ReadOutput {
        text,
        note,
        next_offset,
        block: None,
    })
}

/// The most bytes of JSON a query may select (its nodes serialised one after another). `$..*`
/// selects every subtree once per ancestor: a 7.5 MB nested handle selected over 1 GB.
pub(crate) const JSONPATH_MAX_BYTES: usize = 16 << 20;

/// A JSONPath a model sent (`read_output`, the sparse gateway's discover), parsed; the error
/// says why not. A path ending with `\u` and fewer than four hex digits is refused first:
/// `serde_json_path` 0.7 panics on it (a streaming parser meets the end of the input). Such a
/// path is never valid: it ends inside a string.
pub(crate) fn parse_jsonpath(path: &str) -> Result<serde_json_path::JsonPath, String> {
    let hex = path.len() - path.trim_end_matches(|c: char| c.is_ascii_hexdigit()).len();
    if hex < 4 && path[..path.len() - hex].ends_with("\\u") {
        return Err("the path ends inside a \\u escape (four hex digits follow \\u)".into());
    }
    filters_within_bounds(path)?;
    serde_json_path::JsonPath::parse(path).map_err(|e| e.to_string())
}

/// The most filters (`[?…]`) a JSONPath may nest one inside another.
const FILTERS_NESTED_MAX: usize = 3;

/// The most brackets and parentheses a JSONPath may nest: the parser descends once per level,
/// on a worker thread's stack (a few thousand `(` overflowed it and ended the process).
const NESTED_MAX: usize = 32;

/// Refuses the two shapes whose cost grows as a power of the input: filters nested deeper
/// than [`FILTERS_NESTED_MAX`] (the parser backtracks through each level: a 104-byte path of
/// nested `[?` took 8 s of CPU to be found invalid, ×3.4 per level) and a root query (`$`)
/// inside a filter (evaluated again for every node the filter looks at: `$..*[?$..*]` is the
/// document's size squared). Names in quotes are skipped; `$` cannot start a bare member name.
fn filters_within_bounds(path: &str) -> Result<(), String> {
    let mut open: Vec<bool> = Vec::new(); // one per open `[` or `(`: whether it is a filter
    let mut quote: Option<char> = None;
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            match c {
                '\\' => {
                    chars.next();
                }
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        let in_filter = open.iter().any(|&filter| filter);
        match c {
            '\'' | '"' => quote = Some(c),
            '$' if in_filter => {
                return Err(
                    "a filter may not query the root (`$` inside `[?…]`): it would be \
                            evaluated again for every node; select from `$` first, then filter \
                            with `@`"
                        .into(),
                )
            }
            '[' | '(' if open.len() >= NESTED_MAX => {
                return Err(format!(
                    "the path nests more than {NESTED_MAX} brackets and parentheses: \
                     narrow the output in steps"
                ));
            }
            '[' => {
                while chars.next_if(|c| c.is_whitespace()).is_some() {}
                open.push(chars.next_if_eq(&'?').is_some());
                if open.iter().filter(|&&filter| filter).count() > FILTERS_NESTED_MAX {
                    return Err(format!(
                        "the path nests more than {FILTERS_NESTED_MAX} filters (`[?…]` inside \
                         `[?…]`): narrow the output in steps, one read per filter"
                    ));
                }
            }
            '(' => open.push(false),
            ']' | ')' => {
                open.pop();
            }
            _ => {}
        }
    }
    Ok(())
}

pub(crate) fn read_jsonpath(
    body: &str,
    path: &str,
    limit: usize,
) -> Result<ReadOutput, OutputsError> {
    if path.len() > PATTERN_MAX_BYTES {
        return Err(OutputsError::invalid("the JSONPath is too long"));
    }
    let query =
        parse_jsonpath(path).map_err(|e| OutputsError::invalid(format!("jsonpath: {e}")))?;
    let value = parse_json_text(body).ok_or_else(|| {
        OutputsError::invalid("this output is not JSON: read it by lines or grep")
    })?;
    // The matches are borrowed from the document, never copied wholesale.
    let nodes: Vec<&Value> = query.query(&value).all();
    let sizes = node_sizes(&nodes, path)?;
    let count = nodes.len();
    // A prefix of the nodes whose text surely exceeds the budget: only those are copied to be
    // cut (the cut keeps a prefix of them), or all of them when they may fit.
    let over = limit
        .saturating_mul(super::measure::BYTES_PER_TOKEN_CEILING)
        .saturating_add(64);
    let mut bytes = 1;
    let prefix = sizes
        .iter()
        .position(|size| {
            bytes += size + 1;
            bytes > over
        })
        .map_or(count, |last| last + 1);
    if prefix == count {
        let text =
            serde_json::to_string(&nodes).map_err(|e| OutputsError::invalid(e.to_string()))?;
        if cost_within(&text, limit).is_some() {
            let note = format!(
                "[{count} node{} at {path}]",
                if count == 1 { "" } else { "s" }
            );
            return Ok(jsonpath_output(text, note));
        }
    }
    let kept = Value::Array(nodes[..prefix].iter().map(|&node| node.clone()).collect());
    let cut = cut_json(&kept, limit).map_or(kept, |cut| cut.value);
    let shown = cut.as_array().map_or(0, Vec::len);
    let note = format!(
        "[{count} nodes at {path}, the first {shown} shown (the last may be cut inside); narrow the path, e.g. a slice [{shown}:]]"
    );
    Ok(jsonpath_output(cut.to_string(), note))
}

/// The serialised size of each node, refused once they add up to more than
/// [`JSONPATH_MAX_BYTES`] (counted as they are written, never held).
fn node_sizes(nodes: &[&Value], path: &str) -> Result<Vec<usize>, OutputsError> {
    let mut counter = ByteCounter::default();
    let mut sizes = Vec::with_capacity(nodes.len());
    for node in nodes {
        let before = counter.bytes;
        if serde_json::to_writer(&mut counter, node).is_err() {
            return Err(OutputsError::invalid(format!(
                "jsonpath: {path} selects more than {} MiB of JSON ({} nodes); narrow it: name the members you want (`$..name` rather than `$..*`) or take a slice (`$.items[0:100]`)",
                JSONPATH_MAX_BYTES >> 20,
                crate::output::thousands(nodes.len())
            )));
        }
        sizes.push(counter.bytes - before);
    }
    Ok(sizes)
}

/// Counts the bytes written to it, failing past [`JSONPATH_MAX_BYTES`].
#[derive(Default)]
struct ByteCounter {
    bytes: usize,
}

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len();
        if self.bytes > JSONPATH_MAX_BYTES {
            return Err(std::io::Error::other("over the JSONPath byte cap"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn jsonpath_output(text: String, note: String) -> ReadOutput {
    ReadOutput {
        text,
        note,
        next_offset: None,
        block: None,
    }
}

#[cfg(test)]
mod tests {
    /// Found by the `jsonpath` fuzz target: a path ending inside a `\u` escape panicked in
    /// `serde_json_path` (a streaming parser met the end of the input) instead of failing.
    #[test]
    fn a_path_ending_inside_a_unicode_escape_is_refused_not_a_panic() {
        for path in [r"$['\u", r#"$["a\u00"#, r"$['\uD800\uDC", r"$[?@.a=='\uD"] {
            let refused = super::read_jsonpath("{}", path, 100).err();
            let refused = refused.unwrap_or_else(|| panic!("{path} was read"));
            assert!(
                refused.to_string().contains("jsonpath"),
                "{path}: {refused}"
            );
        }
        assert!(super::read_jsonpath(r#"{"é": 1}"#, r"$['\u00e9']", 100).is_ok());
        // The sparse gateway's discover parses through it too.
        assert!(super::parse_jsonpath(r"$.tools[?@.name=='\u").is_err());
    }

    /// Found by the `jsonpath` fuzz target: nested filters that never close made the parser
    /// backtrack through every level (×3.4 per level): this 104-byte path took 8 s of CPU in a
    /// release build (75 s in a debug one) to be found invalid, a gateway worker held all along.
    #[test]
    fn filters_nested_past_the_bound_are_refused_before_parsing() {
        let found = "$[? $[?(@[?@.\u{fffd}\u{fffd}u[? $[?(@[?$[? $[?(@[?@.\u{fffd}\u{fffd}u[? \
                     $[?(@[?@.\u{fffd}\u{fffd}u[? $[?(@[?$[? $[?(@[?@.\u{fffd}\u{fffd}u=";
        let deep = format!("$[?{}", "@[?".repeat(12));
        let started = std::time::Instant::now();
        assert!(super::parse_jsonpath(found).is_err());
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
        let without_root = format!("${}", found[1..].replace('$', "@"));
        for path in [&without_root, &deep, "$[?@[?@[ ?@[?@.a]]]]"] {
            let refused = super::parse_jsonpath(path).expect_err(path);
            assert!(refused.contains("nests more than 3"), "{path}: {refused}");
        }
        let nested = r#"{"a": [{"b": [{"c": [{"d": 2}]}]}]}"#;
        let read = super::read_jsonpath(nested, "$.a[?@.b[?@.c[?@.d > 1]]]", 100).unwrap();
        assert!(read.text.contains(r#""d":2"#), "{}", read.text);
    }

    /// Found by the `jsonpath` fuzz target (round five, a second run): the process died of a
    /// stack overflow (SIGSEGV, no artifact written) — the parser descends once per bracket or
    /// parenthesis, and a worker thread's stack is 2 MiB.
    #[test]
    fn brackets_and_parentheses_nested_past_the_bound_are_refused() {
        for path in [
            format!("$[?{}@.a", "(".repeat(5_000)),
            format!("$[?{}", "!(".repeat(5_000)),
            format!("${}", "[".repeat(5_000)),
        ] {
            let refused = std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || super::parse_jsonpath(&path).unwrap_err())
                .unwrap()
                .join()
                .expect("the parser overflowed a 256 KiB stack");
            assert!(refused.contains("nests more than 32"), "{refused}");
        }
        let deep_enough = format!("$[?{}@.a == 1{}]", "(".repeat(30), ")".repeat(30));
        assert!(super::parse_jsonpath(&deep_enough).is_ok());
    }

    /// A root query inside a filter is evaluated again for every node the filter looks at.
    #[test]
    fn a_root_query_inside_a_filter_is_refused_and_a_quoted_dollar_is_a_name() {
        let refused = super::parse_jsonpath("$..*[?$..*]").unwrap_err();
        assert!(refused.contains("may not query the root"), "{refused}");
        assert!(super::parse_jsonpath("$.a[?@.b == $.limit]").is_err());
        let read = super::read_jsonpath(r#"[{"$ref": "x"}]"#, "$[?@['$ref'] == '$']", 100);
        assert_eq!(read.unwrap().text, "[]");
        let read = super::read_jsonpath(r#"[{"$ref": "$"}]"#, r#"$[?@["$ref"] == "$"]"#, 100);
        assert!(read.unwrap().text.contains("$ref"));
    }
}
