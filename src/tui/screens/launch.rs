//! Launch options: the controller (auto, native, mcpo — with whether mcpo is installed), the
//! tunnel (none, quick — with whether cloudflared is installed —, or named with its public
//! URL) and the first front port; Enter launches every stack.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::catalog::LaunchChoices;
use crate::launch::launcher::{ControllerChoice, DEFAULT_PORT};

use super::super::app::Screen;
use super::super::component::{Action, Command, Component, Ctx, Handled};

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

/// A field of the form, top to bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Field {
    /// The controller (a choice).
    #[default]
    Controller,
    /// The tunnel (a choice).
    Tunnel,
    /// The first front port (typed).
    Port,
    /// The public URL of a named tunnel (typed; shown for named tunnels only).
    PublicUrl,
}

/// The form's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchForm {
    /// The focused field.
    pub field: Field,
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
            field: Field::Controller,
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
        form.controller = from_name(&CONTROLLERS, choices.controller.as_deref());
        form.tunnel = from_name(&TUNNELS, choices.tunnel.as_deref());
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
            controller: Some(name_of(&CONTROLLERS, self.controller).to_string()),
            tunnel: Some(name_of(&TUNNELS, self.tunnel).to_string()),
            port: Some(self.port),
            public_url: self.public_url.clone(),
        }
    }
}

/// What the keys do.
const COMMANDS: &[Command] = &[
    Command::bar("↑↓ tab ⇧tab", "move between fields", &[("↑↓", "field")]),
    Command::bar("← → space", "change the choice", &[("←→", "change")]),
    Command::help("0-9 / text", "type the port / the public URL"),
    Command::help("backspace", "delete a character"),
    Command::bar("enter", "launch every stack", &[("enter", "launch")]),
    Command::bar("esc", "back to the preflight", &[("esc", "back")]),
];

/// The controllers in the order ←/→ cycle them, each with the name the overrides file
/// remembers it by (the first is the default).
const CONTROLLERS: [(ControllerChoice, &str); 3] = [
    (ControllerChoice::Auto, "auto"),
    (ControllerChoice::Native, "native"),
    (ControllerChoice::Mcpo, "mcpo"),
];

/// The tunnels, likewise.
const TUNNELS: [(TunnelChoice, &str); 3] = [
    (TunnelChoice::None, "none"),
    (TunnelChoice::Quick, "quick"),
    (TunnelChoice::Named, "named"),
];

/// The choice remembered as `name`; the first (the default) for none or an unknown one.
fn from_name<T: Copy>(choices: &[(T, &str)], name: Option<&str>) -> T {
    let found = choices.iter().find(|(_, n)| Some(*n) == name);
    found.unwrap_or(&choices[0]).0
}

/// The name `choice` is remembered by.
fn name_of<T: Copy + PartialEq>(choices: &[(T, &'static str)], choice: T) -> &'static str {
    let found = choices.iter().find(|(c, _)| *c == choice);
    found.unwrap_or(&choices[0]).1
}

/// The choice after (or before) `current`, wrapping.
fn cycle<T: Copy + PartialEq>(options: &[T], current: T, forward: bool) -> T {
    let at = options.iter().position(|o| *o == current).unwrap_or(0);
    let next = if forward {
        (at + 1) % options.len()
    } else {
        (at + options.len() - 1) % options.len()
    };
    options[next]
}

impl LaunchForm {
    /// The fields shown, top to bottom (the public URL for named tunnels only).
    fn fields(&self) -> &'static [Field] {
        if self.tunnel == TunnelChoice::Named {
            &[
                Field::Controller,
                Field::Tunnel,
                Field::Port,
                Field::PublicUrl,
            ]
        } else {
            &[Field::Controller, Field::Tunnel, Field::Port]
        }
    }

    /// ↑ or ↓ (wrapping).
    fn step(&mut self, forward: bool) {
        let fields = self.fields();
        self.field = cycle(fields, self.field, forward);
    }

    /// The text field in focus, if the focus is on one.
    fn text_mut(&mut self) -> Option<&mut String> {
        match self.field {
            Field::Port => Some(&mut self.port),
            Field::PublicUrl => Some(&mut self.public_url),
            Field::Controller | Field::Tunnel => None,
        }
    }
}

impl Component for LaunchForm {
    fn handle_key(&mut self, key: KeyEvent, ctx: &Ctx) -> Handled<Option<Action>> {
        match (key.code, self.field) {
            (KeyCode::Esc, _) => return Handled::then(Action::Show(Screen::Preflight)),
            (KeyCode::Up | KeyCode::BackTab, _) => self.step(false),
            (KeyCode::Down | KeyCode::Tab, _) => self.step(true),
            (KeyCode::Left | KeyCode::Right | KeyCode::Char(' '), Field::Controller) => {
                self.controller = cycle(
                    &CONTROLLERS.map(|(c, _)| c),
                    self.controller,
                    key.code != KeyCode::Left,
                )
            }
            (KeyCode::Left | KeyCode::Right | KeyCode::Char(' '), Field::Tunnel) => {
                self.tunnel = cycle(
                    &TUNNELS.map(|(t, _)| t),
                    self.tunnel,
                    key.code != KeyCode::Left,
                )
            }
            (KeyCode::Backspace, _) => {
                self.text_mut().map(String::pop);
            }
            (KeyCode::Char(c), Field::Port) if c.is_ascii_digit() && self.port.len() < 5 => {
                self.port.push(c)
            }
            (KeyCode::Char(c), Field::PublicUrl) => self.public_url.push(c),
            (KeyCode::Enter, _) => {
                return Handled::then(match choice(self, ctx.available) {
                    Ok(choice) => Action::Launch(choice),
                    Err(problem) => Action::Complain(problem),
                })
            }
            _ => return Handled::Ignored,
        }
        Handled::done()
    }

    fn commands(&self) -> &'static [Command] {
        COMMANDS
    }

    fn is_typing(&self) -> bool {
        self.field == Field::PublicUrl
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, ctx, self);
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

fn render(frame: &mut Frame, area: Rect, app: &Ctx, form: &LaunchForm) {
    let t = app.theme;
    let focus = |i: Field| {
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
            Span::styled(format!("‹ {controller} ›"), focus(Field::Controller)),
            Span::styled("   mcpo ", t.dim),
            Span::styled(mcpo_word, mcpo_style),
        ]),
        Line::from(vec![
            Span::styled(" tunnel      ", t.dim),
            Span::styled(format!("‹ {tunnel} ›"), focus(Field::Tunnel)),
            Span::styled("   cloudflared ", t.dim),
            Span::styled(cf_word, cf_style),
        ]),
        Line::from(vec![
            Span::styled(" front port  ", t.dim),
            Span::styled(format!("{}▏", form.port), focus(Field::Port)),
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
            Span::styled(format!("{}▏", form.public_url), focus(Field::PublicUrl)),
        ]));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        " Enter launches every stack with the tools allowed now; the edits stay in ./.mcp-launch/overrides.json.",
        t.dim,
    ));
    frame.render_widget(Paragraph::new(lines), area);
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
