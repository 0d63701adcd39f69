//! The clients we know: their names, where each keeps its MCP servers, and the shape of our
//! entry in each file. Every path and key below is taken from the client's own documentation
//! (pages named beside each client); nothing is guessed.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::{ClientError, ClientPaths, Scope, ServeCommand};

/// An MCP client whose config we know how to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Client {
    /// Anthropic's Claude Code CLI.
    ClaudeCode,
    /// The Claude desktop app.
    ClaudeDesktop,
    /// The Cursor editor.
    Cursor,
    /// Visual Studio Code (Copilot's agent mode).
    VsCode,
    /// OpenAI's Codex CLI.
    Codex,
    /// OpenCode (sst/opencode): `mcp` in `opencode.json`, `"type": "local" | "remote"`, the
    /// command and its arguments in one array, `environment` for variables
    /// (<https://opencode.ai/docs/mcp-servers/>, <https://opencode.ai/docs/config/>: JSONC,
    /// `{env:VAR}` substitution, `~/.config/opencode/opencode.json` on every OS).
    OpenCode,
    /// Google's Gemini CLI: `mcpServers` in `~/.gemini/settings.json` (project:
    /// `.gemini/settings.json`), `command`/`args`/`env`/`cwd`, `httpUrl` for Streamable HTTP,
    /// `url` for SSE, `$VAR`/`${VAR}` in values
    /// (<https://geminicli.com/docs/tools/mcp-server>; the file may hold comments).
    GeminiCli,
    /// Windsurf (Codeium): `mcpServers` in `~/.codeium/windsurf/mcp_config.json` on every OS,
    /// `command`/`args`/`env`, `serverUrl` for a remote server, `${env:VAR}` in values
    /// (<https://docs.windsurf.com/windsurf/cascade/mcp>).
    Windsurf,
    /// GitHub Copilot CLI: `mcpServers` in `~/.copilot/mcp-config.json`, `"type": "local" |
    /// "stdio" | "http" | "sse"`, `tools` (`["*"]` for all) required, `${VAR}` in values
    /// (<https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/add-mcp-servers>;
    /// `COPILOT_HOME` moves the directory).
    CopilotCli,
}

/// The file formats we edit.
#[derive(Debug, Clone, Copy)]
pub(super) enum Format {
    Json {
        servers_key: &'static str,
        jsonc: bool,
    },
    Toml,
}

impl Client {
    /// Every client, in the order help texts list them.
    pub const ALL: [Client; 9] = [
        Client::ClaudeCode,
        Client::ClaudeDesktop,
        Client::Cursor,
        Client::VsCode,
        Client::Codex,
        Client::OpenCode,
        Client::GeminiCli,
        Client::Windsurf,
        Client::CopilotCli,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::Codex => "codex",
            Client::OpenCode => "opencode",
            Client::GeminiCli => "gemini-cli",
            Client::Windsurf => "windsurf",
            Client::CopilotCli => "copilot-cli",
        }
    }

    /// The file written when no scope is chosen: the user's, except VS Code's workspace file.
    pub fn default_scope(self) -> Scope {
        match self {
            Client::VsCode => Scope::Project,
            _ => Scope::User,
        }
    }

    /// The client's config file for `scope`.
    pub fn config_file(self, scope: Scope, paths: &ClientPaths) -> Result<PathBuf, ClientError> {
        let home = &paths.home;
        let cwd = &paths.cwd;
        Ok(match (self, scope) {
            (Client::ClaudeCode, Scope::User) => paths.claude_code_dir().join(".claude.json"),
            (Client::ClaudeCode, Scope::Project) => cwd.join(".mcp.json"),
            (Client::ClaudeDesktop, Scope::User) => paths
                .app_config_dir()
                .join("Claude/claude_desktop_config.json"),
            (Client::Cursor, Scope::User) => home.join(".cursor/mcp.json"),
            (Client::Cursor, Scope::Project) => cwd.join(".cursor/mcp.json"),
            (Client::VsCode, Scope::User) => paths.app_config_dir().join("Code/User/mcp.json"),
            (Client::VsCode, Scope::Project) => cwd.join(".vscode/mcp.json"),
            (Client::Codex, Scope::User) => paths.codex_dir().join("config.toml"),
            (Client::Codex, Scope::Project) => cwd.join(".codex/config.toml"),
            (Client::OpenCode, Scope::User) => {
                opencode_file(&paths.xdg_config_dir().join("opencode"))
            }
            (Client::OpenCode, Scope::Project) => opencode_file(cwd),
            (Client::GeminiCli, Scope::User) => home.join(".gemini/settings.json"),
            (Client::GeminiCli, Scope::Project) => cwd.join(".gemini/settings.json"),
            (Client::Windsurf, Scope::User) => home.join(".codeium/windsurf/mcp_config.json"),
            (Client::CopilotCli, Scope::User) => paths.copilot_dir().join("mcp-config.json"),
            (Client::ClaudeDesktop | Client::Windsurf | Client::CopilotCli, Scope::Project) => {
                return Err(ClientError::UnsupportedScope {
                    client: self.name(),
                    scope: scope.name(),
                })
            }
        })
    }

    pub(super) fn format(self) -> Format {
        match self {
            Client::ClaudeCode
            | Client::ClaudeDesktop
            | Client::Cursor
            | Client::Windsurf
            | Client::CopilotCli => Format::Json {
                servers_key: "mcpServers",
                jsonc: false,
            },
            Client::VsCode => Format::Json {
                servers_key: "servers",
                jsonc: true,
            },
            Client::GeminiCli => Format::Json {
                servers_key: "mcpServers",
                jsonc: true,
            },
            Client::OpenCode => Format::Json {
                servers_key: "mcp",
                jsonc: true,
            },
            Client::Codex => Format::Toml,
        }
    }

    /// Whether the client's file takes our entry for a running `serve --http`.
    pub(super) fn takes_http(self) -> bool {
        !matches!(self, Client::ClaudeDesktop | Client::Codex)
    }

    /// Our entry as the client's JSON wants it (Codex's TOML is built from the same command).
    pub(super) fn json_entry(
        self,
        serve: &ServeCommand,
    ) -> serde_json::Map<String, serde_json::Value> {
        let mut entry = serde_json::Map::new();
        if let Some(http) = &serve.http {
            let (url_key, kind) = match self {
                // Cursor tells HTTP from stdio by `url`.
                Client::Cursor => ("url", None),
                Client::OpenCode => ("url", Some("remote")),
                Client::GeminiCli => ("httpUrl", None),
                Client::Windsurf => ("serverUrl", None),
                _ => ("url", Some("http")),
            };
            if let Some(kind) = kind {
                entry.insert("type".into(), kind.into());
            }
            entry.insert(url_key.into(), http.url.clone().into());
            if let Some(key) = &http.key {
                let headers = serde_json::json!({"Authorization": format!("Bearer {key}")});
                entry.insert("headers".into(), headers);
            }
            self.add_tools(&mut entry);
            return entry;
        }
        if self == Client::OpenCode {
            let mut command = vec![serve.program_text()];
            command.extend(serve.args.iter().cloned());
            entry.insert("type".into(), "local".into());
            entry.insert("command".into(), command.into());
            return entry;
        }
        // Claude Code writes `"type": "stdio"` itself; VS Code requires it; Copilot CLI wants
        // `local` or `stdio`.
        match self {
            Client::ClaudeCode | Client::VsCode => {
                entry.insert("type".into(), "stdio".into());
            }
            Client::CopilotCli => {
                entry.insert("type".into(), "local".into());
            }
            _ => {}
        }
        entry.insert("command".into(), serve.program_text().into());
        entry.insert("args".into(), serve.args.clone().into());
        self.add_tools(&mut entry);
        entry
    }

    /// Copilot CLI loads no tool of a server whose entry lacks `tools`.
    fn add_tools(self, entry: &mut serde_json::Map<String, serde_json::Value>) {
        if self == Client::CopilotCli {
            entry.insert("tools".into(), serde_json::json!(["*"]));
        }
    }
}

impl FromStr for Client {
    type Err = ClientError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Client::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| ClientError::UnknownClient {
                name: name.to_string(),
            })
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// OpenCode reads `opencode.json` or `opencode.jsonc`: the `.jsonc` one when only it exists.
fn opencode_file(dir: &Path) -> PathBuf {
    let json = dir.join("opencode.json");
    let jsonc = dir.join("opencode.jsonc");
    if !json.exists() && jsonc.exists() {
        jsonc
    } else {
        json
    }
}
