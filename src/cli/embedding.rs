//! `mcp-launch model embed [--background]`, the detached embedder `list` and `up` start, and
//! what `search` does about vectors that are not ready: one embedder at a time
//! (`catalog::embedder`), progress shown where a terminal is attached.

use std::io::{IsTerminal, Write};

use clap::Args;
use serde_json::json;

use crate::catalog::embedder::{self, Progress, Turn};
use crate::catalog::SearchCatalog;
use crate::model;
use crate::output::{self, style};
use crate::search::semantic::{DocVectors, Model};

use super::{CliError, GlobalArgs, Loaded, Outcome};

/// Flags of `model embed`.
#[derive(Debug, Args)]
pub(super) struct EmbedArgs {
    /// Leave at once when another embedder is at work (it does the work): what `list`, `up`
    /// and `search` start in the background. Without it, wait for that one, then embed what
    /// it left.
    #[arg(long)]
    background: bool,
}

/// Runs `model embed`.
pub(super) async fn run(args: EmbedArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let Some(dir) = model::locate()? else {
        return Err(CliError::Usage {
            message: "no embedding model is installed".into(),
            help: "run `mcp-launch model install` first".into(),
        });
    };
    let opened = Model::open(&dir)?;
    let loaded = super::load_config(global)?;
    let turn = if args.background {
        match embedder::try_turn(&opened) {
            Ok(turn) => turn,
            Err(progress) => return say_busy(progress, global),
        }
    } else {
        tokio::task::block_in_place(|| wait_for_turn(&opened, global.json))
    };
    let (entries, overrides) = super::server::entries_with_overrides(&loaded)?;
    let catalog = SearchCatalog::open(&entries, &overrides, false).await;
    let embedded = std::sync::atomic::AtomicUsize::new(0);
    let started = std::time::Instant::now();
    let show = progress_line(global.json);
    tokio::task::block_in_place(|| {
        crate::catalog::search_vectors(&opened, &catalog, &turn, &|p: Progress| {
            embedded.store(p.total, std::sync::atomic::Ordering::Relaxed);
            show(p);
        })
    });
    let embedded = embedded.into_inner();
    if global.json {
        output::print_json(&json!({
            "tools": catalog.index.len(),
            "embedded": embedded,
            "ms": started.elapsed().as_millis() as u64,
        }))?;
    } else {
        anstream::println!(
            "{} tools, {embedded} embedded now, in {:.1} s",
            catalog.index.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(Outcome::Success)
}

/// `model embed --background` found another embedder at work: nothing to do here.
fn say_busy(progress: Option<Progress>, global: &GlobalArgs) -> Result<Outcome, CliError> {
    if global.json {
        output::print_json(&json!({
            "embedded": 0,
            "busy": progress.map_or(json!(true), |p| json!({
                "pid": p.pid, "done": p.done, "total": p.total,
            })),
        }))?;
    } else {
        anstream::println!("another embedder is at work{}; nothing to do", of(progress));
    }
    Ok(Outcome::Success)
}

/// The turn to embed, waiting (and saying so, where a person reads) for an embedder at work.
/// Blocks: call it off the async workers.
fn wait_for_turn(model: &Model, quiet: bool) -> Turn {
    if let Some(progress) = embedder::at_work(model).filter(|_| !quiet) {
        let dim = style::DIM;
        anstream::eprintln!(
            "{dim}waiting for the embedder at work{}{dim:#}",
            of(progress)
        );
    }
    embedder::turn(model)
}

/// ` (pid 42, 1,200 of 10,000 tools)`, or nothing before the embedder wrote its note.
fn of(progress: Option<Progress>) -> String {
    progress.map_or(String::new(), |p| {
        format!(" (pid {}, {} of {} tools)", p.pid, p.done, p.total)
    })
}

/// Shows an embedding's progress on one line of stderr when it is a terminal (and not
/// `quiet`); nothing otherwise (a background embedder's log, `--json`).
pub(super) fn progress_line(quiet: bool) -> impl Fn(Progress) + Sync {
    let shown = !quiet && std::io::stderr().is_terminal();
    move |p: Progress| {
        if !shown {
            return;
        }
        let dim = style::DIM;
        let end = if p.done >= p.total { "\n" } else { "" };
        let mut err = anstream::stderr().lock();
        let _ = write!(
            err,
            "\r{dim}embedding tools: {} of {} (once; kept in the cache){dim:#}{end}",
            p.done, p.total
        );
        let _ = err.flush();
    }
}

/// After a preflight that checked servers live: when a model is installed, embed the tools in
/// a detached `model embed --background` (the preflight's answer is not kept waiting; nothing
/// is started when every server was answered from the index, and the embedder leaves at once
/// when another is at work).
pub(super) fn in_background(loaded: &Loaded, checked_live: bool) {
    if !checked_live || !matches!(model::locate(), Ok(Some(_))) {
        return;
    }
    spawn_embedder(loaded);
}

fn spawn_embedder(loaded: &Loaded) {
    let Ok(program) = std::env::current_exe() else {
        return;
    };
    let mut args = super::config_args(loaded);
    args.extend(["model", "embed", "--background"].map(String::from));
    let dir = crate::files::state_dir();
    let _ = std::fs::create_dir_all(&dir);
    let log = dir.join("embed.log");
    match crate::process::spawn_detached(&program, &args, &log) {
        Ok(pid) => tracing::debug!(pid, "embedding tools in the background"),
        Err(e) => tracing::debug!(error = %e, "could not start the background embedding"),
    }
}

/// The catalog's tool vectors for a search by meaning. Ready ones (every tool embedded) are
/// read at once. Otherwise, with `wait`, this process waits for the embedder at work and
/// embeds what is left in the foreground; without, `Err` with the one-line note to show, and
/// an embedder is started in the background unless one is at work. Blocks: call it off the
/// async workers.
pub(super) fn search_vectors(
    model: &Model,
    catalog: &SearchCatalog,
    loaded: &Loaded,
    wait: bool,
    quiet: bool,
) -> Result<DocVectors, String> {
    let missing = match crate::catalog::ready_search_vectors(model, catalog) {
        Ok(ready) => return Ok(ready),
        Err(missing) => missing,
    };
    if wait {
        let turn = wait_for_turn(model, quiet);
        let show = progress_line(quiet);
        return Ok(crate::catalog::search_vectors(model, catalog, &turn, &show));
    }
    let work = match embedder::at_work(model) {
        Some(progress) => format!("an embedder is at work{}", of(progress)),
        None => {
            spawn_embedder(loaded);
            "embedding them in the background".to_string()
        }
    };
    Err(format!(
        "ranked by words: {missing} of {} tools are not embedded yet ({work}); --wait ranks by meaning too, once they are",
        catalog.index.len()
    ))
}
