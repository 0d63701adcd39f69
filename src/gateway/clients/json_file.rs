//! Our entry in a JSON (or VS Code's JSONC) file, edited in place through jsonc-parser's concrete
//! syntax tree: every other byte (keys, their order, indentation, comments) stays as it was.
//! JSON has no comments, so servers set aside move under [`FRONTED_KEY`] instead, as their text
//! (a comment inside a server's value goes with it, and comes back with it).

use std::path::Path;

use jsonc_parser::cst::{
    CstComment, CstInputValue, CstLeafNode, CstNode, CstObject, CstObjectProp, CstRootNode,
};
use jsonc_parser::ParseOptions;
use serde_json::{Map, Value};

use super::error::line_column;
use super::{ClientError, Edit, ENTRY, FRONTED_KEY};

/// Sets our entry under `servers_key` and moves the `fronted` servers under [`FRONTED_KEY`].
pub(super) fn add(
    text: &str,
    path: &Path,
    servers_key: &str,
    jsonc: bool,
    entry: &Map<String, Value>,
    fronted: &[String],
) -> Result<Edit, ClientError> {
    // A file of blanks is a new file.
    let root = parse(if text.trim().is_empty() { "" } else { text }, path, jsonc)?;
    let top = top_object(&root, path)?;
    let servers = object_at(&top, servers_key, path)?;
    if servers.get(ENTRY).is_none() {
        // `{"mcpServers": {}}` on one line would get our entry half on it.
        top.ensure_multiline();
        servers.ensure_multiline();
    }
    set_entry(&servers, entry);
    let mut set_aside = Vec::new();
    let mut moves = Moves::new(text);
    for name in fronted.iter().filter(|n| n.as_str() != ENTRY) {
        let Some(prop) = servers.get(name) else {
            continue;
        };
        let stash = object_at(&top, FRONTED_KEY, path)?;
        moves.carry(prop, &stash, name);
        set_aside.push(name.clone());
    }
    Ok(Edit {
        text: moves.place(finished(&root, text)),
        set_aside,
        ..Edit::default()
    })
}

/// Removes our entry and moves the servers under [`FRONTED_KEY`] back under `servers_key`.
pub(super) fn remove(
    text: &str,
    path: &Path,
    servers_key: &str,
    jsonc: bool,
) -> Result<Edit, ClientError> {
    let root = parse(text, path, jsonc)?;
    let top = top_object(&root, path)?;
    let mut edit = Edit::default();
    let mut moves = Moves::new(text);
    if let Some(prop) = top
        .get(servers_key)
        .and_then(|s| s.object_value()?.get(ENTRY))
    {
        prop.remove();
    }
    if let Some(stash_prop) = top.get(FRONTED_KEY) {
        let stash = object_value(&stash_prop, FRONTED_KEY, path)?;
        let servers = object_at(&top, servers_key, path)?;
        for prop in stash.properties() {
            let Some(name) = prop.decoded_name() else {
                continue;
            };
            if servers.get(&name).is_some() {
                edit.kept_aside.push(name);
                continue;
            }
            moves.carry(prop, &servers, &name);
            edit.restored.push(name);
        }
        if stash.properties().is_empty() {
            stash_prop.remove();
        }
    }
    edit.text = moves.place(finished(&root, text));
    Ok(edit)
}

/// Servers moved between objects as their text, comments and layout included: the syntax tree
/// takes only values, so each holds a placeholder string until the edit is printed.
struct Moves<'a> {
    original: &'a str,
    pending: Vec<(String, String)>,
}

impl<'a> Moves<'a> {
    fn new(original: &'a str) -> Self {
        Self {
            original,
            pending: Vec::new(),
        }
    }

    /// Moves `prop`'s value under `name` in `to` and removes `prop`.
    fn carry(&mut self, prop: CstObjectProp, to: &CstObject, name: &str) {
        let value = prop
            .value()
            .map_or_else(|| "null".to_string(), |v| v.to_string());
        let placeholder = self.placeholder();
        put(to, name, &Value::String(placeholder.clone()));
        // `remove` takes the comments after the server to the end of its line with it (`"a":
        // {…}, // note`): they go with the server, as block comments (a line comment would
        // swallow the comma printed after the value).
        // A block comment that ends on the server's line before it (`/* … */ "a": {…}`), or
        // one between its name and value, goes with it too, in front of its value.
        let before = same_line_comments(prop.previous_siblings());
        let after = same_line_comments(prop.next_siblings());
        let inside: Vec<String> = (prop.children().into_iter())
            .filter_map(|child| match child {
                CstNode::Leaf(CstLeafNode::Comment(comment)) => {
                    Some(as_block_comment(&comment.raw_value()))
                }
                _ => None,
            })
            .collect();
        prop.remove();
        let taken = |comments: Vec<CstComment>| -> Vec<String> {
            comments
                .into_iter()
                .filter(|comment| comment.parent().is_none())
                .map(|comment| as_block_comment(&comment.raw_value()))
                .collect()
        };
        let mut before = taken(before);
        before.reverse();
        let value = [before, inside, vec![value], taken(after)]
            .concat()
            .join(" ");
        self.pending.push((format!("\"{placeholder}\""), value));
    }

    /// A string found nowhere in the file, nor among the other placeholders.
    fn placeholder(&self) -> String {
        let index = self.pending.len();
        (0u64..)
            .map(|n| format!("mcp-launch moved {index}.{n}"))
            .find(|p| !self.original.contains(p.as_str()))
            .expect("a file is finite")
    }

    /// The printed edit with each placeholder replaced by the text it stands for.
    fn place(self, mut text: String) -> String {
        for (placeholder, value) in self.pending {
            text = text.replacen(&placeholder, &value, 1);
        }
        text
    }
}

/// The comments among `siblings` up to the line's end: a prop's `next_siblings` (the comments
/// after it on its line) or its `previous_siblings` (those before it, nearest first).
fn same_line_comments(siblings: impl Iterator<Item = CstNode>) -> Vec<CstComment> {
    let mut comments = Vec::new();
    for sibling in siblings {
        match sibling {
            CstNode::Leaf(CstLeafNode::Comment(comment)) => comments.push(comment),
            CstNode::Leaf(CstLeafNode::Newline(_)) => break,
            _ => {}
        }
    }
    comments
}

/// `comment` (`// …` or `/* … */`) as a block comment, its words unchanged.
fn as_block_comment(comment: &str) -> String {
    match comment.strip_prefix("//") {
        Some(text) => format!("/*{} */", text.replace("*/", "* /")),
        None => comment.to_string(),
    }
}

/// The edited text, ending with a newline when we made the file (editors expect one).
fn finished(root: &CstRootNode, old: &str) -> String {
    let mut text = root.to_string();
    if old.trim().is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn parse(text: &str, path: &Path, jsonc: bool) -> Result<CstRootNode, ClientError> {
    if !jsonc && !text.trim().is_empty() {
        strict(text, path)?;
    }
    let options = ParseOptions {
        allow_comments: jsonc,
        allow_loose_object_property_names: false,
        allow_trailing_commas: jsonc,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    CstRootNode::parse(text, &options).map_err(|e| {
        let (line, column) = line_column(text, e.range().start);
        ClientError::Invalid {
            path: path.to_path_buf(),
            line,
            column,
            format: if jsonc { "JSONC" } else { "JSON" },
            message: e.kind().to_string(),
        }
    })
}

/// The files of Claude and Cursor are strict JSON: refuse what their clients would refuse
/// (the syntax tree's parser lets comments through whatever its options say).
fn strict(text: &str, path: &Path) -> Result<(), ClientError> {
    let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) else {
        return Ok(());
    };
    let message = e.to_string();
    let message = message
        .rsplit_once(" at line ")
        .map_or(&*message, |(m, _)| m);
    let (line, column) = crate::error::json_position(text, &e);
    Err(ClientError::Invalid {
        path: path.to_path_buf(),
        line,
        column,
        format: "JSON",
        message: message.to_string(),
    })
}

/// The top-level object (made when the file is empty).
fn top_object(root: &CstRootNode, path: &Path) -> Result<CstObject, ClientError> {
    match root.value() {
        None => Ok(root.object_value_or_set()),
        Some(value) => {
            let top = value.as_object().ok_or_else(|| ClientError::WrongShape {
                path: path.to_path_buf(),
                key: "the top level".into(),
                found: describe(value.to_serde_value().as_ref()),
                expected: "an object",
            })?;
            unique_names(&top, "the top level", path)?;
            Ok(top)
        }
    }
}

/// Refuses an object holding a name twice: the client reads one of the two, and an edit of
/// ours could keep the other (or move one aside and then overwrite it with the other).
fn unique_names(object: &CstObject, key: &str, path: &Path) -> Result<(), ClientError> {
    let mut seen = std::collections::HashSet::new();
    for prop in object.properties() {
        let Some(name) = prop.decoded_name() else {
            continue;
        };
        if !seen.insert(name.clone()) {
            return Err(ClientError::DuplicateName {
                path: path.to_path_buf(),
                key: key.to_string(),
                name,
            });
        }
    }
    Ok(())
}

/// The object under `key` in `parent`, added (empty) when missing.
fn object_at(parent: &CstObject, key: &str, path: &Path) -> Result<CstObject, ClientError> {
    match parent.get(key) {
        Some(prop) => object_value(&prop, key, path),
        None => Ok(parent
            .append(key, CstInputValue::Object(Vec::new()))
            .object_value_or_set()),
    }
}

fn object_value(
    prop: &jsonc_parser::cst::CstObjectProp,
    key: &str,
    path: &Path,
) -> Result<CstObject, ClientError> {
    let object = prop.object_value().ok_or_else(|| ClientError::WrongShape {
        path: path.to_path_buf(),
        key: format!("\"{key}\""),
        found: describe(prop.value().and_then(|v| v.to_serde_value()).as_ref()),
        expected: "an object",
    })?;
    unique_names(&object, &format!("\"{key}\""), path)?;
    Ok(object)
}

/// Sets the keys we own (`type`, `command`, `args`) and keeps any the user added (`env`, …).
fn set_entry(servers: &CstObject, entry: &Map<String, Value>) {
    let Some(existing) = servers.get(ENTRY).and_then(|p| p.object_value()) else {
        put(servers, ENTRY, &Value::Object(entry.clone()));
        return;
    };
    for (key, value) in entry {
        let current = existing.get(key);
        let same = current
            .as_ref()
            .and_then(|p| p.value()?.to_serde_value())
            .is_some_and(|v| &v == value);
        if !same {
            put(&existing, key, value);
        }
    }
}

/// Sets `key` to `value` in `object`, in place when the key exists, else appended.
fn put(object: &CstObject, key: &str, value: &Value) {
    match object.get(key) {
        Some(prop) => prop.set_value(input(value)),
        None => {
            object.append(key, input(value));
        }
    }
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

fn describe(value: Option<&Value>) -> &'static str {
    match value {
        None | Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

/// Servers by name, as a file holds them.
pub(super) type Servers = Map<String, Value>;

/// The objects under `servers_key` and [`FRONTED_KEY`], read with the same parser (and the
/// same errors) as the edits; empty when the file is blank.
pub(super) fn servers(
    text: &str,
    path: &Path,
    servers_key: &str,
    jsonc: bool,
) -> Result<(Servers, Servers), ClientError> {
    let top = top_object(&parse_blank(text, path, jsonc)?, path)?;
    Ok((
        object_at_key(&top, servers_key, path)?,
        object_at_key(&top, FRONTED_KEY, path)?,
    ))
}

/// Claude Code's `.claude.json` from one parse (it can be many megabytes): its user servers,
/// those set aside, and its servers for `dir` only (its "local" scope: the object at
/// `projects.<dir>.mcpServers`, empty when there is none).
pub(super) fn claude_code_servers(
    text: &str,
    path: &Path,
    servers_key: &str,
    dir: &str,
) -> Result<(Servers, Servers, Servers), ClientError> {
    let top = top_object(&parse_blank(text, path, false)?, path)?;
    let local = top
        .get("projects")
        .and_then(|p| p.object_value())
        .and_then(|projects| projects.get(dir))
        .and_then(|p| p.object_value())
        .and_then(|project| project.get("mcpServers"))
        .and_then(|p| p.value())
        .and_then(|v| v.to_serde_value());
    Ok((
        object_at_key(&top, servers_key, path)?,
        object_at_key(&top, FRONTED_KEY, path)?,
        match local {
            Some(Value::Object(map)) => map,
            _ => Map::new(),
        },
    ))
}

/// `text` parsed, a blank file read as an empty one.
fn parse_blank(text: &str, path: &Path, jsonc: bool) -> Result<CstRootNode, ClientError> {
    parse(if text.trim().is_empty() { "" } else { text }, path, jsonc)
}

/// The object at `top`'s `key` as JSON (empty when absent; an error when it is no object).
fn object_at_key(top: &CstObject, key: &str, path: &Path) -> Result<Servers, ClientError> {
    let Some(prop) = top.get(key) else {
        return Ok(Map::new());
    };
    object_value(&prop, key, path)?;
    Ok(match prop.value().and_then(|v| v.to_serde_value()) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    })
}

/// Adds `entries` under `servers_key` of our own config (made when blank), keeping the rest of
/// the file as it was; names already there are the caller's to sort out first.
pub(super) fn add_servers(
    text: &str,
    path: &Path,
    servers_key: &str,
    entries: &[(String, Value)],
) -> Result<String, ClientError> {
    let root = parse(if text.trim().is_empty() { "" } else { text }, path, false)?;
    let top = top_object(&root, path)?;
    let servers = object_at(&top, servers_key, path)?;
    top.ensure_multiline();
    servers.ensure_multiline();
    for (name, entry) in entries {
        put(&servers, name, entry);
    }
    Ok(finished(&root, text))
}

/// Removes the servers `names` from our own config.
pub(super) fn remove_servers(
    text: &str,
    path: &Path,
    servers_key: &str,
    names: &[String],
) -> Result<String, ClientError> {
    let root = parse(text, path, false)?;
    let top = top_object(&root, path)?;
    if let Some(servers) = top.get(servers_key).and_then(|p| p.object_value()) {
        for name in names {
            if let Some(prop) = servers.get(name) {
                prop.remove();
            }
        }
    }
    Ok(finished(&root, text))
}
