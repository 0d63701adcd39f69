//! The lean tools server (`mcp-launch tools serve`): seven small tools over files — `grep`,
//! `cat`, `find`, `ls`, `head`, `tail`, `read_output` — whose whole `tools/list` costs at
//! most 420 o200k tokens (a test measures it), built on ripgrep's crates (no shelling out).
//!
//! Safe by construction: every path goes through [`Roots::resolve`] (canonicalised, kept only
//! under a root: `..`, absolute paths and symlinks leading out are refused), walks never
//! follow symlinks, special files are refused, binary files summarised, and every call is
//! bounded in time and entries ([`Limits`]). Every answer goes through
//! [`crate::outputs::budget_result`]: over the budget it is cut, with a handle that
//! `read_output` reads. This room knows MCP only through `wire.rs` (rmcp, as in
//! `gateway/wire/`); the rest is plain functions from JSON arguments to a `CallToolResult`.

mod error;
mod files;
mod grep;
mod roots;
mod walk;
mod wire;

use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{json, Value};

use crate::error::Actionable;
use crate::outputs::{self, Budget, ClientScope, Store};

pub use error::ToolError;
pub use roots::Roots;
pub use walk::Limits;
pub use wire::serve_stdio;

/// The server's state: roots (replaceable by the client's MCP roots), the handle store.
pub struct Tools {
    roots: RwLock<Roots>,
    /// True when the roots came from `--root`: the client's roots do not replace them.
    is_pinned: bool,
    store: Store,
    scope: ClientScope,
    budget: Budget,
    limits: Limits,
    /// Where each call is recorded (none in tests that do not ask).
    usage: Option<outputs::UsageLog>,
}

/// A tool's answer before its budget.
pub(crate) struct Answer {
    text: String,
}

impl Answer {
    pub(crate) fn text(text: String) -> Answer {
        Answer { text }
    }
}

impl Tools {
    /// Tools under `roots`; `is_pinned` when they were given explicitly (`--root`), else the
    /// client's MCP roots replace them when it offers some.
    pub fn new(roots: Roots, is_pinned: bool, store: Store, budget: Budget) -> Tools {
        Tools {
            roots: RwLock::new(roots),
            is_pinned,
            store,
            scope: ClientScope::local(),
            budget,
            limits: Limits::default(),
            usage: None,
        }
    }

    /// The same tools recording each call in `usage`.
    pub fn with_usage(mut self, usage: outputs::UsageLog) -> Tools {
        self.usage = Some(usage);
        self
    }

    /// The same tools with other bounds.
    pub fn with_limits(mut self, limits: Limits) -> Tools {
        self.limits = limits;
        self
    }

    /// The roots now in force.
    pub fn roots(&self) -> Roots {
        self.roots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the roots with the client's (unless pinned by `--root`); false when kept.
    pub fn offer_roots(&self, roots: Roots) -> bool {
        if self.is_pinned {
            return false;
        }
        *self.roots.write().unwrap_or_else(PoisonError::into_inner) = roots;
        true
    }

    /// The `tools/list` result.
    pub fn list() -> Value {
        let path = json!({"type": "string"});
        let n = json!({"type": "integer"});
        let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
            json!({
                "name": name,
                "description": description,
                "inputSchema": {"type": "object", "properties": properties, "required": required},
            })
        };
        let read_output = outputs::read_output_tool();
        json!({"tools": [
            tool("grep", "Regex search under the roots, ranked: definitions first, then dense files.",
                json!({"pattern": path, "path": path, "glob": path, "context": n, "ignore_case": {"type": "boolean"}}),
                &["pattern"]),
            tool("cat", "Read a file's lines: skip offset, show limit.",
                json!({"path": path, "offset": n, "limit": n}), &["path"]),
            tool("find", "Find paths by glob (*.rs, src/**/mod.rs), gitignore-aware.",
                json!({"pattern": path, "path": path}), &["pattern"]),
            tool("ls", "List a directory: dirs/, files with sizes.", json!({"path": path}), &[]),
            tool("head", "First n lines of a file (default 10).", json!({"path": path, "n": n}), &["path"]),
            tool("tail", "Last n lines of a file (default 10).", json!({"path": path, "n": n}), &["path"]),
            read_output,
        ]})
    }

    /// Runs tool `name` and returns its `CallToolResult`, budgeted, and records the call.
    /// Blocking (file system walks, the tokenizer): call it from a blocking task.
    pub fn call(&self, name: &str, arguments: &Value) -> Value {
        let started = std::time::Instant::now();
        let (result, stats) = self.answer(name, arguments);
        if let Some(usage) = &self.usage {
            let stats = stats.unwrap_or_else(|| {
                let bytes = result.to_string().len();
                outputs::Stats {
                    bytes_sent: bytes,
                    bytes_total: bytes,
                    tokens_sent: None,
                    tokens_cut: 0,
                    is_cut: false,
                    handles: Vec::new(),
                }
            });
            let record =
                outputs::UsageRecord::new("tools", name, &self.scope, &stats, started.elapsed());
            if let Err(e) = usage.append(&record) {
                tracing::warn!(error = %e, "could not record usage");
            }
        }
        result
    }

    fn answer(&self, name: &str, arguments: &Value) -> (Value, Option<outputs::Stats>) {
        let answer = match name {
            "grep" => grep::GrepArgs::from(arguments).and_then(|args| grep::grep(self, args)),
            "cat" => files::cat(self, arguments),
            "head" => files::head(self, arguments),
            "tail" => files::tail(self, arguments),
            "ls" => files::ls(self, arguments),
            "find" => files::find(self, arguments),
            outputs::READ_OUTPUT => return (self.read_output(arguments), None),
            other => Err(ToolError::UnknownTool {
                name: other.to_string(),
            }),
        };
        match answer {
            Ok(answer) => {
                let result = json!({"content": [{"type": "text", "text": answer.text}]});
                match outputs::budget_result(result.clone(), self.budget, &self.store, &self.scope)
                {
                    Ok(budgeted) => (budgeted.result, Some(budgeted.stats)),
                    Err(_) => (result, None),
                }
            }
            Err(error) => (error_result(&error), None),
        }
    }

    fn read_output(&self, arguments: &Value) -> Value {
        outputs::read_output(&self.store, &self.scope, arguments, self.budget)
    }
}

/// A refusal as the client gets it: what happened and what to do, `isError: true`.
fn error_result(error: &ToolError) -> Value {
    json!({
        "content": [{"type": "text", "text": format!("{error}\nhelp: {}", error.help())}],
        "isError": true,
    })
}

/// Reading one tool's arguments, with errors that name its parameters.
pub(crate) struct Args<'a> {
    arguments: &'a Value,
    usage: &'static str,
}

impl<'a> Args<'a> {
    pub fn new(arguments: &'a Value, usage: &'static str) -> Args<'a> {
        Args { arguments, usage }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.arguments.get(name).filter(|v| !v.is_null())
    }

    pub fn str(&self, name: &str) -> Result<Option<String>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ToolError::invalid(
                format!("`{name}` must be a string"),
                self.usage,
            )),
        }
    }

    pub fn required_str(&self, name: &str) -> Result<String, ToolError> {
        self.str(name)?
            .ok_or_else(|| ToolError::invalid(format!("`{name}` is required"), self.usage))
    }

    pub fn count(&self, name: &str) -> Result<Option<usize>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v.as_u64().map(|n| Some(n as usize)).ok_or_else(|| {
                ToolError::invalid(format!("`{name}` must be a whole number ≥ 0"), self.usage)
            }),
        }
    }

    pub fn bool(&self, name: &str) -> Result<Option<bool>, ToolError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(ToolError::invalid(
                format!("`{name}` must be true or false"),
                self.usage,
            )),
        }
    }
}

/// Shared, for the wire.
pub(crate) type Shared = Arc<Tools>;

#[cfg(test)]
mod tests;
