//! Checks done before a call reaches a server: does the tool exist (else: similar names), do
//! the arguments fit its `inputSchema` (else: the violations and the expected shape).

use serde_json::Value;

use super::tool;

/// Up to `limit` names from `candidates` similar to `wanted`, best first: names that contain
/// it or that it contains, names holding each of its words (`get_time` → `get_current_time`),
/// then names close by edit similarity. The one suggester for tools and servers alike.
pub fn similar_names<'a>(
    wanted: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    let wanted_lc = wanted.to_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter_map(|name| {
            let score = similarity(&wanted_lc, &name.to_lowercase());
            (score >= 0.75).then_some((score, name))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// How alike two lower-cased names are: edit similarity (0–1), plus 0.5 when one contains
/// the other, plus up to 0.4 for the words of `wanted` found inside `name`.
fn similarity(wanted: &str, name: &str) -> f64 {
    let mut score = strsim::jaro_winkler(wanted, name);
    if name.contains(wanted) || wanted.contains(name) {
        score += 0.5;
    }
    score + words_inside(wanted, name)
}

/// 0.4 when every word (2+ characters, split at `_`, `-`, `.`, `/`, spaces) of a
/// several-word `wanted` is inside `name`; a little for some of them; 0 for one word (the
/// containment rule covers it).
fn words_inside(wanted: &str, name: &str) -> f64 {
    let words: Vec<&str> = wanted
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 2)
        .collect();
    if words.len() < 2 {
        return 0.0;
    }
    let inside = words.iter().filter(|w| name.contains(*w)).count();
    let share = inside as f64 / words.len() as f64;
    if inside == words.len() {
        0.4
    } else {
        0.1 * share
    }
}

/// The violations of `arguments` against the tool's `inputSchema`, one line each
/// (`at /path: message`); empty when they fit. A schema that does not compile is not held
/// against the caller: the server gets to judge.
pub fn argument_violations(tool_def: &Value, arguments: &Value) -> Vec<String> {
    argument_validator(tool_def)
        .map(|validator| violations(&validator, arguments))
        .unwrap_or_default()
}

/// The compiled validator of the tool's `inputSchema`; `None` when the schema does not
/// compile (then nothing is validated). Compile once and reuse it with [`violations`] when the
/// same tool is called many times.
pub fn argument_validator(tool_def: &Value) -> Option<jsonschema::Validator> {
    let schema = tool::input_schema(tool_def);
    schema_validator(&schema)
        .inspect_err(|e| {
            tracing::debug!(tool = tool::name(tool_def), error = %e, "inputSchema does not compile; not validating");
        })
        .ok()
}

/// The compiled validator of any schema (a tool's `inputSchema` or `outputSchema`), with the
/// same draft detection and options for both.
pub fn schema_validator(
    schema: &Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::validator_for(schema)
}

/// The violations of `arguments` against a compiled validator, as [`argument_violations`]
/// words them.
pub fn violations(validator: &jsonschema::Validator, arguments: &Value) -> Vec<String> {
    validator
        .iter_errors(arguments)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        })
        .collect()
}

/// The parameters a tool expects, one per line: `name: type (required) — description`.
pub fn expected_shape(tool_def: &Value) -> String {
    let schema = tool::input_schema(tool_def);
    let required = tool::required_params(tool_def);
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "no parameters".to_string();
    };
    if props.is_empty() {
        return "no parameters".to_string();
    }
    props
        .iter()
        .map(|(name, prop)| {
            let mut line = format!("{name}: {}", type_of(prop));
            if required.contains(name) {
                line.push_str(" (required)");
            }
            if let Some(desc) = prop.get("description").and_then(Value::as_str) {
                line.push_str(" — ");
                line.push_str(desc.lines().next().unwrap_or(""));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn type_of(prop: &Value) -> String {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        return format!(
            "one of {}",
            values
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    match prop.get("type") {
        Some(Value::String(t)) if t == "array" => {
            match prop.pointer("/items/type").and_then(Value::as_str) {
                Some(item) => format!("array of {item}"),
                None => "array".into(),
            }
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ if prop.get("$ref").is_some() => "object".into(),
        _ => ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| prop.get(*k).and_then(Value::as_array))
            .map(|alts| alts.iter().map(type_of).collect::<Vec<_>>().join(" | "))
            .unwrap_or_else(|| "any".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn add_tool() -> Value {
        json!({"name": "add", "inputSchema": {"type": "object",
            "properties": {"a": {"type": "integer", "description": "first"}, "b": {"type": "integer"}},
            "required": ["a", "b"]}})
    }

    #[test]
    fn violations_name_the_path_and_the_rule() {
        let tool = add_tool();
        assert!(argument_violations(&tool, &json!({"a": 1, "b": 2})).is_empty());
        let v = argument_violations(&tool, &json!({"a": "x"}));
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(
            v.iter().any(|l| l.contains("\"b\" is a required property")),
            "{v:?}"
        );
        assert!(
            v.iter()
                .any(|l| l.starts_with("at /a:") && l.contains("integer")),
            "{v:?}"
        );
    }

    #[test]
    fn a_broken_schema_does_not_block_the_call() {
        let tool = json!({"name": "t", "inputSchema": {"type": 17}});
        assert!(argument_violations(&tool, &json!({})).is_empty());
    }

    #[test]
    fn expected_shape_lists_params() {
        assert_eq!(
            expected_shape(&add_tool()),
            "a: integer (required) — first\nb: integer (required)"
        );
        assert_eq!(expected_shape(&json!({"name": "x"})), "no parameters");
    }

    #[test]
    fn similar_names_rank_containment_and_typos() {
        let names = [
            "get_file_info",
            "read_file",
            "read_multiple_files",
            "write_file",
            "echo",
        ];
        assert_eq!(similar_names("read_fil", names, 3)[0], "read_file");
        assert_eq!(similar_names("ecko", names, 3), vec!["echo"]);
        assert!(similar_names("zzzz", names, 3).is_empty());
    }

    #[test]
    fn names_holding_every_word_count_as_similar() {
        // Issue 25 item 16: `inspect time get_time` suggested only `convert_time`.
        let time = ["convert_time", "get_current_time"];
        assert_eq!(similar_names("get_time", time, 3)[0], "get_current_time");
        let names = [
            "list_directory",
            "directory_tree",
            "create_directory",
            "move_file",
        ];
        assert_eq!(similar_names("list_dir", names, 3)[0], "list_directory");
        assert!(!similar_names("file_move", names, 3).is_empty());
    }
}
