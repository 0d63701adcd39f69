//! Scope sets as OAuth writes them (space-separated), and their union: a re-authorization asks
//! for every scope asked for before together with the ones a challenge names (SEP-2350), so a
//! step-up for one operation never loses the permissions the others need.

/// The scopes of every set in `sets`, each once, in the order first seen; `None` when there
/// are none (the `scope` parameter is then left out).
pub fn union<'a>(sets: impl IntoIterator<Item = Option<&'a str>>) -> Option<String> {
    let mut all: Vec<&str> = Vec::new();
    for scope in sets
        .into_iter()
        .flatten()
        .flat_map(str::split_ascii_whitespace)
    {
        if !all.contains(&scope) {
            all.push(scope);
        }
    }
    (!all.is_empty()).then(|| all.join(" "))
}

/// Whether every scope of `wanted` is in `held`.
pub fn covers(held: Option<&str>, wanted: &str) -> bool {
    let held: Vec<&str> = held.unwrap_or_default().split_ascii_whitespace().collect();
    wanted.split_ascii_whitespace().all(|s| held.contains(&s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_union_keeps_every_scope_once_in_order() {
        assert_eq!(
            union([Some("mcp:basic"), Some("mcp:write mcp:basic")]).as_deref(),
            Some("mcp:basic mcp:write")
        );
        assert_eq!(union([None, Some("  "), None]), None);
        assert_eq!(union([None, Some("a  b")]).as_deref(), Some("a b"));
        assert!(covers(Some("a b c"), "c a"));
        assert!(!covers(Some("a"), "a b"));
        assert!(!covers(None, "a"));
    }
}
