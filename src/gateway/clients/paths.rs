//! Where the clients keep their files: home, the working directory, and the variables with
//! which some clients move their directory. The values are handed in ([`ClientPaths::new`],
//! [`ClientPaths::with_env`]): nothing here reads the process environment, so tests write into
//! a temporary home.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where the client files live.
#[derive(Debug, Clone, Default)]
pub struct ClientPaths {
    /// The user's home directory.
    pub home: PathBuf,
    /// The working directory (project scope, relative `--config` paths).
    pub cwd: PathBuf,
    /// `$XDG_CONFIG_HOME`, when absolute (the XDG spec ignores a relative one): VS Code and
    /// Claude Desktop (Electron's `appData` on Linux) and OpenCode (`xdg-basedir`, every OS).
    pub xdg_config_home: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`: Claude Code keeps `.claude.json` there instead of in home.
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`: Codex's directory instead of `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// `$COPILOT_HOME`: Copilot CLI's directory instead of `~/.copilot`.
    pub copilot_home: Option<PathBuf>,
}

/// The variables [`ClientPaths::with_env`] reads, for help texts and docs.
pub const CLIENT_DIR_VARS: [&str; 4] = [
    "XDG_CONFIG_HOME",
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "COPILOT_HOME",
];

impl ClientPaths {
    /// Home and the working directory, every client in its default place.
    pub fn new(home: PathBuf, cwd: PathBuf) -> Self {
        ClientPaths {
            home,
            cwd,
            ..ClientPaths::default()
        }
    }

    /// Home and the working directory, with each client's directory moved as `var` (the
    /// process environment, in the CLI) says. An empty variable counts as unset; a relative
    /// one is taken from the working directory, as the client would (except
    /// `XDG_CONFIG_HOME`, which must be absolute).
    pub fn with_env(home: PathBuf, cwd: PathBuf, var: impl Fn(&str) -> Option<OsString>) -> Self {
        let dir = |name: &str| {
            let value = PathBuf::from(var(name).filter(|v| !v.is_empty())?);
            Some(cwd.join(value))
        };
        let xdg_config_home = var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute());
        ClientPaths {
            xdg_config_home,
            claude_config_dir: dir("CLAUDE_CONFIG_DIR"),
            codex_home: dir("CODEX_HOME"),
            copilot_home: dir("COPILOT_HOME"),
            home,
            cwd,
        }
    }

    /// Where desktop apps keep their settings: `~/Library/Application Support` on macOS,
    /// else `$XDG_CONFIG_HOME` or `~/.config`.
    pub(super) fn app_config_dir(&self) -> PathBuf {
        if cfg!(target_os = "macos") {
            self.home.join("Library/Application Support")
        } else {
            self.xdg_config_dir()
        }
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config`, on every OS.
    pub(super) fn xdg_config_dir(&self) -> PathBuf {
        or_home(&self.xdg_config_home, &self.home, ".config")
    }

    /// The directory holding Claude Code's `.claude.json`.
    pub(super) fn claude_code_dir(&self) -> PathBuf {
        or_home(&self.claude_config_dir, &self.home, "")
    }

    /// Codex's directory (`config.toml`).
    pub(super) fn codex_dir(&self) -> PathBuf {
        or_home(&self.codex_home, &self.home, ".codex")
    }

    /// Copilot CLI's directory (`mcp-config.json`).
    pub(super) fn copilot_dir(&self) -> PathBuf {
        or_home(&self.copilot_home, &self.home, ".copilot")
    }
}

fn or_home(set: &Option<PathBuf>, home: &Path, default: &str) -> PathBuf {
    match set {
        Some(dir) => dir.clone(),
        None if default.is_empty() => home.to_path_buf(),
        None => home.join(default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(vars: &[(&str, &str)]) -> ClientPaths {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        ClientPaths::with_env("/home/me".into(), "/work".into(), |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn without_variables_every_client_is_in_home() {
        let p = paths(&[]);
        assert_eq!(p.claude_code_dir(), Path::new("/home/me"));
        assert_eq!(p.codex_dir(), Path::new("/home/me/.codex"));
        assert_eq!(p.copilot_dir(), Path::new("/home/me/.copilot"));
        assert_eq!(p.xdg_config_dir(), Path::new("/home/me/.config"));
    }

    #[test]
    fn variables_move_the_directories_relative_ones_from_the_working_directory() {
        let p = paths(&[
            ("XDG_CONFIG_HOME", "/cfg"),
            ("CLAUDE_CONFIG_DIR", "/claude-work"),
            ("CODEX_HOME", "codex-here"),
            ("COPILOT_HOME", "/cop"),
        ]);
        assert_eq!(p.xdg_config_dir(), Path::new("/cfg"));
        assert_eq!(p.claude_code_dir(), Path::new("/claude-work"));
        assert_eq!(p.codex_dir(), Path::new("/work/codex-here"));
        assert_eq!(p.copilot_dir(), Path::new("/cop"));
    }

    #[test]
    fn an_empty_variable_or_a_relative_xdg_config_home_is_not_followed() {
        let p = paths(&[("XDG_CONFIG_HOME", "rel/cfg"), ("CODEX_HOME", "")]);
        assert_eq!(p.xdg_config_dir(), Path::new("/home/me/.config"));
        assert_eq!(p.codex_dir(), Path::new("/home/me/.codex"));
    }

    #[test]
    fn clients_are_found_where_their_variables_put_them() {
        use super::super::{find, Client};
        let dir = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let file = dir.path().join(rel);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        let server = r#"{"mcpServers": {"t": {"command": "mcp-server-time"}}}"#;
        put("claude-alt/.claude.json", server);
        put("cop/mcp-config.json", server);
        put(
            "cfg/opencode/opencode.json",
            r#"{"mcp": {"t": {"type": "local", "command": ["mcp-server-time"]}}}"#,
        );
        put(
            "cfg/Code/User/mcp.json",
            r#"{"servers": {"t": {"type": "stdio", "command": "mcp-server-time"}}}"#,
        );
        put(
            "codex/config.toml",
            "[mcp_servers.t]\ncommand = \"mcp-server-time\"\n",
        );
        let root = dir.path().to_str().unwrap().to_string();
        let vars = [
            ("XDG_CONFIG_HOME", format!("{root}/cfg")),
            ("CLAUDE_CONFIG_DIR", format!("{root}/claude-alt")),
            ("CODEX_HOME", "codex".to_string()),
            ("COPILOT_HOME", format!("{root}/cop")),
        ];
        let paths = ClientPaths::with_env(dir.path().join("home"), dir.path().into(), |name| {
            vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into())
        });
        let mut clients = vec![
            Client::ClaudeCode,
            Client::Codex,
            Client::CopilotCli,
            Client::OpenCode,
        ];
        if !cfg!(target_os = "macos") {
            clients.push(Client::VsCode);
        }
        for client in clients {
            let found = find(client, &paths);
            assert!(found.error.is_none(), "{client}: {:?}", found.error);
            assert!(
                found.file.starts_with(dir.path()),
                "{client}: {}",
                found.file.display()
            );
            assert!(!found.file.starts_with(dir.path().join("home")), "{client}");
            let names: Vec<&str> = found.servers.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["t"], "{client} read {}", found.file.display());
        }
    }
}
