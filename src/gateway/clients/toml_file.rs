//! Our entry in Codex's `config.toml`, edited with toml_edit so comments and layout survive.
//! Servers set aside become real comments, one marked block each:
//!
//! ```toml
//! # >>> mcp-launch fronted: github (mcp-launch serve runs it now; --unwrite puts it back)
//! # [mcp_servers.github]
//! # command = "npx"
//! # <<< mcp-launch fronted: github
//! ```

use std::path::Path;

use toml_edit::{Array, DocumentMut, Item, Table, TableLike};

use super::error::line_column;
use super::{ClientError, Edit, ServeCommand, ENTRY};

const SERVERS: &str = "mcp_servers";
const BEGIN: &str = "# >>> mcp-launch fronted: ";
const END: &str = "# <<< mcp-launch fronted: ";

/// Sets `[mcp_servers.mcp-launch]` and comments out the `fronted` servers.
pub(super) fn add(
    text: &str,
    path: &Path,
    serve: &ServeCommand,
    fronted: &[String],
) -> Result<Edit, ClientError> {
    // Servers set aside before stay as their text: toml_edit would print their comment lines
    // again, a CRLF in one (a multi-line string's) as LF.
    let (rest, earlier) = cut_blocks(text);
    let mut doc = parse(&rest, path)?;
    let servers = servers_table(&mut doc, path)?;
    set_entry(servers, serve);
    let mut blocks: String = earlier.iter().map(|block| block.text.as_str()).collect();
    let mut set_aside = Vec::new();
    for name in fronted.iter().filter(|n| n.as_str() != ENTRY) {
        if let Some(item) = servers.remove(name) {
            blocks.push_str(&comment_block(name, item));
            set_aside.push(name.clone());
        }
    }
    Ok(Edit {
        text: append_blocks(doc.to_string(), &blocks),
        set_aside,
        ..Edit::default()
    })
}

/// Removes `[mcp_servers.mcp-launch]` and uncomments the servers `add` commented out.
pub(super) fn remove(text: &str, path: &Path) -> Result<Edit, ClientError> {
    let (mut rest, blocks) = cut_blocks(text);
    if !blocks.is_empty() {
        // The blank line `add` put before the blocks goes with them.
        rest.truncate(rest.trim_end().len());
        if !rest.is_empty() {
            rest.push('\n');
        }
    }
    let mut doc = parse(&rest, path)?;
    let mut edit = Edit::default();
    let mut kept = String::new();
    if let Some(servers) = doc.get_mut(SERVERS).and_then(Item::as_table_like_mut) {
        servers.remove(ENTRY);
    }
    let mut blank_line_before = !doc.to_string().trim().is_empty();
    for block in blocks {
        let servers = servers_table(&mut doc, path)?;
        match uncomment(&block) {
            Some(mut item) if !servers.contains_key(&block.name) => {
                if let (Some(table), true) = (item.as_table_mut(), blank_line_before) {
                    // A blank line before the table, then the comments that were above it.
                    let prefix = table.decor().prefix().and_then(|p| p.as_str());
                    let comments = prefix.unwrap_or_default().trim_start_matches('\n');
                    let prefix = format!("\n{comments}");
                    table.decor_mut().set_prefix(prefix);
                }
                blank_line_before = true;
                servers.insert(&block.name, item);
                edit.restored.push(block.name);
            }
            _ => {
                kept.push_str(&block.text);
                edit.kept_aside.push(block.name);
            }
        }
    }
    edit.text = append_blocks(doc.to_string(), &kept);
    Ok(edit)
}

fn parse(text: &str, path: &Path) -> Result<DocumentMut, ClientError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let (line, column) = line_column(text, e.span().map_or(0, |s| s.start));
        ClientError::Invalid {
            path: path.to_path_buf(),
            line,
            column,
            format: "TOML",
            message: e.message().trim().to_string(),
        }
    })
}

/// `[mcp_servers]`, made (implicit: only its sub-tables show) when missing.
fn servers_table<'d>(doc: &'d mut DocumentMut, path: &Path) -> Result<&'d mut Table, ClientError> {
    let item = doc.entry(SERVERS).or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let found = item.type_name();
    item.as_table_mut().ok_or_else(|| ClientError::WrongShape {
        path: path.to_path_buf(),
        key: SERVERS.into(),
        found,
        expected: "a table of [mcp_servers.NAME] sections",
    })
}

/// Sets `command` and `args` (keeping any other key the user added, such as `env`).
fn set_entry(servers: &mut Table, serve: &ServeCommand) {
    let program = serve.program.display().to_string();
    let entry = servers
        .entry(ENTRY)
        .or_insert_with(|| Item::Table(Table::new()));
    if entry.as_table_like().is_none() {
        *entry = Item::Table(Table::new());
    }
    let Some(table) = entry.as_table_like_mut() else {
        return;
    };
    if table.get("command").and_then(Item::as_str) != Some(program.as_str()) {
        table.insert("command", toml_edit::value(program));
    }
    if string_array(table).as_deref() != Some(serve.args.as_slice()) {
        let args: Array = serve.args.iter().map(String::as_str).collect();
        table.insert("args", toml_edit::value(args));
    }
}

fn string_array(table: &dyn TableLike) -> Option<Vec<String>> {
    let array = table.get("args")?.as_array()?;
    array.iter().map(|v| v.as_str().map(String::from)).collect()
}

/// The server's TOML, each line commented as it is (a multi-line string's trailing spaces are
/// its value), between the markers.
fn comment_block(name: &str, item: Item) -> String {
    let mut servers = Table::new();
    servers.set_implicit(true);
    servers.insert(name, item);
    let mut doc = DocumentMut::new();
    doc.insert(SERVERS, Item::Table(servers));
    let mut block =
        format!("{BEGIN}{name} (mcp-launch serve runs it now; --unwrite puts it back)\n");
    // Split at `\n` only: a `\r` before it (a CRLF inside a multi-line string) is kept.
    for line in doc.to_string().trim().split('\n') {
        block.push_str(if line.is_empty() { "#" } else { "# " });
        block.push_str(line);
        block.push('\n');
    }
    block.push_str(&format!("{END}{name}\n"));
    block
}

fn append_blocks(mut text: String, blocks: &str) -> String {
    if blocks.is_empty() {
        return text;
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() && !text.ends_with("\n\n") {
        text.push('\n');
    }
    text.push_str(blocks);
    text
}

/// One commented-out server, as found in the file.
struct Block {
    name: String,
    /// The block's lines as they were, markers included.
    text: String,
}

/// The text without our marked blocks, and the blocks. An unterminated block stays in the text.
fn cut_blocks(text: &str) -> (String, Vec<Block>) {
    let mut rest = String::new();
    let mut blocks = Vec::new();
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix(BEGIN).map(block_name) else {
            rest.push_str(line);
            continue;
        };
        let end = format!("{END}{name}");
        let body: Vec<&str> = lines.clone().take_while(|l| l.trim_end() != end).collect();
        if body.len() == lines.clone().count() {
            rest.push_str(line); // no end marker: not ours to touch
            continue;
        }
        let mut block = line.to_string();
        for _ in 0..=body.len() {
            block.push_str(lines.next().unwrap_or_default());
        }
        if !block.ends_with('\n') {
            block.push('\n');
        }
        blocks.push(Block { name, text: block });
    }
    (rest, blocks)
}

/// The server's name from the begin marker's rest (`NAME (…)`).
fn block_name(rest: &str) -> String {
    let rest = rest.trim_end();
    rest.split(" (").next().unwrap_or(rest).to_string()
}

/// The server's item from its block, `None` when the block does not hold it.
fn uncomment(block: &Block) -> Option<Item> {
    let toml: String = block
        .text
        .split_inclusive('\n')
        .skip(1)
        .filter(|l| !l.starts_with(END))
        .map(|l| {
            let l = l.strip_prefix('#').unwrap_or(l);
            l.strip_prefix(' ').unwrap_or(l)
        })
        .collect();
    // A block someone edited into invalid TOML stays a comment.
    let Ok(mut doc) = toml.parse::<DocumentMut>() else {
        return None;
    };
    let item = doc
        .get_mut(SERVERS)
        .and_then(Item::as_table_like_mut)
        .and_then(|s| s.remove(&block.name));
    item.map(|mut item| {
        forget_positions(&mut item);
        item
    })
}

/// A table taken from another document keeps that document's positions; without them it is
/// written after the tables already in place.
fn forget_positions(item: &mut Item) {
    if let Some(table) = item.as_table_mut() {
        table.set_position(None);
        for (_, child) in table.iter_mut() {
            forget_positions(child);
        }
    }
}

/// The `[mcp_servers.*]` tables as JSON values, and the names of the servers set aside in
/// our comment blocks.
pub(super) fn servers(
    text: &str,
    path: &Path,
) -> Result<(serde_json::Map<String, serde_json::Value>, Vec<String>), ClientError> {
    let doc = parse(text, path)?;
    let mut found = serde_json::Map::new();
    if let Some(servers) = doc.get(SERVERS) {
        let table = servers
            .as_table_like()
            .ok_or_else(|| ClientError::WrongShape {
                path: path.to_path_buf(),
                key: format!("[{SERVERS}]"),
                found: "not a table",
                expected: "a table",
            })?;
        for (name, item) in table.iter() {
            found.insert(name.to_string(), json_of(item));
        }
    }
    let aside = cut_blocks(text).1.into_iter().map(|b| b.name).collect();
    Ok((found, aside))
}

/// A TOML item as plain JSON (dates as their text).
fn json_of(item: &Item) -> serde_json::Value {
    use serde_json::Value;
    let of_value = |v: &toml_edit::Value| json_of(&Item::Value(v.clone()));
    match item {
        Item::None => Value::Null,
        Item::Table(t) => Value::Object(t.iter().map(|(k, v)| (k.into(), json_of(v))).collect()),
        Item::ArrayOfTables(a) => {
            Value::Array(a.iter().map(|t| json_of(&Item::Table(t.clone()))).collect())
        }
        Item::Value(v) => match v {
            toml_edit::Value::String(s) => Value::String(s.value().clone()),
            toml_edit::Value::Integer(i) => Value::from(*i.value()),
            toml_edit::Value::Float(f) => Value::from(*f.value()),
            toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
            toml_edit::Value::Datetime(d) => Value::String(d.value().to_string()),
            toml_edit::Value::Array(a) => Value::Array(a.iter().map(of_value).collect()),
            toml_edit::Value::InlineTable(t) => {
                Value::Object(t.iter().map(|(k, v)| (k.into(), of_value(v))).collect())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` with `server` set aside (as `--write` leaves it; a second write changes
    /// nothing), and then put back.
    fn aside_and_back(text: &str, server: &str) -> (Edit, Edit) {
        let serve = ServeCommand::new("/bin/mcp-launch".into(), &[], &[], Path::new("/"));
        let path = Path::new("config.toml");
        let added = add(text, path, &serve, &[server.into()]).unwrap();
        let again = add(&added.text, path, &serve, &[server.into()]).unwrap();
        assert_eq!(again.text, added.text, "a second write changed it");
        let removed = remove(&added.text, path).unwrap();
        assert_eq!(removed.restored, [server]);
        (added, removed)
    }

    /// Found by the `client_config` fuzz target: `--unwrite` put a server back without the
    /// comment above its table (`fuzz/corpus/client_config/codex-toml-set-aside`).
    #[test]
    fn a_server_put_back_keeps_the_comment_above_it() {
        let text = "model = \"o4-mini\"\n\n# GitHub, with a token\n[mcp_servers.github]\ncommand = \"npx\"\n";
        let (added, removed) = aside_and_back(text, "github");
        assert!(
            added.text.contains("# # GitHub, with a token\n"),
            "{}",
            added.text
        );
        assert_eq!(removed.text, text);
    }

    /// Found by the `client_config` fuzz target: a line of a multi-line string ending in a
    /// space, or in a CRLF, lost it on its way aside and back
    /// (`fuzz/corpus/client_config/codex-toml-multiline-trailing-space`, `codex-toml-crlf`).
    #[test]
    fn a_server_set_aside_and_back_keeps_its_strings_trailing_spaces() {
        let text = "[mcp_servers.time]\ncommand = '''uvx \n  mcp-server-time\t\r\n'''\n";
        let (_, removed) = aside_and_back(text, "time");
        let command = |t: &str| {
            t.parse::<DocumentMut>().unwrap()["mcp_servers"]["time"]["command"]
                .as_str()
                .map(String::from)
        };
        assert_eq!(command(&removed.text), command(text), "{}", removed.text);
    }
}
