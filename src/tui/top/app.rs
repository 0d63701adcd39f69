//! `top`'s state, changed only by [`App::update`]: a snapshot arrives, a key is pressed, an
//! action or a log read comes back. Pure: no terminal, no socket (the runtime carries the
//! effects out), so the keys are tested by feeding messages.

use std::cmp::Ordering;
use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::observe::snapshot::{Process, Snapshot, Upstream};

/// What happens to the state.
#[derive(Debug)]
pub enum Msg {
    /// A new sample (every tick, and after an action).
    Snapshot(Snapshot),
    /// A key.
    Key(KeyEvent),
    /// An action's answer in words, or why it failed.
    Done(Result<String, String>),
    /// A log's last lines (or why it could not be read), for the log pane titled so.
    Log(String, Result<Vec<String>, String>),
}

/// What the runtime must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Ask `process` to stop (`is_stop`) or restart its upstream `server`.
    Control {
        /// The owning process as sampled.
        process: Box<Process>,
        /// The upstream's name.
        server: String,
        /// Stop, else restart.
        is_stop: bool,
    },
    /// Read the end of a log file for the pane titled so.
    ReadLog(String, PathBuf),
    /// End the view.
    Quit,
}

/// The order of upstreams within each process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// By name.
    Name,
    /// Busiest first.
    Rate,
    /// Slowest (p99) first.
    Latency,
    /// Most errors first.
    Errors,
}

impl Sort {
    /// The word the header shows.
    pub fn word(self) -> &'static str {
        match self {
            Sort::Name => "name",
            Sort::Rate => "calls/s",
            Sort::Latency => "p99",
            Sort::Errors => "errors",
        }
    }

    fn next(self) -> Sort {
        match self {
            Sort::Name => Sort::Rate,
            Sort::Rate => Sort::Latency,
            Sort::Latency => Sort::Errors,
            Sort::Errors => Sort::Name,
        }
    }

    fn compare(self, a: &Upstream, b: &Upstream) -> Ordering {
        let desc = |x: Option<f64>, y: Option<f64>| y.unwrap_or(-1.0).total_cmp(&x.unwrap_or(-1.0));
        let by = match self {
            Sort::Name => Ordering::Equal,
            Sort::Rate => desc(a.calls_per_s, b.calls_per_s),
            Sort::Latency => desc(a.p99_ms, b.p99_ms),
            Sort::Errors => b.errors.cmp(&a.errors),
        };
        by.then_with(|| a.name.cmp(&b.name))
    }
}

/// One line of the list: a process, or one of its upstreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The process's index in the snapshot.
    pub process: usize,
    /// The upstream's index in the process (`None`: the process's own line).
    pub upstream: Option<usize>,
}

/// The log pane: a file's last lines, scrolled from the bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPane {
    /// What it shows (the process, the file).
    pub title: String,
    /// The lines, or why there are none.
    pub lines: Result<Vec<String>, String>,
    /// Lines scrolled up from the end.
    pub from_end: usize,
}

/// Everything `top` shows.
#[derive(Debug)]
pub struct App {
    /// The last sample (empty until the first arrives).
    pub snapshot: Option<Snapshot>,
    /// The upstreams' order.
    pub sort: Sort,
    /// The selected row's process pid and upstream name (kept across samples by name).
    pub selected: Option<(u32, Option<String>)>,
    /// The last action's answer, shown in the footer.
    pub notice: Option<Result<String, String>>,
    /// The open log pane.
    pub log: Option<LogPane>,
}

/// How many lines PgUp/PgDn move in the log pane.
const PAGE: usize = 10;

impl App {
    /// Nothing sampled yet.
    pub fn new() -> App {
        App {
            snapshot: None,
            sort: Sort::Name,
            selected: None,
            notice: None,
            log: None,
        }
    }

    /// The list's lines in display order: each process, then its upstreams sorted.
    pub fn rows(&self) -> Vec<Row> {
        let Some(snapshot) = &self.snapshot else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        for (p, process) in snapshot.processes.iter().enumerate() {
            rows.push(Row {
                process: p,
                upstream: None,
            });
            let mut order: Vec<usize> = (0..process.upstreams.len()).collect();
            let upstreams = &process.upstreams;
            order.sort_by(|&a, &b| self.sort.compare(&upstreams[a], &upstreams[b]));
            rows.extend(order.into_iter().map(|u| Row {
                process: p,
                upstream: Some(u),
            }));
        }
        rows
    }

    /// The selected row's index in [`App::rows`] (the first row when none matches).
    pub fn cursor(&self, rows: &[Row]) -> usize {
        rows.iter()
            .position(|row| self.key_of(*row) == self.selected)
            .unwrap_or(0)
    }

    fn key_of(&self, row: Row) -> Option<(u32, Option<String>)> {
        let process = self.snapshot.as_ref()?.processes.get(row.process)?;
        let upstream = row
            .upstream
            .and_then(|u| process.upstreams.get(u))
            .map(|u| u.name.clone());
        Some((process.pid, upstream))
    }

    /// The selected process and upstream.
    pub fn selection(&self) -> Option<(&Process, Option<&Upstream>)> {
        let rows = self.rows();
        let row = *rows.get(self.cursor(&rows))?;
        let process = self.snapshot.as_ref()?.processes.get(row.process)?;
        Some((process, row.upstream.and_then(|u| process.upstreams.get(u))))
    }

    /// Applies one message.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Snapshot(snapshot) => {
                self.snapshot = Some(snapshot);
                if self.selected.is_none() {
                    let rows = self.rows();
                    self.selected = rows.first().and_then(|row| self.key_of(*row));
                }
                Vec::new()
            }
            Msg::Done(answer) => {
                self.notice = Some(answer);
                Vec::new()
            }
            Msg::Log(title, lines) => {
                self.log = Some(LogPane {
                    title,
                    lines,
                    from_end: 0,
                });
                Vec::new()
            }
            Msg::Key(key) if key.kind == KeyEventKind::Release => Vec::new(),
            Msg::Key(key) if self.log.is_some() => self.log_key(key),
            Msg::Key(key) => self.list_key(key),
        }
    }

    fn list_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let ctrl_c =
            key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        match key.code {
            _ if ctrl_c => vec![Effect::Quit],
            KeyCode::Char('q') | KeyCode::Esc => vec![Effect::Quit],
            KeyCode::Up | KeyCode::Char('k') => self.step(-1),
            KeyCode::Down | KeyCode::Char('j') => self.step(1),
            KeyCode::Char('o') => {
                self.sort = self.sort.next();
                Vec::new()
            }
            KeyCode::Char('s') => self.control(true),
            KeyCode::Char('r') => self.control(false),
            KeyCode::Char('l') => self.open_log(),
            _ => Vec::new(),
        }
    }

    fn step(&mut self, by: isize) -> Vec<Effect> {
        let rows = self.rows();
        if rows.is_empty() {
            return Vec::new();
        }
        let at = self
            .cursor(&rows)
            .saturating_add_signed(by)
            .min(rows.len() - 1);
        self.selected = self.key_of(rows[at]);
        Vec::new()
    }

    fn control(&mut self, is_stop: bool) -> Vec<Effect> {
        let Some((process, upstream)) = self.selection() else {
            return Vec::new();
        };
        let Some(upstream) = upstream else {
            self.notice = Some(Err(
                "select one of its servers (↓) to stop or restart it".into()
            ));
            return Vec::new();
        };
        let effect = Effect::Control {
            process: Box::new(process.clone()),
            server: upstream.name.clone(),
            is_stop,
        };
        let verb = if is_stop { "stopping" } else { "restarting" };
        self.notice = Some(Ok(format!("{verb} {}…", upstream.name)));
        vec![effect]
    }

    fn open_log(&mut self) -> Vec<Effect> {
        let Some((process, _)) = self.selection() else {
            return Vec::new();
        };
        let title = format!("{} {}", process.kind, process.pid);
        match &process.log {
            Some(path) => vec![Effect::ReadLog(title, path.clone())],
            None => {
                let why = "its standard error is a terminal or a pipe, not a file \
                    (start it with `2>FILE` to see its log here)";
                self.log = Some(LogPane {
                    title,
                    lines: Err(why.into()),
                    from_end: 0,
                });
                Vec::new()
            }
        }
    }

    fn log_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(pane) = &mut self.log else {
            return Vec::new();
        };
        let count = pane.lines.as_ref().map_or(0, Vec::len);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('l') => self.log = None,
            KeyCode::Up | KeyCode::Char('k') => pane.from_end = (pane.from_end + 1).min(count),
            KeyCode::Down | KeyCode::Char('j') => pane.from_end = pane.from_end.saturating_sub(1),
            KeyCode::PageUp => pane.from_end = (pane.from_end + PAGE).min(count),
            KeyCode::PageDown => pane.from_end = pane.from_end.saturating_sub(PAGE),
            KeyCode::Home | KeyCode::Char('g') => pane.from_end = count,
            KeyCode::End | KeyCode::Char('G') => pane.from_end = 0,
            _ => {}
        }
        Vec::new()
    }
}

impl Default for App {
    fn default() -> Self {
        App::new()
    }
}

/// The keys, for the footer: (key, what it does).
pub const KEYS: &[(&str, &str)] = &[
    ("↑↓", "select"),
    ("o", "sort"),
    ("r", "restart"),
    ("s", "stop"),
    ("l", "log"),
    ("q", "quit"),
];
