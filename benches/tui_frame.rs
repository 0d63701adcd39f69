//! TUI frame time (`cargo bench --bench tui_frame`): the whole frame drawn on ratatui's
//! `TestBackend` at 120×40, the budget being 16 ms (60 frames a second).
//!
//! Cases: the server screen with one server of 2,000 tools (top of the list, the end of it,
//! and a fuzzy filter over all 2,000 names), and the preflight with 200 servers of 10 tools.
//! Each case is drawn 200 times after 20 warm-up draws; p50, p99 and max are printed as
//! Markdown.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use mcp_launch::catalog::{Overrides, ServerReport, Status};
use mcp_launch::config::{ServerEntry, ServerSpec};
use mcp_launch::tui::app::App;
use mcp_launch::tui::msg::Msg;
use mcp_launch::tui::theme::Theme;
use mcp_launch::tui::view;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

const WARMUP: usize = 20;
const DRAWS: usize = 200;

fn entry(name: &str) -> ServerEntry {
    ServerEntry {
        name: name.into(),
        qualified: format!("bench/{name}"),
        stack: "bench".into(),
        line: None,
        disabled: false,
        spec: Ok(ServerSpec::Stdio {
            command: "/bin/true".into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        }),
    }
}

fn report(entry: &ServerEntry, tools: usize) -> ServerReport {
    let tools: Vec<_> = (0..tools)
        .map(|i| {
            json!({
                "name": format!("{}_tool_{i:04}_{}", entry.name, ["get", "list", "create", "delete"][i % 4]),
                "description": format!("Tool number {i}: does one thing to a resource, with options. ").repeat(1 + i % 4),
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            })
        })
        .collect();
    ServerReport {
        name: entry.qualified.clone(),
        config_name: entry.name.clone(),
        stack: entry.stack.clone(),
        transport: "stdio",
        status: Status::Connected,
        tool_tokens: (0..tools.len()).map(|i| 40 + i % 50).collect(),
        tools,
        init_time: Some(Duration::from_millis(300)),
        protocol_version: Some("2025-06-18".into()),
        used_slow_window: false,
        warnings: Vec::new(),
        error: None,
        stale: Vec::new(),
        checked_at: None,
        listed_with: None,
        needs: Default::default(),
        items: None,
        changed: Default::default(),
    }
}

/// An app with `servers` servers of `tools` tools each, every check finished.
fn app(servers: usize, tools: usize, dir: &std::path::Path) -> App {
    let entries: Vec<ServerEntry> = (0..servers).map(|i| entry(&format!("s{i:03}"))).collect();
    let overrides = Overrides::load(dir).expect("no overrides file yet");
    let (mut app, _) = App::new(entries.clone(), overrides, Theme::colored());
    for (row, e) in entries.iter().enumerate() {
        app.update(Msg::Checked {
            row,
            report: Box::new(report(e, tools)),
        });
    }
    app
}

fn keys(app: &mut App, codes: &[KeyCode]) {
    for code in codes {
        app.update(Msg::Key(KeyEvent::from(*code)));
    }
}

/// p50, p99 and max of drawing `app` `draws` times after a warm-up (ms).
fn measure(app: &App, warmup: usize, draws: usize) -> (f64, f64, f64) {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("a test terminal");
    let mut times = Vec::with_capacity(draws);
    for i in 0..warmup + draws {
        let started = Instant::now();
        terminal.draw(|frame| view::draw(frame, app)).expect("draw");
        if i >= warmup {
            times.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), times[times.len() - 1])
}

fn main() {
    let dir = std::env::temp_dir().join(format!("mcp-launch-tui-bench-{}", std::process::id()));
    let mut cases: Vec<(&str, App)> = Vec::new();
    let mut big = app(1, 2000, &dir);
    keys(&mut big, &[KeyCode::Enter]);
    cases.push(("server screen, 2,000 tools, top", big.clone()));
    keys(&mut big, &[KeyCode::End]);
    cases.push(("server screen, 2,000 tools, last selected", big.clone()));
    keys(
        &mut big,
        &[
            KeyCode::Home,
            KeyCode::Char('/'),
            KeyCode::Char('g'),
            KeyCode::Char('t'),
            KeyCode::Char('1'),
        ],
    );
    cases.push(("server screen, 2,000 tools, filter `gt1`", big));
    cases.push(("preflight, 200 servers × 10 tools", app(200, 10, &dir)));

    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this unoptimised, where
    // one draw per case checks that it works and timings would only mislead.
    if !std::env::args().any(|a| a == "--bench") {
        for (_, app) in &cases {
            measure(app, 0, 1);
        }
        println!("(TUI frame timings skipped: run `cargo bench --bench tui_frame`)");
        return;
    }
    println!("## TUI frame time (120×40, TestBackend, {DRAWS} draws per case)\n");
    println!("| case | p50 ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|");
    for (name, app) in &cases {
        let (p50, p99, max) = measure(app, WARMUP, DRAWS);
        println!("| {name} | {p50:.2} | {p99:.2} | {max:.2} |");
    }
}
