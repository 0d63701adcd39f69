//! Files we edit for the user: the project's overrides (read, changed, written back) and the
//! MCP clients' configs (`serve --write` and `--unwrite`). Whatever a file holds, an edit keeps
//! everything it does not own: other keys, other servers, comments.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use jsonc_parser::ast;
use jsonc_parser::{CollectOptions, CommentCollectionStrategy, ParseOptions};
use serde_json::{Map, Value};
use toml_edit::{DocumentMut, Item};

use super::{rendered, split_first};
use crate::catalog::{Edit, Overrides, OverridesError};
use crate::gateway::clients::{self, Client, ServeCommand, ENTRY, FRONTED_KEY};

/// The overrides file: the bytes before the first NUL are the file, the first byte and the rest
/// choose an edit. What parses is written back to itself (stable: writing it again gives the
/// same text); an edit reads back as made and leaves every other server, the launch choices and
/// the stack pins as they were.
pub fn overrides(data: &[u8]) {
    let (knobs, rest) = split_first(data);
    let text = String::from_utf8_lossy(rest);
    let (file, words) = text.split_once('\0').unwrap_or((&text, ""));
    let path = PathBuf::from("/fuzz/project/.mcp-launch/overrides.json");
    let loaded = match Overrides::parse(path.clone(), file) {
        Ok(loaded) => loaded,
        Err(error) => {
            if let OverridesError::Invalid { line, .. } = &error {
                assert!(*line >= 1 && *line <= file.split('\n').count(), "{error}");
            }
            return rendered(&error);
        }
    };
    let written = loaded.to_text().expect("overrides serialise");
    let again = Overrides::parse(path.clone(), &written).expect("what we write reads back");
    assert!(again == loaded, "{file:?} was written as {written}");
    assert_eq!(again.to_text().expect("serialise"), written, "not stable");

    let (stack, server) = chosen_server(&written, knobs >> 4);
    let edit = edit(knobs, &stack, &server, words);
    let mut edited = loaded;
    edited.apply_edit(&edit);
    let out = edited.to_text().expect("overrides serialise");
    let back = Overrides::parse(path, &out).expect("an edited file reads back");
    assert!(back == edited, "{edit:?} gave {out}");
    only_the_server_changed(&written, &out, &stack, &server);
}

/// The `n`th server named in the written file (or a new one).
fn chosen_server(written: &str, n: u8) -> (String, String) {
    let value: Value = serde_json::from_str(written).expect("we write JSON");
    let servers = value["stacks"].as_object().into_iter().flat_map(|stacks| {
        stacks.iter().flat_map(|(stack, servers)| {
            let names = servers.as_object().into_iter().flat_map(Map::keys);
            names.map(move |server| (stack.clone(), server.clone()))
        })
    });
    let servers: Vec<(String, String)> = servers.collect();
    match servers.len() {
        0 => ("mcp".into(), "s".into()),
        len => servers[usize::from(n) % len].clone(),
    }
}

/// One edit of the server, its kind from the first byte, its tools and text from `words`.
fn edit(knobs: u8, stack: &str, server: &str, words: &str) -> Edit {
    let (stack, server) = (stack.to_string(), server.to_string());
    let tools: Vec<String> = words.split(',').map(String::from).collect();
    let tool = tools[0].clone();
    match knobs % 9 {
        0 => Edit::SetDisabled {
            stack,
            server,
            config_disabled: knobs & 16 != 0,
            disabled: knobs & 32 != 0,
        },
        1 | 2 => Edit::Allow {
            stack,
            server,
            tools,
            only: knobs % 9 == 2,
        },
        3 => Edit::Deny {
            stack,
            server,
            tools,
        },
        4 => Edit::Reset {
            stack,
            server,
            tools,
        },
        5 => Edit::Describe {
            stack,
            server,
            tool,
            text: (!words.is_empty()).then(|| words.to_string()),
        },
        6 => Edit::Trim {
            stack,
            server,
            tool,
            original: words.to_string(),
            max: usize::from(knobs),
        },
        7 => Edit::Budget {
            stack,
            server,
            tool,
            tokens: (knobs & 16 != 0).then_some(words.len()),
        },
        _ => Edit::ClearServer { stack, server },
    }
}

/// Everything but `stack`/`server` in `out` is as it was in `before` (both as we write them).
fn only_the_server_changed(before: &str, out: &str, stack: &str, server: &str) {
    let before: Value = serde_json::from_str(before).expect("we write JSON");
    let out: Value = serde_json::from_str(out).expect("we write JSON");
    for key in ["version", "launch", "pin"] {
        assert_eq!(before.get(key), out.get(key), "{key} changed");
    }
    let stacks = before["stacks"].as_object().into_iter().flatten();
    for (name, servers) in stacks {
        for (other, kept) in servers.as_object().into_iter().flatten() {
            if (name.as_str(), other.as_str()) != (stack, server) {
                assert_eq!(
                    Some(kept),
                    out["stacks"][name].get(other),
                    "{name}/{other} lost"
                );
            }
        }
    }
}

/// A client's config file through `serve --write` then `--unwrite`: the client from the first
/// byte, the servers set aside and stdio or HTTP from its other bits, the file the rest. What
/// we write parses as the client reads it, keeps every other key, server and comment, holds our
/// entry, is written again unchanged, and `--unwrite` gives back the file's content.
pub fn client_config(data: &[u8]) {
    let (knobs, rest) = split_first(data);
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let client = Client::ALL[usize::from(knobs % 5)];
    let fronted: Vec<String> = ["github", "time", ENTRY]
        .iter()
        .enumerate()
        .filter(|(i, _)| (knobs / 5) >> i & 1 == 1)
        .map(|(_, name)| name.to_string())
        .collect();
    let home = Path::new("/fuzz/home");
    let mut serve = ServeCommand::new(
        home.join("bin/mcp-launch"),
        &["stack.json".into()],
        &["--mode".into(), "sparse".into()],
        home,
    );
    if knobs / 40 % 2 == 1 {
        serve = serve.over_http("http://127.0.0.1:8931/mcp".into(), Some("k".repeat(32)));
    }
    let file = home.join(".config/client");
    let written = match clients::with_entry(client, &file, text, &serve, &fronted) {
        Ok(written) => written,
        Err(error) => return rendered(&error),
    };
    let again = clients::with_entry(client, &file, &written, &serve, &fronted);
    assert_eq!(
        again.ok(),
        Some(written.clone()),
        "a second write changed it"
    );
    let undone = clients::without_entry(client, &file, &written).expect("our own file refused");
    let file = ClientFile {
        client,
        text,
        fronted: &fronted,
    };
    match client {
        Client::Codex => file.toml_kept(&written, &undone, &serve),
        _ => file.json_kept(&written, &undone, &serve),
    }
}

/// A client's file before our edit.
struct ClientFile<'a> {
    client: Client,
    text: &'a str,
    fronted: &'a [String],
}

impl ClientFile<'_> {
    /// The JSON clients: `mcpServers` (VS Code: `servers`, JSONC).
    fn json_kept(&self, written: &str, undone: &str, serve: &ServeCommand) {
        let jsonc = self.client == Client::VsCode;
        if !jsonc {
            strict_json(self.text, written);
        }
        if has_duplicate_keys(self.text) {
            return; // which of two equal keys a client reads is its own choice
        }
        let key = if jsonc { "servers" } else { "mcpServers" };
        let before = jsonc_value(self.text).expect("what we edited parses");
        let after = jsonc_value(written).expect("what we wrote parses");
        let servers = before.get(key).and_then(Value::as_object);
        for (name, value) in before.as_object().into_iter().flatten() {
            if name != key && name != FRONTED_KEY {
                assert_eq!(after.get(name), Some(value), "top-level {name} lost");
            }
        }
        for (name, value) in servers.into_iter().flatten() {
            let (now, aside) = (&after[key].get(name), after[FRONTED_KEY].get(name));
            match (name.as_str(), self.fronted.contains(name)) {
                (ENTRY, _) => {}
                (_, true) => assert!(now.is_none() && aside == Some(value), "{name} set aside"),
                (_, false) => assert_eq!(now, &Some(value), "server {name} lost"),
            }
        }
        let ours = &after[key][ENTRY];
        match &serve.http {
            Some(http) => assert_eq!(ours["url"], http.url.as_str()),
            None => assert_eq!(ours["args"], serde_json::json!(serve.args)),
        }
        let fresh = servers.is_none_or(|s| !s.contains_key(ENTRY));
        if fresh && before.get(FRONTED_KEY).is_none() {
            comments_kept(self.text, written);
            comments_kept(self.text, undone);
            let mut expected = before.clone();
            expected[key] = Value::Object(servers.cloned().unwrap_or_default());
            assert_eq!(
                jsonc_value(undone),
                Some(expected),
                "--unwrite lost something"
            );
        }
    }

    /// Codex's `config.toml`: `[mcp_servers.NAME]` tables.
    fn toml_kept(&self, written: &str, undone: &str, serve: &ServeCommand) {
        let before = toml_value(self.text).expect("what we edited parses");
        let after = toml_value(written).expect("what we wrote is not TOML");
        let servers = before.get("mcp_servers").and_then(Value::as_object);
        for (name, value) in before.as_object().into_iter().flatten() {
            if name != "mcp_servers" {
                assert_eq!(after.get(name), Some(value), "top-level {name} lost");
            }
        }
        for (name, value) in servers.into_iter().flatten() {
            let now = after["mcp_servers"].get(name);
            match (name.as_str(), self.fronted.contains(name)) {
                (ENTRY, _) => {}
                (_, true) => assert!(now.is_none() && written.contains(&marker(name))),
                (_, false) => assert_eq!(now, Some(value), "server {name} lost"),
            }
        }
        assert_eq!(
            after["mcp_servers"][ENTRY]["args"],
            serde_json::json!(serve.args)
        );
        let fresh = servers.is_none_or(|s| !s.contains_key(ENTRY));
        if fresh && !self.text.contains("# >>> mcp-launch fronted") {
            toml_comments_kept(self.text, written);
            toml_comments_kept(self.text, undone);
            let expected = without_empty_servers(before);
            let back = toml_value(undone).map(without_empty_servers);
            assert_eq!(back, Some(expected), "--unwrite lost something");
        }
    }
}

/// `written` is JSON a strict client reads. A number past f64's range (`-32E+360`) is JSON
/// (JavaScript's clients read it as an infinity) that serde_json refuses: one the file held
/// before is carried as it was, not ours to change.
fn strict_json(before: &str, written: &str) {
    let Err(error) = serde_json::from_str::<Value>(written) else {
        return;
    };
    let out_of_range = |e: &serde_json::Error| e.to_string().starts_with("number out of range");
    let carried = serde_json::from_str::<Value>(before).is_err_and(|e| out_of_range(&e));
    assert!(
        out_of_range(&error) && carried,
        "a strict client's file is not JSON: {error}"
    );
}

/// The begin marker of a server set aside in TOML.
fn marker(name: &str) -> String {
    format!("# >>> mcp-launch fronted: {name} ")
}

/// The text as a value, comments and trailing commas allowed (blank: an empty object).
fn jsonc_value(text: &str) -> Option<Value> {
    if text.trim().is_empty() {
        return Some(Value::Object(Map::new()));
    }
    let root = jsonc_parser::cst::CstRootNode::parse(text, &ParseOptions::default()).ok()?;
    match root.value() {
        // Only comments: an empty file to its client, as to `with_entry`.
        None => Some(Value::Object(Map::new())),
        Some(value) => value.to_serde_value(),
    }
}

/// True when an object in the text names a key twice.
fn has_duplicate_keys(text: &str) -> bool {
    fn walk(value: &ast::Value) -> bool {
        match value {
            ast::Value::Object(object) => {
                let mut names = BTreeSet::new();
                object
                    .properties
                    .iter()
                    .any(|p| !names.insert(p.name.as_str()) || walk(&p.value))
            }
            ast::Value::Array(array) => array.elements.iter().any(walk),
            _ => false,
        }
    }
    let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &Default::default());
    parsed.ok().and_then(|p| p.value).is_some_and(|v| walk(&v))
}

/// Every comment of `before` is in `after` — a line comment that went aside with its server as
/// a block comment with any `*/` in it written `* /` (else it would end the block early).
fn comments_kept(before: &str, after: &str) {
    let collect = CollectOptions {
        comments: CommentCollectionStrategy::Separate,
        tokens: false,
    };
    let Ok(parsed) = jsonc_parser::parse_to_ast(before, &collect, &Default::default()) else {
        return;
    };
    let comments = parsed
        .comments
        .into_iter()
        .flat_map(|map| map.into_values());
    for group in comments {
        for comment in group.iter() {
            let text = comment.text();
            let kept = after.contains(text) || after.contains(&text.replace("*/", "* /"));
            assert!(kept, "comment {comment:?} lost");
        }
    }
}

/// Every comment line of `before` is in `after`.
fn toml_comments_kept(before: &str, after: &str) {
    for line in before.lines().map(str::trim).filter(|l| l.starts_with('#')) {
        assert!(after.contains(line), "comment {line:?} lost");
    }
}

/// The TOML document as JSON (blank: an empty object).
fn toml_value(text: &str) -> Option<Value> {
    let doc = text.parse::<DocumentMut>().ok()?;
    Some(item_json(doc.as_item()))
}

fn without_empty_servers(mut value: Value) -> Value {
    let fields = value.as_object_mut().expect("a document is a table");
    if fields
        .get("mcp_servers")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        fields.remove("mcp_servers");
    }
    value
}

fn item_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(value) => toml_json(value),
        Item::Table(table) => table
            .iter()
            .map(|(k, v)| (k.to_string(), item_json(v)))
            .collect(),
        Item::ArrayOfTables(tables) => tables
            .iter()
            .map(|t| {
                let fields = t.iter().map(|(k, v)| (k.to_string(), item_json(v)));
                Value::Object(fields.collect())
            })
            .collect(),
    }
}

fn toml_json(value: &toml_edit::Value) -> Value {
    use toml_edit::Value as T;
    match value {
        T::String(s) => s.value().clone().into(),
        T::Integer(i) => (*i.value()).into(),
        T::Float(f) => serde_json::Number::from_f64(*f.value())
            .map_or_else(|| f.value().to_string().into(), Value::Number),
        T::Boolean(b) => (*b.value()).into(),
        T::Datetime(d) => d.value().to_string().into(),
        T::Array(items) => items.iter().map(toml_json).collect(),
        T::InlineTable(table) => table
            .iter()
            .map(|(k, v)| (k.to_string(), toml_json(v)))
            .collect(),
    }
}
