//! What `up` prints: progress and warnings while stacks start and run, and the summary once
//! they are up.

use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::{CliError, GlobalArgs};
use crate::launch::events::{Events, StackEvent};
use crate::launch::stack::RunningStack;
use crate::output::{self, style};

/// Lets the printer show what is queued, then ends it (stacks that failed to start may still
/// hold a sender, so waiting for the channel to close could take forever).
pub(super) async fn finish_printing(events: Events, printer: tokio::task::JoinHandle<()>) {
    drop(events);
    let abort = printer.abort_handle();
    if tokio::time::timeout(Duration::from_millis(200), printer)
        .await
        .is_err()
    {
        abort.abort();
    }
}

/// Prints what the stacks report while they start and run (stderr; JSON lines with --json).
pub(super) async fn print_events(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<StackEvent>,
    json: bool,
) {
    while let Some(event) = rx.recv().await {
        if json {
            continue;
        }
        match &event {
            // Every 5 s is enough to show life without flooding the terminal.
            StackEvent::Progress { waited_secs, .. } if waited_secs % 5 != 0 => {}
            StackEvent::Progress { .. } => {
                let dim = style::DIM;
                anstream::eprintln!("{dim}{event}{dim:#}");
            }
            event if event.is_warning() => {
                let _ = output::warn(&event.to_string());
            }
            event => anstream::eprintln!("{event}"),
        }
    }
}

pub(super) fn print_summary(
    running: &[RunningStack],
    errors: &[(String, Value)],
    took: Duration,
    global: &GlobalArgs,
) -> Result<(), CliError> {
    if global.json {
        let stacks: Vec<Value> = running
            .iter()
            .map(|s| {
                let record = s.record();
                let mut v = crate::launch::spec::publish::summary_json(&record);
                v["api_key"] = json!(record.api_key);
                v["local_url"] = json!(record.local_url());
                v["tunnel"] = json!(record.tunnel);
                if let Some(auth) = &record.mcp_auth {
                    v["mcp_url"] = json!(format!("{}/mcp", record.public_url));
                    v["mcp_auth"] = json!(auth);
                }
                v
            })
            .collect();
        let errors: Vec<Value> = errors
            .iter()
            .map(|(stack, e)| json!({"stack": stack, "error": e}))
            .collect();
        output::print_json(
            &json!({"success": !running.is_empty(), "stacks": stacks, "errors": errors, "ready_ms": took.as_millis() as u64}),
        )?;
        return Ok(());
    }
    let (head, good, bad, dim) = (style::HEAD, style::GOOD, style::BAD, style::DIM);
    for stack in running {
        let r = stack.record();
        anstream::println!(
            "{head}{}{head:#}  {good}ready{good:#} {dim}in {:.1}s{dim:#}",
            r.name,
            took.as_secs_f64()
        );
        anstream::println!("  spec     {}/openapi.json", r.public_url);
        anstream::println!("  key      X-API-Key: {}", r.api_key);
        match r.mcp_auth.as_deref() {
            Some("oauth") => anstream::println!(
                "  mcp      {}/mcp  (OAuth: you consent to each client; `mcp-launch share` says how)",
                r.public_url
            ),
            Some("key") => anstream::println!(
                "  mcp      {}/mcp  (Authorization: Bearer <the key>)",
                r.public_url
            ),
            Some("oidc") => anstream::println!(
                "  mcp      {}/mcp  (OAuth: access tokens of your OpenID provider)",
                r.public_url
            ),
            Some(_) => anstream::println!("  mcp      {}/mcp  (no authentication)", r.public_url),
            None => {}
        }
        if r.mcp_auth.is_some() && r.controller == "mcpo" {
            // mcpo speaks OpenAPI only: /mcp cannot reach the servers inside it.
            anstream::println!(
                "  {dim}/mcp starts a second copy of a server on its first MCP call (mcpo's copies serve REST); idle 10 min, it stops{dim:#}"
            );
        }
        let servers: Vec<String> = r
            .servers
            .iter()
            .map(|s| format!("{} ({})", s.name, s.operations))
            .collect();
        anstream::println!(
            "  servers  {} — {} operations",
            servers.join(", "),
            r.operations
        );
        if global.verbose > 0 {
            anstream::println!(
                "  {dim}local {}  mcpo 127.0.0.1:{}  tunnel {}{dim:#}",
                r.local_url(),
                r.controller_port,
                r.tunnel
            );
        }
        for w in &r.warnings {
            let _ = output::warn(w);
        }
    }
    for (stack, e) in errors {
        anstream::println!(
            "{head}{stack}{head:#}  {bad}failed{bad:#}: {}",
            e["message"].as_str().unwrap_or("")
        );
        if let Some(help) = e["help"].as_str() {
            anstream::println!("  {dim}help: {help}{dim:#}");
        }
    }
    if !running.is_empty() {
        anstream::println!(
            "\nShare with ChatGPT: import the spec URL as an Action; authentication \"API Key\", custom header X-API-Key.\nMCP clients (claude.ai, ChatGPT connectors): add the mcp URL; `mcp-launch share` shows the steps.\nServing until Ctrl-C (or `mcp-launch down`)."
        );
    }
    Ok(())
}
