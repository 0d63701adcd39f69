use super::json::member_path;
use super::*;
use crate::outputs::measure::tokens;
use serde_json::{json, Value};

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
