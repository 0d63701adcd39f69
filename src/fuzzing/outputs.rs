//! Results over their budget: the cutters and the envelope, and `read_output`'s arguments and
//! JSONPath against kept handles.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::split_first;
use crate::outputs::read::read_jsonpath;
use crate::outputs::{
    budget_result, cut_json, cut_json_arrays, cut_text, tokens, ArraysCut, Budget, ClientScope,
    Kind, Store,
};

/// The smallest budget the cutters promise to keep (an empty `[]` or `{}` costs one token).
const MIN_LIMIT: usize = 8;

/// The cutters and the envelope. The first two bytes are the budget, the rest a tool's text
/// (or, when it is a JSON object with `content`, the whole `CallToolResult`). Properties:
/// every cut is within its budget, a cut of JSON is still JSON, a cut of text is a prefix
/// ending on a character boundary, and what a budgeted result shows (its envelope aside) is
/// within the budget.
pub fn cut(data: &[u8]) {
    let (high, rest) = split_first(data);
    let (low, rest) = split_first(rest);
    let limit = MIN_LIMIT + (usize::from(high) << 8 | usize::from(low)) % 2000;
    let text = String::from_utf8_lossy(rest);
    if let Some(cut) = cut_text(&text, limit) {
        assert!(text.is_char_boundary(cut.end));
        assert!(tokens(&text[..cut.end]) <= limit, "a text cut over {limit}");
        assert!(cut.is_mid_line || text[..cut.end].ends_with('\n'));
    }
    let parsed = crate::outputs::cut::parse_json_text(&text);
    if let Some(value) = &parsed {
        if let Some(cut) = cut_json(value, limit) {
            let kept = cut.value.to_string();
            assert!(tokens(&kept) <= limit, "a JSON cut over {limit}: {kept}");
        }
        if let ArraysCut::Cut(cut) = cut_json_arrays(value, limit) {
            assert!(tokens(&cut.value.to_string()) <= limit);
        }
    }
    let result = match parsed {
        Some(result @ Value::Object(_)) if result.get("content").is_some() => result,
        _ => json!({"content": [{"type": "text", "text": text}]}),
    };
    budgeted_within(result, limit * 4);
}

/// `result` through the envelope: each text block still JSON when it was, and what is shown
/// of the content within the budget.
fn budgeted_within(result: Value, max_tokens: usize) {
    let was_json: Vec<bool> = blocks(&result)
        .iter()
        .map(|text| crate::outputs::cut::parse_json_text(text).is_some())
        .collect();
    let budget = Budget::new(max_tokens);
    let Ok(budgeted) = budget_result(result, budget, store(), &ClientScope::local()) else {
        return;
    };
    let shown = blocks(&budgeted.result);
    if !budgeted.stats.is_cut {
        return;
    }
    // The envelope is the last block.
    let content = &shown[..shown.len().saturating_sub(1)];
    for (text, was_json) in content.iter().zip(was_json) {
        if was_json {
            let back = crate::outputs::cut::parse_json_text(text);
            assert!(
                back.is_some(),
                "a JSON text cut into something else: {text}"
            );
        }
    }
    let spent: usize = content.iter().map(|text| tokens(text)).sum();
    assert!(
        spent <= max_tokens,
        "{spent} tokens shown of a {max_tokens} budget"
    );
}

/// The text of each text block of a `CallToolResult`.
fn blocks(result: &Value) -> Vec<String> {
    let content = result.get("content").and_then(Value::as_array);
    content
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// A JSONPath over a document: the path is the bytes before the first newline, the document
/// the rest (a nested default when it is empty). What is read is a JSON array.
pub fn jsonpath(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (path, body) = text.split_once('\n').unwrap_or((&text, ""));
    let body = if body.trim().is_empty() {
        DOCUMENT
    } else {
        body
    };
    if let Ok(read) = read_jsonpath(body, path, 2_000) {
        let nodes: Value = serde_json::from_str(&read.text).expect("JSONPath read is not JSON");
        assert!(nodes.is_array());
    }
}

/// `read_output`'s arguments against kept handles: the first byte picks the handle (a JSON
/// document, lines of text, an image, or the argument's own) and the budget; the rest is
/// the arguments object, or else a pattern used as `grep` or `jsonpath`.
pub fn read_output(data: &[u8]) {
    let (knobs, rest) = split_first(data);
    let text = String::from_utf8_lossy(rest);
    let mut arguments = match serde_json::from_str::<Value>(&text) {
        Ok(arguments @ Value::Object(_)) => arguments,
        _ if knobs & 0x10 == 0 => json!({"grep": text}),
        _ => json!({"jsonpath": text}),
    };
    let handles = handles();
    if let Some(handle) = handles.get(usize::from(knobs % 4)) {
        arguments["handle"] = json!(handle);
    }
    let budget = Budget::new(usize::from(knobs >> 5) * 300);
    let answer = crate::outputs::read_output(store(), &ClientScope::local(), &arguments, budget);
    let content = answer["content"].as_array().expect("an answer has content");
    assert!(!content.is_empty(), "{answer}");
}

/// A nested JSON document, as a tool's answer.
const DOCUMENT: &str = r#"{"results":[{"id":1,"name":"a","tags":["x","y"],"deep":{"a":{"b":{"c":[1,2,3]}}}},{"id":2,"name":"é日🙂","tags":[],"deep":null}],"total":2,"next":"cursor"}"#;

/// The handles [`read_output`] reads: a JSON document, text lines, an image block.
fn handles() -> &'static [String; 3] {
    static HANDLES: OnceLock<[String; 3]> = OnceLock::new();
    HANDLES.get_or_init(|| {
        let lines: String = (0..200)
            .map(|i| format!("line {i}: é日 {}\n", i * 7))
            .collect();
        let image = json!({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"});
        let scope = ClientScope::local();
        let put = |kind, body: &[u8]| store().put(&scope, kind, body).expect("kept");
        [
            put(Kind::Json, DOCUMENT.as_bytes()),
            put(Kind::Text, lines.as_bytes()),
            put(Kind::Blob, image.to_string().as_bytes()),
        ]
    })
}

/// One store per process, under the temporary directory.
fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| {
        let dir: PathBuf =
            std::env::temp_dir().join(format!("mcp-launch-fuzz-outputs-{}", std::process::id()));
        Store::open(&dir)
            .expect("a store in the temporary directory")
            .with_max_bytes(16 << 20)
    })
}
