//! Budgeting one `CallToolResult`: what fits goes through untouched, the rest is cut at a
//! clean boundary, kept behind a handle, and an envelope says what was kept, what was cut and
//! how to read more.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::cut::{
    count_lines, cut_json, cut_json_arrays, cut_text, parse_json_text, ArraysCut, JsonCut,
};
use super::measure::{cost_within, tokens, Total};
use super::store::{ClientScope, Kind, Store};
use super::{Budget, OutputsError, ENVELOPE_TOKENS, META_KEY};

/// A result after its budget, with what was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Budgeted {
    /// The result to send: untouched when it fit, else cut, with the envelope.
    pub result: Value,
    /// What was sent against what there was.
    pub stats: Stats,
}

/// Sizes of a result as sent and as it came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Bytes of the result as sent (compact JSON).
    pub bytes_sent: usize,
    /// Bytes of the result as it came.
    pub bytes_total: usize,
    /// Tokens of the text sent (the envelope's included), when the tokenizer was needed
    /// (never for small results).
    pub tokens_sent: Option<usize>,
    /// Tokens of the text kept out of the answer: each cut part's tokens as it came (the
    /// envelope's figure: exact up to 1 MB, else bytes / 4) less the tokens of what of it was
    /// sent. Binaries replaced by links are not text: they count in bytes only.
    pub tokens_cut: usize,
    /// True when anything was cut or replaced by a link.
    pub is_cut: bool,
    /// The handles made, in the order of the envelope.
    pub handles: Vec<String>,
}

/// The tokens of `content` when it and `structuredContent` (each on its own: a client shows
/// one or the other) fit within `budget`; `None` when either does not.
fn fits_whole(fields: &serde_json::Map<String, Value>, budget: usize) -> Option<usize> {
    if let Some(structured) = fields.get("structuredContent") {
        super::cost_within(&structured.to_string(), budget)?;
    }
    let mut spent = 0usize;
    for block in fields
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let remaining = budget.checked_sub(spent)?;
        spent += match block.get("text").and_then(Value::as_str) {
            Some(text) => super::cost_within(text, remaining)?,
            // Tokens never outnumber bytes.
            None => Some(json_len(block)).filter(|n| *n <= remaining)?,
        };
    }
    (spent <= budget).then_some(spent)
}

/// One cut, as the envelope's `_meta` tells it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Cut {
    handle: Option<String>,
    /// `content` (text), `structuredContent`, or a block's type (`image`, `resource`…).
    part: String,
    kept: Value,
    total: Value,
    /// The human line.
    #[serde(skip)]
    line: String,
}

/// How a tool's `structuredContent` may be cut.
#[derive(Debug, Clone, Default)]
pub enum Structured {
    /// Like any JSON (array elements, object members, strings): the client holds it to no
    /// `outputSchema`.
    #[default]
    Cut,
    /// The tool's `outputSchema`, cut-tolerant (`catalog::is_cut_tolerant`): arrays are only
    /// shortened, and the cut is sent only when it still conforms; otherwise
    /// `structuredContent` goes whole and only its text mirror is cut.
    Conforming(Arc<Value>),
}

/// Budgets `result` (a `CallToolResult`): text blocks and `structuredContent` over `budget`
/// are cut at clean boundaries, images, audio and embedded resources over it become
/// `resource_link`s, and what was cut is kept in `store` for `scope` to read with
/// `read_output`. Blocking (file writes, and the tokenizer when a result is larger in bytes
/// than the budget in tokens): call it from a blocking task. A handle that cannot be written
/// still cuts the result; the envelope says the rest could not be kept.
pub fn budget_result(
    result: Value,
    budget: Budget,
    store: &Store,
    scope: &ClientScope,
) -> Result<Budgeted, OutputsError> {
    budget_result_with(result, budget, store, scope, &Structured::Cut)
}

/// [`budget_result`] with `structuredContent` cut as `structured` says (a tool's
/// `outputSchema` kept).
pub fn budget_result_with(
    result: Value,
    budget: Budget,
    store: &Store,
    scope: &ClientScope,
    structured: &Structured,
) -> Result<Budgeted, OutputsError> {
    let bytes_total = json_len(&result);
    let untouched = |result: Value, tokens_sent| Budgeted {
        result,
        stats: Stats {
            bytes_sent: bytes_total,
            bytes_total,
            tokens_sent,
            tokens_cut: 0,
            is_cut: false,
            handles: Vec::new(),
        },
    };
    // Tokens never outnumber bytes: a result this small fits without counting.
    if budget.is_off() || bytes_total <= budget.max_tokens {
        return Ok(untouched(result, None));
    }
    let Value::Object(mut fields) = result else {
        return Ok(untouched(result, None));
    };
    // Room for an envelope is set aside only once something must be cut: a result within the
    // whole budget (one an inner mcp-launch already cut, say) passes as it is.
    if let Some(tokens) = fits_whole(&fields, budget.max_tokens) {
        return Ok(untouched(Value::Object(fields), Some(tokens)));
    }
    let limit = budget
        .max_tokens
        .saturating_sub(ENVELOPE_TOKENS)
        .max(budget.max_tokens / 2)
        .max(1);
    let mut cuts = Vec::new();
    let mut tally = Tally::default();

    // structuredContent gets the whole budget: a client shows it or the text, not both.
    let mut mirror: Option<(Value, String, usize)> = None;
    let policy = structured;
    if let Some(structured) = fields.get("structuredContent") {
        let cut = match policy {
            Structured::Cut => cut_json(structured, limit),
            Structured::Conforming(schema) => conforming_cut(structured, limit, schema),
        };
        if let Some(cut) = cut {
            let full = structured.to_string();
            let handle = keep(
                store,
                scope,
                Kind::Json,
                readable_json(structured).as_bytes(),
            );
            let shown = cut.value.to_string();
            let shown_tokens = tokens(&shown);
            let part = json_cut("structuredContent", handle, &cut, &full);
            tally.cut(&part, shown_tokens);
            cuts.push(part);
            mirror = Some((structured.clone(), shown, shown_tokens));
            fields.insert("structuredContent".into(), cut.value);
        }
    }

    // Tokens of what was kept, when counted (else the tokenizer stays unloaded).
    let mut counted = None;
    // Taken out in place (not removed), so the members keep their order.
    let content = match fields.get_mut("content") {
        Some(content @ Value::Array(_)) => Some(std::mem::take(content)),
        _ => None,
    };
    if let Some(Value::Array(blocks)) = content {
        let sizes: usize = blocks
            .iter()
            .map(|b| match b.get("text").and_then(Value::as_str) {
                Some(text) => text.len(),
                None => json_len(b),
            })
            .sum();
        let is_counting = sizes > limit;
        // A binary larger than the whole budget will become a link, with a line in the
        // envelope: room for both is set aside before the text takes it.
        let sure_links = blocks
            .iter()
            .filter(|b| !is_text(b) && json_len(b) > limit)
            .count();
        let mut remaining = limit.saturating_sub(sure_links * LINK_TOKENS);
        let mut kept = Vec::with_capacity(blocks.len());
        // Text blocks kept whole without counting (`kept`'s indices), counted only if
        // something is cut.
        let mut uncounted = Vec::new();
        let mut spill: Option<Spill> = None;
        let mut spill_kept = 0;
        for mut block in blocks {
            let kind = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let text = block.get("text").and_then(Value::as_str).map(str::to_owned);
            if let (Some(spill), Some(text)) = (spill.as_mut(), &text) {
                if kind == "text" {
                    spill.body.push('\n');
                    spill.body.push_str(text);
                    spill.blocks += 1;
                    continue;
                }
            }
            if kind == "text" {
                let Some(text) = text else {
                    kept.push(block);
                    continue;
                };
                if let Some((original, cut_text, cut_tokens)) = &mirror {
                    if text.len() >= cut_text.len()
                        && parse_json_text(&text).as_ref() == Some(original)
                    {
                        // The text mirror of structuredContent says what the cut one says.
                        block["text"] = Value::String(cut_text.clone());
                        tally.sent += cut_tokens;
                        kept.push(block);
                        continue;
                    }
                }
                if !is_counting {
                    remaining = remaining.saturating_sub(text.len());
                    uncounted.push(kept.len());
                    kept.push(block);
                    continue;
                }
                if let Some(cost) = cost_within(&text, remaining) {
                    remaining -= cost;
                    tally.sent += cost;
                    kept.push(block);
                    continue;
                }
                let (shown, note) = cut_block(&text, remaining);
                spill_kept = tokens(&shown);
                tally.sent += spill_kept;
                block["text"] = Value::String(shown);
                kept.push(block);
                spill = Some(Spill {
                    body: text,
                    blocks: 1,
                    note,
                });
                remaining = 0;
                continue;
            }
            let size = json_len(&block);
            // Any other block (an image, audio, an embedded resource, a link, a type no
            // revision defines) goes behind a handle when it does not fit: none passes uncut.
            if size <= remaining {
                remaining = remaining.saturating_sub(size);
                kept.push(block);
                continue;
            }
            let full = block.to_string();
            let handle = keep(store, scope, Kind::Blob, full.as_bytes());
            kept.push(link(&block, &kind, handle.as_deref(), size));
            cuts.push(Cut {
                line: format!(
                    "{kind} of {} replaced by a link: read_output {{\"handle\": \"{}\"}} returns it",
                    human_bytes(size),
                    handle.as_deref().unwrap_or("(not kept)")
                ),
                handle,
                part: kind,
                kept: json!(null),
                total: json!({"bytes": size}),
            });
        }
        if is_counting {
            counted = Some(limit - remaining);
        }
        if let Some(spill) = spill {
            let part = spill.finish(store, scope);
            tally.cut(&part, spill_kept);
            cuts.push(part);
        }
        if !cuts.is_empty() {
            tally.sent += uncounted
                .iter()
                .filter_map(|i| kept[*i].get("text").and_then(Value::as_str))
                .map(tokens)
                .sum::<usize>();
        }
        fields.insert("content".into(), Value::Array(kept));
    }

    if cuts.is_empty() {
        let result = Value::Object(fields);
        return Ok(untouched(result, counted));
    }
    let envelope = envelope_text(&cuts, budget, store);
    tally.sent += tokens(&envelope);
    let envelope = json!({"type": "text", "text": envelope});
    match fields.get_mut("content") {
        Some(Value::Array(content)) => content.push(envelope),
        _ => {
            fields.insert("content".into(), Value::Array(vec![envelope]));
        }
    }
    let meta = fields
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(
            META_KEY.into(),
            json!({"budget": budget.max_tokens, "cuts": cuts}),
        );
    }
    let mut handles: Vec<String> = Vec::new();
    for handle in cuts.iter().filter_map(|c| c.handle.clone()) {
        if !handles.contains(&handle) {
            handles.push(handle);
        }
    }
    let result = Value::Object(fields);
    Ok(Budgeted {
        stats: Stats {
            bytes_sent: json_len(&result),
            bytes_total,
            tokens_sent: Some(tally.sent),
            tokens_cut: tally.cut_total.saturating_sub(tally.cut_kept),
            is_cut: true,
            handles,
        },
        result,
    })
}

/// Tokens counted on the way through a result that is cut, so the figures at the end count
/// nothing twice.
#[derive(Default)]
struct Tally {
    /// Tokens of the text sent: blocks kept whole, what of a cut part was kept, the envelope.
    sent: usize,
    /// Tokens of the cut parts as they came.
    cut_total: usize,
    /// Tokens of what of them was kept.
    cut_kept: usize,
}

impl Tally {
    /// `part` was cut, and `kept` tokens of it sent.
    fn cut(&mut self, part: &Cut, kept: usize) {
        let total = part.total.get("tokens").and_then(Value::as_u64);
        self.cut_total += total.map_or(0, |t| usize::try_from(t).unwrap_or(usize::MAX));
        self.cut_kept += kept;
    }
}

/// `structured` cut to `limit` by shortening arrays, when that reaches the budget and still
/// conforms to `schema`; `None` (sent whole) otherwise.
fn conforming_cut(structured: &Value, limit: usize, schema: &Value) -> Option<JsonCut> {
    let ArraysCut::Cut(cut) = cut_json_arrays(structured, limit) else {
        return None;
    };
    match crate::catalog::schema_validator(schema) {
        Ok(validator) if validator.is_valid(&cut.value) => Some(cut),
        Ok(_) => {
            tracing::debug!("a cut structuredContent would break its outputSchema: sent whole");
            None
        }
        Err(e) => {
            tracing::debug!(error = %e, "outputSchema does not compile: structuredContent sent whole");
            None
        }
    }
}

/// Text of the blocks from the first one cut on, kept behind one handle.
struct Spill {
    body: String,
    blocks: usize,
    /// What the first block kept (lines or JSON).
    note: Kept,
}

enum Kept {
    Lines {
        lines: usize,
        mid_line_bytes: Option<usize>,
    },
    Json(super::cut::JsonCut),
}

impl Spill {
    fn finish(self, store: &Store, scope: &ClientScope) -> Cut {
        let is_json = self.blocks == 1 && matches!(self.note, Kept::Json(_));
        if let (true, Kept::Json(cut)) = (is_json, &self.note) {
            let readable = parse_json_text(&self.body).map(|v| readable_json(&v));
            let body = readable.as_deref().unwrap_or(&self.body);
            let handle = keep(store, scope, Kind::Json, body.as_bytes());
            return json_cut("content", handle, cut, &self.body);
        }
        let handle = keep(store, scope, Kind::Text, self.body.as_bytes());
        let total_lines = count_lines(self.body.as_bytes());
        let total = Total::of(&self.body);
        let (kept, next) = match self.note {
            Kept::Lines {
                lines,
                mid_line_bytes: Some(bytes),
            } => (
                format!("the first {} of line 1", human_bytes(bytes)),
                json!({"lines": lines, "bytes": bytes}),
            ),
            Kept::Lines { lines, .. } => (format!("lines 1-{lines}"), json!({"lines": lines})),
            // A JSON block followed by more text blocks: kept as JSON, read on by lines.
            Kept::Json(cut) => (describe_json(&cut), json!({"json": cut.cuts})),
        };
        let offset = next.get("lines").and_then(Value::as_u64).unwrap_or(0);
        let more_blocks = if self.blocks > 1 {
            format!(" (with the {} text blocks after it)", self.blocks - 1)
        } else {
            String::new()
        };
        let shown_handle = handle.as_deref().unwrap_or("(not kept)");
        // Within one long line, offsets cannot go on: grep shows the part around a match.
        let more = if offset == 0 {
            format!("read_output {{\"handle\": \"{shown_handle}\", \"grep\": \"REGEX\"}} shows the part of the line around a match")
        } else {
            format!("read_output {{\"handle\": \"{shown_handle}\", \"offset\": {offset}}}, or grep")
        };
        Cut {
            line: format!(
                "kept {kept} of {} lines{more_blocks} ({}, {} tokens). More: {more}",
                crate::output::thousands(total_lines),
                human_bytes(self.body.len()),
                total.display(),
            ),
            handle,
            part: "content".into(),
            kept: next,
            total: json!({"lines": total_lines, "bytes": self.body.len(), "tokens": total.tokens, "tokensEstimated": total.is_estimate}),
        }
    }
}

/// The shown part of a text block over the budget, and what it kept.
fn cut_block(text: &str, remaining: usize) -> (String, Kept) {
    if let Some(value) = parse_json_text(text) {
        if let Some(cut) = cut_json(&value, remaining) {
            return (cut.value.to_string(), Kept::Json(cut));
        }
    }
    match cut_text(text, remaining) {
        Some(cut) => (
            text[..cut.end].to_string(),
            Kept::Lines {
                lines: cut.kept_lines,
                mid_line_bytes: cut.is_mid_line.then_some(cut.end),
            },
        ),
        // Fits after all (counted whole rather than in pieces).
        None => (
            text.to_string(),
            Kept::Lines {
                lines: count_lines(text.as_bytes()),
                mid_line_bytes: None,
            },
        ),
    }
}

fn describe_json(cut: &super::cut::JsonCut) -> String {
    match cut.cuts.last() {
        Some(at) => format!(
            "{} of {} {} at {}",
            crate::output::thousands(at.kept),
            crate::output::thousands(at.total),
            at.unit,
            at.path
        ),
        None => "a part".into(),
    }
}

fn json_cut(part: &str, handle: Option<String>, cut: &super::cut::JsonCut, full: &str) -> Cut {
    let total = Total::of(full);
    let hint = match cut.cuts.last() {
        Some(at) if at.unit == "items" => format!(", \"jsonpath\": \"{}[{}:]\"", at.path, at.kept),
        Some(at) if at.unit == "members" => format!(", \"jsonpath\": \"{}\"", at.path),
        _ => String::new(),
    };
    Cut {
        line: format!(
            "{part}: kept {} (JSON, still valid; {}, {} tokens in all). More: read_output {{\"handle\": \"{}\"{hint}}}",
            describe_json(cut),
            human_bytes(full.len()),
            total.display(),
            handle.as_deref().unwrap_or("(not kept)"),
        ),
        handle,
        part: part.into(),
        kept: json!({"json": cut.cuts}),
        total: json!({"bytes": full.len(), "tokens": total.tokens, "tokensEstimated": total.is_estimate}),
    }
}

/// Tokens a `resource_link` and its envelope line cost at most.
const LINK_TOKENS: usize = 120;

/// A text block; every other kind is replaced by a link when over the budget.
fn is_text(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
}

/// The length of `value` as compact JSON, without building the text (results can be
/// hundreds of MB).
pub fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// JSON as a handle keeps it: pretty-printed, so reading by lines and grep work on JSON that
/// came on one line.
fn readable_json(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Keeps `body`; on failure the cut still happens and the envelope says it was not kept.
fn keep(store: &Store, scope: &ClientScope, kind: Kind, body: &[u8]) -> Option<String> {
    match store.put(scope, kind, body) {
        Ok(handle) => Some(handle),
        Err(e) => {
            // The error names the store, never the output.
            tracing::warn!(error = %e, "could not keep a cut output");
            None
        }
    }
}

fn link(block: &Value, kind: &str, handle: Option<&str>, size: usize) -> Value {
    let mime = block
        .get("mimeType")
        .or_else(|| block.pointer("/resource/mimeType"))
        .cloned()
        .unwrap_or(Value::Null);
    let name = handle.unwrap_or("not-kept");
    let mut link = json!({
        "type": "resource_link",
        "uri": format!("mcp-launch://outputs/{name}"),
        "name": name,
        "description": format!("{kind} of {} kept behind a handle: read_output returns it", human_bytes(size)),
        "size": size,
    });
    if !mime.is_null() {
        link["mimeType"] = mime;
    }
    link
}

fn envelope_text(cuts: &[Cut], budget: Budget, store: &Store) -> String {
    let mut text = format!(
        "[mcp-launch: this result was over its budget of {} tokens.",
        crate::output::thousands(budget.max_tokens)
    );
    for cut in cuts {
        text.push(' ');
        text.push_str(&cut.line);
        text.push('.');
    }
    text.push_str(&format!(" Handles last {}.]", human_duration(store.ttl())));
    text
}

/// `24 h`, `30 min`, `45 s`.
pub(crate) fn human_duration(duration: std::time::Duration) -> String {
    match duration.as_secs() {
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// `812 B`, `12.3 KB`, `2.1 MB`.
pub fn human_bytes(bytes: usize) -> String {
    match bytes {
        b if b < 1000 => format!("{b} B"),
        b if b < 1_000_000 => format!("{:.1} KB", b as f64 / 1e3),
        b if b < 1_000_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b => format!("{:.1} GB", b as f64 / 1e9),
    }
}
