//! Cutting at clean boundaries: text after a whole line (inside a line only when the first
//! line alone is over, and then on a character boundary), JSON after whole array elements or
//! object members, so what is kept is still valid JSON.

use serde::Serialize;
use serde_json::{Map, Value};

use super::measure::{cost_within, prefix_within, tokens};

/// JSON larger than this is cut as text lines: parsing it whole would cost more memory than
/// the cut saves.
const JSON_PARSE_BYTES: usize = 64 << 20;

/// A container or string is entered (rather than dropped whole) only when at least this
/// many tokens are left for it: a few tokens of a nested value help no one.
const MIN_DESCEND_TOKENS: usize = 24;

/// Where a text was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextCut {
    /// Bytes kept (a prefix of the text, ending on a character boundary).
    pub end: usize,
    /// Whole lines kept.
    pub kept_lines: usize,
    /// True when the first line alone was over and only its beginning is kept.
    pub is_mid_line: bool,
}

/// Cuts `text` to at most `limit` tokens after a whole line; `None` when it fits.
pub fn cut_text(text: &str, limit: usize) -> Option<TextCut> {
    if text.len() <= limit {
        return None;
    }
    let (mut used, mut end, mut lines) = (0usize, 0usize, 0usize);
    for line in text.split_inclusive('\n') {
        match cost_within(line, limit - used) {
            Some(cost) => {
                used += cost;
                end += line.len();
                lines += 1;
            }
            None => break,
        }
    }
    if end == text.len() {
        return None;
    }
    // Lines counted one by one may tokenize a little differently joined: check, drop lines.
    while lines > 0 && tokens(&text[..end]) > limit {
        end = text[..end - 1].rfind('\n').map_or(0, |i| i + 1);
        lines -= 1;
    }
    if lines == 0 {
        return Some(TextCut {
            end: prefix_within(text, limit),
            kept_lines: 0,
            is_mid_line: true,
        });
    }
    Some(TextCut {
        end,
        kept_lines: lines,
        is_mid_line: false,
    })
}

/// The lines of `text` (a last line without a newline counts).
pub fn count_lines(text: &[u8]) -> usize {
    let newlines = text.iter().filter(|b| **b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with(b"\n"))
}

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
fn least_cost(value: &Value) -> usize {
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
fn member_path(key: &str) -> String {
    let plain = !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!(".{key}")
    } else {
        format!("['{}']", key.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_cut_after_a_whole_line() {
        let text: String = (0..2000).map(|i| format!("line number {i}\n")).collect();
        let cut = cut_text(&text, 100).expect("over the budget");
        assert!(!cut.is_mid_line);
        assert!(cut.kept_lines > 5);
        assert!(text[..cut.end].ends_with('\n'));
        assert_eq!(count_lines(&text.as_bytes()[..cut.end]), cut.kept_lines);
        assert!(tokens(&text[..cut.end]) <= 100);
        assert_eq!(cut_text("short\ntext\n", 100), None);
    }

    #[test]
    fn a_long_first_line_is_cut_on_a_character_boundary() {
        let text = "日本語のテキスト".repeat(4000) + "\nsecond\n";
        let cut = cut_text(&text, 50).expect("over");
        assert!(cut.is_mid_line);
        assert!(text.is_char_boundary(cut.end) && cut.end > 0);
        assert!(tokens(&text[..cut.end]) <= 50);
    }

    #[test]
    fn json_keeps_whole_elements_and_stays_valid() {
        let items: Vec<Value> = (0..500)
            .map(|i| json!({"id": i, "name": format!("item {i}"), "tags": ["a", "b"]}))
            .collect();
        let value = json!({"count": 500, "results": items});
        let cut = cut_json(&value, 300).expect("over");
        let text = cut.value.to_string();
        let reparsed: Value = serde_json::from_str(&text).expect("valid JSON");
        assert!(tokens(&text) <= 300);
        assert_eq!(reparsed["count"], 500);
        let kept = reparsed["results"].as_array().unwrap();
        assert!(!kept.is_empty() && kept.len() < 500);
        assert_eq!(kept[0], value["results"][0], "elements are whole");
        assert_eq!(
            *cut.cuts.last().unwrap(),
            JsonCutAt {
                path: "$.results".into(),
                kept: kept.len(),
                total: 500,
                unit: "items"
            }
        );
        assert_eq!(cut_json(&json!({"a": 1}), 300), None);
    }

    #[test]
    fn a_huge_string_member_is_cut_inside_and_marked() {
        let value = json!({"path": "x.txt", "content": "héllo wörld ".repeat(10_000)});
        let cut = cut_json(&value, 200).unwrap();
        let text = cut.value.to_string();
        assert!(tokens(&text) <= 200);
        assert_eq!(cut.value["path"], "x.txt");
        assert!(cut.value["content"].as_str().unwrap().ends_with('…'));
        assert_eq!(cut.cuts.last().unwrap().path, "$.content");
        assert_eq!(member_path("a b"), "['a b']");
    }

    #[test]
    fn an_arrays_only_cut_keeps_every_member_and_string_whole() {
        let items: Vec<Value> = (0..400)
            .map(|i| json!({"id": i, "path": format!("src/file_{i}.rs"), "lines": [1, 2, 3]}))
            .collect();
        let value = json!({
            "query": "fn main",
            "summary": {"total": 400, "note": "searched 9 roots", "roots": ["a", "b"]},
            "results": items,
            "trailer": "end"
        });
        let ArraysCut::Cut(cut) = cut_json_arrays(&value, 300) else {
            panic!("over the budget, and arrays can bring it within")
        };
        assert!(tokens(&cut.value.to_string()) <= 300);
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&cut.value), keys(&value), "every member, in order");
        assert_eq!(cut.value["query"], "fn main");
        assert_eq!(
            cut.value["trailer"], "end",
            "members after the cut array stay"
        );
        assert_eq!(cut.value["summary"]["total"], 400);
        let kept = cut.value["results"].as_array().unwrap();
        assert!(!kept.is_empty() && kept.len() < 400);
        assert!(
            kept.iter().zip(items_of(&value)).all(|(k, v)| k == v),
            "a prefix of whole items"
        );
        assert!(cut
            .cuts
            .iter()
            .any(|c| c.path == "$.results" && c.unit == "items"));
        assert!(cut.cuts.iter().all(|c| c.unit == "items"), "{:?}", cut.cuts);

        assert_eq!(cut_json_arrays(&json!({"a": [1]}), 300), ArraysCut::Fits);
        // A long string outside any array cannot be cut this way.
        let text = json!({"content": "word ".repeat(5000), "hits": [1, 2, 3]});
        assert_eq!(cut_json_arrays(&text, 200), ArraysCut::Over);
        // Inside an array it goes with its element.
        let lines = json!({"lines": vec!["word ".repeat(50); 200]});
        let ArraysCut::Cut(cut) = cut_json_arrays(&lines, 200) else {
            panic!()
        };
        assert!(cut.value["lines"].as_array().unwrap().len() < 200);
    }

    fn items_of(value: &Value) -> &Vec<Value> {
        value["results"].as_array().unwrap()
    }

    #[test]
    fn an_arrays_only_cut_enters_a_first_element_too_big_for_the_budget() {
        let value = json!({"pages": [{"title": "one", "rows": (0..3000).collect::<Vec<_>>()}]});
        let ArraysCut::Cut(cut) = cut_json_arrays(&value, 100) else {
            panic!()
        };
        assert!(tokens(&cut.value.to_string()) <= 100);
        assert_eq!(cut.value["pages"][0]["title"], "one");
        let rows = cut.value["pages"][0]["rows"].as_array().unwrap();
        assert!(!rows.is_empty() && rows.len() < 3000);
        let paths: Vec<&str> = cut.cuts.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["$.pages", "$.pages[0].rows"]);
    }

    #[test]
    fn a_top_level_array_of_one_giant_element_is_entered() {
        let value = json!([{"rows": (0..3000).collect::<Vec<_>>()}]);
        let cut = cut_json(&value, 100).unwrap();
        assert!(tokens(&cut.value.to_string()) <= 100);
        assert!(!cut.value[0]["rows"].as_array().unwrap().is_empty());
        assert_eq!(cut.cuts[0].path, "$");
        assert_eq!(cut.cuts[1].path, "$[0]");
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// True when `cut` is `whole` with some arrays' trailing elements dropped (the last kept
    /// one maybe cut the same way).
    fn only_arrays_shorter(whole: &Value, cut: &Value) -> bool {
        match (whole, cut) {
            (Value::Object(w), Value::Object(c)) => {
                w.len() == c.len()
                    && w.iter()
                        .zip(c)
                        .all(|((wk, wv), (ck, cv))| wk == ck && only_arrays_shorter(wv, cv))
            }
            (Value::Array(w), Value::Array(c)) => {
                c.len() <= w.len() && w.iter().zip(c).all(|(wv, cv)| only_arrays_shorter(wv, cv))
            }
            (w, c) => w == c,
        }
    }

    /// Any JSON value up to a few levels deep, with non-ASCII strings.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-zé日🙂 ,\n]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 200, 12, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..12).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{1,6}", inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Whatever the text and budget: a prefix, on a character boundary, within the
        /// budget, after a whole line unless the first line alone is over.
        #[test]
        fn text_cuts_are_clean_prefixes(text in "[a-zé日🙂 \n]{0,3000}", limit in 1usize..200) {
            if let Some(cut) = cut_text(&text, limit) {
                prop_assert!(text.is_char_boundary(cut.end));
                prop_assert!(tokens(&text[..cut.end]) <= limit);
                if cut.is_mid_line {
                    prop_assert!(!text[..cut.end].contains('\n'));
                } else {
                    prop_assert!(text[..cut.end].ends_with('\n'));
                    prop_assert_eq!(count_lines(&text.as_bytes()[..cut.end]), cut.kept_lines);
                }
            } else {
                prop_assert!(tokens(&text) <= limit || text.split_inclusive('\n').count() > 1);
            }
        }

        /// Whatever the value and budget: an arrays-only cut is within the budget and keeps
        /// every object member and every string (or says it cannot).
        #[test]
        fn arrays_only_cuts_drop_only_array_elements(value in any_json(), limit in 8usize..300) {
            match cut_json_arrays(&value, limit) {
                ArraysCut::Fits => prop_assert!(tokens(&value.to_string()) <= limit),
                ArraysCut::Over => prop_assert!(least_cost(&value) > limit / 2, "{value}"),
                ArraysCut::Cut(cut) => {
                    prop_assert!(tokens(&cut.value.to_string()) <= limit);
                    prop_assert!(only_arrays_shorter(&value, &cut.value), "{value} -> {}", cut.value);
                }
            }
        }

        /// Whatever the value and budget: what is kept is valid JSON within the budget.
        #[test]
        fn json_cuts_stay_valid_and_within(value in any_json(), limit in 8usize..300) {
            if let Some(cut) = cut_json(&value, limit) {
                let text = cut.value.to_string();
                prop_assert!(serde_json::from_str::<Value>(&text).is_ok());
                prop_assert!(tokens(&text) <= limit, "{} > {limit}: {text}", tokens(&text));
            } else {
                prop_assert!(tokens(&value.to_string()) <= limit);
            }
        }
    }
}
