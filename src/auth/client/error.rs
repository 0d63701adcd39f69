//! Why an OAuth step failed, naming the server's resource and the step.

/// The steps of the flow, named in every error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// RFC 9728 protected-resource metadata.
    ResourceMetadata,
    /// RFC 8414 / OpenID authorization-server metadata.
    ServerMetadata,
    /// Client registration (pre-registered, metadata document or RFC 7591).
    Registration,
    /// The authorization response (the redirect back to us).
    Authorization,
    /// The authorization code exchange.
    Token,
    /// The refresh token exchange.
    Refresh,
    /// Reading or writing the token store.
    Store,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::ResourceMetadata => "protected-resource metadata",
            Step::ServerMetadata => "authorization-server metadata",
            Step::Registration => "client registration",
            Step::Authorization => "authorization response",
            Step::Token => "token request",
            Step::Refresh => "token refresh",
            Step::Store => "token store",
        })
    }
}

/// An OAuth failure. Never carries a token, a code or a secret.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuthError {
    /// No usable token: a person must log in.
    #[error("{resource} needs login: {reason}")]
    NeedsLogin {
        /// The server's URL.
        resource: String,
        /// Why the stored grant (if any) cannot be used.
        reason: String,
    },
    /// The authorization server or the resource answered something we must not trust.
    #[error("refused {resource} at the {step}: {reason}")]
    Refused {
        /// The server's URL.
        resource: String,
        /// Where it happened.
        step: Step,
        /// What was wrong.
        reason: String,
    },
    /// A step could not be done (unreachable, an error answer).
    #[error("OAuth for {resource} failed at the {step}: {reason}")]
    Failed {
        /// The server's URL.
        resource: String,
        /// Where it happened.
        step: Step,
        /// What went wrong.
        reason: String,
    },
}

impl AuthError {
    /// A stable snake_case name for `--json`.
    pub fn kind(&self) -> &'static str {
        match self {
            AuthError::NeedsLogin { .. } => "needs_login",
            AuthError::Refused { .. } => "auth_refused",
            AuthError::Failed { .. } => "auth_failed",
        }
    }

    /// The next step for a person.
    pub fn help(&self) -> String {
        match self {
            AuthError::NeedsLogin { .. } => {
                "run `mcp-launch auth login SERVER` (SERVER is the server's name in the config)"
                    .into()
            }
            AuthError::Refused { .. } => "the server's authorization server answered something that does not belong to it; check the server's URL in the config, and tell its operator".into(),
            AuthError::Failed { step: Step::Store, .. } => "check that the state directory ($XDG_STATE_HOME/mcp-launch/oauth) is writable by you".into(),
            AuthError::Failed { .. } => "check that the server and its authorization server are reachable, then retry `mcp-launch auth login SERVER`".into(),
        }
    }
}

impl crate::error::Actionable for AuthError {
    fn kind(&self) -> &'static str {
        AuthError::kind(self)
    }
    fn help(&self) -> String {
        AuthError::help(self)
    }
}
