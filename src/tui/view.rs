//! Drawing: the screen in front, the status bar, and the help overlay on top. Reads the
//! app's state only.

use ratatui::layout::{Constraint, Layout};
use ratatui::Frame;

use super::app::App;
use super::component::Component;
use super::widgets::{render_help, render_status_bar, status_hints};

/// Draws the whole frame.
pub fn draw(frame: &mut Frame, app: &App) {
    let [body, status] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
    let front = app.front();
    front.render(frame, body, &app.ctx());
    // The keys of what takes them: a consent request while one is shown.
    let keyed: &dyn Component = if app.consent.is_visible() {
        &app.consent
    } else {
        front
    };
    // (`?` and `q` are not offered while a consent request takes the keys.)
    let typing = keyed.is_typing() || app.consent.is_visible();
    let hints = status_hints(keyed.commands(), typing, &app.theme);
    render_status_bar(frame, status, app, hints);
    if app.help {
        render_help(frame, body, &app.theme, front.commands());
    }
    // A client waiting for consent is shown over everything else.
    app.consent.render(frame, body, &app.ctx());
}
