//! Consent requests of the stacks' built-in authorization servers (`--auth oauth`): a client
//! asked for access and its consent page waits for the one-time code. Under `up --tui` the
//! terminal is the TUI's, so the requests come here instead of stderr, and are shown on top of
//! every screen (client, where it redirects, the scopes, the code, the time left) until
//! approved (`a`: the approval `mcp-launch auth approve` records), dismissed, answered on the
//! page, or expired. A visible request takes every key but ctrl-c.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::auth::server::{ConsentEvent, ConsentNotice};

use super::super::component::{Action, Command, Component, Ctx, Handled};
use super::super::msg::Effect;

/// News of consent requests.
#[derive(Debug, Clone)]
pub enum ConsentMsg {
    /// A client asks a stack for access.
    Asked {
        /// The stack whose front it reached.
        stack: String,
        /// The request (its one-time code included).
        notice: ConsentNotice,
    },
    /// The request was answered on its page (allowed with the code, denied, closed).
    Settled {
        /// The request's id.
        request_id: String,
    },
    /// The operator's approval was recorded (`Ok(false)`: the request was gone), or why not.
    /// Answers [`Effect::ApproveConsent`].
    Approved {
        /// The request's id.
        request_id: String,
        /// Whether it was found and approved.
        result: Result<bool, String>,
    },
}

impl ConsentMsg {
    /// The message for `event` of stack `stack`'s authorization server.
    pub fn from_event(stack: &str, event: &ConsentEvent) -> ConsentMsg {
        match event {
            ConsentEvent::Asked(notice) => ConsentMsg::Asked {
                stack: stack.to_string(),
                notice: notice.clone(),
            },
            ConsentEvent::Settled { request_id } => ConsentMsg::Settled {
                request_id: request_id.clone(),
            },
        }
    }
}

/// One request shown.
#[derive(Debug, Clone)]
struct Asked {
    stack: String,
    notice: ConsentNotice,
    /// The operator put it aside (its page still takes the code until it expires).
    is_dismissed: bool,
    /// `a` was pressed; the approval is being written.
    is_approving: bool,
}

/// The consent requests open now, oldest first, and the clock they expire by.
#[derive(Debug, Clone, Default)]
pub struct ConsentView {
    asked: Vec<Asked>,
    /// Seconds since the epoch, as of the last tick.
    pub now: u64,
}

const COMMANDS: &[Command] = &[
    Command::bar(
        "a",
        "approve this client (as `mcp-launch auth approve`)",
        &[("a", "approve")],
    ),
    Command::bar(
        "esc d",
        "dismiss (its page still takes the one-time code)",
        &[("esc", "dismiss")],
    ),
];

impl ConsentView {
    /// Applies `news` at `now` (seconds since the epoch); what the app should say, if anything.
    pub fn on_news(&mut self, news: ConsentMsg, now: u64) -> Option<Action> {
        self.now = now;
        match news {
            ConsentMsg::Asked { stack, notice } => {
                self.asked.push(Asked {
                    stack,
                    notice,
                    is_dismissed: false,
                    is_approving: false,
                });
                self.expire(now);
                None
            }
            ConsentMsg::Settled { request_id } => {
                self.take(&request_id);
                None
            }
            ConsentMsg::Approved { request_id, result } => self.approved(&request_id, result),
        }
    }

    fn approved(&mut self, request_id: &str, result: Result<bool, String>) -> Option<Action> {
        match result {
            Ok(true) => {
                let asked = self.take(request_id)?;
                Some(Action::Say(format!(
                    "approved {} on {}: its page continues when Allow is pressed",
                    client_name(&asked.notice),
                    asked.stack
                )))
            }
            Ok(false) => {
                self.take(request_id);
                Some(Action::Complain(
                    "that request is gone (answered or expired): the client starts again".into(),
                ))
            }
            Err(e) => {
                let asked = self
                    .asked
                    .iter_mut()
                    .find(|a| a.notice.request_id == request_id);
                if let Some(asked) = asked {
                    asked.is_approving = false;
                }
                Some(Action::Complain(format!("could not approve: {e}")))
            }
        }
    }

    /// The clock moved to `now`: expired requests leave.
    pub fn expire(&mut self, now: u64) {
        self.now = now;
        self.asked.retain(|a| a.notice.expires_at > now);
    }

    /// Removes request `id`; it, if it was shown.
    fn take(&mut self, id: &str) -> Option<Asked> {
        let at = self.asked.iter().position(|a| a.notice.request_id == id)?;
        Some(self.asked.remove(at))
    }

    /// The request in front: the oldest not dismissed.
    fn front(&self) -> Option<&Asked> {
        self.asked.iter().find(|a| !a.is_dismissed)
    }

    /// True while a request is shown (it takes the keys).
    pub fn is_visible(&self) -> bool {
        self.front().is_some()
    }

    /// Requests shown, dismissed ones left out.
    fn shown(&self) -> usize {
        self.asked.iter().filter(|a| !a.is_dismissed).count()
    }
}

impl Component for ConsentView {
    fn handle_key(&mut self, key: KeyEvent, _ctx: &Ctx) -> Handled<Option<Action>> {
        let Some(front) = self.asked.iter_mut().find(|a| !a.is_dismissed) else {
            return Handled::Ignored;
        };
        match key.code {
            KeyCode::Char('a') if !front.is_approving => {
                front.is_approving = true;
                let request_id = front.notice.request_id.clone();
                Handled::then(Action::Run(Effect::ApproveConsent { request_id }))
            }
            KeyCode::Esc | KeyCode::Char('d') => {
                front.is_dismissed = true;
                Handled::done()
            }
            _ => Handled::done(),
        }
    }

    fn commands(&self) -> &'static [Command] {
        COMMANDS
    }

    fn is_typing(&self) -> bool {
        false
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let Some(asked) = self.front() else {
            return;
        };
        let t = ctx.theme;
        let notice = &asked.notice;
        let left = notice.expires_at.saturating_sub(self.now);
        let field = |name: &str, value: String| {
            Line::from(vec![
                Span::styled(format!("  {name:<11}"), t.dim),
                Span::raw(value),
            ])
        };
        let mut lines = vec![
            Line::raw(""),
            field("Stack", asked.stack.clone()),
            field("Client", format!("\"{}\"", client_name(notice))),
            field("Redirects", redirect_host(&notice.redirect_uri)),
            field("Asks for", notice.scope.clone()),
            Line::from(vec![
                Span::styled(format!("  {:<11}", "Code"), t.dim),
                Span::styled(notice.code.clone(), t.title),
                Span::styled("  (entered on the client's page)", t.dim),
            ]),
            field("Expires in", format!("{}:{:02}", left / 60, left % 60)),
            Line::raw(""),
        ];
        let keys = if asked.is_approving {
            Line::styled("  approving…", t.warn)
        } else {
            Line::from(vec![
                Span::raw("  "),
                Span::styled("a", t.key),
                Span::raw(" approve · "),
                Span::styled("esc", t.key),
                Span::raw(" dismiss"),
            ])
        };
        lines.push(keys);
        let shown = self.shown();
        let title = if shown > 1 {
            format!(" A client asks for access (1 of {shown}) ")
        } else {
            " A client asks for access ".to_string()
        };
        let popup = super::super::widgets::popup(area, 64, lines.len() as u16 + 2);
        frame.render_widget(Clear, popup);
        let block = Block::new()
            .borders(Borders::ALL)
            .border_style(t.warn)
            .title(Span::styled(title, t.title));
        frame.render_widget(Paragraph::new(lines).block(block), popup);
    }
}

/// The client's name as it gave it: its own words (registration is open), control
/// characters shown as `?` so that they cannot move the cursor or restyle the screen.
fn client_name(notice: &ConsentNotice) -> String {
    let name = notice.client_name.as_deref().unwrap_or("(no name)");
    name.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The host (and port) a redirect URI sends the code to: where the login ends.
fn redirect_host(uri: &str) -> String {
    match reqwest::Url::parse(uri) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            (None, _) => url.scheme().to_string(),
        },
        Err(_) => "(not a URL)".into(),
    }
}
