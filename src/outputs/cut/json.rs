//! JSON cut after whole array elements or object members (entering a container or string
//! only when enough budget is left for it), so what is kept is still valid JSON; or by
//! shortening arrays only.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::outputs::measure::{cost_within, prefix_within, tokens};

/// JSON larger than this is cut as text lines: parsing it whole would cost more memory than
/// the cut saves.
const JSON_PARSE_BYTES: usize = 64 << 20;

/// A container or string is entered (rather than dropped whole) only when at least this
/// many tokens are left for it: a few tokens of a nested value help no one.
const MIN_DESCEND_TOKENS: usize = 24;

/// `text` as JSON when it is one object or array (and not too large to parse).
pub fn parse_json_text(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if text.len() > JSON_PARSE_BYTES || !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// What one level of a JSON cut dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JsonCutAt {
    /// The JSONPath of the container (or string) cut: `$`, `$.results`, `$[0].text`.
    pub path: String,
    /// Whole elements / members (or, for a string, bytes) kept.
    pub kept: usize,
    /// Elements / members / bytes there were.
    pub total: usize,
    /// `items`, `members` or `bytes`.
    pub unit: &'static str,
}

/// A JSON value cut to a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonCut {
    /// What is kept: valid JSON, a prefix of each cut container.
    pub value: Value,
    /// The cuts, outermost first.
    pub cuts: Vec<JsonCutAt>,
}

/// Cuts `value` to at most `limit` tokens (compact JSON); `None` when it fits.
pub fn cut_json(value: &Value, limit: usize) -> Option<JsonCut> {
    if fits(value, limit) {
        return None;
    }
    let cut = within(limit, |target, cuts| {
        let kept = shrink(value, target, "$", cuts).map(|(v, _)| v);
        Some(kept.unwrap_or_else(|| empty_like(value)))
    });
    Some(cut.unwrap_or_else(|| JsonCut {
        value: empty_like(value),
        cuts: vec![JsonCutAt {
            path: "$".into(),
            kept: 0,
            total: size_of(value),
            unit: unit_of(value),
        }],
    }))
}

/// What [`cut_json_arrays`] made of a value.
#[derive(Debug, Clone, PartialEq)]
pub enum ArraysCut {
    /// It fits: nothing to cut.
    Fits,
    /// Arrays shortened (every object member and string kept whole) to fit.
    Cut(JsonCut),
    /// Shortening arrays cannot bring it within the budget (what is not in an array is over).
    Over,
}

/// Cuts `value` to at most `limit` tokens by shortening arrays only (trailing elements
/// dropped, at any depth): object members and strings are kept whole, so a value that
/// conformed to a cut-tolerant schema (`catalog::is_cut_tolerant`) still does.
pub fn cut_json_arrays(value: &Value, limit: usize) -> ArraysCut {
    if fits(value, limit) {
        return ArraysCut::Fits;
    }
    match within(limit, |target, cuts| {
        shrink_arrays(value, target, "$", cuts).map(|(v, _)| v)
    }) {
        Some(cut) => ArraysCut::Cut(cut),
        None => ArraysCut::Over,
    }
}

fn fits(value: &Value, limit: usize) -> bool {
    let compact = value.to_string();
    compact.len() <= limit || cost_within(&compact, limit).is_some()
}

/// The first cut `shrink(target, cuts)` makes that is within `limit` once joined: pieces
/// counted apart may tokenize a little differently joined, so each miss is retried with the
/// overshoot taken off the target. `None` when `shrink` gives up or four tries miss.
fn within(
    limit: usize,
    shrink: impl Fn(usize, &mut Vec<JsonCutAt>) -> Option<Value>,
) -> Option<JsonCut> {
    let mut target = limit;
    for _ in 0..4 {
        let mut cuts = Vec::new();
        let value = shrink(target, &mut cuts)?;
        let cost = tokens(&value.to_string());
        if cost <= limit {
            cuts.reverse();
            return Some(JsonCut { value, cuts });
        }
        if target == 0 {
            return None;
        }
        target = target.saturating_sub(cost - limit + 2);
    }
    None
}

fn empty_like(value: &Value) -> Value {
    match value {
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Object(_) => Value::Object(Map::new()),
        Value::String(_) => Value::String(String::new()),
        other => other.clone(),
    }
}

fn size_of(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.len(),
        Value::Object(members) => members.len(),
        Value::String(s) => s.len(),
        _ => 1,
    }
}

fn unit_of(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "members",
        Value::String(_) => "bytes",
        _ => "items",
    }
}

fn is_divisible(value: &Value) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_) | Value::String(_))
}

/// How a JSON value may be cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Array elements, object members, strings ([`shrink`]).
    Any,
    /// Array elements only ([`shrink_arrays`]).
    ArraysOnly,
}

impl Mode {
    fn shrink(
        self,
        value: &Value,
        limit: usize,
        path: &str,
        cuts: &mut Vec<JsonCutAt>,
    ) -> Option<(Value, usize)> {
        match self {
            Mode::Any => shrink(value, limit, path, cuts),
            Mode::ArraysOnly => shrink_arrays(value, limit, path, cuts),
        }
    }

    /// Whether an element too big for what is left may be entered and cut itself.
    fn can_enter(self, value: &Value) -> bool {
        match self {
            Mode::Any => is_divisible(value),
            Mode::ArraysOnly => matches!(value, Value::Array(_) | Value::Object(_)),
        }
    }
}

/// The largest prefix of an array's `items` within `limit` tokens and its cost (a first
/// element too big for the budget entered and cut as `mode` allows), or `None` when not
/// even the brackets fit.
fn shrink_items(
    items: &[Value],
    limit: usize,
    path: &str,
    cuts: &mut Vec<JsonCutAt>,
    mode: Mode,
) -> Option<(Value, usize)> {
    let mut kept = Vec::new();
    let mut used = 2;
    if used > limit {
        return None;
    }
    let mut whole = items.len();
    for (i, item) in items.iter().enumerate() {
        let sep = usize::from(!kept.is_empty());
        let room = limit.saturating_sub(used + sep);
        if let Some(cost) = cost_within(&item.to_string(), room) {
            kept.push(item.clone());
            used += cost + sep;
            continue;
        }
        whole = kept.len();
        if kept.is_empty() && room >= MIN_DESCEND_TOKENS && mode.can_enter(item) {
            let inner = format!("{path}[{i}]");
            if let Some((part, cost)) = mode.shrink(item, room, &inner, cuts) {
                kept.push(part);
                used += cost + sep;
            }
        }
        break;
    }
    if whole < items.len() {
        cuts.push(JsonCutAt {
            path: path.to_string(),
            kept: whole,
            total: items.len(),
            unit: "items",
        });
    }
    Some((Value::Array(kept), used))
}

/// The largest prefix of `value` within `limit` tokens and its cost, or `None` when not even
/// its brackets fit. Cuts are pushed innermost first.
fn shrink(
    value: &Value,
    limit: usize,
    path: &str,
    cuts: &mut Vec<JsonCutAt>,
) -> Option<(Value, usize)> {
    match value {
        Value::Array(items) => shrink_items(items, limit, path, cuts, Mode::Any),
        Value::Object(members) => {
            let mut kept = Map::new();
            let mut used = 2;
            if used > limit {
                return None;
            }
            let mut whole = members.len();
            for (key, member) in members {
                let sep = usize::from(!kept.is_empty());
                let room = limit.saturating_sub(used + sep);
                if let Some(cost) = cost_within(&member_text(key, member), room) {
                    kept.insert(key.clone(), member.clone());
                    used += cost + sep;
                    continue;
                }
                whole = kept.len();
                let key_cost = key_cost(key);
                let room = room.saturating_sub(key_cost);
                if room >= MIN_DESCEND_TOKENS && is_divisible(member) {
                    let inner = format!("{path}{}", member_path(key));
                    if let Some((part, cost)) = shrink(member, room, &inner, cuts) {
                        kept.insert(key.clone(), part);
                        used += cost + key_cost + sep;
                    }
                }
                break;
            }
            if whole < members.len() {
                cuts.push(JsonCutAt {
                    path: path.to_string(),
                    kept: whole,
                    total: members.len(),
                    unit: "members",
                });
            }
            Some((Value::Object(kept), used))
        }
        Value::String(text) => {
            // Quotes and the ellipsis that says the string goes on.
            let room = limit.checked_sub(3)?;
            let end = prefix_within(text, room);
            cuts.push(JsonCutAt {
                path: path.to_string(),
                kept: end,
                total: text.len(),
                unit: "bytes",
            });
            let part = Value::String(format!("{}…", &text[..end]));
            let cost = tokens(&part.to_string());
            Some((part, cost))
        }
        other => {
            let cost = cost_within(&other.to_string(), limit)?;
            Some((other.clone(), cost))
        }
    }
}

/// [`shrink`] that only shortens arrays: the largest value within `limit` tokens that keeps
/// every object member and every string whole, or `None` when there is none.
fn shrink_arrays(
    value: &Value,
    limit: usize,
    path: &str,
    cuts: &mut Vec<JsonCutAt>,
) -> Option<(Value, usize)> {
    match value {
        Value::Array(items) => shrink_items(items, limit, path, cuts, Mode::ArraysOnly),
        Value::Object(members) => {
            // Every member stays: each gets what the ones after it leave at their smallest.
            let smallest: Vec<usize> = members
                .iter()
                .map(|(key, member)| key_cost(key) + least_cost(member))
                .collect();
            let mut rest: usize = smallest.iter().sum::<usize>() + members.len();
            let mut kept = Map::new();
            let mut used = 2;
            for ((key, member), least) in members.iter().zip(smallest) {
                rest -= least + 1;
                let sep = usize::from(!kept.is_empty());
                let room = limit.checked_sub(used + sep + rest)?;
                if let Some(cost) = cost_within(&member_text(key, member), room) {
                    kept.insert(key.clone(), member.clone());
                    used += cost + sep;
                    continue;
                }
                let key_cost = key_cost(key);
                let inner = format!("{path}{}", member_path(key));
                let (part, cost) =
                    shrink_arrays(member, room.checked_sub(key_cost)?, &inner, cuts)?;
                kept.insert(key.clone(), part);
                used += cost + key_cost + sep;
            }
            (used <= limit).then_some((Value::Object(kept), used))
        }
        other => {
            let cost = cost_within(&other.to_string(), limit)?;
            Some((other.clone(), cost))
        }
    }
}

/// `"key":member`, as it is in compact JSON.
fn member_text(key: &str, member: &Value) -> String {
    format!("{}:{member}", Value::String(key.to_string()))
}

/// Tokens of a member's key and colon, as [`shrink`] and [`shrink_arrays`] count them.
fn key_cost(key: &str) -> usize {
    tokens(&Value::String(key.to_string()).to_string()) + 1
}

/// The least an arrays-only cut of `value` can cost (every array in it emptied), counted as
/// [`shrink_arrays`] counts: within this, it finds a cut.
pub(super) fn least_cost(value: &Value) -> usize {
    match value {
        Value::Array(_) => 2,
        Value::Object(members) => {
            let inner: usize = members
                .iter()
                .map(|(key, member)| key_cost(key) + least_cost(member) + 1)
                .sum();
            2 + inner
        }
        other => tokens(&other.to_string()),
    }
}

/// `.key` for plain keys, `['key']` for the rest.
pub(super) fn member_path(key: &str) -> String {
    let plain = !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!(".{key}")
    } else {
        format!("['{}']", key.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}
