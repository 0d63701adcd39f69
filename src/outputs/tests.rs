//! Budgeting whole results: the envelope, the handles, and reading on.

use serde_json::{json, Value};

use super::measure::counted_on_this_thread;
use super::*;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("outputs")).unwrap();
    (dir, store)
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str().map(str::to_owned))
        .collect()
}

fn result_tokens(result: &Value) -> usize {
    tokens(&texts(result).join("\n"))
}

#[test]
fn a_small_result_passes_untouched_without_the_tokenizer() {
    let (_dir, store) = store();
    let result = text_result("hello");
    let before = counted_on_this_thread();
    let budgeted = budget_result(
        result.clone(),
        Budget::default(),
        &store,
        &ClientScope::local(),
    )
    .unwrap();
    assert_eq!(budgeted.result, result);
    assert!(!budgeted.stats.is_cut);
    assert_eq!(budgeted.stats.tokens_sent, None);
    assert_eq!(counted_on_this_thread(), before, "nothing was counted");
    // Budget 0 is off.
    let big = text_result(&"word ".repeat(50_000));
    let off = budget_result(big.clone(), Budget::new(0), &store, &ClientScope::local()).unwrap();
    assert_eq!(off.result, big);
}

#[test]
fn text_is_cut_on_lines_and_read_on_from_the_handle() {
    let (_dir, store) = store();
    let me = ClientScope::local();
    let text: String = (1..=20_000)
        .map(|i| format!("log line {i}: something happened\n"))
        .collect();
    let budget = Budget::new(500);
    let budgeted = budget_result(text_result(&text), budget, &store, &me).unwrap();
    let shown = texts(&budgeted.result);
    assert_eq!(shown.len(), 2, "the kept text and the envelope");
    let members: Vec<&String> = budgeted.result.as_object().unwrap().keys().collect();
    assert_eq!(
        members,
        ["content", "isError", "_meta"],
        "members keep their order"
    );
    assert!(shown[0].starts_with("log line 1: ") && shown[0].ends_with('\n'));
    assert!(
        result_tokens(&budgeted.result) <= 500,
        "{}",
        result_tokens(&budgeted.result)
    );
    let kept_lines = shown[0].lines().count();
    let envelope = &shown[1];
    assert!(
        envelope.contains(&format!("kept lines 1-{kept_lines} of 20,000")),
        "{envelope}"
    );
    assert!(budgeted.stats.is_cut);
    assert_eq!(budgeted.result["isError"], false);
    let handle = &budgeted.stats.handles[0];
    assert!(envelope.contains(handle.as_str()));
    let meta = &budgeted.result["_meta"][META_KEY]["cuts"][0];
    assert_eq!(meta["total"]["lines"], 20_000);
    assert_eq!(meta["kept"]["lines"], kept_lines);

    // Reading on from where the cut was, within the budget, to the end.
    let request = ReadRequest {
        offset: Some(kept_lines),
        ..Default::default()
    };
    let next = store.read(handle, &me, &request, budget).unwrap();
    assert!(next
        .text
        .starts_with(&format!("log line {}: ", kept_lines + 1)));
    assert!(tokens(&next.text) <= 500);
    assert!(next.note.contains("of 20,000"), "{}", next.note);
    let last = store
        .read(
            handle,
            &me,
            &ReadRequest {
                offset: Some(19_990),
                ..Default::default()
            },
            budget,
        )
        .unwrap();
    assert_eq!(last.text.lines().count(), 10);
    assert_eq!(last.next_offset, None);

    // grep and a limit.
    let grep = ReadRequest {
        grep: Some(r"line 1234\d:".into()),
        limit: Some(3),
        ..Default::default()
    };
    let found = store.read(handle, &me, &grep, budget).unwrap();
    assert_eq!(
        found.text.lines().next().unwrap(),
        "12340:log line 12340: something happened"
    );
    assert_eq!(found.text.lines().count(), 3);
    assert!(found.note.contains("of 10"), "{}", found.note);
    let bad = ReadRequest {
        grep: Some("(".into()),
        ..Default::default()
    };
    assert!(matches!(
        store.read(handle, &me, &bad, budget),
        Err(OutputsError::InvalidRequest { .. })
    ));
}

#[test]
fn json_text_is_cut_into_valid_json_and_read_by_jsonpath() {
    let (_dir, store) = store();
    let me = ClientScope::local();
    let rows: Vec<Value> = (0..3000)
        .map(|i| json!({"id": i, "title": format!("row {i}")}))
        .collect();
    let body = serde_json::to_string_pretty(&json!({"total": 3000, "rows": rows})).unwrap();
    let budget = Budget::new(400);
    let budgeted = budget_result(text_result(&body), budget, &store, &me).unwrap();
    let shown = texts(&budgeted.result);
    let kept: Value = serde_json::from_str(&shown[0]).expect("the kept part is valid JSON");
    assert_eq!(kept["total"], 3000);
    let n = kept["rows"].as_array().unwrap().len();
    assert!(n > 3 && n < 3000, "{n}");
    assert!(
        shown[1].contains(&format!("kept {n} of 3,000 items at $.rows")),
        "{}",
        shown[1]
    );
    assert!(
        shown[1].contains(&format!("\"jsonpath\": \"$.rows[{n}:]\"")),
        "{}",
        shown[1]
    );
    assert!(result_tokens(&budgeted.result) <= 400);

    let handle = &budgeted.stats.handles[0];
    let request = ReadRequest {
        jsonpath: Some("$.rows[2990:]".into()),
        ..Default::default()
    };
    let tail = store.read(handle, &me, &request, budget).unwrap();
    let nodes: Value = serde_json::from_str(&tail.text).unwrap();
    assert_eq!(nodes.as_array().unwrap().len(), 10);
    assert_eq!(nodes[9]["id"], 2999);
    // Kept pretty-printed: grep finds a member on its own line.
    let grep = ReadRequest {
        grep: Some(r#""title": "row 2999""#.into()),
        ..Default::default()
    };
    let found = store.read(handle, &me, &grep, budget).unwrap();
    assert_eq!(found.text.lines().count(), 1, "{}", found.text);
}

#[test]
fn utf8_is_never_split() {
    let (_dir, store) = store();
    let line = "ß日本語🙂".repeat(20_000);
    for budget in [50, 161, 333] {
        let budgeted = budget_result(
            text_result(&line),
            Budget::new(budget + ENVELOPE_TOKENS),
            &store,
            &ClientScope::local(),
        )
        .unwrap();
        let shown = &texts(&budgeted.result)[0];
        assert!(!shown.is_empty() && line.starts_with(shown.as_str()));
        assert!(
            texts(&budgeted.result)[1].contains("the first"),
            "mid-line cut says so"
        );
    }
}

/// Found by the `cut` fuzz target: a block of a type no revision defines (`"tept"`) with a
/// long `text` was kept whole — 885 tokens shown of a 224-token budget. Any block that does
/// not fit now goes behind a handle, whatever its type.
#[test]
fn a_block_of_an_unknown_type_over_the_budget_becomes_a_link() {
    let (_dir, store) = store();
    let me = ClientScope::local();
    let long = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]".repeat(200);
    for block in [
        json!({"type": "tept", "text": long}),
        json!({"text": long}),
        json!({"type": "resource_link", "uri": "file:///x", "name": "x", "description": long}),
    ] {
        let result = json!({"content": [{"type": "text", "text": "a"}, block]});
        let budgeted = budget_result(result, Budget::new(224), &store, &me).unwrap();
        let sent = tokens(&budgeted.result["content"].to_string());
        assert!(sent <= 224, "{sent} tokens of 224 for {block:.60}");
        let link = &budgeted.result["content"][1];
        assert_eq!(link["type"], "resource_link", "{link}");
        assert!(link["uri"]
            .as_str()
            .unwrap()
            .starts_with("mcp-launch://outputs/"));
    }
}

#[test]
fn images_over_the_budget_become_links_to_their_handle() {
    let (_dir, store) = store();
    let me = ClientScope::local();
    let data = "iVBORw0KGgo".repeat(10_000);
    let result = json!({"content": [
        {"type": "text", "text": "a chart"},
        {"type": "image", "data": data, "mimeType": "image/png"}
    ]});
    let budgeted = budget_result(result.clone(), Budget::default(), &store, &me).unwrap();
    let blocks = budgeted.result["content"].as_array().unwrap();
    assert_eq!(blocks[0]["text"], "a chart");
    assert_eq!(blocks[1]["type"], "resource_link");
    assert_eq!(blocks[1]["mimeType"], "image/png");
    let handle = blocks[1]["name"].as_str().unwrap();
    assert_eq!(blocks[1]["uri"], format!("mcp-launch://outputs/{handle}"));
    let read = store
        .read(handle, &me, &ReadRequest::default(), Budget::default())
        .unwrap();
    assert_eq!(
        read.to_result()["content"][0],
        result["content"][1],
        "the image, whole"
    );
    // Many images over the budget beside a long text: the links and their lines fit too.
    let mut content = vec![json!({"type": "text", "text": "word ".repeat(20_000)})];
    for _ in 0..6 {
        content.push(json!({"type": "image", "data": data, "mimeType": "image/png"}));
    }
    let budgeted =
        budget_result(json!({"content": content}), Budget::new(2000), &store, &me).unwrap();
    let sent = tokens(&budgeted.result["content"].to_string());
    assert!(sent <= 2000, "{sent}");
    assert_eq!(
        budgeted.stats.handles.len(),
        2,
        "the image is kept once (content-addressed) + the text"
    );
    // A small image stays.
    let small =
        json!({"content": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]});
    assert_eq!(
        budget_result(small.clone(), Budget::default(), &store, &me)
            .unwrap()
            .result,
        small
    );
}

#[test]
fn structured_content_is_cut_and_its_text_mirror_follows() {
    let (_dir, store) = store();
    let items: Vec<Value> = (0..2000).map(|i| json!({"n": i})).collect();
    let structured = json!({"items": items});
    let result = json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured,
    });
    let budgeted = budget_result(result, Budget::new(300), &store, &ClientScope::local()).unwrap();
    let cut = &budgeted.result["structuredContent"];
    let n = cut["items"].as_array().unwrap().len();
    assert!(n > 0 && n < 2000);
    let mirror: Value = serde_json::from_str(texts(&budgeted.result)[0].as_str()).unwrap();
    assert_eq!(&mirror, cut, "the text mirrors the cut structured content");
    assert_eq!(budgeted.stats.handles.len(), 1, "one handle for both");
    let me = ClientScope::local();
    let handle = &budgeted.stats.handles[0];
    let request = ReadRequest {
        jsonpath: Some("$.items[1999]".into()),
        ..Default::default()
    };
    let last = store.read(handle, &me, &request, Budget::new(300)).unwrap();
    assert_eq!(last.text, r#"[{"n":1999}]"#);
}

/// Issue 24 (Medium 5): `$..*` over a nested handle selected each subtree once per ancestor,
/// and every match was cloned: a 7.5 MB handle took the process to 1 GB. The selection is now
/// counted as it is written and refused past its cap, saying how to narrow it.
#[test]
fn a_jsonpath_selecting_too_many_bytes_is_refused_with_how_to_narrow_it() {
    let (_dir, store) = store();
    let me = ClientScope::local();
    // 120 nested arrays around 200 KB: `$..*` selects ~24 MB, the document is 200 KB.
    let mut doc = json!("x".repeat(200_000));
    for _ in 0..120 {
        doc = json!([doc]);
    }
    let body = doc.to_string();
    let handle = store.put(&me, Kind::Json, body.as_bytes()).unwrap();
    let all = ReadRequest {
        jsonpath: Some("$..*".into()),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let err = match store.read(&handle, &me, &all, Budget::new(0)) {
        Ok(read) => panic!("answered {} bytes: {}", read.text.len(), read.note),
        Err(err) => err,
    };
    assert!(err.to_string().contains("more than 16 MiB"), "{err}");
    assert!(err.to_string().contains("$..name"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // A narrow query over the same handle still answers, within its budget.
    let one = ReadRequest {
        jsonpath: Some("$[0][0][0]".into()),
        ..Default::default()
    };
    let read = store.read(&handle, &me, &one, Budget::new(300)).unwrap();
    assert!(read.note.contains("at $[0][0][0]"), "{}", read.note);
    assert!(tokens(&read.text) <= 300);
}

#[test]
fn read_output_arguments_and_tool_definition() {
    let (handle, request) =
        ReadRequest::from_arguments(&json!({"handle": "h_x", "offset": 3, "grep": "a"})).unwrap();
    assert_eq!(handle, "h_x");
    assert_eq!(request.offset, Some(3));
    assert_eq!(request.grep.as_deref(), Some("a"));
    assert!(ReadRequest::from_arguments(&json!({"offset": 3})).is_err());
    assert!(ReadRequest::from_arguments(&json!({"handle": "h", "offset": -1})).is_err());
    let tool = read_output_tool();
    assert_eq!(tool["inputSchema"]["required"], json!(["handle"]));
    assert!(
        tokens(&tool.to_string()) <= 90,
        "{}",
        tokens(&tool.to_string())
    );
    assert_eq!(budget_for("6k"), Some(Budget::new(6000)));
    assert_eq!(budget_for("0"), Some(Budget::new(0)));
    assert_eq!(budget_for("x"), None);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Whatever the text blocks and the budget, the result as sent (envelope included)
        /// stays within the budget, and what is kept of the first cut block is its start.
        #[test]
        fn results_with_their_envelope_fit_the_budget(
            blocks in prop::collection::vec("[a-zé日 ,{}\\[\\]\"0-9\n]{0,4000}", 1..5),
            max_tokens in 200usize..3000,
        ) {
            let (_dir, store) = store();
            let content: Vec<Value> = blocks.iter().map(|t| json!({"type": "text", "text": t})).collect();
            let result = json!({"content": content});
            let budgeted = budget_result(result, Budget::new(max_tokens), &store, &ClientScope::local()).unwrap();
            let sent = result_tokens(&budgeted.result);
            prop_assert!(sent <= max_tokens, "{sent} > {max_tokens}");
            if budgeted.stats.is_cut {
                prop_assert_eq!(budgeted.stats.handles.len(), 1);
            }
        }
    }
}

#[test]
fn a_result_within_the_whole_budget_passes_even_without_room_for_an_envelope() {
    // Between the budget less the envelope's room and the budget: nothing to cut, so no room
    // is needed (a result an inner mcp-launch already cut to the budget arrives like this).
    let (_dir, store) = store();
    let budget = Budget::new(600);
    let text = "hello ".repeat(590);
    let tokens = crate::outputs::tokens(&text);
    assert!(
        tokens > 600 - ENVELOPE_TOKENS && tokens <= 600,
        "{tokens} tokens"
    );
    let result = text_result(&text);
    let budgeted = budget_result(result.clone(), budget, &store, &ClientScope::local()).unwrap();
    assert_eq!(budgeted.result, result);
    assert!(!budgeted.stats.is_cut);
}

/// A result whose structuredContent is `structured`, mirrored as JSON text (as the spec asks).
fn structured_result(structured: &Value) -> Value {
    json!({"content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured})
}

/// `structured` (mirrored as text) budgeted to `max_tokens` for a tool whose outputSchema is
/// `schema`.
fn conforming(store: &Store, structured: &Value, max_tokens: usize, schema: &Value) -> Budgeted {
    let policy = Structured::Conforming(std::sync::Arc::new(schema.clone()));
    let result = structured_result(structured);
    let me = ClientScope::local();
    budget_result_with(result, Budget::new(max_tokens), store, &me, &policy).unwrap()
}

#[test]
fn a_conforming_cut_shortens_arrays_only_and_keeps_the_schema() {
    let (_dir, store) = store();
    let me = ClientScope::local();
    let schema = json!({"type": "object", "required": ["query", "hits"],
        "properties": {"query": {"type": "string"}, "hits": {"type": "array",
            "items": {"type": "object", "required": ["path"]}}},
        "additionalProperties": false});
    let hits: Vec<Value> = (0..2000)
        .map(|i| json!({"path": format!("src/mod_{i}.rs"), "line": i}))
        .collect();
    let structured = json!({"query": "budget", "hits": hits});
    let budgeted = conforming(&store, &structured, 500, &schema);
    let sent = &budgeted.result["structuredContent"];
    let validator = crate::catalog::schema_validator(&schema).unwrap();
    assert!(validator.is_valid(sent), "{sent}");
    assert_eq!(sent["query"], "budget");
    let kept = sent["hits"].as_array().unwrap().len();
    assert!(kept > 0 && kept < 2000, "{kept}");
    assert_eq!(
        texts(&budgeted.result)[0],
        sent.to_string(),
        "the mirror says what the cut says"
    );
    let cuts = &budgeted.result["_meta"][META_KEY]["cuts"];
    assert_eq!(cuts[0]["part"], "structuredContent", "{cuts}");
    assert!(budgeted.stats.is_cut);

    // The same budget cutting as any JSON would have dropped members the schema requires.
    let loose = budget_result(
        structured_result(&json!({"hits": structured["hits"], "query": "budget"})),
        Budget::new(500),
        &store,
        &me,
    )
    .unwrap();
    assert!(
        !validator.is_valid(&loose.result["structuredContent"]),
        "{}",
        loose.result["structuredContent"]
    );
}

#[test]
fn what_arrays_cannot_bring_within_or_would_not_conform_is_sent_whole_with_its_mirror_cut() {
    let (_dir, store) = store();
    // The bulk is one string: shortening arrays cannot reach the budget.
    let schema = json!({"type": "object", "properties": {"body": {"type": "string"}}});
    let structured = json!({"body": "line of text\n".repeat(3000), "tags": ["a"]});
    let budgeted = conforming(&store, &structured, 500, &schema);
    assert_eq!(budgeted.result["structuredContent"], structured, "whole");
    let mirror = &texts(&budgeted.result)[0];
    assert!(
        mirror.len() < 4000,
        "the text mirror is cut: {}",
        mirror.len()
    );
    assert!(budgeted.stats.is_cut);

    // The server's value breaks its own schema: no cut of it is sent either.
    let strict = json!({"type": "object", "properties": {"n": {"type": "string"}}});
    let bad = json!({"n": 5, "rows": vec!["row"; 3000]});
    let budgeted = conforming(&store, &bad, 300, &strict);
    assert_eq!(budgeted.result["structuredContent"], bad);
    assert!(texts(&budgeted.result)[0].len() < 3000);
}

/// Issue 28: tokens cut are the result's tokens less those sent of it, from the counts the
/// budget pass makes (the cut text's total and the kept part's), for text and for
/// `structuredContent` with its mirror; the tokens sent add up the pieces sent.
#[test]
fn tokens_cut_are_the_results_tokens_less_what_was_kept() {
    let (_dir, store) = store();
    let me = ClientScope::local();
    let text: String = (1..=3000).map(|i| format!("row {i}: ok\n")).collect();
    let budgeted = budget_result(text_result(&text), Budget::new(400), &store, &me).unwrap();
    let shown = texts(&budgeted.result);
    let kept = tokens(&shown[0]);
    assert_eq!(budgeted.stats.tokens_cut, tokens(&text) - kept);
    assert!(
        budgeted.stats.tokens_cut > 10 * kept,
        "{:?}",
        budgeted.stats
    );
    let sent = budgeted.stats.tokens_sent.unwrap();
    assert_eq!(
        sent,
        kept + tokens(&shown[1]),
        "the kept text and the envelope"
    );

    let items: Vec<Value> = (0..2000).map(|i| json!({"n": i})).collect();
    let structured = json!({"items": items});
    let result = json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured,
    });
    let budgeted = budget_result(result, Budget::new(300), &store, &me).unwrap();
    let cut = budgeted.result["structuredContent"].to_string();
    assert_eq!(
        budgeted.stats.tokens_cut,
        tokens(&structured.to_string()) - tokens(&cut),
        "the mirror is the structured content: counted once"
    );
    // Fits whole: nothing cut, nothing counted for it.
    let fits = budget_result(text_result("hello"), Budget::new(400), &store, &me).unwrap();
    assert_eq!(fits.stats.tokens_cut, 0);
}
