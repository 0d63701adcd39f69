//! The HTTP headers of the 2026-07-28 revision (SEP-2243): every POST names its JSON-RPC
//! method in `Mcp-Method` and, for `tools/call`, `resources/read` and `prompts/get`, its
//! target in `Mcp-Name`; a tool's parameters annotated with `x-mcp-header` are mirrored into
//! `Mcp-Param-{Name}` headers. Values that are not plain visible ASCII (non-ASCII, control
//! characters, leading or trailing whitespace) travel as `=?base64?{UTF-8 in Base64}?=`.
//!
//! A tool whose annotations break the spec's rules (empty, not a header token, on a
//! non-primitive or `number` parameter, or the same name twice ignoring case) is refused:
//! [`param_headers`] says why, and the caller leaves the tool out.

use std::collections::HashMap;

use base64::Engine as _;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;

/// The header naming a POST's JSON-RPC method.
pub const METHOD_HEADER: &str = "mcp-method";
/// The header naming a POST's target (tool, resource URI, prompt).
pub const NAME_HEADER: &str = "mcp-name";
/// The prefix of a mirrored tool parameter's header.
pub const PARAM_PREFIX: &str = "Mcp-Param-";
/// The schema annotation that asks for a parameter to be mirrored.
pub const ANNOTATION: &str = "x-mcp-header";

/// The parameters of one tool mirrored into headers: (parameter, header name).
pub type ParamHeaders = Vec<(String, String)>;

/// Tools' mirrored parameters, by tool name.
pub type ToolHeaders = HashMap<String, ParamHeaders>;

/// The `Mcp-Method` and `Mcp-Name` headers of an outgoing message (none for an answer).
pub fn standard(message: &Value) -> Vec<(HeaderName, HeaderValue)> {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return Vec::new();
    };
    let mut headers = Vec::with_capacity(2);
    if let Some(value) = encoded(method) {
        headers.push((HeaderName::from_static(METHOD_HEADER), value));
    }
    let target = match method {
        "tools/call" | "prompts/get" => message.pointer("/params/name"),
        "resources/read" => message.pointer("/params/uri"),
        _ => None,
    };
    if let Some(value) = target.and_then(Value::as_str).and_then(encoded) {
        headers.push((HeaderName::from_static(NAME_HEADER), value));
    }
    headers
}

/// The `Mcp-Param-*` headers of a `tools/call` message for a tool with `params` mirrored: a
/// null or missing argument sends none.
pub fn mirrored(message: &Value, tools: &ToolHeaders) -> Vec<(HeaderName, HeaderValue)> {
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Vec::new();
    }
    let Some(params) = message
        .pointer("/params/name")
        .and_then(Value::as_str)
        .and_then(|tool| tools.get(tool))
    else {
        return Vec::new();
    };
    let arguments = message.pointer("/params/arguments");
    params
        .iter()
        .filter_map(|(param, header)| {
            let value = arguments?.get(param)?;
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Bool(flag) => flag.to_string(),
                Value::Number(number) => number.to_string(),
                _ => return None,
            };
            let name = HeaderName::from_bytes(format!("{PARAM_PREFIX}{header}").as_bytes()).ok()?;
            Some((name, encoded(&text)?))
        })
        .collect()
}

/// The mirrored parameters of `tool`, or why its annotations break the spec's rules.
pub fn param_headers(tool: &Value) -> Result<ParamHeaders, String> {
    let Some(properties) = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
    else {
        return Ok(Vec::new());
    };
    let mut found: ParamHeaders = Vec::new();
    for (param, schema) in properties {
        let Some(annotation) = schema.get(ANNOTATION) else {
            continue;
        };
        let header = annotation
            .as_str()
            .ok_or_else(|| format!("{ANNOTATION} of `{param}` is not a string"))?;
        check_name(param, header)?;
        let kind = schema.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("string" | "integer" | "boolean")) {
            return Err(format!(
                "{ANNOTATION} of `{param}` is on a {} parameter (only string, integer and \
                 boolean ones may be mirrored)",
                kind.unwrap_or("untyped")
            ));
        }
        if let Some((other, _)) = found
            .iter()
            .find(|(_, seen)| seen.eq_ignore_ascii_case(header))
        {
            return Err(format!(
                "{ANNOTATION} {header:?} names both `{other}` and `{param}`"
            ));
        }
        found.push((param.clone(), header.to_string()));
    }
    Ok(found)
}

/// A header name must be a non-empty token (RFC 9110): visible ASCII without separators.
fn check_name(param: &str, header: &str) -> Result<(), String> {
    const TOKEN_PUNCT: &str = "!#$%&'*+-.^_`|~";
    if header.is_empty() {
        return Err(format!("{ANNOTATION} of `{param}` is empty"));
    }
    let bad = header
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || TOKEN_PUNCT.contains(c)));
    match bad {
        Some(c) => Err(format!(
            "{ANNOTATION} {header:?} of `{param}` has {c:?}, which a header name cannot hold"
        )),
        None => Ok(()),
    }
}

/// A header value: plain when it is visible ASCII (inner spaces allowed) without leading or
/// trailing whitespace, else `=?base64?…?=`.
pub fn encode_value(text: &str) -> String {
    let plain = text.chars().all(|c| (' '..='~').contains(&c)) && text.trim() == text;
    if plain {
        text.to_string()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        format!("=?base64?{b64}?=")
    }
}

fn encoded(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&encode_value(text)).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unsafe_values_travel_in_base64_and_plain_ones_as_they_are() {
        assert_eq!(encode_value("us west 1"), "us west 1");
        assert_eq!(encode_value(""), "");
        for unsafe_text in [
            "Hello, 世界",
            " padded ",
            "line1\nline2",
            "\tindented",
            "a ",
        ] {
            let sent = encode_value(unsafe_text);
            let inner = sent
                .strip_prefix("=?base64?")
                .and_then(|s| s.strip_suffix("?="))
                .unwrap_or_else(|| panic!("{unsafe_text:?} sent plain: {sent:?}"));
            let back = base64::engine::general_purpose::STANDARD
                .decode(inner)
                .unwrap();
            assert_eq!(String::from_utf8(back).unwrap(), unsafe_text);
        }
    }

    #[test]
    fn a_tool_with_a_broken_annotation_is_refused_with_the_reason() {
        let tool = |props: Value| json!({"name": "t", "inputSchema": {"properties": props}});
        let bad = [
            json!({"v": {"type": "string", "x-mcp-header": ""}}),
            json!({"v": {"type": "object", "x-mcp-header": "V"}}),
            json!({"v": {"type": "number", "x-mcp-header": "V"}}),
            json!({"v": {"type": "string", "x-mcp-header": "My Region"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Région"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Region\t1"}}),
            json!({"a": {"type": "string", "x-mcp-header": "F"}, "b": {"type": "string", "x-mcp-header": "f"}}),
        ];
        for props in bad {
            assert!(param_headers(&tool(props.clone())).is_err(), "{props}");
        }
        let good = tool(json!({"region": {"type": "string", "x-mcp-header": "Region"}, "q": {}}));
        assert_eq!(
            param_headers(&good).unwrap(),
            vec![("region".to_string(), "Region".to_string())]
        );
    }

    #[test]
    fn a_call_mirrors_its_annotated_arguments_and_names_its_tool() {
        let tools: ToolHeaders = [(
            "t".to_string(),
            vec![
                ("region".to_string(), "Region".to_string()),
                ("n".to_string(), "Priority".to_string()),
                ("gone".to_string(), "Gone".to_string()),
            ],
        )]
        .into();
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "t", "arguments": {"region": "世", "n": 42, "gone": null, "q": "x"}}});
        let sent: Vec<(String, String)> = standard(&call)
            .into_iter()
            .chain(mirrored(&call, &tools))
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        assert_eq!(
            sent,
            [
                ("mcp-method", "tools/call"),
                ("mcp-name", "t"),
                ("mcp-param-region", "=?base64?5LiW?="),
                ("mcp-param-priority", "42"),
            ]
            .map(|(n, v)| (n.to_string(), v.to_string()))
        );
    }
}
