//! REST requests through the front are counted in `/metrics` by server, tool and outcome,
//! with a latency histogram; names the exposure does not know read `other`.

use super::harness::*;
use super::*;

/// The count of `mcp_launch_rest_requests_total` with these labels in `text` (0: no series).
fn count(text: &str, server: &str, tool: &str, outcome: &str) -> u64 {
    let series = format!(
        "mcp_launch_rest_requests_total{{server=\"{server}\",tool=\"{tool}\",outcome=\"{outcome}\"}} "
    );
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0, |n| n.trim().parse().unwrap_or(0))
}

#[tokio::test]
async fn rest_requests_are_counted_by_server_tool_and_outcome_with_bounded_labels() {
    let h = Harness::start(|_| {}).await;
    let before = crate::observe::metrics::render();
    let sent = [
        ("/everything/echo", 200),
        ("/everything/get-env", 403),
        ("/everything/made-up-tool-q7", 404),
        ("/made-up-server-q7/echo", 404),
    ];
    for (path, status) in sent {
        let (got, body) = answer(h.post(path).header("x-api-key", KEY).json(&json!({}))).await;
        assert_eq!(got, status, "{path}: {body}");
    }
    let text = crate::observe::metrics::render();
    let grew = |server, tool, outcome| {
        count(&text, server, tool, outcome) > count(&before, server, tool, outcome)
    };
    assert!(grew("everything", "echo", "ok"), "{text}");
    assert!(grew("everything", "get-env", "error"), "{text}");
    assert!(grew("everything", "other", "error"), "{text}");
    assert!(grew("other", "other", "error"), "{text}");
    assert!(
        !text.contains("made-up"),
        "a client's made-up name became a label: {text}"
    );
    assert!(
        text.contains("mcp_launch_rest_request_duration_seconds_count{server=\"everything\"}"),
        "{text}"
    );
}
