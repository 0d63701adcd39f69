//! `clients`, `clients move`, `clients restore`: the real binary in a fresh HOME holding real
//! client files; the moved servers then run from our config (the real time server).

use serde_json::json;

use crate::remote::RemoteServer;
use crate::util::{time_bin, Cmd};

/// Cursor runs the time server with a secret in its env; Windsurf's file is broken.
fn home() -> Cmd {
    let cursor =
        json!({"mcpServers": {"time": {"command": time_bin(), "env": {"TZ_KEY": "s3cret"}}}});
    Cmd::new()
        .file(".cursor/mcp.json", &format!("{cursor:#}\n"))
        .file(".codeium/windsurf/mcp_config.json", "{\"mcpServers\": {\n")
}

#[test]
fn the_moved_server_runs_behind_the_gateway_and_restore_puts_cursor_back() {
    let home = home();
    let cursor_before = std::fs::read(home.path(".cursor/mcp.json")).unwrap();

    let listed = home.cmd().args(["clients", "--json"]).run().json();
    let clients = listed["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 9, "{listed:#}");
    let cursor = &clients[2];
    assert_eq!(cursor["client"], "cursor");
    assert_eq!(cursor["pointsAtGateway"], false);
    assert_eq!(cursor["servers"][0]["name"], "time");
    assert_eq!(cursor["servers"][0]["target"], time_bin());
    let windsurf = &clients[7];
    assert_eq!(
        windsurf["error"]["type"], "client_config_invalid",
        "{windsurf:#}"
    );
    assert_eq!(clients[0]["found"], false);
    // In the home directory `.cursor/mcp.json` is Cursor's user file, not also a project one.
    assert_eq!(listed["project"]["files"], json!([]), "{listed:#}");

    let dry = home
        .cmd()
        .args(["clients", "move", "--all", "--dry-run", "--json"]);
    let dry = dry.status(1).run();
    assert_eq!(dry.json()["clients"][2]["moved"], json!(["time"]), "{dry}");
    assert!(!home.path(".claude").exists(), "a dry run writes nothing");
    assert_eq!(
        std::fs::read(home.path(".cursor/mcp.json")).unwrap(),
        cursor_before
    );

    // Windsurf's broken file fails its part (exit 1); Cursor moves.
    let moved = home
        .cmd()
        .args(["clients", "move", "--all", "--json"])
        .status(1)
        .run();
    let answer = moved.json();
    assert_eq!(answer["clients"][2]["moved"], json!(["time"]), "{moved}");
    assert_eq!(answer["clients"][2]["secrets"], json!(["TIME_TZ_KEY"]));
    assert_eq!(
        answer["clients"][7]["error"]["type"],
        "client_config_invalid"
    );
    let env = std::fs::read_to_string(home.path(".claude/.env")).unwrap();
    assert_eq!(env, "TIME_TZ_KEY='s3cret'\n");

    let listed = home.cmd().args(["clients", "--json"]).run().json();
    assert_eq!(listed["clients"][2]["pointsAtGateway"], true);
    assert_eq!(listed["clients"][2]["servers"], json!([]));

    // The server now runs from our config, its secret read from ~/.claude/.env.
    let config = home.path(".claude/mcp.json").display().to_string();
    let list = home
        .cmd()
        .args(["list", "--config", &config, "--json"])
        .run();
    let servers = list.json()["servers"].clone();
    assert_eq!(servers[0]["name"], "time", "{list}");
    assert_eq!(servers[0]["status"], "connected", "{list}");

    let restored = home.cmd().args(["clients", "restore", "--json"]).run();
    let answer = restored.json();
    assert_eq!(answer["clients"][0]["exact"], true, "{restored}");
    assert_eq!(answer["clients"][0]["removed"], json!(["time"]));
    assert_eq!(
        std::fs::read(home.path(".cursor/mcp.json")).unwrap(),
        cursor_before
    );
    assert_eq!(
        std::fs::read_to_string(home.path(".claude/.env")).unwrap(),
        ""
    );
}

/// `CODEX_HOME` and `XDG_CONFIG_HOME` move Codex's and OpenCode's files: `clients` reads them
/// there and `serve --print-config … --write` writes there, never into the default place.
#[test]
fn clients_follow_the_variables_that_move_their_directories() {
    let home = Cmd::new()
        .file(
            "codex-alt/config.toml",
            &format!("[mcp_servers.time]\ncommand = \"{}\"\n", time_bin()),
        )
        .file(
            ".codex/config.toml",
            "[mcp_servers.decoy]\ncommand = \"x\"\n",
        );
    let codex_home = home.path("codex-alt").display().to_string();
    let xdg = home.path("xdg").display().to_string();
    let moved = || {
        home.cmd()
            .env("CODEX_HOME", &codex_home)
            .env("XDG_CONFIG_HOME", &xdg)
    };

    let listed = moved().args(["clients", "--json"]).run().json();
    let codex = &listed["clients"][4];
    assert_eq!(codex["client"], "codex", "{listed:#}");
    assert_eq!(codex["file"], format!("{codex_home}/config.toml"));
    assert_eq!(codex["servers"][0]["name"], "time", "{listed:#}");
    assert_eq!(
        listed["clients"][5]["file"],
        format!("{xdg}/opencode/opencode.json")
    );

    moved()
        .args(["serve", "--print-config", "opencode", "--write"])
        .stderr_any()
        .run();
    let written = std::fs::read_to_string(home.path("xdg/opencode/opencode.json")).unwrap();
    assert!(written.contains("\"mcp-launch\""), "{written}");
    assert!(
        !home.path(".config/opencode").exists(),
        "the default place stays untouched"
    );
}

/// A project's own files (`.mcp.json`, `.cursor/mcp.json`, `opencode.json`) and Claude Code's
/// servers for this directory in `~/.claude.json` are listed apart from the user files, and
/// `clients move --all` leaves them alone.
#[test]
fn clients_lists_the_servers_of_this_directory_and_does_not_move_them() {
    let server = json!({"mcpServers": {"proj-time": {"command": time_bin()}}});
    let home = Cmd::new()
        .file("proj/.mcp.json", &server.to_string())
        .file("proj/.cursor/mcp.json", &server.to_string())
        .file(
            "proj/opencode.json",
            &json!({"mcp": {"oc": {"type": "local", "command": [time_bin()]}}}).to_string(),
        );
    let proj = std::fs::canonicalize(home.path("proj")).unwrap();
    let claude = json!({"mcpServers": {},
        "projects": {proj.display().to_string(): {"mcpServers": {"local-time": {"command": time_bin()}}},
                     "/elsewhere": {"mcpServers": {"other": {"command": "x"}}}}});
    let home = home.file(".claude.json", &claude.to_string());
    let in_proj = || home.cmd().current_dir("proj");

    let listed = in_proj().args(["clients", "--json"]).run().json();
    let files = listed["project"]["files"].as_array().unwrap();
    let seen: Vec<(String, String, String)> = files
        .iter()
        .map(|f| {
            (
                f["client"].as_str().unwrap().to_string(),
                f["scope"].as_str().unwrap().to_string(),
                f["servers"][0]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want = [
        ("claude-code", "project", "proj-time"),
        ("claude-code", "local", "local-time"),
        ("cursor", "project", "proj-time"),
        ("opencode", "project", "oc"),
    ]
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
    assert_eq!(seen, want, "{listed:#}");
    assert_eq!(
        listed["clients"][0]["servers"],
        json!([]),
        "the user scope has none"
    );

    let human = in_proj().args(["clients"]).run();
    assert!(human.stdout.contains("for this directory only"), "{human}");
    assert!(human.stdout.contains("runs itself: local-time"), "{human}");

    let before = std::fs::read(home.path("proj/.mcp.json")).unwrap();
    in_proj().args(["clients", "move", "--all", "--json"]).run();
    assert_eq!(std::fs::read(home.path("proj/.mcp.json")).unwrap(), before);
}

/// A secret in a server's arguments (`env API_TOKEN=…`, the usual way to hand a stdio server
/// one) or in its URL (`?api_key=…`) moves to `~/.claude/.env` like `env` values do: the
/// moved config holds `${VAR}` only, `clients` never prints the value, and both servers run
/// from our config with the value filled back in.
#[test]
fn secrets_in_arguments_and_urls_move_to_the_env_file_and_the_servers_still_run() {
    let remote = RemoteServer::start(
        "streamableHttp",
        "MCP Streamable HTTP Server listening on port",
    );
    let token = "ghp_0123456789abcdefghij";
    let key = "k3y%2Bv4lue";
    let cursor = json!({"mcpServers": {
        "wrapped": {"command": "env", "args": [format!("API_TOKEN={token}"), time_bin()]},
        "remote": {"url": format!("http://127.0.0.1:{}/mcp?api_key={key}", remote.port)},
    }});
    let home = Cmd::new().file(".cursor/mcp.json", &format!("{cursor:#}\n"));

    let human = home.cmd().args(["clients"]).run();
    assert!(human.stdout.contains("API_TOKEN=****"), "{human}");
    assert!(human.stdout.contains("api_key=****"), "{human}");
    assert!(
        !human.stdout.contains(token) && !human.stdout.contains(key),
        "{human}"
    );

    home.cmd()
        .args(["clients", "move", "cursor", "--json"])
        .run();
    let config = std::fs::read_to_string(home.path(".claude/mcp.json")).unwrap();
    assert!(!config.contains(token) && !config.contains(key), "{config}");
    assert!(
        config.contains("API_TOKEN=${WRAPPED_API_TOKEN}"),
        "{config}"
    );
    assert!(config.contains("api_key=${REMOTE_API_KEY}"), "{config}");
    let env = std::fs::read_to_string(home.path(".claude/.env")).unwrap();
    assert!(
        env.contains(&format!("WRAPPED_API_TOKEN='{token}'")),
        "{env}"
    );
    assert!(env.contains(&format!("REMOTE_API_KEY='{key}'")), "{env}");

    let path = home.path(".claude/mcp.json").display().to_string();
    let list = home.cmd().args(["list", "--config", &path, "--json"]).run();
    for name in ["wrapped", "remote"] {
        assert_eq!(list.server(name)["status"], "connected", "{list}");
    }
}

/// VS Code keeps a profile's servers in `User/profiles/<id>/mcp.json`: `clients` lists each
/// profile that has servers under the name VS Code shows (from `storage.json`).
#[test]
fn clients_lists_vscode_profiles_by_name() {
    let server = json!({"servers": {"t": {"type": "stdio", "command": time_bin()}}});
    let storage = json!({"userDataProfiles": [{"location": "-5a1b", "name": "Work"}]});
    let home = Cmd::new()
        .file(".config/Code/User/mcp.json", "{\"servers\": {}}")
        .file(
            ".config/Code/User/profiles/-5a1b/mcp.json",
            &server.to_string(),
        )
        .file(
            ".config/Code/User/profiles/7c2d/mcp.json",
            &server.to_string(),
        )
        .file(".config/Code/User/profiles/empty/settings.json", "{}")
        .file(
            ".config/Code/User/globalStorage/storage.json",
            &storage.to_string(),
        );

    let listed = home.cmd().args(["clients", "--json"]).run().json();
    let profiles = listed["vscodeProfiles"].as_array().unwrap();
    let names: Vec<(&str, &str)> = profiles
        .iter()
        .map(|p| {
            (
                p["profile"].as_str().unwrap(),
                p["servers"][0]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("Work", "t"), ("7c2d", "t")], "{listed:#}");
    let human = home.cmd().args(["clients"]).run();
    assert!(human.stdout.contains("(profile Work)"), "{human}");
}
