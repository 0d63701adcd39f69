//! Printing, writing and unwriting each client's config in a temporary home.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::*;

fn serve(cwd: &Path) -> ServeCommand {
    ServeCommand::new(
        PathBuf::from("/opt/bin/mcp-launch"),
        &[
            PathBuf::from("./stacks/dev.json"),
            PathBuf::from("/etc/mcp.json"),
        ],
        &["--mode".into(), "sparse".into()],
        cwd,
    )
}

/// A fresh home and project directory.
pub(super) struct Home {
    _dir: tempfile::TempDir,
    pub(super) paths: ClientPaths,
}

pub(super) fn temp_home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let paths = ClientPaths::new(dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(&paths.home).unwrap();
    std::fs::create_dir_all(&paths.cwd).unwrap();
    Home { _dir: dir, paths }
}

impl Home {
    fn file(&self, client: Client) -> PathBuf {
        client
            .config_file(client.default_scope(), &self.paths)
            .unwrap()
    }

    fn put(&self, client: Client, text: &str) -> PathBuf {
        let file = self.file(client);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        file
    }

    fn write(&self, client: Client, fronted: &[&str]) -> Result<WriteReport, ClientError> {
        let fronted: Vec<String> = fronted.iter().map(|s| s.to_string()).collect();
        let serve = serve(&self.paths.cwd);
        write(
            client,
            client.default_scope(),
            &self.paths,
            &serve,
            &fronted,
        )
    }

    fn unwrite(&self, client: Client) -> Result<WriteReport, ClientError> {
        unwrite(client, client.default_scope(), &self.paths)
    }

    /// The names in the file's directory that start with the file's name and `.bak-`.
    fn backups(&self, client: Client) -> Vec<PathBuf> {
        let file = self.file(client);
        let prefix = format!("{}.bak-", file.file_name().unwrap().to_string_lossy());
        let mut found: Vec<PathBuf> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&prefix)
            })
            .collect();
        found.sort();
        found
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn each_clients_snippet_runs_serve_with_absolute_paths() {
    let paths = ClientPaths::new("/home/me".into(), "/work/project".into());
    let serve = serve(&paths.cwd);
    for client in Client::ALL {
        let snippet = print(client, client.default_scope(), &paths, &serve).unwrap();
        let shown = format!(
            "file: {}\nhow: {}\n---\n{}",
            snippet.file.display(),
            snippet.how,
            snippet.text
        );
        insta::assert_snapshot!(format!("print_{}", client.name()), shown);
    }
}

#[test]
fn writing_a_new_file_gives_the_printed_snippet_then_nothing_more() {
    for client in Client::ALL {
        let home = temp_home();
        let report = home.write(client, &[]).unwrap();
        let file = home.file(client);
        assert!(
            report.changed && report.backup.is_none(),
            "{client}: {report}"
        );
        assert!(report.to_string().contains("created"), "{report}");
        let serve = serve(&home.paths.cwd);
        let printed = print(client, client.default_scope(), &home.paths, &serve).unwrap();
        assert_eq!(read(&file), printed.text, "{client}");

        let again = home.write(client, &[]).unwrap();
        assert!(!again.changed, "{client}: {again}");
        assert_eq!(
            again.to_string(),
            format!("{} is already up to date", file.display())
        );
        assert_eq!(read(&file), printed.text, "{client}");
        assert!(home.backups(client).is_empty(), "{client}");
    }
}

#[test]
fn json_keeps_every_other_key_its_order_and_indentation() {
    let home = temp_home();
    let old = r#"{
    "numStartups": 12,
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"]
        }
    },
    "projects": {"/x": {"allowedTools": []}}
}
"#;
    let file = home.put(Client::ClaudeCode, old);
    let report = home.write(Client::ClaudeCode, &[]).unwrap();
    let backup = report.backup.clone().unwrap();
    assert_eq!(read(&backup), old);
    assert_eq!(
        home.backups(Client::ClaudeCode),
        std::slice::from_ref(&backup)
    );
    let message = report.to_string();
    assert!(message.contains(&format!(
        "backed up {} to {}",
        file.display(),
        backup.display()
    )));
    assert!(message.contains("undo: mcp-launch serve --print-config claude-code --unwrite"));
    insta::assert_snapshot!(read(&file).replace(&home.paths.cwd.display().to_string(), "[CWD]"), @r#"
    {
        "numStartups": 12,
        "mcpServers": {
            "github": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-github"]
            },
            "mcp-launch": {
                "type": "stdio",
                "command": "/opt/bin/mcp-launch",
                "args": ["serve", "--config", "[CWD]/stacks/dev.json", "--config", "/etc/mcp.json", "--mode", "sparse"]
            }
        },
        "projects": {"/x": {"allowedTools": []}}
    }
    "#);
}

#[test]
fn an_outdated_entry_is_updated_and_keys_the_user_added_are_kept() {
    let home = temp_home();
    let file = home.put(
        Client::Cursor,
        r#"{"mcpServers": {"mcp-launch": {"command": "/old/mcp-launch", "args": ["serve"], "env": {"A": "1"}}}}"#,
    );
    assert!(home.write(Client::Cursor, &[]).unwrap().changed);
    let value: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
    let entry = &value["mcpServers"]["mcp-launch"];
    assert_eq!(entry["command"], "/opt/bin/mcp-launch");
    assert_eq!(entry["args"][0], "serve");
    assert_eq!(entry["args"][1], "--config");
    assert_eq!(entry["env"], serde_json::json!({"A": "1"}));
    assert!(!home.write(Client::Cursor, &[]).unwrap().changed);
}

#[test]
fn vscode_comments_and_trailing_commas_survive() {
    let home = temp_home();
    let old = "{\n  // my servers\n  \"servers\": {\n    \"time\": {\"type\": \"stdio\", \"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}, // keep\n  },\n  \"inputs\": [],\n}\n";
    let file = home.put(Client::VsCode, old);
    home.write(Client::VsCode, &[]).unwrap();
    let new = read(&file);
    assert!(new.starts_with("{\n  // my servers\n  \"servers\": {\n    \"time\": {\"type\": \"stdio\", \"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}, // keep\n"), "{new}");
    assert!(new.ends_with("  \"inputs\": [],\n}\n"), "{new}");
    assert!(
        new.contains("\"mcp-launch\": {\n      \"type\": \"stdio\""),
        "{new}"
    );
}

/// Found by the `client_config` fuzz target: a comment after a server on its line went with
/// nothing when `--write` set the server aside (the syntax tree's `remove` takes it).
#[test]
fn a_comment_after_a_server_set_aside_goes_aside_with_it_and_back() {
    let home = temp_home();
    let old = "{\n  \"servers\": {\n    \"github\": {\"command\": \"npx\"}, // token: see 1Password\n    \
               \"time\": {\"command\": \"uvx\"}\n  }\n}\n";
    let file = home.put(Client::VsCode, old);
    home.write(Client::VsCode, &["github"]).unwrap();
    let written = read(&file);
    assert!(
        written.contains("\"github\": {\"command\": \"npx\"} /* token: see 1Password */"),
        "{written}"
    );
    assert_eq!(written.matches("1Password").count(), 1, "{written}");
    home.unwrite(Client::VsCode).unwrap();
    let undone = read(&file);
    assert!(undone.contains("/* token: see 1Password */"), "{undone}");
    let options = Default::default();
    let undone_value = jsonc_parser::parse_to_value(&undone, &options).ok();
    assert_eq!(
        undone_value,
        jsonc_parser::parse_to_value(old, &options).ok()
    );
}

#[test]
fn toml_keeps_comments_and_layout() {
    let home = temp_home();
    let old = "# Codex settings\nmodel = \"o4-mini\" # fast\n\n[mcp_servers.time]\n# the clock\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n";
    let file = home.put(Client::Codex, old);
    home.write(Client::Codex, &[]).unwrap();
    insta::assert_snapshot!(read(&file).replace(&home.paths.cwd.display().to_string(), "[CWD]"), @r#"
    # Codex settings
    model = "o4-mini" # fast

    [mcp_servers.time]
    # the clock
    command = "uvx"
    args = ["mcp-server-time"]

    [mcp_servers.mcp-launch]
    command = "/opt/bin/mcp-launch"
    args = ["serve", "--config", "[CWD]/stacks/dev.json", "--config", "/etc/mcp.json", "--mode", "sparse"]
    "#);
    assert!(!home.write(Client::Codex, &[]).unwrap().changed);
}

#[test]
fn a_file_that_does_not_parse_is_refused_naming_file_and_line() {
    let cases = [
        (
            Client::ClaudeDesktop,
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n",
            3,
            "JSON",
        ),
        (
            Client::Cursor,
            "{\n  // comments are not JSON\n}\n",
            2,
            "JSON",
        ),
        (
            Client::VsCode,
            "{\n  \"servers\": {\n  \"a\": 1\n",
            2,
            "JSONC",
        ),
        (
            Client::Codex,
            "model = \"x\"\n[mcp_servers.a\ncommand = \"x\"\n",
            2,
            "TOML",
        ),
    ];
    for (client, text, line, format) in cases {
        let home = temp_home();
        let file = home.put(client, text);
        let err = home.write(client, &[]).unwrap_err();
        let shown = err.to_string();
        let at = format!("{}:{line}:", file.display());
        assert!(shown.starts_with(&at), "{client}: {shown}");
        assert!(shown.contains(&format!("invalid {format}")), "{shown}");
        assert_eq!(err.kind(), "client_config_invalid");
        assert!(err
            .help()
            .contains(&format!("fix line {line} of {}", file.display())));
        assert_eq!(read(&file), text, "{client}: the file must stay as it was");
        assert!(home.backups(client).is_empty());
    }
}

#[test]
fn servers_key_of_the_wrong_type_is_refused() {
    let home = temp_home();
    let file = home.put(Client::ClaudeCode, r#"{"mcpServers": ["x"]}"#);
    let err = home.write(Client::ClaudeCode, &[]).unwrap_err();
    assert_eq!(err.kind(), "client_config_shape");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: \"mcpServers\" is an array, expected an object",
            file.display()
        )
    );
    let other = temp_home();
    other.put(Client::Codex, "mcp_servers = 3\n");
    let err = other.write(Client::Codex, &[]).unwrap_err();
    assert_eq!(err.kind(), "client_config_shape", "{err}");
}

/// Found by the `client_config` fuzz target: with "github" twice under "servers", `--write`
/// set the first aside and a second `--write` moved the other over it — the first was lost.
#[test]
fn a_name_held_twice_is_refused_and_the_file_left_as_it_was() {
    let home = temp_home();
    let twice = "{\n  \"servers\": {\n    \"github\": {\"command\": \"npx\"}, // mine\n    \
                 \"github\": {\"command\": \"uvx\"}\n  }\n}\n";
    let file = home.put(Client::VsCode, twice);
    let err = home.write(Client::VsCode, &["github"]).unwrap_err();
    assert_eq!(err.kind(), "client_config_duplicate_name", "{err}");
    let expected = format!("{}: \"servers\" holds \"github\" twice", file.display());
    assert_eq!(err.to_string(), expected);
    assert!(err.help().contains("keep one of the two"), "{}", err.help());
    assert_eq!(read(&file), twice);
    home.put(
        Client::ClaudeCode,
        r#"{"mcpServers": {}, "mcpServers": {"a": {}}}"#,
    );
    let err = home.write(Client::ClaudeCode, &[]).unwrap_err();
    assert!(
        err.to_string()
            .contains("the top level holds \"mcpServers\" twice"),
        "{err}"
    );
}

#[test]
fn fronted_json_servers_move_aside_and_come_back() {
    let home = temp_home();
    let old = r#"{
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
    "time": {"command": "uvx", "args": ["mcp-server-time"]},
    "mine": {"command": "./mine"}
  },
  "theme": "dark"
}
"#;
    let file = home.put(Client::ClaudeDesktop, old);
    let report = home
        .write(
            Client::ClaudeDesktop,
            &["github", "time", "absent", "mcp-launch"],
        )
        .unwrap();
    assert_eq!(report.set_aside, ["github", "time"]);
    let value: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
    let servers: Vec<&String> = value["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(servers, ["mine", "mcp-launch"]);
    assert_eq!(value[FRONTED_KEY]["time"]["args"][0], "mcp-server-time");
    assert_eq!(value["theme"], "dark");
    assert!(
        !home
            .write(Client::ClaudeDesktop, &["github", "time"])
            .unwrap()
            .changed
    );

    let undone = home.unwrite(Client::ClaudeDesktop).unwrap();
    assert_eq!(undone.restored, ["github", "time"]);
    insta::assert_snapshot!(read(&file), @r#"
    {
      "mcpServers": {
        "mine": {"command": "./mine"},
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
        "time": {"command": "uvx", "args": ["mcp-server-time"]}
      },
      "theme": "dark"
    }
    "#);
    let back: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
    let before: serde_json::Value = serde_json::from_str(old).unwrap();
    assert_eq!(back, before);
    assert!(back.get(FRONTED_KEY).is_none());
    assert_eq!(home.backups(Client::ClaudeDesktop).len(), 2);
    assert!(!home.unwrite(Client::ClaudeDesktop).unwrap().changed);
}

#[test]
fn a_server_readded_meanwhile_keeps_its_set_aside_copy_aside() {
    let home = temp_home();
    let file = home.put(
        Client::Cursor,
        r#"{"mcpServers": {"time": {"command": "old"}}}"#,
    );
    home.write(Client::Cursor, &["time"]).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
    value["mcpServers"]["time"] = serde_json::json!({"command": "new"});
    std::fs::write(&file, value.to_string()).unwrap();
    let report = home.unwrite(Client::Cursor).unwrap();
    assert_eq!(report.kept_aside, ["time"]);
    let value: serde_json::Value = serde_json::from_str(&read(&file)).unwrap();
    assert_eq!(
        value["mcpServers"],
        serde_json::json!({"time": {"command": "new"}})
    );
    assert_eq!(value[FRONTED_KEY]["time"]["command"], "old");
}

#[test]
fn fronted_toml_servers_become_comments_and_come_back() {
    let home = temp_home();
    let old = "model = \"o4-mini\"\n\n[mcp_servers.github]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-github\"]\n\n[mcp_servers.github.env]\nGITHUB_TOKEN = \"t\"\n\n[mcp_servers.time]\ncommand = \"uvx\"\n";
    let file = home.put(Client::Codex, old);
    let report = home.write(Client::Codex, &["github"]).unwrap();
    assert_eq!(report.set_aside, ["github"]);
    let text = read(&file);
    insta::assert_snapshot!(text.replace(&home.paths.cwd.display().to_string(), "[CWD]"), @r#"
    model = "o4-mini"

    [mcp_servers.time]
    command = "uvx"

    [mcp_servers.mcp-launch]
    command = "/opt/bin/mcp-launch"
    args = ["serve", "--config", "[CWD]/stacks/dev.json", "--config", "/etc/mcp.json", "--mode", "sparse"]

    # >>> mcp-launch fronted: github (mcp-launch serve runs it now; --unwrite puts it back)
    # [mcp_servers.github]
    # command = "npx"
    # args = ["-y", "@modelcontextprotocol/server-github"]
    #
    # [mcp_servers.github.env]
    # GITHUB_TOKEN = "t"
    # <<< mcp-launch fronted: github
    "#);
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    assert!(
        doc["mcp_servers"].get("github").is_none(),
        "Codex must not see it"
    );
    assert!(!home.write(Client::Codex, &["github"]).unwrap().changed);

    let undone = home.unwrite(Client::Codex).unwrap();
    assert_eq!(undone.restored, ["github"]);
    insta::assert_snapshot!(read(&file), @r#"
    model = "o4-mini"

    [mcp_servers.time]
    command = "uvx"

    [mcp_servers.github]
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-github"]

    [mcp_servers.github.env]
    GITHUB_TOKEN = "t"
    "#);
    let back: toml_edit::DocumentMut = read(&file).parse().unwrap();
    let before: toml_edit::DocumentMut = old.parse().unwrap();
    assert!(!back.to_string().contains("mcp-launch"), "{back}");
    assert_eq!(
        toml_value(&back["mcp_servers"]["github"]),
        toml_value(&before["mcp_servers"]["github"])
    );
    assert_eq!(
        toml_value(&back["mcp_servers"]["time"]),
        toml_value(&before["mcp_servers"]["time"])
    );
}

/// A TOML item as plain data, so layout differences do not count.
fn toml_value(item: &toml_edit::Item) -> String {
    let mut doc = toml_edit::DocumentMut::new();
    doc.insert("x", item.clone());
    let mut text = doc.to_string();
    text.retain(|c| !c.is_whitespace());
    text
}

#[test]
fn a_private_file_stays_private_and_so_does_its_backup() {
    let home = temp_home();
    let file = home.put(
        Client::ClaudeCode,
        "{\"oauthAccount\": {\"email\": \"a@b\"}}\n",
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let report = home.write(Client::ClaudeCode, &[]).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&report.backup.unwrap()), 0o600);
    // A new file in the home directory starts private.
    home.write(Client::Cursor, &[]).unwrap();
    assert_eq!(mode(&home.file(Client::Cursor)), 0o600);
}

#[test]
fn a_symlinked_config_is_written_through_the_link() {
    let home = temp_home();
    let real = home.paths.home.join("dotfiles/cursor.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, "{}").unwrap();
    let link = home.file(Client::Cursor);
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let report = home.write(Client::Cursor, &[]).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(read(&real).contains("mcp-launch"));
    assert_eq!(report.file, real.canonicalize().unwrap());
}

#[test]
fn unknown_clients_and_scopes_say_what_exists() {
    let err = "zed".parse::<Client>().unwrap_err();
    assert_eq!(err.kind(), "unknown_client");
    assert_eq!(
        err.help(),
        "use one of: claude-code, claude-desktop, cursor, vscode, codex, opencode, gemini-cli, \
         windsurf, copilot-cli"
    );
    let paths = ClientPaths::new("/h".into(), "/p".into());
    let err = Client::ClaudeDesktop
        .config_file(Scope::Project, &paths)
        .unwrap_err();
    assert_eq!(err.kind(), "unsupported_scope");
    assert_eq!(err.to_string(), "claude-desktop has no project config file");
    assert_eq!(
        Client::ClaudeCode
            .config_file(Scope::Project, &paths)
            .unwrap(),
        Path::new("/p/.mcp.json")
    );
}

#[test]
fn unwriting_a_missing_file_changes_nothing() {
    let home = temp_home();
    let report = home.unwrite(Client::Codex).unwrap();
    assert!(!report.changed);
    assert!(!home.file(Client::Codex).exists());
}

#[test]
fn the_gateways_own_config_is_never_written() {
    let home = temp_home();
    let paths = &home.paths;
    let project = Client::ClaudeCode
        .config_file(Scope::Project, paths)
        .unwrap();
    std::fs::write(&project, r#"{"mcpServers": {"time": {"command": "uvx"}}}"#).unwrap();
    // No --config: serve discovers ./.mcp.json, the very file Claude Code's project scope is.
    let discovering = ServeCommand::new("/opt/bin/mcp-launch".into(), &[], &[], &paths.cwd);
    let err = write(Client::ClaudeCode, Scope::Project, paths, &discovering, &[]).unwrap_err();
    assert_eq!(err.kind(), "client_config_is_gateway_config");
    assert!(
        err.to_string().starts_with(&project.display().to_string()),
        "{err}"
    );
    // Named with --config (relative), the same.
    let named = ServeCommand::new(
        "/opt/bin/mcp-launch".into(),
        &[".mcp.json".into()],
        &[],
        &paths.cwd,
    );
    let err = write(Client::ClaudeCode, Scope::Project, paths, &named, &[]).unwrap_err();
    assert_eq!(err.kind(), "client_config_is_gateway_config");
    assert_eq!(
        read(&project),
        r#"{"mcpServers": {"time": {"command": "uvx"}}}"#
    );
    // A config of its own is fine.
    let own = ServeCommand::new(
        "/opt/bin/mcp-launch".into(),
        &["gw.json".into()],
        &[],
        &paths.cwd,
    );
    let report = write(
        Client::ClaudeCode,
        Scope::Project,
        paths,
        &own,
        &["time".into()],
    )
    .unwrap();
    assert_eq!(report.set_aside, ["time"]);
    let shown = report.to_string();
    let undo = "\nundo: mcp-launch serve --print-config claude-code --scope project --unwrite";
    assert!(shown.ends_with(undo), "{shown}");
    let mode = std::fs::metadata(&project).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "a project's file stays readable");
}

#[test]
fn a_codex_file_of_fronted_servers_only_comes_back_without_blank_lines_around() {
    let home = temp_home();
    let old = "[mcp_servers.time]\ncommand = \"uvx\"\n";
    let file = home.put(Client::Codex, old);
    home.write(Client::Codex, &["time"]).unwrap();
    home.unwrite(Client::Codex).unwrap();
    assert_eq!(read(&file), old);
}

#[test]
fn one_line_and_blank_json_files_get_the_layout_of_a_new_file() {
    let printed = |home: &Home| {
        let serve = serve(&home.paths.cwd);
        print(Client::Cursor, Scope::User, &home.paths, &serve)
            .unwrap()
            .text
    };
    for old in ["{\"mcpServers\": {}}", "{}", "  \n"] {
        let home = temp_home();
        let file = home.put(Client::Cursor, old);
        home.write(Client::Cursor, &[]).unwrap();
        assert_eq!(read(&file).trim_end(), printed(&home).trim_end(), "{old:?}");
    }
}

#[test]
fn a_comment_inside_a_vscode_server_moves_aside_with_it_and_back() {
    let home = temp_home();
    let old = "{\n  \"servers\": {\n    \"github\": {\n      // the token comes from the keychain\n      \"command\": \"npx\",\n    },\n  },\n}\n";
    let file = home.put(Client::VsCode, old);
    let report = home.write(Client::VsCode, &["github"]).unwrap();
    assert_eq!(report.set_aside, ["github"]);
    let written = read(&file);
    let aside = written.find(FRONTED_KEY).expect("the server set aside");
    let comment = written.find("// the token comes from the keychain");
    assert!(comment.is_some_and(|at| at > aside), "{written}");
    home.unwrite(Client::VsCode).unwrap();
    let back = read(&file);
    assert!(
        back.contains("// the token comes from the keychain"),
        "{back}"
    );
    assert!(!back.contains(FRONTED_KEY), "{back}");
}

/// Found by the `client_config` fuzz target (its 10 M run): a block comment ending on a
/// server's line before it was lost when `--write` set the server aside, and one between its
/// name and value when `--unwrite` put it back (`fuzz/corpus/client_config/
/// vscode-block-comment-trailing-space`).
#[test]
fn a_block_comment_before_a_server_on_its_line_goes_aside_with_it_and_back() {
    let home = temp_home();
    let old =
        "{\n  \"servers\": {\n    /* the clock \n*/    \"time\": {\"command\": \"uvx\"},\n    \
               \"b\": {\"command\": \"x\"}\n  }\n}\n";
    let file = home.put(Client::VsCode, old);
    home.write(Client::VsCode, &["time"]).unwrap();
    let written = read(&file);
    assert!(
        written.contains("\"time\": /* the clock \n*/ {\"command\": \"uvx\"}"),
        "{written}"
    );
    home.unwrite(Client::VsCode).unwrap();
    let undone = read(&file);
    assert_eq!(undone.matches("/* the clock \n*/").count(), 1, "{undone}");
    let options = Default::default();
    assert_eq!(
        jsonc_parser::parse_to_value(&undone, &options).ok(),
        jsonc_parser::parse_to_value(old, &options).ok()
    );
}
