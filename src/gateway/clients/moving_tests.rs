//! `clients`, `clients move` and `clients restore` in a fresh home holding every client's file
//! in its real format (and hostile ones: broken, symlinked, huge, with unknown keys).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;

const PROGRAM: &str = "/opt/bin/mcp-launch";

/// A fresh home with our config, its `.env` and the record inside.
struct Home {
    _base: super::tests::Home,
    paths: ClientPaths,
    target: Target,
}

fn fresh_home() -> Home {
    let base = super::tests::temp_home();
    let paths = base.paths.clone();
    let target = Target {
        config: paths.home.join(".claude/mcp.json"),
        env_file: paths.home.join(".claude/.env"),
        record: paths
            .home
            .parent()
            .unwrap()
            .join("state/clients-moved.json"),
    };
    Home {
        _base: base,
        paths,
        target,
    }
}

impl Home {
    fn file(&self, client: Client) -> PathBuf {
        client.config_file(Scope::User, &self.paths).unwrap()
    }

    fn put(&self, client: Client, text: &str) -> PathBuf {
        let file = self.file(client);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        file
    }

    fn put_all(&self) {
        for (client, text) in REAL_FILES {
            self.put(client, text);
        }
    }

    fn move_(&self, clients: &[Client], dry_run: bool) -> Vec<Moved> {
        move_clients(
            clients,
            &self.paths,
            &self.target,
            Path::new(PROGRAM),
            dry_run,
        )
    }

    fn restore(&self, clients: &[Client]) -> Vec<Restored> {
        restore(clients, &self.paths, &self.target).unwrap()
    }

    /// Every file under the temporary directory with its bytes.
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let root = self.paths.home.parent().unwrap();
        let mut files = BTreeMap::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    dirs.push(path);
                } else if meta.is_file() {
                    files.insert(path.clone(), std::fs::read(&path).unwrap());
                } else {
                    let target = std::fs::read_link(&path).unwrap();
                    files.insert(path, target.display().to_string().into_bytes());
                }
            }
        }
        files
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Each client's user file as the client writes it, with keys we do not know kept around.
const REAL_FILES: [(Client, &str); 9] = [
    (
        Client::ClaudeCode,
        r#"{
  "numStartups": 40,
  "projects": {"/work": {"allowedTools": [], "mcpServers": {}}},
  "mcpServers": {
    "github": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}}
  }
}
"#,
    ),
    (
        Client::ClaudeDesktop,
        r#"{
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=UTC"]}
  },
  "globalShortcut": "Ctrl+Space"
}
"#,
    ),
    (
        Client::Cursor,
        r#"{
  "mcpServers": {
    "linear": {"url": "https://mcp.linear.app/mcp", "headers": {"Authorization": "Bearer lin_secret"}},
    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${env:HOME}/src"]}
  }
}
"#,
    ),
    (
        Client::VsCode,
        r#"{
  // VS Code's user file
  "servers": {
    "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
    "asks": {"type": "stdio", "command": "npx", "args": ["x"], "env": {"KEY": "${input:api-key}"}},
  },
  "inputs": [{"type": "promptString", "id": "api-key", "password": true}],
}
"#,
    ),
    (
        Client::Codex,
        r#"# Codex
model = "o4-mini"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
env = { DOCS_KEY = "d0cs" }
env_vars = ["LANG"]

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
"#,
    ),
    (
        Client::OpenCode,
        r#"{
  "$schema": "https://opencode.ai/config.json",
  "theme": "opencode",
  "mcp": {
    "everything": {
      "type": "local",
      "command": ["npx", "-y", "@modelcontextprotocol/server-everything"],
      "environment": {"LEVEL": "{env:LOG_LEVEL}"},
      "enabled": true,
    },
    "jira": {"type": "remote", "url": "https://jira.example.com/mcp", "enabled": false},
  },
}
"#,
    ),
    (
        Client::GeminiCli,
        r#"{
  "selectedAuthType": "gemini-api-key",
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=UTC"]},
    "stream": {"httpUrl": "https://stream.example.com/mcp", "headers": {"X-Key": "$STREAM_KEY"}, "timeout": 5000},
    "events": {"url": "https://events.example.com/sse"}
  }
}
"#,
    ),
    (
        Client::Windsurf,
        r#"{
  "mcpServers": {
    "zapier": {"serverUrl": "https://actions.zapier.com/mcp/sse"},
    "git": {"command": "uvx", "args": ["mcp-server-git"], "disabled": true, "env": {}}
  }
}
"#,
    ),
    (
        Client::CopilotCli,
        r#"{
  "mcpServers": {
    "playwright": {"type": "local", "command": "npx", "args": ["@playwright/mcp@latest"], "tools": ["*"], "env": {"TOKEN": "${PW_TOKEN}"}},
    "context7": {"type": "http", "url": "https://mcp.context7.com/mcp", "headers": {"CONTEXT7_API_KEY": "c7"}, "tools": ["*"]}
  }
}
"#,
    ),
];

fn names(found: &Found) -> Vec<(&str, &str, &str)> {
    found
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.transport, s.target.as_str()))
        .collect()
}

#[test]
fn every_client_is_listed_with_the_servers_it_runs_itself() {
    let home = fresh_home();
    home.put_all();
    let found: Vec<Found> = Client::ALL.iter().map(|&c| find(c, &home.paths)).collect();
    for f in &found {
        assert!(f.exists && f.error.is_none() && !f.gateway, "{f:?}");
    }
    let by = |c: Client| &found[Client::ALL.iter().position(|&x| x == c).unwrap()];
    assert_eq!(
        names(by(Client::Cursor)),
        [
            ("linear", "http", "https://mcp.linear.app/mcp"),
            (
                "files",
                "stdio",
                "npx -y @modelcontextprotocol/server-filesystem ${env:HOME}/src"
            )
        ]
    );
    assert_eq!(
        names(by(Client::OpenCode)),
        [
            (
                "everything",
                "stdio",
                "npx -y @modelcontextprotocol/server-everything"
            ),
            ("jira", "http", "https://jira.example.com/mcp")
        ]
    );
    assert!(by(Client::OpenCode).servers[1].disabled);
    assert_eq!(
        names(by(Client::GeminiCli))[1..],
        [
            ("stream", "http", "https://stream.example.com/mcp"),
            ("events", "sse", "https://events.example.com/sse")
        ]
    );
    assert_eq!(
        names(by(Client::Windsurf))[0],
        ("zapier", "http", "https://actions.zapier.com/mcp/sse")
    );
    assert!(by(Client::Windsurf).servers[1].disabled);
    assert_eq!(
        names(by(Client::Codex))[1],
        ("remote", "http", "https://mcp.example.com/mcp")
    );
    let asks = &by(Client::VsCode).servers[1];
    assert_eq!(
        asks.entry.as_ref().unwrap_err(),
        "it uses ${input:api-key}, which only vscode can fill in"
    );
    // A client that has no file is listed too.
    let empty = fresh_home();
    let f = find(Client::Windsurf, &empty.paths);
    assert!(!f.exists && f.error.is_none() && f.servers.is_empty());
}

#[test]
fn our_entry_and_a_hand_written_serve_count_as_the_gateway() {
    let home = fresh_home();
    home.put(
        Client::CopilotCli,
        r#"{"mcpServers": {"gw": {"type": "local", "command": "/usr/bin/mcp-launch", "args": ["serve"], "tools": ["*"]}, "x": {"command": "y"}}}"#,
    );
    home.put(
        Client::OpenCode,
        r#"{"mcp": {"mcp-launch": {"type": "local", "command": ["mcp-launch", "serve"]}}}"#,
    );
    let copilot = find(Client::CopilotCli, &home.paths);
    assert!(copilot.gateway);
    assert_eq!(names(&copilot), [("x", "stdio", "y")]);
    let opencode = find(Client::OpenCode, &home.paths);
    assert!(opencode.gateway && opencode.servers.is_empty());
    let moved = home.move_(&[Client::OpenCode], false);
    assert_eq!(
        moved[0].skipped.as_deref(),
        Some("already points at the gateway")
    );
}

#[test]
fn move_then_restore_gives_every_file_back_byte_for_byte() {
    let home = fresh_home();
    home.put_all();
    let ours = "{\n  \"mcpServers\": {\n    \"mine\": {\"command\": \"./mine\"}\n  }\n}\n";
    std::fs::create_dir_all(home.target.config.parent().unwrap()).unwrap();
    std::fs::write(&home.target.config, ours).unwrap();
    std::fs::write(&home.target.env_file, "OTHER=1\n").unwrap();
    let before = home.snapshot();

    let moved = home.move_(&Client::ALL, false);
    for m in &moved {
        assert!(m.error.is_none() && m.skipped.is_none(), "{m:?}");
    }
    let time_twice = &moved[6];
    assert_eq!(
        time_twice.shared,
        ["time"],
        "Gemini's time is Claude Desktop's"
    );
    assert_eq!(moved[3].unmovable.len(), 1, "VS Code's ${{input:}} stays");
    let config: serde_json::Value = serde_json::from_str(&read(&home.target.config)).unwrap();
    let servers = config["mcpServers"].as_object().unwrap();
    let keys: Vec<&str> = servers.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "mine",
            "github",
            "time",
            "linear",
            "files",
            "fetch",
            "docs",
            "remote",
            "everything",
            "jira",
            "stream",
            "events",
            "zapier",
            "git",
            "playwright",
            "context7"
        ]
    );
    assert_eq!(
        servers["github"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "${GITHUB_TOKEN}"
    );
    assert_eq!(
        servers["linear"]["headers"]["Authorization"],
        "${LINEAR_AUTHORIZATION}"
    );
    assert_eq!(servers["files"]["args"][2], "${HOME}/src");
    assert_eq!(
        servers["docs"]["env"],
        json!({"DOCS_KEY": "${DOCS_DOCS_KEY}", "LANG": "${LANG}"})
    );
    assert_eq!(
        servers["remote"]["headers"]["Authorization"],
        "Bearer ${REMOTE_TOKEN}"
    );
    assert_eq!(servers["everything"]["env"]["LEVEL"], "${LOG_LEVEL}");
    assert_eq!(servers["jira"]["disabled"], true);
    assert_eq!(servers["stream"]["headers"]["X-Key"], "${STREAM_KEY}");
    assert_eq!(servers["events"]["type"], "sse");
    assert_eq!(
        servers["context7"]["headers"]["CONTEXT7_API_KEY"],
        "${CONTEXT7_CONTEXT7_API_KEY}"
    );
    assert_eq!(
        read(&home.target.env_file),
        "OTHER=1\nLINEAR_AUTHORIZATION='Bearer lin_secret'\nDOCS_DOCS_KEY='d0cs'\nCONTEXT7_CONTEXT7_API_KEY='c7'\n"
    );
    // Each client now starts the gateway on our config, and no longer its own servers.
    for client in Client::ALL {
        let f = find(client, &home.paths);
        assert!(f.gateway, "{client}");
        let left: Vec<&str> = f.servers.iter().map(|s| s.name.as_str()).collect();
        let expected: &[&str] = if client == Client::VsCode {
            &["asks"]
        } else {
            &[]
        };
        assert_eq!(left, expected, "{client}");
    }
    let text = read(&home.file(Client::OpenCode));
    assert!(
        text.contains(&format!(
            "\"command\": [\"{PROGRAM}\", \"serve\", \"--config\", \"{}\"]",
            home.target.config.display()
        )),
        "{text}"
    );
    let text = read(&home.file(Client::CopilotCli));
    assert!(text.contains("\"tools\": [\"*\"]"), "{text}");

    let restored = home.restore(&Client::ALL);
    assert!(restored.iter().all(|r| r.exact), "{restored:?}");
    let mut after = home.snapshot();
    // The backups stay, and so do the lock files; everything else is as it was.
    after.retain(|p, _| {
        let name = p.file_name().unwrap().to_string_lossy();
        !name.contains(".bak-") && !name.ends_with(".lock")
    });
    after.remove(&home.target.record);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &before {
        assert_eq!(
            String::from_utf8_lossy(&after[path]),
            String::from_utf8_lossy(bytes),
            "{}",
            path.display()
        );
    }
}

#[test]
fn a_dry_run_writes_nothing() {
    let home = fresh_home();
    home.put_all();
    let before = home.snapshot();
    let moved = home.move_(&Client::ALL, true);
    assert_eq!(moved[2].moved, ["linear", "files"]);
    assert_eq!(
        moved[6].shared,
        ["time"],
        "a dry run sees what it would have added"
    );
    assert_eq!(moved[2].secrets, ["LINEAR_AUTHORIZATION"]);
    assert!(moved.iter().all(|m| m.write.is_none()));
    let after = home.snapshot();
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    assert!(after == before, "a file changed");
}

#[test]
fn a_name_our_config_holds_for_another_server_stays_in_the_client() {
    let home = fresh_home();
    home.put(Client::Cursor, r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}, "other": {"command": "o"}}}"#);
    std::fs::create_dir_all(home.target.config.parent().unwrap()).unwrap();
    let ours = r#"{"mcpServers": {"time": {"command": "/usr/bin/other-time"}}}"#;
    std::fs::write(&home.target.config, ours).unwrap();
    let moved = home.move_(&[Client::Cursor], false);
    assert_eq!(moved[0].collided, ["time"]);
    assert_eq!(moved[0].moved, ["other"]);
    let config: serde_json::Value = serde_json::from_str(&read(&home.target.config)).unwrap();
    assert_eq!(
        config["mcpServers"]["time"]["command"],
        "/usr/bin/other-time"
    );
    let cursor = find(Client::Cursor, &home.paths);
    assert_eq!(names(&cursor), [("time", "stdio", "uvx mcp-server-time")]);
    assert!(cursor.gateway);
}

#[test]
fn a_broken_file_is_named_and_left_alone_while_the_others_move() {
    let home = fresh_home();
    let broken = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n";
    home.put(Client::Windsurf, broken);
    home.put(Client::Cursor, r#"{"mcpServers": {"a": {"command": "x"}}}"#);
    let listed = find(Client::Windsurf, &home.paths);
    let error = listed.error.unwrap();
    assert_eq!(error.kind(), "client_config_invalid");
    assert!(error.to_string().contains("mcp_config.json:3:"), "{error}");
    let moved = home.move_(&[Client::Windsurf, Client::Cursor], false);
    assert_eq!(
        moved[0].error.as_ref().unwrap().kind(),
        "client_config_invalid"
    );
    assert_eq!(moved[1].moved, ["a"]);
    assert_eq!(read(&home.file(Client::Windsurf)), broken);
}

#[test]
fn a_symlinked_file_is_moved_and_restored_through_its_link() {
    let home = fresh_home();
    let real = home.paths.home.join("dotfiles/gemini.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    let text = "{\n  // linked\n  \"mcpServers\": {\"t\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}}\n}\n";
    std::fs::write(&real, text).unwrap();
    let link = home.file(Client::GeminiCli);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let moved = home.move_(&[Client::GeminiCli], false);
    assert_eq!(moved[0].moved, ["t"]);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(read(&real).contains("mcp-launch"));
    assert!(home.restore(&[Client::GeminiCli])[0].exact);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(read(&real), text);
}

#[test]
fn a_huge_claude_code_file_moves_and_comes_back_whole() {
    let home = fresh_home();
    let mut projects = serde_json::Map::new();
    for i in 0..20_000 {
        let history: Vec<String> = (0..8)
            .map(|j| format!("prompt {i}.{j} {}", "x".repeat(80)))
            .collect();
        projects.insert(
            format!("/work/p{i}"),
            json!({"history": history, "allowedTools": []}),
        );
    }
    let text = serde_json::to_string_pretty(&json!({
        "projects": projects,
        "mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}
    }))
    .unwrap();
    assert!(text.len() > 16_000_000, "{}", text.len());
    home.put(Client::ClaudeCode, &text);
    let started = std::time::Instant::now();
    assert_eq!(home.move_(&[Client::ClaudeCode], false)[0].moved, ["time"]);
    assert!(home.restore(&[Client::ClaudeCode])[0].exact);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(read(&home.file(Client::ClaudeCode)), text);
}

#[test]
fn a_file_changed_since_the_move_is_restored_key_by_key() {
    let home = fresh_home();
    let file = home.put(
        Client::Cursor,
        r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}"#,
    );
    home.move_(&[Client::Cursor], false);
    let mut value: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
    value["theme"] = json!("dark");
    std::fs::write(&file, value.to_string()).unwrap();
    let restored = home.restore(&[Client::Cursor]);
    assert!(!restored[0].exact);
    assert!(restored[0]
        .note
        .as_deref()
        .unwrap()
        .contains("changed since the move"));
    let back: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
    assert_eq!(
        back,
        json!({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}, "theme": "dark"})
    );
    assert_eq!(restored[0].removed, ["time"]);
    // Nothing left to restore.
    assert_eq!(
        home.restore(&[Client::Cursor])[0].note.as_deref(),
        Some(NOT_MOVED)
    );
}

#[test]
fn a_server_two_clients_share_stays_until_both_are_restored() {
    let home = fresh_home();
    let time = r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}"#;
    home.put(Client::Cursor, time);
    home.put(Client::Windsurf, time);
    home.move_(&[Client::Cursor, Client::Windsurf], false);
    let first = home.restore(&[Client::Cursor]);
    assert_eq!(
        first[0].kept,
        ["time"],
        "Windsurf still reaches it through the gateway"
    );
    let config = read(&home.target.config);
    assert!(config.contains("mcp-server-time"), "{config}");
    home.move_(&[Client::Cursor], false);
    let both = home.restore(&[Client::Cursor, Client::Windsurf]);
    assert!(both.iter().all(|r| r.exact), "{both:?}");
    let config: serde_json::Value = serde_json::from_str(&read(&home.target.config)).unwrap();
    assert_eq!(config["mcpServers"], json!({}));
}

#[test]
fn each_new_clients_http_entry_uses_its_own_keys() {
    let serve = ServeCommand::new(PROGRAM.into(), &[], &[], Path::new("/p"))
        .over_http("http://127.0.0.1:8931/mcp".into(), Some("k".into()));
    let auth = json!({"Authorization": "Bearer k"});
    let cases = [
        (
            Client::OpenCode,
            json!({"type": "remote", "url": "http://127.0.0.1:8931/mcp", "headers": auth}),
        ),
        (
            Client::GeminiCli,
            json!({"httpUrl": "http://127.0.0.1:8931/mcp", "headers": auth}),
        ),
        (
            Client::Windsurf,
            json!({"serverUrl": "http://127.0.0.1:8931/mcp", "headers": auth}),
        ),
        (
            Client::CopilotCli,
            json!({"type": "http", "url": "http://127.0.0.1:8931/mcp", "headers": auth, "tools": ["*"]}),
        ),
    ];
    for (client, expected) in cases {
        assert_eq!(
            serde_json::Value::Object(client.json_entry(&serve)),
            expected,
            "{client}"
        );
    }
}
