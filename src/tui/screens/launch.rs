//! Launch options: the controller (auto, native, mcpo — with whether mcpo is installed), the
//! tunnel (none, quick — with whether cloudflared is installed —, or named with its public
//! URL) and the first front port; Enter launches every stack.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::catalog::{Edit, LaunchChoices};
use crate::launch::launcher::{ControllerChoice, DEFAULT_PORT};

use super::super::app::{App, Screen};
use super::super::msg::Effect;
use super::super::widgets::key_hints;

/// The tunnel to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelChoice {
    /// Local URLs only.
    None,
    /// A trycloudflare.com URL.
    Quick,
    /// A named tunnel routing the public URL given.
    Named,
}

/// What the operator chose, as the runtime launches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchChoice {
    /// The controller.
    pub controller: ControllerChoice,
    /// The tunnel.
    pub tunnel: TunnelChoice,
    /// The first stack's front port.
    pub port: u16,
    /// The public URL of a named tunnel.
    pub public_url: Option<String>,
}

/// Which programs are installed (found once at start).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Availability {
    /// mcpo is installed.
    pub mcpo: bool,
    /// cloudflared is installed.
    pub cloudflared: bool,
}

/// The form's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchForm {
    /// The focused field: 0 controller, 1 tunnel, 2 port, 3 public URL.
    pub field: usize,
    /// The controller chosen.
    pub controller: ControllerChoice,
    /// The tunnel chosen.
    pub tunnel: TunnelChoice,
    /// The port, as typed.
    pub port: String,
    /// The public URL, as typed (named tunnels).
    pub public_url: String,
}

impl Default for LaunchForm {
    fn default() -> Self {
        LaunchForm {
            field: 0,
            controller: ControllerChoice::Auto,
            tunnel: TunnelChoice::None,
            port: DEFAULT_PORT.to_string(),
            public_url: String::new(),
        }
    }
}

impl LaunchForm {
    /// The form as last launched (from the overrides file), else the defaults.
    pub fn remembered(choices: Option<&LaunchChoices>) -> LaunchForm {
        let mut form = LaunchForm::default();
        let Some(choices) = choices else {
            return form;
        };
        form.controller = match choices.controller.as_deref() {
            Some("native") => ControllerChoice::Native,
            Some("mcpo") => ControllerChoice::Mcpo,
            _ => ControllerChoice::Auto,
        };
        form.tunnel = match choices.tunnel.as_deref() {
            Some("quick") => TunnelChoice::Quick,
            Some("named") => TunnelChoice::Named,
            _ => TunnelChoice::None,
        };
        if let Some(port) = choices.port {
            form.port = port.to_string();
        }
        form.public_url = choices.public_url.clone().unwrap_or_default();
        form
    }
}

impl LaunchChoice {
    /// As the overrides file remembers it.
    pub fn remembered(&self) -> LaunchChoices {
        LaunchChoices {
            controller: Some(
                match self.controller {
                    ControllerChoice::Auto => "auto",
                    ControllerChoice::Native => "native",
                    ControllerChoice::Mcpo => "mcpo",
                }
                .to_string(),
            ),
            tunnel: Some(
                match self.tunnel {
                    TunnelChoice::None => "none",
                    TunnelChoice::Quick => "quick",
                    TunnelChoice::Named => "named",
                }
                .to_string(),
            ),
            port: Some(self.port),
            public_url: self.public_url.clone(),
        }
    }
}

/// The keys of this screen, for the help overlay.
pub const KEYS: &[(&str, &str)] = &[
    ("↑↓ tab", "move between fields"),
    ("← → space", "change the choice"),
    ("0-9 / text", "type the port / the public URL"),
    ("enter", "launch every stack"),
    ("esc", "back to the preflight"),
];

const HINTS: &[(&str, &str)] = &[
    ("↑↓", "field"),
    ("←→", "change"),
    ("enter", "launch"),
    ("esc", "back"),
];

const CONTROLLERS: [ControllerChoice; 3] = [
    ControllerChoice::Auto,
    ControllerChoice::Native,
    ControllerChoice::Mcpo,
];
const TUNNELS: [TunnelChoice; 3] = [TunnelChoice::None, TunnelChoice::Quick, TunnelChoice::Named];

fn cycle<T: Copy + PartialEq>(options: &[T], current: T, forward: bool) -> T {
    let at = options.iter().position(|o| *o == current).unwrap_or(0);
    let next = if forward {
        (at + 1) % options.len()
    } else {
        (at + options.len() - 1) % options.len()
    };
    options[next]
}

pub(in crate::tui) fn on_key(app: &mut App, key: KeyEvent) -> Vec<Effect> {
    let form = &mut app.launch_form;
    let fields = if form.tunnel == TunnelChoice::Named {
        4
    } else {
        3
    };
    match key.code {
        KeyCode::Esc => app.screen = Screen::Preflight,
        KeyCode::Up | KeyCode::BackTab => form.field = (form.field + fields - 1) % fields,
        KeyCode::Down | KeyCode::Tab => form.field = (form.field + 1) % fields,
        KeyCode::Left | KeyCode::Right | KeyCode::Char(' ') if form.field < 2 => {
            let forward = key.code != KeyCode::Left;
            match form.field {
                0 => form.controller = cycle(&CONTROLLERS, form.controller, forward),
                _ => form.tunnel = cycle(&TUNNELS, form.tunnel, forward),
            }
        }
        KeyCode::Backspace if form.field == 2 => {
            form.port.pop();
        }
        KeyCode::Backspace if form.field == 3 => {
            form.public_url.pop();
        }
        KeyCode::Char(c) if form.field == 2 && c.is_ascii_digit() && form.port.len() < 5 => {
            form.port.push(c);
        }
        KeyCode::Char(c) if form.field == 3 => form.public_url.push(c),
        KeyCode::Enter => return launch(app),
        _ => {}
    }
    Vec::new()
}

/// Checks the form and asks the runtime to launch; a problem goes to the status bar.
fn launch(app: &mut App) -> Vec<Effect> {
    match choice(&app.launch_form, app.available) {
        Ok(choice) => {
            app.start_launch();
            // Offered again next time.
            let (_, save) = app.edit(vec![Edit::SetLaunchChoices(choice.remembered())]);
            vec![save, Effect::Launch(choice)]
        }
        Err(problem) => {
            app.complain(problem);
            Vec::new()
        }
    }
}

/// The form as a launch, or what is wrong with it.
pub fn choice(form: &LaunchForm, available: Availability) -> Result<LaunchChoice, String> {
    let port: u16 = form
        .port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("the port {:?} is not a port number (1-65535)", form.port))?;
    if form.controller == ControllerChoice::Mcpo && !available.mcpo {
        return Err("mcpo is not installed: choose native or auto (or install mcpo)".into());
    }
    if form.tunnel == TunnelChoice::Quick && !available.cloudflared {
        return Err(
            "cloudflared is not installed: choose no tunnel (or install cloudflared)".into(),
        );
    }
    let public_url = match form.tunnel {
        TunnelChoice::Named => {
            let url = form.public_url.trim();
            let parsed = reqwest::Url::parse(url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
            if parsed.is_none() {
                return Err(
                    "a named tunnel needs its public URL, like https://tools.example.com".into(),
                );
            }
            Some(url.trim_end_matches('/').to_string())
        }
        _ => None,
    };
    Ok(LaunchChoice {
        controller: form.controller,
        tunnel: form.tunnel,
        port,
        public_url,
    })
}

pub(in crate::tui) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let form = &app.launch_form;
    let focus = |i: usize| {
        if form.field == i {
            t.selected
        } else {
            ratatui::style::Style::new()
        }
    };
    let yes_no = |found: bool| {
        if found {
            ("installed", t.good)
        } else {
            ("not installed", t.bad)
        }
    };
    let (mcpo_word, mcpo_style) = yes_no(app.available.mcpo);
    let (cf_word, cf_style) = yes_no(app.available.cloudflared);
    let controller = match form.controller {
        ControllerChoice::Auto if app.available.mcpo => "auto (mcpo)",
        ControllerChoice::Auto => "auto (native)",
        ControllerChoice::Native => "native",
        ControllerChoice::Mcpo => "mcpo",
    };
    let tunnel = match form.tunnel {
        TunnelChoice::None => "none (local URLs)",
        TunnelChoice::Quick => "quick (a trycloudflare.com URL)",
        TunnelChoice::Named => "named (your hostname)",
    };
    let mut lines = vec![
        Line::styled(" mcp-launch · launch", t.title),
        Line::raw(""),
        Line::from(vec![
            Span::styled(" controller  ", t.dim),
            Span::styled(format!("‹ {controller} ›"), focus(0)),
            Span::styled("   mcpo ", t.dim),
            Span::styled(mcpo_word, mcpo_style),
        ]),
        Line::from(vec![
            Span::styled(" tunnel      ", t.dim),
            Span::styled(format!("‹ {tunnel} ›"), focus(1)),
            Span::styled("   cloudflared ", t.dim),
            Span::styled(cf_word, cf_style),
        ]),
        Line::from(vec![
            Span::styled(" front port  ", t.dim),
            Span::styled(format!("{}▏", form.port), focus(2)),
            Span::styled(
                format!(
                    "   stack i serves on port+i ({} stack(s))",
                    app.stacks.len()
                ),
                t.dim,
            ),
        ]),
    ];
    if form.tunnel == TunnelChoice::Named {
        lines.push(Line::from(vec![
            Span::styled(" public URL  ", t.dim),
            Span::styled(format!("{}▏", form.public_url), focus(3)),
        ]));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        " Enter launches every stack with the tools allowed now; the edits stay in ./.mcp-launch/overrides.json.",
        t.dim,
    ));
    frame.render_widget(Paragraph::new(lines), area);
}

pub(in crate::tui) fn hints(app: &App) -> Line<'static> {
    key_hints(HINTS, &app.theme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_checks_port_programs_and_url() {
        let all = Availability {
            mcpo: true,
            cloudflared: true,
        };
        let mut form = LaunchForm::default();
        assert_eq!(choice(&form, all).unwrap().port, DEFAULT_PORT);
        form.port = "0".into();
        assert!(choice(&form, all).unwrap_err().contains("port"));
        form.port = "9000".into();
        form.controller = ControllerChoice::Mcpo;
        assert!(choice(&form, Availability::default())
            .unwrap_err()
            .contains("mcpo"));
        form.controller = ControllerChoice::Native;
        form.tunnel = TunnelChoice::Quick;
        assert!(choice(&form, Availability::default())
            .unwrap_err()
            .contains("cloudflared"));
        form.tunnel = TunnelChoice::Named;
        assert!(choice(&form, all).unwrap_err().contains("public URL"));
        form.public_url = "https://tools.example.com/".into();
        let ok = choice(&form, all).unwrap();
        assert_eq!(ok.public_url.as_deref(), Some("https://tools.example.com"));
        assert_eq!((ok.port, ok.controller), (9000, ControllerChoice::Native));
    }
}
