//! `mcp-launch search QUERY [--method hybrid|bm25|semantic|regex|exact] [--limit N]
//! [--server S] [--schema] [--explain]`.

use std::io::Write;

use clap::Args;
use serde_json::{json, Value};

use crate::catalog::{self, tool, ChangedTool, SearchCatalog};
use crate::output::{self, style, Table};
use crate::search::semantic::{DocVectors, Model};
use crate::search::{Hit, Meaning, Method, Query, SearchIndex, ToolDoc};

use super::daemon;
use super::server::entries_with_overrides;
use super::{find_server, load_config, CliError, GlobalArgs, Outcome};
use crate::gateway::daemon::SearchRequest;

/// Find tools across every server by keywords, a task, a regex or a substring.
///
/// Answers from the persisted search index in milliseconds without starting any server; when
/// a server's entry is missing or older than the index TTL, it is checked live first. The
/// project's overrides apply: denied tools are not found, overridden descriptions are searched.
/// With the embedding model installed (`mcp-launch model install`), tools are ranked by
/// meaning and words together (hybrid), so a task in other words than the tool's finds it;
/// without it, by words (bm25). Scores are normalised to 0–1; an exact or prefix match of a
/// tool name ranks first; weak matches are dropped, so a query with no good answer returns
/// nothing.
///
/// Example: mcp-launch search "read a file" --limit 3 --json
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Keywords, a task sentence, a tool name (`server tool` works), a regex or a substring.
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// hybrid (meaning + words; the default with a model), bm25 (words; the default without),
    /// semantic (meaning), regex (case-insensitive, ≤ 200 chars) or exact (substring).
    #[arg(long, value_name = "METHOD")]
    pub method: Option<Method>,
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
    /// Show each hit's lexical and semantic parts.
    #[arg(long)]
    pub explain: bool,
    /// When tools are not embedded yet, wait for the embedder at work (or embed them here)
    /// and rank by meaning; without it, such a search ranks by words at once and says so.
    #[arg(long)]
    pub wait: bool,
    /// Through the daemon (without --refresh, which checks live here): its catalog, and its
    /// model and tool vectors kept loaded; nothing is started.
    #[command(flatten)]
    pub daemon: super::daemon::DaemonFlag,
}

pub(super) async fn run(args: SearchArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    // Only located here: a search through the daemon ranks with the daemon's model, and the
    // direct path opens it below.
    let model_dir = model_dir_for(args.method)?;
    let method = args.method.unwrap_or(if model_dir.is_some() {
        Method::Hybrid
    } else {
        Method::Bm25
    });
    // A bad pattern is reported before anything is loaded or started.
    let query = |server| Query {
        text: &args.query,
        method,
        limit: usize::from(args.limit),
        server,
    };
    SearchIndex::build(Vec::new()).search(&query(None))?;
    if model_dir.is_none() && args.method.is_none() && !global.json {
        let dim = style::DIM;
        anstream::eprintln!(
            "{dim}ranking by words only: `mcp-launch model install` adds ranking by meaning{dim:#}"
        );
    }

    let loaded = load_config(global)?;
    tracing::debug!("config loaded");
    let server = match &args.server {
        Some(name) => Some(find_server(&loaded, name)?.qualified.clone()),
        None => None,
    };
    let (entries, overrides) = entries_with_overrides(&loaded)?;
    // `--wait` waits here, for vectors this process can see being made.
    if !daemon::checks_live(args.refresh) && !args.wait {
        let request = SearchRequest {
            query: args.query.clone(),
            method,
            limit: usize::from(args.limit),
            server: server.clone(),
            schemas: args.schema,
        };
        let enabled: Vec<&str> = (entries.iter().filter(|e| !e.disabled))
            .map(|e| e.qualified.as_str())
            .collect();
        let how = args.daemon.how;
        if let Some(found) = daemon::search_through(&loaded, how, &request, &enabled).await? {
            tracing::debug!(hits = found.hits.len(), "searched through the daemon");
            let hits: Vec<Hit> = found.hits.iter().map(|f| f.hit).collect();
            let docs: Vec<ToolDoc> = found.hits.iter().map(|f| f.tool.clone()).collect();
            let schemas: Vec<Value> = match args.schema {
                true => (found.hits.iter())
                    .map(|f| f.schema.clone().unwrap_or(Value::Null))
                    .collect(),
                false => Vec::new(),
            };
            let shown = Found {
                method,
                explain: args.explain,
                hits: &hits,
                docs: &docs,
                schemas: &schemas,
                changed: &[],
                unavailable: &found.unavailable,
                searched: found.searched,
                denied: found.denied,
                note: None,
            };
            return print(&args, global, &shown);
        }
    }
    let model = model_dir.as_deref().map(Model::open).transpose()?;
    let catalog = SearchCatalog::open(&entries, &overrides, args.refresh).await;
    tracing::debug!(tools = catalog.index.len(), "search index ready");
    let (meaning, note) = match (&model, method) {
        (Some(model), Method::Semantic | Method::Hybrid) => {
            match meaning_of(model, &catalog, &loaded, &args, global.json) {
                Ok(meaning) => (Some(meaning), None),
                Err(note) => (None, Some(note)),
            }
        }
        _ => (None, None),
    };
    // Without the tools' vectors the search ranks by words, and says so.
    let method = if note.is_some() { Method::Bm25 } else { method };
    let meaning_ref = meaning
        .as_ref()
        .map(|(query, docs)| Meaning { query, docs });
    let hits = catalog
        .index
        .search_with(&query(server.as_deref()), meaning_ref)?;
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
    let changed = catalog.changed(docs.iter().map(|d| (d.server.as_str(), d.tool.as_str())));
    let found = Found {
        method,
        explain: args.explain,
        hits: &hits,
        docs: &docs,
        schemas: &schemas,
        changed: &changed,
        unavailable: &catalog.unavailable,
        searched: catalog.index.len(),
        denied: (catalog.denied.iter())
            .filter(|s| server.as_deref().is_none_or(|wanted| wanted == s.as_str()))
            .count(),
        note: note.as_deref(),
    };
    print(&args, global, &found)
}

fn print(args: &SearchArgs, global: &GlobalArgs, found: &Found<'_>) -> Result<Outcome, CliError> {
    if global.json {
        print_json(args, found)?;
    } else {
        print_human(args, found)?;
    }
    Ok(Outcome::Success)
}

/// Where the model to rank by meaning with is: the installed one, unless the method needs
/// none. A method that needs one (`semantic`, `hybrid`) named without a model is an error.
fn model_dir_for(method: Option<Method>) -> Result<Option<std::path::PathBuf>, CliError> {
    if matches!(method, Some(Method::Bm25 | Method::Regex | Method::Exact)) {
        return Ok(None);
    }
    match crate::model::locate()? {
        Some(dir) => Ok(Some(dir)),
        None if method.is_some() => Err(CliError::Usage {
            message: format!(
                "--method {} ranks by meaning, and no embedding model is installed",
                method.map_or("", Method::as_str)
            ),
            help: "run `mcp-launch model install` (or use --method bm25)".into(),
        }),
        None => Ok(None),
    }
}

/// The query's vector and the tools', when they are ready (or, with `--wait`, once they
/// are); else the note saying the search ranks by words. The work is CPU-bound and borrows the
/// catalog: it runs on this worker, which tells the runtime so.
fn meaning_of(
    model: &Model,
    catalog: &SearchCatalog,
    loaded: &super::Loaded,
    args: &SearchArgs,
    quiet: bool,
) -> Result<(Vec<f32>, DocVectors), String> {
    tokio::task::block_in_place(|| {
        let vectors = super::embedding::search_vectors(model, catalog, loaded, args.wait, quiet)?;
        Ok((model.embed_query(&args.query), vectors))
    })
}

/// A hit's parts for `--explain --json`.
fn explain_json(hit: &Hit) -> Value {
    json!({
        "lexical": (hit.parts.lexical * 1000.0).round() / 1000.0,
        "semantic": hit.parts.semantic.map(|c| (c * 1000.0).round() / 1000.0),
        "pinned": hit.parts.pinned,
    })
}

/// A hit's parts for `--explain`: `name`, or `words 0.42 · meaning 0.71`.
fn explain_text(hit: &Hit) -> String {
    if hit.parts.pinned {
        return "name".into();
    }
    let mut text = format!("words {:.2}", hit.parts.lexical);
    if let Some(cosine) = hit.parts.semantic {
        text += &format!(" · meaning {cosine:.2}");
    }
    text
}

/// What a search found, ready to print.
struct Found<'a> {
    method: Method,
    explain: bool,
    hits: &'a [Hit],
    /// The hits' tools, in hit order.
    docs: &'a [ToolDoc],
    /// The hits' input schemas with `--schema` (else empty).
    schemas: &'a [Value],
    /// Per hit, its change since approved (else empty: the daemon withholds what changed
    /// under `pin: strict` and warns of the rest itself).
    changed: &'a [Option<&'a ChangedTool>],
    /// Servers whose tools are missing from the index.
    unavailable: &'a [String],
    /// How many tools were searched.
    searched: usize,
    /// How many tools the overrides deny (not searched).
    denied: usize,
    /// Why the ranking is not what was asked for (tools not embedded yet).
    note: Option<&'a str>,
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
            if found.explain {
                v["explain"] = explain_json(hit);
            }
            if let Some(change) = found.change(i) {
                v["changed"] = json!(true);
                v["withheld"] = json!(change.withheld);
                v["inspect"] = json!(inspect_command(change));
            }
            v
        })
        .collect();
    let mut out = json!({"query": args.query, "method": found.method.as_str(), "results": results});
    if !found.unavailable.is_empty() {
        out["unavailable"] = json!(found.unavailable);
    }
    if let Some(note) = found.note {
        out["note"] = json!(note);
    }
    if found.denied > 0 {
        out["deniedSkipped"] = json!(found.denied);
    }
    output::print_answer(true, out)?;
    Ok(())
}

fn print_human(args: &SearchArgs, found: &Found<'_>) -> Result<(), CliError> {
    if let Some(note) = found.note {
        let dim = style::DIM;
        anstream::eprintln!("{dim}{note}{dim:#}");
    }
    if found.denied > 0 {
        let dim = style::DIM;
        let n = found.denied;
        let tools = if n == 1 { "tool" } else { "tools" };
        anstream::eprintln!("{dim}{n} {tools} denied by this project's overrides not searched (`mcp-launch list SERVER --all` shows them){dim:#}");
    }
    for name in found.unavailable {
        output::warn(&format!(
            "{name} was unavailable when the index was built; its tools are not searched (`mcp-launch list {name}` says why, --refresh retries)"
        ))?;
    }
    let mut out = crate::output::stdout();
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
    let mut headers = vec!["SCORE", "TOOL", "REQUIRED", "DESCRIPTION"];
    if found.explain {
        headers.insert(1, "WHY");
    }
    let mut table = Table::new(headers, &[0]);
    let room = output::terminal_width().saturating_sub(60).max(30);
    for (i, (hit, doc)) in found.hits.iter().zip(found.docs).enumerate() {
        let mark = if found.change(i).is_some() { " !" } else { "" };
        let mut row = vec![
            (format!("{:.2}", hit.score), style::DIM),
            (format!("{} {}{mark}", doc.server, doc.tool), style::HEAD),
            (doc.required.join(", "), Default::default()),
            (output::clip(&doc.description, room), style::DIM),
        ];
        if found.explain {
            row.insert(1, (explain_text(hit), style::DIM));
        }
        table.styled_row(row);
    }
    write!(out, "{}", table.render())?;
    print_changes(found)?;
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

impl Found<'_> {
    /// The change since approved of hit `i`, if it has one.
    fn change(&self, i: usize) -> Option<&ChangedTool> {
        self.changed.get(i).copied().flatten()
    }
}

/// `mcp-launch inspect SERVER TOOL`: what shows a change field by field, and how to approve it.
fn inspect_command(change: &ChangedTool) -> String {
    format!("mcp-launch inspect {} {}", change.server, change.tool)
}

/// One line per hit marked `!`: what changed is the user's to review before a call.
fn print_changes(found: &Found<'_>) -> Result<(), CliError> {
    for change in (0..found.hits.len()).filter_map(|i| found.change(i)) {
        let served = match change.withheld {
            true => "withheld by `pin: strict` until approved",
            false => "served as it is now",
        };
        output::warn(&format!(
            "! {} {} changed since you approved it ({served}): `{}` shows how; `mcp-launch tool approve {} {}` approves it",
            change.server,
            change.tool,
            inspect_command(change),
            change.server,
            change.tool
        ))?;
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
