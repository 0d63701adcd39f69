//! Changes to the overrides as data, and the one way to write them: [`Overrides::update`]
//! takes the file's lock, reads the file as it is now, applies the edits and writes it back.
//!
//! Why: the CLI and the TUI are separate processes that write the same file. A writer that
//! saved the copy it loaded earlier (minutes earlier, for an open TUI) dropped every choice
//! made in between by the other (`tool deny` from another terminal, lost at the TUI's next
//! save). Each writer now sends only what it changes, applied to a fresh read under an
//! exclusive `flock`, so writers interleave without losing each other's choices.

use std::fs::File;
use std::path::Path;

use nix::fcntl::Flock;

use super::{Action, Change, LaunchChoices, Overrides, OverridesError};
use crate::catalog::trim_description;
use crate::config::ServerEntry;

/// The lock file beside the overrides file (the overrides file itself is replaced by a rename
/// on every write, so it cannot carry the lock).
const OVERRIDES_LOCK: &str = ".mcp-launch/overrides.lock";

/// One change to the overrides, applied to whatever the file holds when it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Disables (`disabled: true`) or enables a server.
    SetDisabled {
        /// The server's stack.
        stack: String,
        /// Its plain config key.
        server: String,
        /// What its config says (to tell whether the choice changes anything).
        config_disabled: bool,
        /// The choice.
        disabled: bool,
    },
    /// Allows tools ([`ServerOverrides::allow`](super::ServerOverrides::allow)); with `only`,
    /// makes them the whole allow list.
    Allow {
        /// The server's stack.
        stack: String,
        /// Its plain config key.
        server: String,
        /// The tools.
        tools: Vec<String>,
        /// Replace the allow list with `tools`.
        only: bool,
    },
    /// Denies tools.
    Deny {
        /// The server's stack.
        stack: String,
        /// Its plain config key.
        server: String,
        /// The tools.
        tools: Vec<String>,
    },
    /// Forgets every choice about tools.
    Reset {
        /// The server's stack.
        stack: String,
        /// Its plain config key.
        server: String,
        /// The tools.
        tools: Vec<String>,
    },
    /// Sets (`Some`) or removes (`None`) a tool's description override.
    Describe {
        /// The server's stack.
        stack: String,
        /// Its plain config key.
        server: String,
        /// The tool.
        tool: String,
        /// The text clients see instead of the server's.
        text: Option<String>,
    },
    /// Cuts a tool's current description (its override, else `original`) to `max` characters
    /// at a word boundary ([`trim_description`]) and stores the result; nothing when it fits.
    Trim {
        /// The server's stack.
        stack: String,
        /// Its plain config key.
        server: String,
        /// The tool.
        tool: String,
        /// The server's own description.
        original: String,
        /// The budget, in characters.
        max: usize,
    },
    /// Sets (`Some`) or removes (`None`) a tool's output budget (`tool` `"*"`: the server's
    /// default for its other tools).
    Budget {
        /// The server's stack.
        stack: String,
        /// Its plain config key.
        server: String,
        /// The tool, or `"*"`.
        tool: String,
        /// The budget in o200k tokens (0: never cut).
        tokens: Option<usize>,
    },
    /// Forgets everything chosen for a server.
    ClearServer {
        /// The server's stack.
        stack: String,
        /// Its plain config key.
        server: String,
    },
    /// Remembers the TUI's launch options.
    SetLaunchChoices(LaunchChoices),
}

impl Edit {
    /// Disables (`true`) or enables (`false`) the server of `entry`.
    pub fn set_disabled(entry: &ServerEntry, disabled: bool) -> Edit {
        Edit::SetDisabled {
            stack: entry.stack.clone(),
            server: entry.name.clone(),
            config_disabled: entry.disabled,
            disabled,
        }
    }
}

/// What [`Overrides::update`] did.
#[derive(Debug, Clone)]
pub struct Updated {
    /// The overrides as now in the file (everyone's choices, the edits applied).
    pub overrides: Overrides,
    /// What each edit changed, in order.
    pub changes: Vec<Change>,
    /// False when the file already said so (nothing was written).
    pub saved: bool,
}

impl Overrides {
    /// Applies one edit to these overrides (in memory); what it changed.
    pub fn apply_edit(&mut self, edit: &Edit) -> Vec<Change> {
        match edit {
            Edit::SetDisabled {
                stack,
                server,
                config_disabled,
                disabled,
            } => vec![self.choose_disabled(stack, server, *config_disabled, *disabled)],
            Edit::Allow {
                stack,
                server,
                tools,
                only,
            } => {
                let entry = self.server_mut(stack, server);
                if *only {
                    entry.allow_only(tools)
                } else {
                    entry.allow(tools)
                }
            }
            Edit::Deny {
                stack,
                server,
                tools,
            } => self.server_mut(stack, server).deny(tools),
            Edit::Reset {
                stack,
                server,
                tools,
            } => self.server_mut(stack, server).reset(tools),
            Edit::Describe {
                stack,
                server,
                tool,
                text,
            } => vec![self.server_mut(stack, server).describe(tool, text.clone())],
            Edit::Trim {
                stack,
                server,
                tool,
                original,
                max,
            } => {
                let entry = self.server_mut(stack, server);
                let current = entry.descriptions.get(tool).unwrap_or(original);
                let trimmed = trim_description(current, *max);
                if &trimmed == current {
                    // Already fits: storing it would only mark the tool as overridden.
                    return vec![Change {
                        tool: Some(tool.clone()),
                        action: Action::Described,
                        changed: false,
                    }];
                }
                vec![entry.describe(tool, Some(trimmed))]
            }
            Edit::Budget {
                stack,
                server,
                tool,
                tokens,
            } => vec![self.server_mut(stack, server).set_budget(tool, *tokens)],
            Edit::ClearServer { stack, server } => vec![self.server_mut(stack, server).clear()],
            Edit::SetLaunchChoices(choices) => {
                self.set_launch_choices(choices.clone());
                Vec::new()
            }
        }
    }

    /// Applies `edits` to `PROJECT_DIR/.mcp-launch/overrides.json` as it is now: under an
    /// exclusive lock, reads the file, applies the edits in order, writes it (atomically) when
    /// anything changed. A file that does not load is left alone (the error says why).
    ///
    /// Blocks while another writer holds the lock (writers only read, change and write a
    /// small file): call it off any event loop.
    pub fn update(project_dir: &Path, edits: &[Edit]) -> Result<Updated, OverridesError> {
        let _lock = lock(&project_dir.join(OVERRIDES_LOCK))?;
        // Never build on a file that came with the checkout: saving would trust it.
        let (mut overrides, trusted) = Overrides::load_checking(project_dir)?;
        if !trusted {
            return Err(OverridesError::Untrusted {
                path: overrides.path().to_path_buf(),
            });
        }
        let before = overrides.clone();
        let changes = edits.iter().flat_map(|e| overrides.apply_edit(e)).collect();
        let saved = overrides != before;
        if saved {
            overrides.save()?;
        }
        Ok(Updated {
            overrides,
            changes,
            saved,
        })
    }
}

/// Takes the exclusive lock (released when the returned value drops).
fn lock(path: &Path) -> Result<Flock<File>, OverridesError> {
    let failed = |reason: String| OverridesError::Unwritable {
        path: path.to_path_buf(),
        reason,
    };
    // `.mcp-launch/` is created owner-only with its .gitignore (only the overrides are shared).
    if let Some(project) = path.parent().and_then(Path::parent) {
        crate::project::ensure(project).map_err(|e| failed(e.to_string()))?;
    }
    crate::files::lock(path).map_err(|e| failed(e.to_string()))
}
