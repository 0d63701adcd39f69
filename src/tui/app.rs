//! The app's state and its update function: every key and every result comes in as a
//! [`Msg`], changes the state, and may ask for [`Effect`]s. No I/O here, so every behaviour is
//! tested without a terminal.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use crate::catalog::{Change, Edit, Overrides, Status};
use crate::config::ServerEntry;

use super::component::{Action, Component, Ctx, Handled};
use super::model::{Check, Row};
use super::msg::{Effect, LaunchMsg, Msg};
use super::screens::collector::CollectorView;
use super::screens::consent::ConsentView;
use super::screens::launch::{Availability, LaunchForm};
use super::screens::results::{LaunchState, ResultsView};
use super::screens::{describe::DescribeView, preflight::PreflightView, server::ServerView};
use super::theme::Theme;

/// Which screen is in front.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// Every server of every stack.
    Preflight,
    /// One server's tools.
    Server(ServerView),
    /// The descriptions of some of a server's tools: diff, rewrite, edit.
    Describe(DescribeView),
    /// Choosing the config files (no `--config` given).
    Collector,
    /// Launch options.
    Launch,
    /// The launched stacks and the log.
    Results,
}

/// A short message in the status bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The text.
    pub text: String,
    /// True for a problem (shown in the bad style).
    pub is_error: bool,
}

/// Everything the TUI knows.
#[derive(Debug, Clone)]
pub struct App {
    /// Stack names, in config order.
    pub stacks: Vec<String>,
    /// The config files the stacks come from, as given (`--config`, or chosen in the
    /// collector): the login hint names them, so its command finds the same server.
    pub configs: Vec<std::path::PathBuf>,
    /// One row per server of every stack, stacks in order.
    pub rows: Vec<Row>,
    /// The project's choices as shown: the file as last read, with the edits not yet
    /// written applied on top.
    pub overrides: Overrides,
    /// The overrides file as last read (or written) by the runtime.
    pub on_disk: Overrides,
    /// Edits sent to be written, oldest first; each [`Msg::Saved`] answers the oldest.
    pub unsaved: VecDeque<Vec<Edit>>,
    /// The screen in front.
    pub screen: Screen,
    /// The preflight screen's selection and detail pane (kept while another screen is open).
    pub preflight: PreflightView,
    /// The help overlay is open.
    pub help: bool,
    /// "Quit? y/n" is asked.
    pub confirm_quit: bool,
    /// Ticks so far (spinners).
    pub tick: u64,
    /// The status bar's message.
    pub notice: Option<Notice>,
    /// Styles.
    pub theme: Theme,
    /// The launch options as chosen so far.
    pub launch_form: LaunchForm,
    /// Which programs are installed.
    pub available: Availability,
    /// Where the launch stands.
    pub launch: LaunchState,
    /// The results screen's selection, key masking and log pane.
    pub results: ResultsView,
    /// The config collector's state.
    pub collector: CollectorView,
    /// Consent requests of the launched stacks (shown on top of every screen).
    pub consent: ConsentView,
}

impl App {
    /// An app checking `entries` (stacks in order) under `overrides`. Returns it with the
    /// checks to start.
    pub fn new(
        entries: Vec<ServerEntry>,
        overrides: Overrides,
        theme: Theme,
    ) -> (App, Vec<Effect>) {
        let launch_form = LaunchForm::remembered(overrides.launch_choices());
        let mut app = App {
            stacks: Vec::new(),
            configs: Vec::new(),
            rows: Vec::new(),
            on_disk: overrides.clone(),
            unsaved: VecDeque::new(),
            overrides,
            screen: Screen::Preflight,
            preflight: PreflightView::default(),
            help: false,
            confirm_quit: false,
            tick: 0,
            notice: None,
            theme,
            launch_form,
            available: Availability::default(),
            launch: LaunchState::default(),
            results: ResultsView::default(),
            collector: CollectorView::default(),
            consent: ConsentView::default(),
        };
        let effects = app.add_servers(entries);
        (app, effects)
    }

    /// An app that starts with the config collector (no `--config` given).
    pub fn collecting(overrides: Overrides, theme: Theme) -> App {
        let (mut app, _) = App::new(Vec::new(), overrides, theme);
        app.screen = Screen::Collector;
        app
    }

    /// Adds the servers of `entries` (stacks in order) as rows being checked; returns the
    /// checks to start.
    fn add_servers(&mut self, entries: Vec<ServerEntry>) -> Vec<Effect> {
        let first = self.rows.len();
        for entry in entries {
            if !self.stacks.contains(&entry.stack) {
                self.stacks.push(entry.stack.clone());
            }
            self.rows.push(Row {
                entry,
                check: Check::Running,
                checks: 1,
            });
        }
        self.rows[first..]
            .iter()
            .enumerate()
            .map(|(i, row)| Effect::Check {
                row: first + i,
                entry: row.entry.clone(),
            })
            .collect()
    }

    /// Applies `msg`; returns what the runtime must do.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Tick => {
                self.tick = self.tick.wrapping_add(1);
                self.consent.expire(crate::auth::server::now());
                Vec::new()
            }
            Msg::Consent(news) => {
                let now = crate::auth::server::now();
                match self.consent.on_news(news, now) {
                    Some(action) => self.apply(action),
                    None => Vec::new(),
                }
            }
            Msg::Resize => Vec::new(),
            Msg::Checked { row, report } => {
                if let Some(r) = self.rows.get_mut(row) {
                    r.check = Check::Done(report);
                }
                Vec::new()
            }
            Msg::Saved(result) => {
                self.unsaved.pop_front();
                match result {
                    Ok(on_disk) => self.reread(on_disk),
                    Err(e) => {
                        self.complain(format!("could not save the overrides: {e}"));
                        // The failed edit is gone from the queue: show the file's state again.
                        self.reread(self.on_disk.clone());
                    }
                }
                Vec::new()
            }
            Msg::OverridesChanged(Ok(on_disk)) => {
                self.reread(on_disk);
                Vec::new()
            }
            Msg::OverridesChanged(Err(e)) => {
                self.complain(format!(
                    "the overrides file changed and does not load ({e}); fix it to save again"
                ));
                Vec::new()
            }
            Msg::EditedExternally { row, tool, result } => {
                super::rewrite::on_external_edit(self, row, tool, result)
            }
            Msg::Launch(news) => {
                self.on_launch_news(news);
                Vec::new()
            }
            Msg::Collector(news) => match self.collector.on_news(news) {
                Some(action) => self.apply(action),
                None => Vec::new(),
            },
            Msg::ConfigsLoaded(Ok(entries)) => {
                self.screen = Screen::Preflight;
                self.add_servers(entries)
            }
            Msg::Approved { row, result } => {
                self.on_approved(row, result);
                Vec::new()
            }
            Msg::ConfigsLoaded(Err(e)) => {
                self.complain(format!("the config files do not load: {e}"));
                Vec::new()
            }
            Msg::Mouse(mouse) => {
                let step = match mouse.kind {
                    MouseEventKind::ScrollUp => KeyCode::Up,
                    MouseEventKind::ScrollDown => KeyCode::Down,
                    _ => return Vec::new(),
                };
                self.on_key(KeyEvent::from(step))
            }
            Msg::Key(key) if key.kind == KeyEventKind::Release => Vec::new(),
            Msg::Key(key) => self.on_key(key),
        }
    }

    fn on_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.confirm_quit = true;
            return Vec::new();
        }
        if self.confirm_quit {
            self.confirm_quit = false;
            return match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => vec![Effect::Quit],
                _ => Vec::new(),
            };
        }
        if self.consent.is_visible() {
            let mut consent = std::mem::take(&mut self.consent);
            let handled = consent.handle_key(key, &self.ctx());
            self.consent = consent;
            return match handled {
                Handled::Consumed(Some(action)) => self.apply(action),
                Handled::Consumed(None) | Handled::Ignored => Vec::new(),
            };
        }
        if self.help {
            if matches!(
                key.code,
                KeyCode::Char('?') | KeyCode::Esc | KeyCode::Char('q')
            ) {
                self.help = false;
            }
            return Vec::new();
        }
        // The screen first: one where text is typed takes every key, `?` and `q` included.
        // A key clears the notice, unless it opens the help or the quit question.
        let notice = self.notice.take();
        match self.screen_key(key) {
            Handled::Consumed(Some(action)) => self.apply(action),
            Handled::Consumed(None) => Vec::new(),
            Handled::Ignored => {
                match key.code {
                    KeyCode::Char('?') => self.help = true,
                    KeyCode::Char('q') => self.confirm_quit = true,
                    _ => return Vec::new(),
                }
                self.notice = notice;
                Vec::new()
            }
        }
    }

    /// The screen in front handles `key`.
    pub(in crate::tui) fn screen_key(&mut self, key: KeyEvent) -> Handled<Option<Action>> {
        let App {
            stacks,
            configs,
            rows,
            overrides,
            available,
            launch,
            theme,
            tick,
            screen,
            preflight,
            launch_form,
            results,
            collector,
            ..
        } = self;
        let ctx = Ctx {
            stacks,
            configs,
            rows,
            overrides,
            available: *available,
            launch,
            theme,
            tick: *tick,
        };
        let front: &mut dyn Component = match screen {
            Screen::Preflight => preflight,
            Screen::Server(view) => view,
            Screen::Describe(view) => view,
            Screen::Launch => launch_form,
            Screen::Collector => collector,
            Screen::Results => results,
        };
        front.handle_key(key, &ctx)
    }

    /// The screen in front.
    pub fn front(&self) -> &dyn Component {
        match &self.screen {
            Screen::Preflight => &self.preflight,
            Screen::Server(view) => view,
            Screen::Describe(view) => view,
            Screen::Launch => &self.launch_form,
            Screen::Collector => &self.collector,
            Screen::Results => &self.results,
        }
    }

    /// What every screen may read.
    pub fn ctx(&self) -> Ctx<'_> {
        Ctx {
            stacks: &self.stacks,
            configs: &self.configs,
            rows: &self.rows,
            overrides: &self.overrides,
            available: self.available,
            launch: &self.launch,
            theme: &self.theme,
            tick: self.tick,
        }
    }

    /// Does what a screen asked for; returns what the runtime must do.
    fn apply(&mut self, action: Action) -> Vec<Effect> {
        if let Action::Run(Effect::LoadConfigs(paths)) = &action {
            self.configs = paths.clone();
        }
        match action {
            Action::Show(screen) => self.screen = screen,
            Action::Say(text) => self.say(text),
            Action::Complain(text) => self.complain(text),
            Action::ToggleServer(row) => return self.toggle_server(row),
            Action::Retry(rows) => return rows.into_iter().flat_map(|r| self.retry(r)).collect(),
            Action::SetAllowed { row, tools, allow } => {
                return self.set_allowed(row, &tools, allow)
            }
            Action::Rewrite {
                row,
                tools,
                rewrite,
            } => return super::rewrite::rewrite(self, row, &tools, &rewrite),
            Action::Launch(choice) => {
                self.start_launch();
                // Offered again next time.
                let (_, save) = self.edit(vec![Edit::SetLaunchChoices(choice.remembered())]);
                let failed = self.rows.iter().filter_map(Row::report);
                let failed = failed.filter(|r| r.status == Status::Error).cloned();
                return vec![save, Effect::Launch(choice, failed.collect())];
            }
            Action::Copy { stack, text } => {
                self.say(format!("copied the spec URL and key of {stack} (OSC 52)"));
                return vec![Effect::Copy(text)];
            }
            Action::Run(effect) => return vec![effect],
        }
        Vec::new()
    }

    /// Launch, log and clipboard news.
    fn on_launch_news(&mut self, news: LaunchMsg) {
        match news {
            LaunchMsg::Available(available) => self.available = available,
            LaunchMsg::LogSaved(Ok(path)) => self.say(format!("log saved to {path}")),
            LaunchMsg::LogSaved(Err(e)) => self.complain(format!("could not save the log: {e}")),
            news => self.results.on_news(&mut self.launch, news),
        }
    }

    /// Marks row `row` as being checked again and asks for the check.
    pub(super) fn retry(&mut self, row: usize) -> Vec<Effect> {
        let Some(r) = self.rows.get_mut(row) else {
            return Vec::new();
        };
        if matches!(r.check, Check::Running) {
            return Vec::new();
        }
        r.check = Check::Running;
        r.checks += 1;
        vec![Effect::Check {
            row,
            entry: r.entry.clone(),
        }]
    }

    /// Enables or disables the server of row `row`; asks to save.
    pub(super) fn toggle_server(&mut self, row: usize) -> Vec<Effect> {
        let Some(r) = self.rows.get(row) else {
            return Vec::new();
        };
        let disabled = !self.overrides.is_disabled(&r.entry);
        let text = format!(
            "{} {}",
            r.label(),
            if disabled { "disabled" } else { "enabled" }
        );
        let (_, save) = self.edit(vec![Edit::set_disabled(&r.entry, disabled)]);
        self.say(text);
        vec![save]
    }

    /// Allows or denies `names` of the server in row `row`; asks to save.
    fn set_allowed(&mut self, row: usize, names: &[String], allow: bool) -> Vec<Effect> {
        let Some(r) = self.rows.get(row) else {
            return Vec::new();
        };
        if names.is_empty() {
            return Vec::new();
        }
        let (stack, server, tools) = (r.entry.stack.clone(), r.entry.name.clone(), names.to_vec());
        let edit = if allow {
            Edit::Allow {
                stack,
                server,
                tools,
                only: false,
            }
        } else {
            Edit::Deny {
                stack,
                server,
                tools,
            }
        };
        let (changes, save) = self.edit(vec![edit]);
        let changed = changes.iter().filter(|c| c.changed).count();
        let verb = if allow { "allowed" } else { "denied" };
        self.say(match names {
            [one] => format!("{one} {verb}"),
            _ => format!("{changed} tool(s) {verb}"),
        });
        vec![save]
    }

    /// Applies `edits` to the overrides shown and asks the runtime to write them (merged into
    /// the file as it is then, so choices made meanwhile in another terminal are kept).
    pub(super) fn edit(&mut self, edits: Vec<Edit>) -> (Vec<Change>, Effect) {
        let changes = edits
            .iter()
            .flat_map(|e| self.overrides.apply_edit(e))
            .collect();
        self.unsaved.push_back(edits.clone());
        (changes, Effect::Save(edits))
    }

    /// Like [`App::edit`], but nothing is written when no edit changed anything.
    pub(super) fn edit_if_changed(&mut self, edits: Vec<Edit>) -> (Vec<Change>, Option<Effect>) {
        let (changes, save) = self.edit(edits);
        if changes.iter().any(|c| c.changed) {
            return (changes, Some(save));
        }
        self.unsaved.pop_back();
        (changes, None)
    }

    /// The overrides file as now read: shown with the edits still being written on top.
    fn reread(&mut self, on_disk: Overrides) {
        let mut shown = on_disk.clone();
        for edit in self.unsaved.iter().flatten() {
            shown.apply_edit(edit);
        }
        self.on_disk = on_disk;
        self.overrides = shown;
    }

    /// Shows the results and marks the launch as started.
    pub(super) fn start_launch(&mut self) {
        self.launch = LaunchState::Starting(Vec::new());
        self.screen = Screen::Results;
    }

    /// Puts a problem in the status bar.
    /// Tools approved: no longer changed in their server's report (or the failure said).
    fn on_approved(&mut self, row: usize, result: Result<Vec<String>, String>) {
        let approved = match result {
            Ok(approved) => approved,
            Err(e) => return self.complain(format!("could not approve: {e}")),
        };
        if let Some(Check::Done(report)) = self.rows.get_mut(row).map(|r| &mut r.check) {
            report.changed.retain(|name, _| !approved.contains(name));
        }
        self.say(format!("approved: {}", approved.join(", ")));
    }

    pub(super) fn complain(&mut self, text: String) {
        self.notice = Some(Notice {
            text,
            is_error: true,
        });
    }

    /// Puts `text` in the status bar.
    pub(super) fn say(&mut self, text: String) {
        self.notice = Some(Notice {
            text,
            is_error: false,
        });
    }

    /// Rows of stack `stack`.
    pub fn stack_rows<'a>(&'a self, stack: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| r.entry.stack == stack)
    }
}
