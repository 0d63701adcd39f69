//! End-to-end tests of [`load`]: temp directories for cwd and home, explicit env maps.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::*;

/// A scratch project (`cwd`) and home, removed on drop.
struct World {
    _root: tempfile::TempDir,
    cwd: PathBuf,
    home: PathBuf,
}

impl World {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("project");
        let home = root.path().join("home");
        fs::create_dir_all(&cwd).unwrap();
        fs::create_dir_all(home.join(".claude")).unwrap();
        Self {
            _root: root,
            cwd,
            home,
        }
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.cwd.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    /// Options for loading the files written so far, which the test trusts (they are its
    /// own; `untrusted` tests the gate).
    fn opts(&self, configs: &[&str]) -> LoadOptions {
        let opts = self.untrusted(configs);
        let discovered = discover(&opts).ok();
        if let Some(subject) = trust_subject(&opts, discovered.as_deref()) {
            opts.trust.trust(&subject).unwrap();
        }
        opts
    }

    fn untrusted(&self, configs: &[&str]) -> LoadOptions {
        LoadOptions {
            configs: configs.iter().map(PathBuf::from).collect(),
            env_files: Vec::new(),
            cwd: self.cwd.clone(),
            home: Some(self.home.clone()),
            process_env: BTreeMap::new(),
            trust: TrustPolicy::Store(self.home.join("trusted.json")),
        }
    }
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn stdio_env(entry: &ServerEntry) -> Vec<(String, String)> {
    match entry.spec.as_ref().unwrap() {
        ServerSpec::Stdio { env, .. } => env.clone(),
        other => panic!("not stdio: {other:?}"),
    }
}

fn args_of(entry: &ServerEntry) -> Vec<String> {
    match entry.spec.as_ref().unwrap() {
        ServerSpec::Stdio { args, .. } => args.clone(),
        other => panic!("not stdio: {other:?}"),
    }
}

#[test]
fn discovery_reports_the_file_it_chose() {
    let w = World::new();
    let path = w.write(
        ".claude/mcp.json",
        r#"{"mcpServers": {"a": {"command": "x"}}}"#,
    );
    let loaded = load(&w.opts(&[])).unwrap();
    assert_eq!(loaded.discovered, Some(path.clone()));
    assert_eq!(loaded.stacks.len(), 1);
    assert_eq!(loaded.stacks[0].path, path);
    assert_eq!(loaded.stacks[0].name, "mcp");
    assert_eq!(loaded.server_names(), ["a"]);
}

#[test]
fn home_config_is_found_when_the_project_has_none() {
    let w = World::new();
    let path = w.home.join(".claude/mcp.json");
    fs::write(&path, r#"{"servers": {"h": {"url": "https://h"}}}"#).unwrap();
    let loaded = load(&w.opts(&[])).unwrap();
    assert_eq!(loaded.discovered, Some(path));
    assert_eq!(loaded.server_names(), ["h"]);
}

#[test]
fn no_config_anywhere_lists_the_paths() {
    let w = World::new();
    let err = load(&w.opts(&[])).unwrap_err();
    assert_eq!(err.kind(), "config_not_found");
    let ConfigError::NotFound { searched } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(searched.first(), Some(&w.cwd.join(".mcp.json")));
    assert_eq!(searched.last(), Some(&w.home.join(".claude/mcp.json")));
    assert_eq!(
        err.help(),
        "run `mcp-launch init` to write a working ./mcp.config.json (the reference servers), or pass --config PATH"
    );
}

#[test]
fn explicit_configs_skip_discovery_and_must_exist() {
    let w = World::new();
    w.write(
        ".mcp.json",
        r#"{"mcpServers": {"discovered": {"command": "x"}}}"#,
    );
    w.write("work.json", r#"{"mcpServers": {"w": {"command": "x"}}}"#);
    let loaded = load(&w.opts(&["work.json"])).unwrap();
    assert_eq!(loaded.discovered, None);
    assert_eq!(loaded.server_names(), ["w"]);
    assert_eq!(loaded.stacks[0].path, w.cwd.join("work.json"));

    let err = load(&w.opts(&["nope.json"])).unwrap_err();
    assert_eq!(
        err,
        ConfigError::ConfigMissing {
            path: w.cwd.join("nope.json")
        }
    );
    assert_eq!(err.kind(), "config_not_found");
}

#[test]
fn variables_follow_precedence_process_env_files_dot_env_home() {
    let w = World::new();
    w.write(
        ".mcp.json",
        r#"{"mcpServers": {"s": {"command": "x", "args": ["${A}", "${B}", "${C}", "${D}"]}}}"#,
    );
    fs::write(
        w.home.join(".claude/.env"),
        "A=home\nB=home\nC=home\nD=home\n",
    )
    .unwrap();
    w.write(".env", "A=dot\nB=dot\nC=dot\n");
    w.write("first.env", "A=first\nB=first\n");
    w.write("second.env", "A=second\nB=second\n");
    let mut opts = w.opts(&[]);
    opts.env_files = vec!["first.env".into(), "second.env".into()];
    opts.process_env = env(&[("A", "process")]);
    let loaded = load(&opts).unwrap();
    let server = loaded.find("s").unwrap();
    assert_eq!(args_of(server), ["process", "second", "dot", "home"]);
}

#[test]
fn a_named_config_reads_no_dot_env_but_the_env_files_given() {
    let w = World::new();
    w.write(
        "conf/my.json",
        r#"{"mcpServers": {"s": {"command": "x", "args": ["${A:-unset}", "${B:-unset}"]}}}"#,
    );
    // Neither the working directory's .env nor the one beside the named file is read, and
    // neither asks for trust.
    w.write(".env", "A=checkout\nB=checkout\n");
    w.write("conf/.env", "A=beside\nB=beside\n");
    let mut opts = w.untrusted(&["conf/my.json"]);
    let loaded = load(&opts).unwrap();
    assert_eq!(args_of(loaded.find("s").unwrap()), ["unset", "unset"]);
    assert!(loaded.env_files.is_empty(), "{:?}", loaded.env_files);
    // Named with --env-file, a .env is the user's choice too.
    w.write("mine.env", "A=mine\n");
    opts.env_files = vec!["mine.env".into()];
    let loaded = load(&opts).unwrap();
    assert_eq!(args_of(loaded.find("s").unwrap()), ["mine", "unset"]);
    assert_eq!(loaded.env_files, [w.cwd.join("mine.env")]);
    // Discovered, the checkout's .env is read (once trusted) and listed below the flags.
    w.write(
        ".mcp.json",
        &fs::read_to_string(w.cwd.join("conf/my.json")).unwrap(),
    );
    let mut opts = w.opts(&[]);
    opts.env_files = vec!["mine.env".into()];
    let loaded = load(&opts).unwrap();
    assert_eq!(args_of(loaded.find("s").unwrap()), ["mine", "checkout"]);
    assert_eq!(
        loaded.env_files,
        [w.cwd.join(".env"), w.cwd.join("mine.env")]
    );
}

#[test]
fn env_overlay_carries_dotenv_vars_and_server_env_replaces_them() {
    let w = World::new();
    w.write(
        ".mcp.json",
        r#"{"mcpServers": {
            "s": {"command": "x", "env": {"API_KEY": "${API_KEY}-own", "MODE": "fast"}},
            "r": {"url": "https://r"}
        }}"#,
    );
    w.write(".env", "API_KEY=k\nFROM_FILE=f\nIN_BOTH=file\n");
    let mut opts = w.opts(&[]);
    opts.process_env = env(&[("IN_BOTH", "process"), ("PATH", "/bin")]);
    let loaded = load(&opts).unwrap();
    let overlay = stdio_env(loaded.find("s").unwrap());
    assert_eq!(
        overlay,
        vec![
            ("API_KEY".to_string(), "k-own".to_string()),
            ("MODE".to_string(), "fast".to_string()),
        ],
        "server env wins, each key once; a .env variable the entry does not name stays out; process-env vars are inherited, not overlaid"
    );
    let remote = loaded.find("r").unwrap().spec.as_ref().unwrap();
    assert_eq!(
        remote,
        &ServerSpec::Http {
            url: "https://r".into(),
            headers: vec![],
            oauth: None
        }
    );
}

#[test]
fn unset_variable_is_that_servers_error_only() {
    let w = World::new();
    let path = w.write(
        ".mcp.json",
        "{\n  \"mcpServers\": {\n    \"ok\": {\"command\": \"x\"},\n    \"needs\": {\"url\": \"${HOST}/mcp\"}\n  }\n}\n",
    );
    let loaded = load(&w.opts(&[])).unwrap();
    assert!(loaded.find("ok").unwrap().spec.is_ok());
    let err = loaded.find("needs").unwrap().spec.as_ref().unwrap_err();
    assert_eq!(
        err,
        &ConfigError::UnsetVariable {
            var: "HOST".into(),
            server: "needs".into(),
            path: path.clone(),
            line: Some(4),
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}:4: server \"needs\": variable HOST is not set",
            path.display()
        )
    );
    assert!(err.help().contains("--env-file"));
}

#[test]
fn file_level_errors_abort_the_load() {
    let w = World::new();
    w.write(
        "bad.json",
        "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" \n  }\n}\n",
    );
    let err = load(&w.opts(&["bad.json"])).unwrap_err();
    let ConfigError::InvalidJson {
        path, line, column, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(path, &w.cwd.join("bad.json"));
    assert_eq!(
        (*line, *column),
        (5, 2),
        "EOF is reported at the end of the last line, not at 6:0"
    );

    w.write("ok.json", r#"{"mcpServers": {}}"#);
    w.write("bad.env", "NOT A LINE\n");
    let mut opts = w.opts(&["ok.json"]);
    opts.env_files = vec!["bad.env".into()];
    assert_eq!(load(&opts).unwrap_err().kind(), "invalid_env_file");

    opts.env_files = vec!["missing.env".into()];
    assert_eq!(load(&opts).unwrap_err().kind(), "env_file_not_found");
}

#[test]
fn stacks_are_named_by_file_and_shared_names_qualified() {
    let w = World::new();
    w.write(
        ".mcp.json",
        r#"{"mcpServers": {"git": {"command": "g"}, "fs": {"command": "f"}}}"#,
    );
    w.write(
        "work.json",
        r#"{"mcpServers": {"git": {"command": "g2"}, "jira": {"url": "u"}}}"#,
    );
    w.write(
        "other/mcp.json",
        r#"{"servers": {"git": {"command": "g3"}}}"#,
    );
    let loaded = load(&w.opts(&[".mcp.json", "work.json", "other/mcp.json"])).unwrap();
    let stack_names: Vec<&str> = loaded.stacks.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(stack_names, ["mcp", "work", "mcp-2"]);
    assert_eq!(
        loaded.server_names(),
        ["mcp/git", "fs", "work/git", "jira", "mcp-2/git"]
    );
    assert_eq!(loaded.stacks[1].servers[0].stack, "work");
    assert_eq!(loaded.stacks[2].servers[0].qualified, "mcp-2/git");
}

#[test]
fn find_by_qualified_or_unambiguous_plain_name() {
    let w = World::new();
    w.write(
        "a.json",
        r#"{"mcpServers": {"git": {"command": "a"}, "solo": {"command": "s"}}}"#,
    );
    w.write("b.json", r#"{"mcpServers": {"git": {"command": "b"}}}"#);
    let loaded = load(&w.opts(&["a.json", "b.json"])).unwrap();

    let command = |entry: &ServerEntry| match entry.spec.as_ref().unwrap() {
        ServerSpec::Stdio { command, .. } => command.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(command(loaded.find("a/git").unwrap()), "a");
    assert_eq!(command(loaded.find("b/git").unwrap()), "b");
    assert!(loaded.find("git").is_none(), "ambiguous plain name");
    assert_eq!(loaded.find("solo").unwrap().qualified, "solo");
    assert!(loaded.find("nope").is_none());
    assert!(loaded.find("b/solo").is_none());
}

#[test]
fn server_cwd_is_relative_to_its_config_file() {
    let w = World::new();
    w.write(
        "conf/servers.json",
        r#"{"mcpServers": {"s": {"command": "x", "cwd": "tools"}}}"#,
    );
    let loaded = load(&w.opts(&["conf/servers.json"])).unwrap();
    let ServerSpec::Stdio { cwd, .. } = loaded.find("s").unwrap().spec.as_ref().unwrap() else {
        panic!("not stdio")
    };
    assert_eq!(cwd.as_deref(), Some(Path::new(&w.cwd.join("conf/tools"))));
}

#[test]
fn from_process_reads_the_real_environment() {
    let opts = LoadOptions::from_process(vec!["x.json".into()], vec![]).unwrap();
    assert_eq!(opts.cwd, std::env::current_dir().unwrap());
    assert_eq!(opts.configs, [PathBuf::from("x.json")]);
    let path_var = std::env::var("PATH").ok();
    assert_eq!(opts.process_env.get("PATH").cloned(), path_var);
}

#[test]
fn a_discovered_config_and_dot_env_need_trust_named_files_do_not() {
    let w = World::new();
    w.write(".mcp.json", r#"{"mcpServers": {"a": {"command": "evil"}}}"#);
    let err = load(&w.untrusted(&[])).unwrap_err();
    assert_eq!(err.kind(), "untrusted_directory", "{err}");
    assert!(err.help().contains("mcp-launch trust"), "{}", err.help());
    // Named with --config, the same file is the user's choice.
    assert!(load(&w.untrusted(&[".mcp.json"])).is_ok());
    // A ./.env beside a discovered config needs trust, and any change asks again.
    w.write(".env", "NODE_OPTIONS=--require ./x.js\n");
    let err = load(&w.untrusted(&[])).unwrap_err();
    assert_eq!(err.kind(), "untrusted_directory", "{err}");
    load(&w.opts(&[])).unwrap();
    assert!(load(&w.untrusted(&[])).is_ok(), "trusted now");
    w.write(".env", "NODE_OPTIONS=--require ./y.js\n");
    assert!(load(&w.untrusted(&[])).is_err(), "changed since");
    // The home directory's config is the user's own.
    fs::remove_file(w.cwd.join(".mcp.json")).unwrap();
    fs::remove_file(w.cwd.join(".env")).unwrap();
    fs::write(
        w.home.join(".claude/mcp.json"),
        r#"{"mcpServers": {"h": {"command": "x"}}}"#,
    )
    .unwrap();
    assert!(load(&w.untrusted(&[])).is_ok());
}
