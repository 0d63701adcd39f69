//! What a stack's front lets through: its enabled servers and, for each, which tools are
//! allowed and with which description. The front proxy enforces it on every request and the
//! OpenAPI merge publishes exactly it — one value, so the spec and the gate cannot disagree.

use std::collections::{BTreeMap, BTreeSet};

use crate::catalog::Overrides;

/// The servers of one stack as its front exposes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exposure {
    servers: BTreeMap<String, ServerExposure>,
    /// Tools (by server) whose definitions changed since they were approved, on servers pinned
    /// strictly: refused as withheld (and left out of the spec) until approved.
    withheld: BTreeMap<String, BTreeSet<String>>,
    /// The native bridge budgets results: `POST /read_output` reads on a cut one (the front
    /// lets it through, the spec documents it).
    reads_outputs: bool,
}

/// The route that reads on a cut result ([`Exposure::reads_outputs`]).
pub const READ_OUTPUT_PATH: &str = "/read_output";

/// One server of a stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerExposure {
    /// False when the overrides disable the server: the front answers 404 for it.
    pub enabled: bool,
    /// False for a server the stack did not start (disabled at launch, or failed): enabling
    /// it takes a restart of the stack, not just a new spec.
    pub started: bool,
    /// Its tools by name; a tool missing here is unknown to the front (404).
    pub tools: BTreeMap<String, ToolRule>,
}

/// One tool of a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRule {
    /// False when the overrides deny it (or leave it out of an allow list): the front answers
    /// 403 and the spec leaves it out.
    pub allowed: bool,
    /// The description override, when the project set one.
    pub description: Option<String>,
}

impl ToolRule {
    /// Rules from `(name, allowed)` pairs, without description overrides.
    pub fn from_pairs(rules: &[(&str, bool)]) -> BTreeMap<String, ToolRule> {
        let rule = |allowed: bool| ToolRule {
            allowed,
            description: None,
        };
        rules
            .iter()
            .map(|(name, allowed)| (name.to_string(), rule(*allowed)))
            .collect()
    }
}

/// What the front does with a request for `/<server>/<rest>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Pass it to the controller.
    Forward,
    /// The server's own spec (`/<server>/openapi.json`): the front answers it from the merged
    /// spec, so a denied tool never shows.
    ServerSpec,
    /// A server page (docs, spec) asked for with a method other than GET or HEAD.
    PageIsReadOnly,
    /// No such server in this stack.
    UnknownServer,
    /// The server is disabled by the overrides (`started`: it runs, so a new spec can enable
    /// it again).
    DisabledServer {
        /// The stack started the server.
        started: bool,
    },
    /// The tool is denied by the overrides.
    DeniedTool,
    /// The tool's definition changed since it was approved and its server is pinned strictly.
    WithheldTool,
    /// The server has no tool of that name.
    UnknownTool,
}

/// Paths a server's sub-application serves besides its tools (mcpo's docs and spec).
const SERVER_PAGES: [&str; 4] = ["docs", "redoc", "openapi.json", "docs/oauth2-redirect"];

impl Exposure {
    /// An exposure with no servers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `POST /read_output` through (the native bridge's results are budgeted).
    pub fn set_reads_outputs(&mut self, reads_outputs: bool) {
        self.reads_outputs = reads_outputs;
    }

    /// Whether `POST /read_output` goes through.
    pub fn reads_outputs(&self) -> bool {
        self.reads_outputs
    }

    /// Adds (or replaces) a server.
    pub fn insert(&mut self, server: impl Into<String>, exposure: ServerExposure) {
        self.servers.insert(server.into(), exposure);
    }

    /// Builds the exposure of one server from the overrides of `stack`: `tools` are the names
    /// the server offers, `enabled` whether it runs in this stack.
    pub fn server_from_overrides<'a>(
        overrides: &Overrides,
        stack: &str,
        server: &str,
        enabled: bool,
        tools: impl IntoIterator<Item = &'a str>,
    ) -> ServerExposure {
        let rules = overrides.for_server(stack, server);
        let tools = tools
            .into_iter()
            .map(|name| {
                let rule = ToolRule {
                    allowed: rules.is_none_or(|r| r.is_allowed(name)),
                    description: rules.and_then(|r| r.descriptions.get(name).cloned()),
                };
                (name.to_string(), rule)
            })
            .collect();
        ServerExposure {
            enabled,
            started: true,
            tools,
        }
    }

    /// Withholds `server`'s tool `tool` (its definition changed since it was approved, and the
    /// server is pinned strictly): not allowed, and refused as withheld rather than denied.
    pub fn withhold(&mut self, server: &str, tool: &str) {
        let Some(rule) = self
            .servers
            .get_mut(server)
            .and_then(|s| s.tools.get_mut(tool))
        else {
            return;
        };
        rule.allowed = false;
        let tools = self.withheld.entry(server.to_string()).or_default();
        tools.insert(tool.to_string());
    }

    /// Whether `server`'s tool `tool` is withheld.
    pub fn is_withheld(&self, server: &str, tool: &str) -> bool {
        self.withheld.get(server).is_some_and(|t| t.contains(tool))
    }

    /// The servers, by name.
    pub fn servers(&self) -> impl Iterator<Item = (&str, &ServerExposure)> {
        self.servers.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// One server.
    pub fn server(&self, name: &str) -> Option<&ServerExposure> {
        self.servers.get(name)
    }

    /// What to do with a `read` (GET or HEAD) or other request whose path is
    /// `/<server>/<rest>` (`rest` without its leading slash, possibly empty). A tool's rule
    /// comes first, whatever the method: a denied tool named `docs` stays denied; pages are
    /// read-only and never shadow a tool.
    pub fn verdict(&self, server: &str, rest: &str, read: bool) -> Verdict {
        let Some(exposure) = self.servers.get(server) else {
            return Verdict::UnknownServer;
        };
        if !exposure.enabled {
            return Verdict::DisabledServer {
                started: exposure.started,
            };
        }
        let rest = rest.trim_end_matches('/');
        match exposure.tools.get(rest) {
            Some(rule) if rule.allowed => Verdict::Forward,
            Some(_) if self.is_withheld(server, rest) => Verdict::WithheldTool,
            Some(_) => Verdict::DeniedTool,
            None if !(rest.is_empty() || SERVER_PAGES.contains(&rest)) => Verdict::UnknownTool,
            None if !read => Verdict::PageIsReadOnly,
            None if rest == "openapi.json" => Verdict::ServerSpec,
            None => Verdict::Forward,
        }
    }

    /// Allowed tools over all enabled servers.
    pub fn allowed_count(&self) -> usize {
        self.servers
            .values()
            .filter(|s| s.enabled)
            .map(|s| s.tools.values().filter(|t| t.allowed).count())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Exposure {
        let mut exposure = Exposure::new();
        exposure.insert(
            "everything",
            ServerExposure {
                enabled: true,
                started: true,
                tools: [
                    (
                        "echo".to_string(),
                        ToolRule {
                            allowed: true,
                            description: None,
                        },
                    ),
                    (
                        "get-env".to_string(),
                        ToolRule {
                            allowed: false,
                            description: None,
                        },
                    ),
                ]
                .into_iter()
                .collect(),
            },
        );
        exposure.insert(
            "time",
            ServerExposure {
                enabled: false,
                started: false,
                tools: BTreeMap::new(),
            },
        );
        exposure
    }

    #[test]
    fn verdicts_follow_the_rules() {
        let e = sample();
        let post = |server: &str, rest: &str| e.verdict(server, rest, false);
        let get = |server: &str, rest: &str| e.verdict(server, rest, true);
        assert_eq!(post("everything", "echo"), Verdict::Forward);
        assert_eq!(post("everything", "echo/"), Verdict::Forward);
        assert_eq!(post("everything", "get-env"), Verdict::DeniedTool);
        assert_eq!(get("everything", "get-env"), Verdict::DeniedTool);
        assert_eq!(post("everything", "nope"), Verdict::UnknownTool);
        assert_eq!(get("everything", "docs"), Verdict::Forward);
        assert_eq!(post("everything", "docs"), Verdict::PageIsReadOnly);
        assert_eq!(get("everything", "openapi.json"), Verdict::ServerSpec);
        assert_eq!(
            post("time", "get_current_time"),
            Verdict::DisabledServer { started: false }
        );
        assert_eq!(
            get("time", "docs"),
            Verdict::DisabledServer { started: false }
        );
        assert_eq!(post("other", "x"), Verdict::UnknownServer);
        assert_eq!(e.allowed_count(), 1);
    }

    /// Tools named like pages keep their rules; the pages do not shadow them.
    #[test]
    fn a_tool_named_like_a_page_is_judged_as_the_tool() {
        let mut e = sample();
        let server = e.servers.get_mut("everything").unwrap();
        for (name, allowed) in [("docs", false), ("redoc", false), ("openapi.json", false)] {
            let rule = ToolRule {
                allowed,
                description: None,
            };
            server.tools.insert(name.to_string(), rule);
        }
        for page in ["docs", "redoc", "openapi.json"] {
            for read in [true, false] {
                assert_eq!(
                    e.verdict("everything", page, read),
                    Verdict::DeniedTool,
                    "{page}"
                );
            }
        }
    }
}
