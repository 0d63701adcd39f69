//! What a launch reports while it runs: the CLI prints these lines, the TUI will draw them.

/// One thing that happened to a stack.
#[derive(Debug, Clone)]
pub enum StackEvent {
    /// A step started or is still going (`waited_secs` grows about once a second).
    Progress {
        /// The stack.
        stack: String,
        /// What is happening (`preflight of 3 servers`, `waiting for mcpo`).
        step: String,
        /// Seconds waited so far.
        waited_secs: u64,
    },
    /// Something the operator should know that does not stop the stack.
    Warning {
        /// The stack.
        stack: String,
        /// The message, one line, with what to do.
        message: String,
    },
    /// A process of the stack ended and is being restarted.
    Restarting {
        /// The stack.
        stack: String,
        /// `mcpo` or `cloudflared`.
        process: &'static str,
        /// How it ended and its last words.
        reason: String,
        /// Seconds until the next attempt.
        delay_secs: u64,
        /// Restart attempt number (1 for the first restart).
        attempt: u32,
    },
    /// Something about the launch as a whole (which controller serves, and why).
    Note {
        /// The message, one line.
        message: String,
    },
    /// A process came back.
    Restarted {
        /// The stack.
        stack: String,
        /// `mcpo` or `cloudflared`.
        process: &'static str,
        /// The public URL, when it changed (a quick tunnel gets a new one).
        new_url: Option<String>,
    },
}

impl StackEvent {
    /// True for what the operator should look at (warnings, restarts).
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            StackEvent::Warning { .. } | StackEvent::Restarting { .. }
        )
    }
}

/// The event as one line, as the CLI prints it and the TUI logs it.
impl std::fmt::Display for StackEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StackEvent::Progress {
                stack,
                step,
                waited_secs: 0,
            } => write!(f, "{stack}: {step}…"),
            StackEvent::Progress {
                stack,
                step,
                waited_secs,
            } => write!(f, "{stack}: {step} ({waited_secs}s)…"),
            StackEvent::Warning { stack, message } => write!(f, "{stack}: {message}"),
            StackEvent::Note { message } => f.write_str(message),
            StackEvent::Restarting {
                stack,
                process,
                reason,
                delay_secs,
                attempt,
            } => write!(
                f,
                "{stack}: {process} {reason}; restart {attempt} in {delay_secs}s"
            ),
            StackEvent::Restarted {
                stack,
                process,
                new_url: Some(url),
            } => write!(
                f,
                "{stack}: {process} restarted; new URL {url}/openapi.json"
            ),
            StackEvent::Restarted { stack, process, .. } => {
                write!(f, "{stack}: {process} restarted")
            }
        }
    }
}

/// Where events go: a channel to the CLI or TUI, or nowhere.
#[derive(Debug, Clone, Default)]
pub struct Events(Option<tokio::sync::mpsc::UnboundedSender<StackEvent>>);

impl Events {
    /// Events sent into `sender`.
    pub fn to(sender: tokio::sync::mpsc::UnboundedSender<StackEvent>) -> Self {
        Self(Some(sender))
    }

    /// Reports `event` (and logs it at debug level).
    pub fn send(&self, event: StackEvent) {
        tracing::debug!(?event, "stack event");
        if let Some(tx) = &self.0 {
            let _ = tx.send(event);
        }
    }

    /// Shorthand for a [`StackEvent::Warning`].
    pub fn warn(&self, stack: &str, message: impl Into<String>) {
        self.send(StackEvent::Warning {
            stack: stack.to_string(),
            message: message.into(),
        });
    }

    /// Shorthand for a [`StackEvent::Note`].
    pub fn note(&self, message: impl Into<String>) {
        self.send(StackEvent::Note {
            message: message.into(),
        });
    }

    /// Shorthand for a [`StackEvent::Progress`].
    pub fn progress(&self, stack: &str, step: &str, waited_secs: u64) {
        self.send(StackEvent::Progress {
            stack: stack.to_string(),
            step: step.to_string(),
            waited_secs,
        });
    }
}
