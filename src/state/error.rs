//! Why the shared state store could not be used. Every message names the store by its URL
//! with the password taken out ([`super::redacted`]): a log or an error never carries it.

/// A state store that cannot be opened or answered.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// `--state` / `MCP_LAUNCH_STATE` is not a URL we can use.
    #[error("--state {url}: {reason}")]
    BadUrl {
        /// The URL as given, its password taken out.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The store did not answer, or answered with an error.
    #[error("the state store {url} {what}: {reason}")]
    Unreachable {
        /// The store's URL, its password taken out.
        url: String,
        /// What was being done (`did not answer a GET`…).
        what: &'static str,
        /// Redis's own words, or the timeout.
        reason: String,
    },
    /// A record in the store is not one of ours (another program shares its key space).
    #[error("the state store {url} holds a record at {key} that is not ours: {reason}")]
    Foreign {
        /// The store's URL, its password taken out.
        url: String,
        /// The record's key.
        key: String,
        /// Why it was refused.
        reason: String,
    },
}

impl StateError {
    /// A stable name for the JSON envelope.
    pub fn kind(&self) -> &'static str {
        match self {
            StateError::BadUrl { .. } => "invalid_state_url",
            StateError::Unreachable { .. } => "state_unreachable",
            StateError::Foreign { .. } => "state_foreign_record",
        }
    }

    /// What to do.
    pub fn help(&self) -> String {
        match self {
            StateError::BadUrl { .. } => {
                "give --state (or MCP_LAUNCH_STATE) as redis://[:PASSWORD@]HOST[:PORT][/DB], \
                 or leave it out to keep the state in local files"
                    .into()
            }
            StateError::Unreachable { url, .. } => format!(
                "check that Redis answers at {url} (`redis-cli -u {url} ping`); \
                 /readyz says 503 until it does"
            ),
            StateError::Foreign { key, .. } => format!(
                "give mcp-launch a Redis database of its own (redis://HOST/N), or delete {key}"
            ),
        }
    }
}
