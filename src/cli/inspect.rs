//! `mcp-launch inspect SERVER TOOL [--example]`.

use std::io::Write;

use clap::Args;
use serde_json::json;

use crate::catalog::{self, tool};
use crate::output::{self, style, thousands};

use super::{find_tool, report_through_daemon, CliError, GlobalArgs, Outcome};

/// Show a tool's full definition and a ready-to-run example call.
///
/// Example: mcp-launch inspect filesystem read_text_file --example
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The server (name, or stack/name).
    #[arg(value_name = "SERVER")]
    pub server: String,
    /// The tool.
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// Print only the example call, ready to paste into a shell.
    #[arg(long)]
    pub example: bool,
    /// Through the daemon: the tool as the server lists it now over the daemon's warm session
    /// (started there if needed, and kept warm for the next call).
    #[command(flatten)]
    pub daemon: super::daemon::DaemonFlag,
}

pub(super) async fn run(args: InspectArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let overrides = super::server::load_overrides()?;
    let report = report_through_daemon(global, &args.server, args.daemon.how, true).await?;
    let found = find_tool(&report.name, &report.tools, &args.tool)?;
    let index = report.tools.iter().position(|t| std::ptr::eq(t, found));
    // The project's view of the tool: effective description, allowed or denied.
    let key = report.config_name.as_str();
    let view = index.and_then(|i| {
        overrides
            .apply(&report.stack, key, &report.tools)
            .into_iter()
            .nth(i)
    });
    let (description, is_overridden, is_allowed) = view.map_or_else(
        || (tool::description(found).to_string(), false, true),
        |v| (v.description, v.is_overridden, v.is_allowed),
    );
    let tokens = index.and_then(|i| report.tool_tokens.get(i).copied());
    let budget =
        (overrides.for_server(&report.stack, key)).and_then(|o| o.output_budget(tool::name(found)));
    let changed = changed_since_approved(&report, found, &overrides);
    let example = example_call(global, &report.name, found);
    // A denied tool's example would be refused: say so wherever the example is shown.
    let refused = (!is_allowed).then(|| {
        let (server, name) = (&args.server, tool::name(found));
        format!(
            "this call will be refused: the tool is denied by {}; `mcp-launch tool allow {server} {name}` allows it",
            overrides.path().display()
        )
    });

    if global.json {
        let mut v = json!({
            "server": report.name,
            "tool": tool::name(found),
            "description": description,
            "inputSchema": tool::input_schema(found),
            "requiredParams": tool::required_params(found),
            "tokens": tokens,
            "exampleCall": example,
            "exampleArguments": tool::example_arguments(found),
            "definition": found,
            "allowed": is_allowed,
        });
        if is_overridden {
            v["originalDescription"] = json!(tool::description(found));
        }
        if let Some(tokens) = budget {
            v["maxOutputTokens"] = json!(tokens);
        }
        if let Some(refused) = &refused {
            v["exampleRefused"] = json!(refused);
        }
        if let Some(changed) = &changed {
            v["changed"] = json!(true);
            v["withheld"] = json!(changed.withheld);
            v["approvedDefinition"] = changed.approved.clone();
            v["approve"] = json!(changed.approve);
        }
        output::print_json(&v)?;
        return Ok(Outcome::Success);
    }
    let mut out = crate::output::stdout();
    if args.example {
        if let Some(refused) = &refused {
            output::warn(refused)?;
        }
        writeln!(out, "{example}")?;
        return Ok(Outcome::Success);
    }
    let (head, dim) = (style::HEAD, style::DIM);
    writeln!(
        out,
        "{head}{} / {}{head:#}  {dim}{} tokens{dim:#}",
        report.name,
        tool::name(found),
        tokens.map(thousands).unwrap_or_else(|| "?".into())
    )?;
    if !description.is_empty() {
        writeln!(out, "\n{}", description.trim_end())?;
    }
    let file = overrides.path().display();
    if is_overridden {
        let (server, name) = (&report.name, tool::name(found));
        writeln!(out, "{dim}(description overridden in {file}; `mcp-launch tool describe {server} {name} --clear` restores the server's){dim:#}")?;
    }
    if !is_allowed {
        writeln!(out, "{dim}(denied by {file}: hidden from listings){dim:#}")?;
    }
    if let Some(changed) = &changed {
        changed.show(&mut out, found)?;
    }
    if let Some(tokens) = budget {
        let words = super::server::budget_words(tokens);
        writeln!(out, "{dim}(output budget {words}, set in {file}){dim:#}")?;
    }
    writeln!(out, "\n{head}Parameters{head:#}")?;
    for line in catalog::expected_shape(found).lines() {
        writeln!(out, "  {line}")?;
    }
    let schema = serde_json::to_string_pretty(&tool::input_schema(found)).unwrap_or_default();
    writeln!(out, "\n{head}Input schema{head:#}\n{schema}")?;
    writeln!(out, "\n{head}Example{head:#}\n  {example}")?;
    if let Some(refused) = &refused {
        writeln!(out, "  {dim}({refused}){dim:#}")?;
    }
    Ok(Outcome::Success)
}

/// A definition that differs from the one the user approved.
struct Changed {
    /// The approved definition's covered fields (`null` when the approvals cannot be read).
    approved: serde_json::Value,
    /// The server is pinned strictly: `serve`, `up` and `call` withhold the tool.
    withheld: bool,
    /// The command that accepts the current definition.
    approve: String,
}

impl Changed {
    /// The approved fields that differ from the current ones, each approved then now.
    fn show(&self, out: &mut impl Write, current: &serde_json::Value) -> std::io::Result<()> {
        let (warn, dim) = (style::WARN, style::DIM);
        let how = match self.withheld {
            true => "withheld by serve, up and call until approved (pin: strict)",
            false => "served as it is now",
        };
        writeln!(
            out,
            "\n{warn}definition changed since approved{warn:#}: {how}"
        )?;
        let text = |v: Option<&serde_json::Value>| match v {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "(none)".into(),
        };
        for field in ["description", "inputSchema", "outputSchema", "annotations"] {
            if self.approved.get(field) == current.get(field) {
                continue;
            }
            writeln!(
                out,
                "  {field} approved: {dim}{}{dim:#}",
                text(self.approved.get(field))
            )?;
            writeln!(out, "  {field} now:      {}", text(current.get(field)))?;
        }
        writeln!(
            out,
            "  {dim}review it, then `{}` accepts it{dim:#}",
            self.approve
        )
    }
}

/// What the user's approvals say of `found`, when it changed since approved.
fn changed_since_approved(
    report: &catalog::ServerReport,
    found: &serde_json::Value,
    overrides: &catalog::Overrides,
) -> Option<Changed> {
    let (stack, key) = (&report.stack, report.config_name.as_str());
    let approvals = catalog::Approvals::load();
    if !approvals.of(stack, key, found).is_changed() {
        return None;
    }
    let name = tool::name(found);
    let approved = approvals.approved(stack, key, name);
    Some(Changed {
        approved: approved.map_or(serde_json::Value::Null, |a| a.definition.clone()),
        withheld: overrides.pin(stack, key).is_strict(),
        approve: format!("mcp-launch tool approve {} {name}", report.name),
    })
}

/// `mcp-launch [--config …] call SERVER TOOL '{…}'`, quoted for a POSIX shell.
fn example_call(global: &GlobalArgs, server: &str, tool_def: &serde_json::Value) -> String {
    let mut parts = vec!["mcp-launch".to_string()];
    for config in &global.configs {
        parts.push("--config".into());
        parts.push(shell_quote(&config.display().to_string()));
    }
    parts.push("call".into());
    parts.push(shell_quote(server));
    parts.push(shell_quote(tool::name(tool_def)));
    parts.push(shell_quote(&tool::example_arguments(tool_def).to_string()));
    parts.join(" ")
}

/// Quotes `s` for a POSIX shell when it needs it.
fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r#"'\''"#))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_a_shell() {
        assert_eq!(shell_quote("echo"), "echo");
        assert_eq!(shell_quote(r#"{"a":"it's"}"#), r#"'{"a":"it'\''s"}'"#);
        assert_eq!(shell_quote(""), "''");
    }
}
