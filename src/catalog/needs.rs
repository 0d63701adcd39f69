//! What a tool needs of its client. Servers may list some tools only to clients offering
//! more (server-everything lists 17 tools to a client offering sampling, elicitation and roots,
//! 13 to one offering nothing), and the tool index is shared by paths that offer different
//! things: the daemon and the gateway relay those requests to their clients, the command line
//! offers nothing. So an index entry keeps, beside the tools, the capabilities of the richest
//! listing (`listed_with`) and of the plainest (`plainest`), and the tools only the richer one
//! showed with the capabilities each needs (learned by comparing the two). Each path is then
//! answered with the tools it can call ([`visible`]); a path offering less than the plainest
//! listing known is not answered from the index at all (it lists live, which teaches the
//! index what it lacked).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::tool;

/// The capabilities a tool needs beyond the plainest listing, by tool name.
pub type Needs = BTreeMap<String, Vec<String>>;

/// The capability names declared in `declared` (`None`, an index written before listings
/// recorded them, reads as none).
pub fn names(declared: Option<&Value>) -> BTreeSet<String> {
    declared
        .and_then(Value::as_object)
        .map(|caps| {
            caps.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// A listing as the index keeps it: tools (with their token counts, parallel or empty), the
/// capabilities of the richest and plainest listings behind it, and what the tools only the
/// richer one showed need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// Every tool known, the richer listing's extra ones included.
    pub tools: Vec<Value>,
    /// Token cost of each tool, parallel to `tools` (empty if not counted).
    pub tool_tokens: Vec<usize>,
    /// The client capabilities of the richest listing.
    pub listed_with: Option<Value>,
    /// The client capabilities of the plainest listing, when plainer than `listed_with`.
    pub plainest: Option<Value>,
    /// The tools only a richer listing showed, with the capabilities each needs.
    pub needs: Needs,
}

impl Listing {
    /// The tools a client offering `offered` saw listed before (stale names are counted
    /// against these only: a plainer listing lacking the richer one's extra tools is no
    /// change).
    fn seen_by(&self, offered: &BTreeSet<String>) -> BTreeSet<String> {
        let plainest = names(self.plainest.as_ref().or(self.listed_with.as_ref()));
        if !offered.is_superset(&plainest) {
            // Listed only for clients offering more: what this one saw is not known.
            return BTreeSet::new();
        }
        self.tools
            .iter()
            .map(tool::name)
            .filter(|name| self.can_call(name, offered))
            .map(str::to_owned)
            .collect()
    }

    /// Whether a client offering `offered` can call `name` (as far as the listings tell).
    fn can_call(&self, name: &str, offered: &BTreeSet<String>) -> bool {
        self.needs
            .get(name)
            .is_none_or(|needed| needed.iter().all(|c| offered.contains(c)))
    }
}

/// `previous` (the same server identity) updated with a new listing `now`, and the names
/// the new listing's client saw before and no longer sees. A listing richer than every one
/// known adds the tools only it shows as needing the capabilities it adds; a plainer one keeps
/// the richer one's extra tools (as needing what it lacks); one neither richer nor plainer
/// replaces what was known.
pub fn merge(previous: Option<&Listing>, now: Listing) -> (Listing, Vec<String>) {
    let offered = names(now.listed_with.as_ref());
    let Some(previous) = previous else {
        return (now, Vec::new());
    };
    let richest = names(previous.listed_with.as_ref());
    let plainest = names(previous.plainest.as_ref().or(previous.listed_with.as_ref()));
    let current: BTreeSet<String> = now
        .tools
        .iter()
        .map(tool::name)
        .map(str::to_owned)
        .collect();
    let vanished = |seen: BTreeSet<String>| -> Vec<String> {
        seen.into_iter().filter(|n| !current.contains(n)).collect()
    };
    if offered == richest || offered.is_superset(&richest) {
        // As rich as any known, or richer: its tools are the whole set.
        let added: BTreeSet<&str> = offered.difference(&richest).map(String::as_str).collect();
        let stale = vanished(previous.seen_by(&offered));
        let mut needs: Needs = previous
            .needs
            .iter()
            .filter(|(name, _)| current.contains(*name))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !added.is_empty() {
            let known: BTreeSet<&str> = previous.tools.iter().map(tool::name).collect();
            for def in now.tools.iter().filter(|t| !known.contains(tool::name(t))) {
                needs.insert(tool::name(def).to_string(), narrow(&added, def));
            }
        }
        let plainer = (offered != plainest).then(|| {
            previous
                .plainest
                .clone()
                .or_else(|| previous.listed_with.clone())
        });
        let listing = Listing {
            plainest: plainer.flatten(),
            needs,
            ..now
        };
        return (listing, stale);
    }
    if !richest.is_superset(&offered) {
        // Neither richer nor plainer: start again from this listing.
        return (now, Vec::new());
    }
    // Plainer than the richest: keep the richer listing's extra tools.
    let seen = previous.seen_by(&offered);
    let stale = vanished(seen.clone());
    let lacking: BTreeSet<&str> = richest.difference(&offered).map(String::as_str).collect();
    let mut listing = Listing {
        listed_with: previous.listed_with.clone(),
        plainest: match offered.is_subset(&plainest) {
            true => now.listed_with.clone(),
            false => previous.plainest.clone(),
        },
        needs: Needs::new(),
        ..now
    };
    let counted = listing.tool_tokens.len() == listing.tools.len()
        && previous.tool_tokens.len() == previous.tools.len();
    for (i, def) in previous.tools.iter().enumerate() {
        let name = tool::name(def);
        if current.contains(name) || seen.contains(name) {
            // Listed now, or gone from what this client sees (stale).
            continue;
        }
        let needed = previous
            .needs
            .get(name)
            .cloned()
            .unwrap_or_else(|| narrow(&lacking, def));
        listing.needs.insert(name.to_string(), needed);
        listing.tools.push(def.clone());
        if counted {
            listing.tool_tokens.push(previous.tool_tokens[i]);
        }
    }
    if !counted {
        listing.tool_tokens.clear();
    }
    (listing, stale)
}

/// The capabilities among `candidates` that `def` needs: the ones its name or description
/// mentions (`trigger-sampling-request` needs `sampling`), else all of them (a listing says
/// which tools came with the capabilities, not which capability brought each).
fn narrow(candidates: &BTreeSet<&str>, def: &Value) -> Vec<String> {
    let text = format!("{} {}", tool::name(def), tool::description(def)).to_lowercase();
    let mentioned: Vec<String> = candidates
        .iter()
        .filter(|c| text.contains(&c.to_lowercase()))
        .map(|c| c.to_string())
        .collect();
    if mentioned.is_empty() {
        candidates.iter().map(|c| c.to_string()).collect()
    } else {
        mentioned
    }
}

/// What a client offering `offered` gets of `listing`: the tools it can call (with their
/// counts), or `None` when the listing was made only for clients offering more than it does
/// (the index cannot tell which tools it would see: list live).
pub fn visible(listing: &Listing, offered: &Value) -> Option<(Vec<Value>, Vec<usize>)> {
    let offered = names(Some(offered));
    let plainest = names(listing.plainest.as_ref().or(listing.listed_with.as_ref()));
    if !offered.is_superset(&plainest) {
        return None;
    }
    let counted = listing.tool_tokens.len() == listing.tools.len();
    let mut tools = Vec::new();
    let mut tokens = Vec::new();
    for (i, def) in listing.tools.iter().enumerate() {
        if listing.can_call(tool::name(def), &offered) {
            tools.push(def.clone());
            if counted {
                tokens.push(listing.tool_tokens[i]);
            }
        }
    }
    Some((tools, tokens))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listing(with: Value, tools: &[&str]) -> Listing {
        Listing {
            tools: tools
                .iter()
                .map(|n| json!({"name": n, "description": ""}))
                .collect(),
            tool_tokens: vec![7; tools.len()],
            listed_with: Some(with),
            ..Listing::default()
        }
    }

    fn names_of(tools: &[Value]) -> Vec<&str> {
        tools.iter().map(tool::name).collect()
    }

    fn rich() -> Value {
        json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
    }

    #[test]
    fn a_richer_listing_after_a_plain_one_marks_its_extra_tools() {
        let plain = listing(json!({}), &["echo", "add"]);
        let (plain, _) = merge(None, plain);
        let richer = listing(rich(), &["echo", "add", "trigger-sampling-request", "x"]);
        let (merged, stale) = merge(Some(&plain), richer);
        assert!(stale.is_empty(), "{stale:?}");
        assert_eq!(merged.needs["trigger-sampling-request"], ["sampling"]);
        assert_eq!(merged.needs["x"], ["elicitation", "roots", "sampling"]);
        let (tools, tokens) = visible(&merged, &json!({})).unwrap();
        assert_eq!(names_of(&tools), ["echo", "add"]);
        assert_eq!(tokens, [7, 7]);
        let (tools, _) = visible(&merged, &rich()).unwrap();
        assert_eq!(tools.len(), 4);
    }

    #[test]
    fn a_plain_listing_after_a_rich_one_keeps_the_rich_tools_and_counts_no_stale() {
        let (rich_only, _) = merge(None, listing(rich(), &["echo", "get-roots-list"]));
        // Listed only with more than a plain client offers: not answered for it.
        assert_eq!(visible(&rich_only, &json!({})), None);
        let (merged, stale) = merge(Some(&rich_only), listing(json!({}), &["echo"]));
        assert!(stale.is_empty(), "{stale:?}");
        assert_eq!(merged.needs["get-roots-list"], ["roots"]);
        assert_eq!(names_of(&visible(&merged, &json!({})).unwrap().0), ["echo"]);
        assert_eq!(visible(&merged, &rich()).unwrap().0.len(), 2);
        // Both paths listing again change nothing, and each sees its own vanished tools.
        let (again, stale) = merge(Some(&merged), listing(rich(), &["echo", "get-roots-list"]));
        assert!(stale.is_empty());
        assert_eq!(again.needs, merged.needs);
        let (plain_again, stale) = merge(Some(&again), listing(json!({}), &[]));
        assert_eq!(stale, ["echo"]);
        assert_eq!(names_of(&plain_again.tools), ["get-roots-list"]);
    }
}
