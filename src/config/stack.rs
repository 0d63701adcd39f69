//! Stacks (one per config file) and the names users type to pick a server.
//!
//! Invariants: stack names are unique within one load (`mcp`, `mcp-2`, `mcp-3`, …); a server's
//! qualified name is its plain name unless that name appears in more than one stack, in which
//! case every server of that name is `stack/name`. Qualified names are therefore unique.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::ServerEntry;

/// The servers of one config file.
#[derive(Debug, Clone)]
pub struct Stack {
    /// Unique name derived from the file name (see [`base_name`]).
    pub name: String,
    /// The config file, resolved against the working directory.
    pub path: PathBuf,
    /// Its servers, in file order.
    pub servers: Vec<ServerEntry>,
}

/// A stack's name before deduplication: the file stem without leading dots (`.mcp.json` →
/// `mcp`, `work.json` → `work`, `mcp.config.json` → `mcp.config`); `config` when that is empty.
pub(crate) fn base_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let name = stem.trim_start_matches('.');
    if name.is_empty() {
        "config".to_string()
    } else {
        name.to_string()
    }
}

/// Names for `paths`, in order, with `-2`, `-3`, … added to repeats.
pub(crate) fn unique_names(paths: &[PathBuf]) -> Vec<String> {
    let mut taken: Vec<String> = Vec::new();
    for path in paths {
        let base = base_name(path);
        let mut name = base.clone();
        let mut suffix = 2;
        while taken.contains(&name) {
            name = format!("{base}-{suffix}");
            suffix += 1;
        }
        taken.push(name);
    }
    taken
}

/// Rewrites `qualified` on every entry: `stack/name` for names found in several stacks.
pub(crate) fn qualify(stacks: &mut [Stack]) {
    let mut stacks_per_name: BTreeMap<String, usize> = BTreeMap::new();
    for stack in stacks.iter() {
        for entry in &stack.servers {
            *stacks_per_name.entry(entry.name.clone()).or_default() += 1;
        }
    }
    for stack in stacks.iter_mut() {
        for entry in &mut stack.servers {
            entry.qualified = if stacks_per_name.get(&entry.name).copied().unwrap_or(0) > 1 {
                format!("{}/{}", stack.name, entry.name)
            } else {
                entry.name.clone()
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_drop_leading_dots_and_the_extension() {
        assert_eq!(base_name(Path::new("/p/.mcp.json")), "mcp");
        assert_eq!(base_name(Path::new("work.json")), "work");
        assert_eq!(base_name(Path::new("/p/mcp.config.json")), "mcp.config");
        assert_eq!(base_name(Path::new("/p/..hidden.json")), "hidden");
        assert_eq!(base_name(Path::new("/p/.json")), "json");
        assert_eq!(base_name(Path::new("/")), "config");
    }

    #[test]
    fn repeated_names_get_numbered_suffixes() {
        let paths = [
            PathBuf::from("/a/.mcp.json"),
            PathBuf::from("/b/mcp.json"),
            PathBuf::from("work.json"),
            PathBuf::from("/c/.claude/mcp.json"),
        ];
        assert_eq!(unique_names(&paths), ["mcp", "mcp-2", "work", "mcp-3"]);
    }

    #[test]
    fn a_suffix_never_collides_with_a_real_name() {
        let paths = [
            PathBuf::from("mcp-2.json"),
            PathBuf::from("mcp.json"),
            PathBuf::from(".mcp.json"),
        ];
        assert_eq!(unique_names(&paths), ["mcp-2", "mcp", "mcp-3"]);
    }
}
