//! `mcp-launch search QUERY [--method bm25|regex|exact] [--limit N] [--server S] [--schema]`.

use std::io::Write;

use clap::Args;
use serde_json::{json, Value};

use crate::catalog::{self, tool, SearchCatalog};
use crate::output::{self, style, Table};
use crate::search::{Hit, Method, Query, SearchIndex, ToolDoc};

use super::server::load_overrides;
use super::{find_server, load_config, CliError, GlobalArgs, Outcome};

/// Find tools across every server by keywords, a task, a regex or a substring.
///
/// Answers from the persisted search index in milliseconds without starting any server; when
/// a server's entry is missing or older than the index TTL, it is checked live first. The
/// project's overrides apply: denied tools are not found, overridden descriptions are searched.
/// Scores are normalised to 0–1; an exact or prefix match of a tool name ranks first; weak
/// matches (below 0.1) are dropped, so a query with no good answer returns nothing.
///
/// Example: mcp-launch search "read a file" --limit 3 --json
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Keywords, a task sentence, a tool name (`server tool` works), a regex or a substring.
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// bm25 (ranked words), regex (case-insensitive, ≤ 200 chars) or exact (substring).
    #[arg(long, default_value = "bm25", value_name = "METHOD")]
    pub method: Method,
    /// Results to show at most.
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: u16,
    /// Search only this server's tools.
    #[arg(long, value_name = "SERVER")]
    pub server: Option<String>,
    /// Include each result's input schema.
    #[arg(long)]
    pub schema: bool,
    /// Check every server live and rebuild the index first.
    #[arg(long)]
    pub refresh: bool,
}

pub(super) async fn run(args: SearchArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    // A bad pattern is reported before anything is loaded or started.
    let query = |server| Query {
        text: &args.query,
        method: args.method,
        limit: usize::from(args.limit),
        server,
    };
    SearchIndex::build(Vec::new()).search(&query(None))?;

    let loaded = load_config(global)?;
    tracing::debug!("config loaded");
    let server = match &args.server {
        Some(name) => Some(find_server(&loaded, name)?.qualified.clone()),
        None => None,
    };
    let overrides = load_overrides()?;
    let mut entries: Vec<_> = loaded.servers().cloned().collect();
    for entry in &mut entries {
        entry.disabled = overrides.is_disabled(entry);
    }
    let catalog = SearchCatalog::open(&entries, &overrides, args.refresh).await;
    tracing::debug!(tools = catalog.index.len(), "search index ready");
    let hits = catalog.index.search(&query(server.as_deref()))?;
    tracing::debug!(hits = hits.len(), "searched");
    // Only the hits are decoded: a loaded index keeps its tools encoded until asked.
    let docs: Vec<ToolDoc> = hits
        .iter()
        .filter_map(|h| catalog.index.doc(h.doc).map(|d| d.into_owned()))
        .collect();

    let schemas = if args.schema {
        schemas_of(&entries, &overrides, &docs).await
    } else {
        Vec::new()
    };
    let found = Found {
        hits: &hits,
        docs: &docs,
        schemas: &schemas,
        unavailable: &catalog.unavailable,
        searched: catalog.index.len(),
    };
    if global.json {
        print_json(&args, &found)?;
    } else {
        print_human(&args, &found)?;
    }
    Ok(Outcome::Success)
}

/// What a search found, ready to print.
struct Found<'a> {
    hits: &'a [Hit],
    /// The hits' tools, in hit order.
    docs: &'a [ToolDoc],
    /// The hits' input schemas with `--schema` (else empty).
    schemas: &'a [Value],
    /// Servers whose tools are missing from the index.
    unavailable: &'a [String],
    /// How many tools were searched.
    searched: usize,
}

fn print_json(args: &SearchArgs, found: &Found<'_>) -> Result<(), CliError> {
    let Found {
        hits,
        docs,
        schemas,
        ..
    } = found;
    let results: Vec<Value> = hits
        .iter()
        .enumerate()
        .zip(*docs)
        .map(|((i, hit), doc)| {
            let mut v = json!({
                "server": doc.server,
                "tool": doc.tool,
                "score": (hit.score * 1000.0).round() / 1000.0,
                "description": doc.description,
                "requiredParams": doc.required,
            });
            if let Some(schema) = schemas.get(i) {
                v["inputSchema"] = schema.clone();
            }
            v
        })
        .collect();
    let mut out = json!({"query": args.query, "method": args.method.as_str(), "results": results});
    if !found.unavailable.is_empty() {
        out["unavailable"] = json!(found.unavailable);
    }
    output::print_json(&out)?;
    Ok(())
}

fn print_human(args: &SearchArgs, found: &Found<'_>) -> Result<(), CliError> {
    for name in found.unavailable {
        output::warn(&format!(
            "{name} was unavailable when the index was built; its tools are not searched (`mcp-launch list {name}` says why, --refresh retries)"
        ))?;
    }
    let mut out = anstream::stdout().lock();
    if found.hits.is_empty() {
        let dim = style::DIM;
        writeln!(
            out,
            "no tool matches {:?} {dim}(searched {} tools; try other words, --method exact, or --method regex){dim:#}",
            args.query,
            found.searched
        )?;
        return Ok(());
    }
    let mut table = Table::new(vec!["SCORE", "TOOL", "REQUIRED", "DESCRIPTION"], &[0]);
    let room = output::terminal_width().saturating_sub(60).max(30);
    for (hit, doc) in found.hits.iter().zip(found.docs) {
        table.styled_row(vec![
            (format!("{:.2}", hit.score), style::DIM),
            (format!("{} {}", doc.server, doc.tool), style::HEAD),
            (doc.required.join(", "), Default::default()),
            (output::clip(&doc.description, room), style::DIM),
        ]);
    }
    write!(out, "{}", table.render())?;
    for (doc, schema) in found.docs.iter().zip(found.schemas) {
        writeln!(
            out,
            "\n{} {}:\n{}",
            doc.server,
            doc.tool,
            serde_json::to_string_pretty(schema).unwrap_or_default()
        )?;
    }
    Ok(())
}

/// The input schemas of the hits, from the tool index (fresh entries answer; nothing starts
/// unless an entry expired since the search index was built).
async fn schemas_of(
    entries: &[crate::config::ServerEntry],
    overrides: &crate::catalog::Overrides,
    wanted: &[ToolDoc],
) -> Vec<Value> {
    let involved: Vec<_> = entries
        .iter()
        .filter(|e| wanted.iter().any(|d| d.server == e.qualified))
        .cloned()
        .collect();
    let reports = catalog::resolve(
        &involved,
        &catalog::ResolveOptions::from_env(false).without_tokens(),
    )
    .await;
    let exposed = catalog::expose(&reports, overrides).await;
    wanted
        .iter()
        .map(|doc| {
            reports
                .iter()
                .zip(&exposed)
                .filter(|(r, _)| r.name == doc.server)
                .flat_map(|(_, tools)| tools)
                .find(|t| t.name == doc.tool)
                .map(|t| tool::input_schema(&t.definition))
                .unwrap_or(Value::Null)
        })
        .collect()
}
