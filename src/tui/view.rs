//! Drawing: the screen in front, the status bar, and the help overlay on top. Reads the
//! app's state only.

use ratatui::layout::{Constraint, Layout};
use ratatui::Frame;

use super::app::App;
use super::widgets::{render_help, render_status_bar, status_hints};

/// Draws the whole frame.
pub fn draw(frame: &mut Frame, app: &App) {
    let [body, status] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
    let front = app.front();
    front.render(frame, body, &app.ctx());
    let hints = status_hints(front.commands(), front.is_typing(), &app.theme);
    render_status_bar(frame, status, app, hints);
    if app.help {
        render_help(frame, body, &app.theme, front.commands());
    }
}
