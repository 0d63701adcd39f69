//! The exposition parsed back: well-formed OpenMetrics, Prometheus names, bounded labels.

use std::collections::BTreeMap;

use super::*;

/// One sample line: its metric name, labels and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the exposition, failing on any line that is neither a known comment nor a sample.
fn parse(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    assert!(text.ends_with("# EOF\n"), "no EOF marker:\n{text}");
    for line in text.lines() {
        if line == "# EOF" {
            continue;
        }
        if let Some(comment) = line.strip_prefix("# ") {
            let kind = comment.split(' ').next().unwrap_or("");
            assert!(["HELP", "TYPE", "UNIT"].contains(&kind), "{line}");
            continue;
        }
        samples.push(sample(line));
    }
    samples
}

fn sample(line: &str) -> Sample {
    let (head, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
    let value: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line}"));
    let (name, labels) = match head.split_once('{') {
        Some((name, rest)) => (name, labels(rest.strip_suffix('}').expect(line))),
        None => (head, BTreeMap::new()),
    };
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
        "{line}"
    );
    Sample {
        name: name.to_string(),
        labels,
        value,
    }
}

/// `a="x",b="y"` (values escaped as OpenMetrics says: `\\`, `\"`, `\n`).
fn labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").expect(text);
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().expect(text) {
                (_, '\\') => match chars.next().expect(text).1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (at, '"') => break at,
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.to_string(), value);
        rest = after[end + 1..].trim_start_matches(',');
    }
    labels
}

fn find<'a>(samples: &'a [Sample], name: &str, pairs: &[(&str, &str)]) -> Option<&'a Sample> {
    samples.iter().find(|s| {
        s.name == name
            && pairs
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
    })
}

/// The value of a series of `server`'s, by name (-1 when absent), from the exposition now.
fn server_values(server: &str) -> impl Fn(&str) -> f64 {
    let samples = parse(&render());
    let server = server.to_string();
    move |name| {
        find(&samples, name, &[("server", &server)])
            .map(|s| s.value)
            .unwrap_or(-1.0)
    }
}

#[test]
fn the_exposition_parses_and_names_follow_prometheus_conventions() {
    upstream_known("conv-srv", false);
    upstream_started("conv-srv", Duration::from_millis(250), false);
    request_served("tools/list", Duration::from_micros(300), Outcome::Ok);
    call_served("conv-srv", Some("echo"), Outcome::Ok);
    upstream_request("conv-srv", "tools/call", Duration::from_millis(2), true);
    let samples = parse(&render());
    for s in &samples {
        assert!(s.name.starts_with("mcp_launch_"), "{}", s.name);
    }
    let counters = ["_total", "_created"];
    for family in ["requests", "upstream_starts", "upstream_restarts"] {
        let name = format!("mcp_launch_{family}");
        assert!(
            samples
                .iter()
                .filter(|s| s.name.starts_with(&name))
                .all(|s| counters.iter().any(|c| s.name.ends_with(c))),
            "{family} is a counter: its samples end in _total"
        );
    }
    let call = find(
        &samples,
        "mcp_launch_requests_total",
        &[("server", "conv-srv"), ("tool", "echo"), ("outcome", "ok")],
    );
    assert_eq!(call.map(|s| s.value), Some(1.0));
    assert_eq!(call.unwrap().labels["method"], "tools/call");
    let up = find(
        &samples,
        "mcp_launch_upstream_up",
        &[("server", "conv-srv")],
    );
    assert_eq!(up.map(|s| s.value), Some(1.0));
    let start = find(
        &samples,
        "mcp_launch_upstream_start_duration_seconds_count",
        &[("server", "conv-srv")],
    );
    assert_eq!(start.map(|s| s.value), Some(1.0), "cold start in seconds");
    let upstream = find(
        &samples,
        "mcp_launch_upstream_request_duration_seconds_bucket",
        &[("server", "conv-srv"), ("le", "+Inf")],
    );
    assert_eq!(upstream.map(|s| s.value), Some(1.0));
}

/// What a client names is free text: an unknown tool and a custom method never become
/// label values (one series each would grow without bound, and may carry secrets).
#[test]
fn labels_stay_bounded_whatever_clients_send() {
    for n in 0..50 {
        call_served("bound-srv", None, Outcome::Error);
        request_served(&format!("x/secret-{n}"), Duration::ZERO, Outcome::Error);
    }
    let text = render();
    assert!(!text.contains("secret-"), "{text}");
    let samples = parse(&text);
    let other = find(
        &samples,
        "mcp_launch_requests_total",
        &[
            ("server", "bound-srv"),
            ("tool", OTHER),
            ("outcome", "error"),
        ],
    );
    assert_eq!(other.map(|s| s.value), Some(50.0));
    let methods = samples
        .iter()
        .filter(|s| s.name == "mcp_launch_requests_total")
        .filter_map(|s| s.labels.get("method"))
        .collect::<std::collections::BTreeSet<_>>();
    for method in methods {
        assert!(
            method == OTHER || METHODS.contains(&method.as_str()),
            "{method}"
        );
    }
}

#[test]
fn restarts_and_idle_stops_are_counted_apart() {
    upstream_known("life-srv", false);
    upstream_started("life-srv", Duration::from_millis(10), false);
    upstream_stopped("life-srv", Stop::Lost);
    upstream_started("life-srv", Duration::from_millis(10), true);
    upstream_stopped("life-srv", Stop::Idle);
    upstream_started("life-srv", Duration::from_millis(10), false);
    // An operator's stop (`top`'s `s`) is not an idle stop.
    upstream_stopped("life-srv", Stop::Asked);
    let value = server_values("life-srv");
    assert_eq!(value("mcp_launch_upstream_starts_total"), 3.0);
    assert_eq!(value("mcp_launch_upstream_restarts_total"), 1.0);
    assert_eq!(value("mcp_launch_upstream_idle_stops_total"), 1.0);
    assert_eq!(value("mcp_launch_upstream_up"), 0.0);
}

/// Issue 28: what budgets cut is counted in tokens (`…_cut_tokens_total`, a counter with
/// no unit suffix, like `sparse_tokens_saved_total`) beside the bytes; a result that fit is
/// not a cut.
#[test]
fn tokens_and_bytes_cut_are_counted_per_server() {
    let cut = OutputCut {
        bytes: 9000,
        tokens: 1700,
        handles: 1,
    };
    output_budgeted("cut-srv", cut);
    output_budgeted("cut-srv", cut);
    output_budgeted("cut-srv", OutputCut::default());
    let value = server_values("cut-srv");
    assert_eq!(value("mcp_launch_output_cuts_total"), 2.0);
    assert_eq!(value("mcp_launch_output_cut_tokens_total"), 3400.0);
    assert_eq!(value("mcp_launch_output_cut_bytes_total"), 18000.0);
}

#[test]
fn a_server_name_with_quotes_is_escaped_not_broken() {
    upstream_known("we\"ird\\name\n", false);
    let samples = parse(&render());
    assert!(find(
        &samples,
        "mcp_launch_upstream_up",
        &[("server", "we\"ird\\name\n")]
    )
    .is_some());
}

/// What recording one `tools/call` costs (the three records a call through the gateway makes),
/// in this build: `cargo test --lib observe::metrics::tests::recording_cost -- --ignored
/// --nocapture` (docs/PERFORMANCE.md, "Metrics").
#[test]
#[ignore]
fn recording_cost() {
    let rounds = 200_000u32;
    let started = std::time::Instant::now();
    for _ in 0..rounds {
        request_served("tools/call", Duration::from_micros(900), Outcome::Ok);
        call_served("cost-srv", Some("echo"), Outcome::Ok);
        upstream_request("cost-srv", "tools/call", Duration::from_micros(700), true);
    }
    let each = started.elapsed() / rounds;
    println!("recording one call: {each:?} ({rounds} calls)");
}
