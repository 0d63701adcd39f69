//! Drawing: the screen in front, the status bar, and the help overlay on top. Reads the
//! app's state only.

use ratatui::layout::{Constraint, Layout};
use ratatui::Frame;

use super::app::{App, Screen};
use super::screens::{collector, describe, launch, preflight, results, server};
use super::widgets::{render_help, render_status_bar};

/// Draws the whole frame.
pub fn draw(frame: &mut Frame, app: &App) {
    let [body, status] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
    let (hints, keys) = match &app.screen {
        Screen::Preflight => {
            preflight::render(frame, body, app);
            (preflight::hints(app), preflight::KEYS)
        }
        Screen::Server(view) => {
            server::render(frame, body, app, view);
            let keys = if view.filtering {
                server::FILTER_KEYS
            } else {
                server::KEYS
            };
            (server::hints(app, view), keys)
        }
        Screen::Describe(view) => {
            describe::render(frame, body, app, view);
            (describe::hints(app, view), describe::keys(view))
        }
        Screen::Collector => {
            collector::render(frame, body, app);
            (collector::hints(app), collector::KEYS)
        }
        Screen::Launch => {
            launch::render(frame, body, app);
            (launch::hints(app), launch::KEYS)
        }
        Screen::Results => {
            results::render(frame, body, app);
            (results::hints(app), results::KEYS)
        }
    };
    render_status_bar(frame, status, app, hints);
    if app.help {
        render_help(frame, body, app, keys);
    }
}
