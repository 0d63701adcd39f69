//! A `CallToolResult` as an HTTP body, mcpo-compatible where mcpo is right and lossless where
//! it is not:
//!
//! - `structuredContent`, when present, is the body (it is what `outputSchema` describes).
//! - Otherwise the `content` items: one item is the body, several are an array, none is `null`.
//! - A text item becomes its text JSON-decoded when it is JSON (`"5"` → `5`, an object → the
//!   object), else the string — what mcpo does, so clients written against it keep working.
//! - Every other item (image, audio, resource link, embedded resource, types we do not know
//!   yet) is passed on as the typed object the server sent. mcpo drops resource links and
//!   embedded resources; an agent that asked for them would see nothing.

use serde_json::Value;

/// The body of a successful call.
pub(super) fn success_body(mut result: Value) -> Value {
    if let Some(structured) = result
        .get_mut("structuredContent")
        .map(Value::take)
        .filter(|v| !v.is_null())
    {
        return structured;
    }
    let mut items: Vec<Value> = match result.get_mut("content").map(Value::take) {
        Some(Value::Array(items)) => items.into_iter().map(content_item).collect(),
        _ => Vec::new(),
    };
    match items.len() {
        0 => Value::Null,
        1 => items.pop().unwrap_or(Value::Null),
        _ => Value::Array(items),
    }
}

/// The message of a result with `isError: true`: its text items, joined.
pub(super) fn error_message(result: &Value) -> String {
    let text: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|item| item.get("text").and_then(Value::as_str))
        .collect();
    if text.is_empty() {
        "the tool reported an error (isError: true) without a message".to_string()
    } else {
        text.join("\n")
    }
}

/// Whether the tool said it failed.
pub(super) fn is_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

fn content_item(item: Value) -> Value {
    if item.get("type").and_then(Value::as_str) != Some("text") {
        return item;
    }
    match item.get("text").and_then(Value::as_str) {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())),
        None => item,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(t: &str) -> Value {
        json!({"type": "text", "text": t})
    }

    #[test]
    fn structured_content_wins_over_content() {
        let result = json!({"content": [text("{\"a\": 1}")], "structuredContent": {"a": 2}});
        assert_eq!(success_body(result), json!({"a": 2}));
    }

    #[test]
    fn a_single_text_is_decoded_when_it_is_json() {
        assert_eq!(success_body(json!({"content": [text("hello")]})), "hello");
        assert_eq!(success_body(json!({"content": [text("5")]})), 5);
        assert_eq!(
            success_body(json!({"content": [text("{\"big\": 9007199254740993}")]})),
            json!({"big": 9007199254740993_u64})
        );
    }

    #[test]
    fn several_items_are_an_array_and_typed_items_are_kept() {
        let image = json!({"type": "image", "mimeType": "image/png", "data": "AAAA"});
        let link = json!({"type": "resource_link", "uri": "demo://x", "name": "x"});
        let embedded = json!({"type": "resource", "resource": {"uri": "demo://y", "text": "y"}});
        let result = json!({"content": [text("here"), image, link, embedded]});
        assert_eq!(success_body(result), json!(["here", image, link, embedded]));
        assert_eq!(success_body(json!({"content": []})), Value::Null);
        assert_eq!(success_body(json!({})), Value::Null);
    }

    #[test]
    fn error_message_joins_the_texts() {
        let result = json!({"isError": true, "content": [text("bad"), text("worse")]});
        assert!(is_error(&result));
        assert_eq!(error_message(&result), "bad\nworse");
        assert!(error_message(&json!({"content": []})).contains("without a message"));
        assert!(!is_error(&json!({"content": []})));
    }
}
