//! The trust preview for people and for `--json`: files, servers, variables (names only).

use std::io::Write;

use serde_json::{json, Value};

use crate::config::{LoadOptions, Received, ServerPreview};
use crate::output::style;

use super::{CliError, Overrides, Request};

/// The preview on stdout.
pub(super) fn human(request: &Request, opts: &LoadOptions) -> Result<(), CliError> {
    let mut out = anstream::stdout().lock();
    let (head, dim, warn) = (style::HEAD, style::DIM, style::WARN);
    writeln!(
        out,
        "{head}{}{head:#} came with files mcp-launch would use:",
        opts.cwd.display()
    )?;
    let env_names = request
        .preview
        .as_ref()
        .map(|p| p.env_file_names.join(", "))
        .unwrap_or_default();
    for file in request.subject.iter().flat_map(|s| &s.files) {
        if file.ends_with(".env") {
            writeln!(out, "  {} {dim}sets: {env_names}{dim:#}", file.display())?;
        } else {
            writeln!(out, "  {}", file.display())?;
        }
    }
    if let Some(overrides) = &request.overrides {
        writeln!(out, "  {}", overrides.path.display())?;
        for line in overrides_summary(overrides) {
            writeln!(out, "    {line}")?;
        }
    }
    for server in request.preview.iter().flat_map(|p| &p.servers) {
        writeln!(out)?;
        let off = if server.disabled { " (disabled)" } else { "" };
        writeln!(
            out,
            "  {head}{}{head:#} {dim}{}{off}{dim:#}",
            server.name, server.transport
        )?;
        for (label, value) in fields(server) {
            writeln!(out, "    {label:<9} {value}")?;
        }
        if let Some(problem) = &server.problem {
            writeln!(out, "    {warn}problem{warn:#}   {problem}")?;
        }
    }
    writeln!(
        out,
        "\n{dim}names only: no value is shown; a change to any of these files asks again{dim:#}"
    )?;
    Ok(())
}

/// The labelled lines of one server: what it runs or reaches, its blocks, what it receives.
fn fields(server: &ServerPreview) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    if let Some(command) = &server.command {
        let runs = std::iter::once(command.as_str())
            .chain(server.args.iter().map(String::as_str))
            .map(shell_word)
            .collect::<Vec<_>>()
            .join(" ");
        lines.push(("runs", runs));
    }
    if let Some(cwd) = &server.cwd {
        lines.push(("cwd", cwd.clone()));
    }
    if let Some(url) = &server.url {
        lines.push(("url", url.clone()));
    }
    for (name, value) in &server.headers {
        lines.push(("header", format!("{name}: {value}")));
    }
    for (name, value) in &server.env {
        lines.push(("env", format!("{name}={value}")));
    }
    if server.inherits_environment {
        lines.push((
            "receives",
            "your whole environment (names below are set or placed on top)".into(),
        ));
    }
    let label = if server.inherits_environment {
        ""
    } else {
        "sends"
    };
    for received in &server.receives {
        lines.push((label, variable(received)));
    }
    lines
}

fn variable(received: &Received) -> String {
    format!(
        "{} from {} → {}",
        received.name,
        received.source.as_str(),
        received.into.join(", ")
    )
}

/// `word` as a shell would need it to read back the same.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,${}".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// One line per server the overrides change, saying what they change.
fn overrides_summary(overrides: &Overrides) -> Vec<String> {
    let Ok(file) = serde_json::from_str::<Value>(&overrides.text) else {
        return vec!["(not valid JSON: it would not load)".into()];
    };
    let mut lines = Vec::new();
    for (stack, servers) in file["stacks"].as_object().into_iter().flatten() {
        for (server, choice) in servers.as_object().into_iter().flatten() {
            let mut does = Vec::new();
            match choice["disabled"].as_bool() {
                Some(false) => does.push("switches it on".to_string()),
                Some(true) => does.push("switches it off".to_string()),
                None => {}
            }
            let names = |key: &str| -> Vec<String> {
                match &choice[key] {
                    Value::Array(items) => items.iter().map(|v| v.to_string()).collect(),
                    Value::Object(map) => map.keys().cloned().collect(),
                    _ => Vec::new(),
                }
            };
            for (key, verb) in [
                ("allow", "allows only"),
                ("deny", "denies"),
                ("descriptions", "rewrites the descriptions of"),
                ("max_output_tokens", "sets output budgets of"),
            ] {
                let list = names(key);
                if !list.is_empty() {
                    does.push(format!("{verb} {}", list.join(", ")));
                }
            }
            if !does.is_empty() {
                lines.push(format!("{stack}/{server}: {}", does.join("; ")));
            }
        }
    }
    lines
}

/// The preview as one JSON document; `trusted` says whether it was recorded.
pub(super) fn json(request: &Request, opts: &LoadOptions, trusted: bool) -> Value {
    let mut files: Vec<String> = request
        .subject
        .iter()
        .flat_map(|s| &s.files)
        .map(|f| f.display().to_string())
        .collect();
    files.extend(
        request
            .overrides
            .iter()
            .map(|o| o.path.display().to_string()),
    );
    let servers: Vec<Value> = request
        .preview
        .iter()
        .flat_map(|p| &p.servers)
        .map(server_json)
        .collect();
    json!({
        "success": true,
        "dir": opts.cwd,
        "trusted": trusted,
        "files": files,
        "env_file_sets": request.preview.as_ref().map(|p| p.env_file_names.clone()).unwrap_or_default(),
        "overrides": request.overrides.as_ref().map(overrides_summary).unwrap_or_default(),
        "servers": servers,
    })
}

fn server_json(server: &ServerPreview) -> Value {
    let pairs = |pairs: &[(String, String)]| -> Value {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let receives: Vec<Value> = server
        .receives
        .iter()
        .map(|r| json!({"name": r.name, "from": r.source.as_str(), "into": r.into}))
        .collect();
    json!({
        "name": server.name,
        "transport": server.transport,
        "disabled": server.disabled,
        "command": server.command,
        "args": server.args,
        "cwd": server.cwd,
        "url": server.url,
        "headers": pairs(&server.headers),
        "env": pairs(&server.env),
        "inherits_environment": server.inherits_environment,
        "receives": receives,
        "problem": server.problem.as_ref().map(|p| json!({"type": p.kind(), "message": p.to_string()})),
    })
}

/// The line after recording.
pub(super) fn recorded(opts: &LoadOptions) -> Result<(), CliError> {
    let mut out = anstream::stdout().lock();
    let (good, dim) = (style::GOOD, style::DIM);
    writeln!(out, "{good}trusted{good:#} {}", opts.cwd.display())?;
    writeln!(
        out,
        "{dim}until these files change; `mcp-launch trust --revoke` forgets it{dim:#}"
    )?;
    Ok(())
}
