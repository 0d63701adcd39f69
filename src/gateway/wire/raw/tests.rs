use std::sync::Arc;

use super::*;

fn catalog() -> Arc<str> {
    Arc::from(
        r#"[{"name":"t","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"},"x-new":1}]"#,
    )
}

#[test]
fn a_list_answer_gets_the_serialised_tools_and_loses_its_mark() {
    let mut message = json!({"jsonrpc": "2.0", "id": 1, "result": list_placeholder()});
    message["result"]["resultType"] = json!("complete");
    let text = splice(message.to_string().as_bytes(), &catalog).expect("spliced");
    let back: Value = serde_json::from_slice(&text).unwrap();
    let tools: Value = serde_json::from_str(&catalog()).unwrap();
    assert_eq!(back["result"]["tools"], tools);
    assert_eq!(back["result"]["resultType"], "complete");
    assert!(back["result"].get("_meta").is_none(), "{back}");
}

#[test]
fn a_carried_result_comes_back_whole_and_its_own_meta_stays() {
    let result = json!({"content": [{"type": "hologram", "depth": 3}], "x-extra": true,
        "_meta": {"vendor/key": "v"}});
    let message = json!({"jsonrpc": "2.0", "id": 2, "result": carry_result(result.clone())});
    let text = splice(message.to_string().as_bytes(), &catalog).expect("spliced");
    let back: Value = serde_json::from_slice(&text).unwrap();
    assert_eq!(back["result"], result);
    assert!(!String::from_utf8_lossy(&text).contains(CARRIED));
}

#[test]
fn other_messages_pass_untouched() {
    let message = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
    assert!(splice(message, &catalog).is_none());
}

/// Found by the `gateway_wire` fuzz target: a client's request id that held the slot's
/// characters got the tools, and the answer kept the slot
/// (`fuzz/corpus/gateway_wire/list-answer-slot-in-id`).
#[test]
fn the_tools_go_in_the_list_even_when_the_id_holds_the_slot() {
    for id in [json!(SLOT), json!(format!("{SLOT}\u{0}"))] {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": list_placeholder()});
        let text = splice(message.to_string().as_bytes(), &catalog).expect("spliced");
        let back: Value = serde_json::from_slice(&text).unwrap();
        let tools: Value = serde_json::from_str(&catalog()).unwrap();
        assert_eq!(back["result"]["tools"], tools, "{back}");
        assert_eq!(back["id"], id);
    }
}

#[test]
fn lines_are_spliced_whole_even_when_they_arrive_in_pieces() {
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": list_placeholder()}).to_string();
    let stream = format!("id: 0\ndata: {message}\n\n");
    let (a, b) = stream.as_bytes().split_at(stream.len() / 2);
    let mut lines = Lines::default();
    let mut out = Vec::new();
    let edit = |line: &[u8]| {
        let data = line.strip_prefix(b"data:")?;
        let mut spliced = b"data: ".to_vec();
        spliced.extend(splice(data.trim_ascii(), &catalog)?);
        spliced.push(b'\n');
        Some(spliced)
    };
    lines.push(a, &mut out, edit);
    lines.push(b, &mut out, edit);
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.starts_with("id: 0\ndata: ") && out.ends_with("\n\n"),
        "{out}"
    );
    assert!(
        out.contains(r#""execution":{"taskSupport":"optional"}"#),
        "{out}"
    );
    assert!(lines.rest().is_empty());
}

#[test]
fn an_input_required_result_comes_back_verbatim() {
    let sealed = json!({"resultType": "input_required",
        "inputRequests": {"q": {"method": "elicitation/create", "params": {"message": "?",
            "requestedSchema": {"type": "object"}, "x-vendor": [1, 2]}}},
        "requestState": "opaque.sealed==", "_meta": {"vendor/k": true}});
    let only_state = json!({"resultType": "input_required", "requestState": "s"});
    for result in [sealed, only_state] {
        let placeholder = carry_input_required(result.clone());
        assert_eq!(placeholder["resultType"], "input_required");
        let message = json!({"jsonrpc": "2.0", "id": 4, "result": placeholder});
        let text = splice(message.to_string().as_bytes(), &catalog).expect("spliced");
        let back: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(back["result"], result);
    }
}

#[test]
fn an_initialize_answer_declares_tasks_to_2025_11_25_clients_only() {
    for (version, declared) in [("2025-11-25", true), ("2025-06-18", false)] {
        let result = json!({"protocolVersion": version, "capabilities": {"tools": {},
            "experimental": {TASKS: {}}}, "serverInfo": {"name": "g", "version": "1"}});
        let message = json!({"jsonrpc": "2.0", "id": 0, "result": result});
        let text = splice(message.to_string().as_bytes(), &catalog).expect("spliced");
        let back: Value = serde_json::from_slice(&text).unwrap();
        let capabilities = &back["result"]["capabilities"];
        assert!(capabilities.get("experimental").is_none(), "{back}");
        assert_eq!(
            capabilities.pointer("/tasks/requests/tools/call").is_some(),
            declared,
            "{back}"
        );
    }
}

#[test]
fn a_carried_result_keeps_what_rmcp_added_and_its_own_fields_win() {
    let result = json!({"content": [{"type": "text", "text": "hi"}], "isError": false});
    let mut placeholder = carry_result(result.clone());
    placeholder["resultType"] = json!("complete");
    let message = json!({"jsonrpc": "2.0", "id": "a", "result": placeholder});
    let text = splice(message.to_string().as_bytes(), &catalog).expect("spliced");
    let back: Value = serde_json::from_slice(&text).unwrap();
    let mut expected = result;
    expected["resultType"] = json!("complete");
    assert_eq!(back["result"], expected, "{back}");
    assert_eq!(back["id"], "a");
}

#[test]
fn an_empty_carried_result_gets_the_placeholder_fields() {
    let message = json!({"jsonrpc": "2.0", "id": 5, "result": carry_result(json!({}))});
    let text = splice(message.to_string().as_bytes(), &catalog).expect("spliced");
    let back: Value = serde_json::from_slice(&text).unwrap();
    assert_eq!(back["result"], json!({"content": []}), "{back}");
}

/// Only the gateway carries results; the same key in another answer (an upstream's own
/// `_meta`) holding no JSON object is dropped, and the answer stays JSON.
#[test]
fn a_carried_text_that_is_no_object_is_dropped() {
    for carried in [
        json!("[1, 2]"),
        json!("{\"a\": "),
        json!({"a": 1}),
        json!(3),
    ] {
        let message = json!({"jsonrpc": "2.0", "id": 6,
            "result": {"contents": [], "_meta": {CARRIED: carried}}});
        let text = splice(message.to_string().as_bytes(), &catalog).expect("spliced");
        let back: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(back["result"], json!({"contents": []}), "{back}");
    }
}

/// The in-place splice of a call result (every HTTP call's answer) makes what the tree splice
/// makes; what it does not take (a member twice) is left to the tree.
#[test]
fn a_carried_result_put_back_in_place_is_what_the_tree_makes() {
    let results = [
        json!({"content": [{"type": "text", "text": "hi \"q\" \u{e9} \\n \u{0}"}], "isError": false}),
        json!({}),
        json!({"content": [], "_meta": {"vendor/k": 1}}),
        json!({"structuredContent": {"a": [1, 2.5, -3e40, null]}, "content": []}),
    ];
    let mut messages = vec![];
    for result in results {
        let mut placeholder = carry_result(result);
        let plain = json!({"jsonrpc": "2.0", "id": 7, "result": placeholder.clone()});
        messages.push(plain.to_string());
        placeholder["resultType"] = json!("complete");
        placeholder["_meta"]["other/key"] = json!({"x": [1]});
        let added = json!({"id": "we\"ird\u{0}", "jsonrpc": "2.0", "result": placeholder});
        messages.push(added.to_string());
    }
    // Written by hand: an escaped name, spaces, a carried text with spaces round it, and a
    // member twice.
    let carried = serde_json::to_string(r#" {"content":[],"x":1} "#).unwrap();
    let result = format!(r#"{{ "content": [], "_meta": {{ "{CARRIED}": {carried} }} }}"#);
    messages.push(format!(
        r#"{{ "jsonrpc" : "2.0", "i\u0064": 1, "result": {result} }}"#
    ));
    let twice = format!(r#"{{"jsonrpc":"2.0","id":1,"id":2,"result":{result}}}"#);
    messages.push(twice.clone());
    for message in messages {
        let bytes = message.as_bytes();
        let tree = splice_tree(bytes, &catalog, marks(bytes)).expect("spliced");
        let tree: Value = serde_json::from_slice(&tree).unwrap();
        match in_place::splice_carried(bytes) {
            Some(text) => {
                let back: Value = serde_json::from_slice(&text).unwrap();
                assert_eq!(back, tree, "{message}");
                assert!(!String::from_utf8_lossy(&text).contains(CARRIED));
            }
            None => assert_eq!(message, twice, "left to the tree"),
        }
        let spliced = splice(bytes, &catalog).expect("spliced");
        assert_eq!(serde_json::from_slice::<Value>(&spliced).unwrap(), tree);
    }
}
