//! Overrides: what a project chooses to expose of its stacks — servers switched off or on,
//! tool allow / deny lists, description overrides — kept in `./.mcp-launch/overrides.json`:
//!
//! ```json
//! {
//!   "version": 1,
//!   "stacks": {
//!     "mcp": {
//!       "github": {
//!         "disabled": false,
//!         "allow": ["create_issue", "search_code"],
//!         "deny": ["delete_repository"],
//!         "descriptions": {"search_code": "Search code across GitHub repositories."},
//!         "max_output_tokens": {"search_code": 2000, "*": 8000},
//!         "pin": "strict"
//!       }
//!     }
//!   },
//!   "pin": {"mcp": "warn"},
//!   "clients": {"claude-team": {"tools": ["github__search_code", "time__*"]}}
//! }
//! ```
//!
//! Invariants:
//! - The file is the user's data: one we cannot read or parse (bad JSON, an unknown field, an
//!   unknown `version`) is an error naming the file, line and column, and is never overwritten.
//! - Choices are never dropped by a refresh: names of tools a server no longer offers stay in
//!   the file and are reported as stale ([`Overrides::stale_names`]). Tools that appear are
//!   allowed unless the server has an allow list, so nothing is stored for them.
//! - Entries are keyed by stack name and the server's plain (unqualified) config key.
//! - Writes are atomic (a temporary file in the same directory, then a rename) and stable
//!   (sorted keys and names, pretty JSON, empty entries left out), so diffs read well.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fingerprint::fnv1a;
use crate::config::{ServerEntry, TrustPolicy};

/// The file, relative to the project directory (the current directory for the CLI).
pub const OVERRIDES_FILE: &str = ".mcp-launch/overrides.json";

/// The key of `max_output_tokens` that stands for every tool without a budget of its own.
pub const ALL_TOOLS: &str = "*";

/// The file format version this build reads and writes.
pub const OVERRIDES_VERSION: u64 = 1;

type Stacks = BTreeMap<String, BTreeMap<String, ServerOverrides>>;

/// The launch options last chosen in the TUI, offered again next time. Plain words, so the
/// catalog needs nothing of the launcher: `controller` is `auto`, `native` or `mcpo`; `tunnel`
/// is `none`, `quick` or `named`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchChoices {
    /// The controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
    /// The tunnel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<String>,
    /// The first front port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// A named tunnel's public URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
}

/// The file as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    #[serde(default)]
    #[allow(dead_code)] // checked before this parse, kept so the field is not "unknown"
    version: Value,
    #[serde(default)]
    stacks: Stacks,
    #[serde(default)]
    launch: Option<LaunchChoices>,
    #[serde(default)]
    pin: BTreeMap<String, Pin>,
    #[serde(default)]
    clients: Clients,
}

/// The file as written: empty entries and stacks left out.
#[derive(Serialize)]
struct FileOut<'a> {
    version: u64,
    stacks: BTreeMap<&'a str, BTreeMap<&'a str, &'a ServerOverrides>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    launch: Option<&'a LaunchChoices>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pin: &'a BTreeMap<String, Pin>,
    #[serde(skip_serializing_if = "Clients::is_empty")]
    clients: &'a Clients,
}

/// Every project choice, as loaded from (and saved to) one overrides file.
#[derive(Debug, Clone)]
pub struct Overrides {
    path: PathBuf,
    stacks: Stacks,
    launch: Option<LaunchChoices>,
    /// Each stack's `pin` (a server's own wins).
    pins: BTreeMap<String, Pin>,
    /// Per-client allow-lists of OAuth clients (`clients.rs`).
    clients: Clients,
}

impl PartialEq for Overrides {
    /// Equal when they would write the same file (empty entries do not count).
    fn eq(&self, other: &Self) -> bool {
        let (mine, theirs) = (self.file_out(), other.file_out());
        self.path == other.path
            && mine.stacks == theirs.stacks
            && mine.launch == theirs.launch
            && mine.pin == theirs.pin
            && mine.clients == theirs.clients
    }
}

impl Overrides {
    /// Reads `PROJECT_DIR/.mcp-launch/overrides.json`; a missing (or blank) file means no
    /// overrides, and so does one that is not trusted (it may have come with a checkout: a
    /// warning names it and `mcp-launch trust`). A bad file is an error either way.
    pub fn load(project_dir: &Path) -> Result<Overrides, OverridesError> {
        let (overrides, trusted) = Self::load_checking(project_dir)?;
        if trusted {
            return Ok(overrides);
        }
        // Once per process: a gateway reloads the file on every change.
        static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return Ok(Overrides::empty(overrides.path));
        }
        tracing::warn!(
            "{} is not used: it came with this directory (or changed since you trusted it) and \
             can switch servers on and rewrite tool descriptions; read it, then run `mcp-launch \
             trust`",
            overrides.path.display()
        );
        Ok(Overrides::empty(overrides.path))
    }

    /// The file as it is, and whether the user trusts its content
    /// ([`TrustPolicy::for_overrides`]; a missing or blank file is trusted).
    fn load_checking(project_dir: &Path) -> Result<(Overrides, bool), OverridesError> {
        let path = project_dir.join(OVERRIDES_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                return Err(OverridesError::Unreadable {
                    reason: e.to_string(),
                    path,
                })
            }
        };
        if text.trim().is_empty() {
            return Ok((Overrides::empty(path), true));
        }
        let overrides = Self::parse(path, &text)?;
        let trusted = TrustPolicy::for_overrides()
            .trusts_overrides(project_dir, &crate::config::digest(text.as_bytes()));
        Ok((overrides, trusted))
    }

    fn empty(path: PathBuf) -> Overrides {
        Overrides {
            path,
            stacks: Stacks::new(),
            launch: None,
            pins: BTreeMap::new(),
            clients: Clients::default(),
        }
    }

    /// The overrides in `text`, checked: syntax first (with its position), then the version,
    /// then the shape.
    pub(crate) fn parse(path: PathBuf, text: &str) -> Result<Overrides, OverridesError> {
        let invalid = |e: serde_json::Error, path: &Path| {
            let (line, column) = crate::error::json_position(text, &e);
            OverridesError::Invalid {
                path: path.to_path_buf(),
                line,
                column,
                message: strip_position(&e.to_string()),
            }
        };
        let raw: Value = serde_json::from_str(text).map_err(|e| invalid(e, &path))?;
        match raw.get("version") {
            None => {}
            Some(v) if v.as_u64() == Some(OVERRIDES_VERSION) => {}
            Some(v) => {
                return Err(OverridesError::UnsupportedVersion {
                    found: v.to_string(),
                    path,
                })
            }
        }
        let file: FileIn = serde_json::from_str(text).map_err(|e| invalid(e, &path))?;
        Ok(Overrides {
            path,
            stacks: file.stacks,
            launch: file.launch,
            pins: file.pin,
            clients: file.clients,
        })
    }

    /// The file these overrides come from and go to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the file atomically (directory created when missing), whatever it holds now:
    /// writers outside tests go through [`Overrides::update`], which merges under the lock.
    pub(crate) fn save(&self) -> Result<(), OverridesError> {
        let unwritable = |e: std::io::Error| OverridesError::Unwritable {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let text = self
            .to_text()
            .map_err(|e| unwritable(std::io::Error::other(e)))?;
        crate::files::write(&self.path, text.as_bytes()).map_err(unwritable)?;
        // The user's own command wrote it: its content is theirs, trusted as such.
        let project = self.path.parent().and_then(Path::parent);
        if let Some(project) = project {
            let digest = crate::config::digest(text.as_bytes());
            if let Err(e) = TrustPolicy::for_overrides().trust_overrides(project, &digest) {
                tracing::warn!(error = %e, "could not record {} as trusted", self.path.display());
            }
        }
        Ok(())
    }

    /// The file's text as [`Overrides::save`] writes it: sorted, pretty, empty entries left out.
    pub(crate) fn to_text(&self) -> serde_json::Result<String> {
        let mut text = serde_json::to_string_pretty(&self.file_out())?;
        text.push('\n');
        Ok(text)
    }

    /// A hash of the choices about servers and tools as they would be saved: what keys
    /// caches built under them (the launch options do not count).
    pub fn fingerprint(&self) -> u64 {
        let choices = FileOut {
            launch: None,
            ..self.file_out()
        };
        fnv1a(&serde_json::to_vec(&choices).unwrap_or_default())
    }

    /// The per-client allow-lists of OAuth clients.
    pub fn clients(&self) -> &Clients {
        &self.clients
    }

    /// The launch options last chosen in the TUI.
    pub fn launch_choices(&self) -> Option<&LaunchChoices> {
        self.launch.as_ref()
    }

    /// Remembers the launch options chosen (saved with the rest).
    pub fn set_launch_choices(&mut self, choices: LaunchChoices) {
        self.launch = Some(choices);
    }

    fn file_out(&self) -> FileOut<'_> {
        let stacks = self
            .stacks
            .iter()
            .map(|(stack, servers)| {
                let servers: BTreeMap<&str, &ServerOverrides> = servers
                    .iter()
                    .filter(|(_, o)| !o.is_empty())
                    .map(|(name, o)| (name.as_str(), o))
                    .collect();
                (stack.as_str(), servers)
            })
            .filter(|(_, servers)| !servers.is_empty())
            .collect();
        FileOut {
            version: OVERRIDES_VERSION,
            stacks,
            launch: self.launch.as_ref(),
            pin: &self.pins,
            clients: &self.clients,
        }
    }

    /// What was chosen for server `server` (plain name) of stack `stack`, if anything.
    pub fn for_server(&self, stack: &str, server: &str) -> Option<&ServerOverrides> {
        self.stacks
            .get(stack)
            .and_then(|s| s.get(server))
            .filter(|o| !o.is_empty())
    }

    /// The entry to change for a server (created empty; empty entries are never written).
    pub fn server_mut(&mut self, stack: &str, server: &str) -> &mut ServerOverrides {
        self.stacks
            .entry(stack.to_string())
            .or_default()
            .entry(server.to_string())
            .or_default()
    }

    fn entry_of(&self, stack: &str, server: &str) -> &ServerOverrides {
        self.for_server(stack, server).unwrap_or(&NO_OVERRIDES)
    }

    /// Whether the server is off: the override when there is one, else the config's flag.
    pub fn is_disabled(&self, entry: &ServerEntry) -> bool {
        self.entry_of(&entry.stack, &entry.name)
            .disabled
            .unwrap_or(entry.disabled)
    }

    /// Records the choice to disable (`true`) or enable (`false`) a server. The choice is kept
    /// even when it matches the config, so a later config edit does not undo it; `changed` says
    /// whether the server's state changed.
    pub fn set_disabled(&mut self, entry: &ServerEntry, disabled: bool) -> Change {
        self.choose_disabled(&entry.stack, &entry.name, entry.disabled, disabled)
    }

    /// [`Overrides::set_disabled`] by names, given what the config says.
    fn choose_disabled(
        &mut self,
        stack: &str,
        server: &str,
        config_disabled: bool,
        disabled: bool,
    ) -> Change {
        let was = self
            .entry_of(stack, server)
            .disabled
            .unwrap_or(config_disabled);
        self.server_mut(stack, server).disabled = Some(disabled);
        Change {
            tool: None,
            action: if disabled {
                Action::Disabled
            } else {
                Action::Enabled
            },
            changed: was != disabled,
        }
    }

    /// The server's tools as this project exposes them (see [`ServerOverrides::apply`]).
    pub fn apply<'a>(&self, stack: &str, server: &str, tools: &'a [Value]) -> Vec<ToolView<'a>> {
        self.entry_of(stack, server).apply(tools)
    }

    /// Tools the overrides mention for the server that it no longer offers, sorted.
    pub fn stale_names(&self, stack: &str, server: &str, tools: &[Value]) -> Vec<String> {
        self.entry_of(stack, server).stale_names(tools)
    }
}

/// serde_json's message without its " at line L column C" suffix (we report those apart).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

mod clients;
mod edit;
mod error;
mod pin;
mod server;
#[cfg(test)]
mod tests;

pub use clients::{ClientTools, Clients, ItemKind, ItemNames, ToolNames};
pub use edit::{Edit, Updated};
pub use error::OverridesError;
pub use pin::Pin;
use server::NO_OVERRIDES;
pub use server::{Action, Change, ServerOverrides, ToolView};
