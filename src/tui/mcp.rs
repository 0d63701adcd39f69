//! `/mcp` on the stacks the TUI launches, as `up` serves it. The composition of a stack's
//! `/mcp` (a gateway mounted on launch's front) belongs to the command line (`cli/up/mcp.rs`),
//! a floor above: `up --tui` hands it down as a [`ServeMcp`], which the TUI calls after each
//! launch with the tunnel chosen and where consent requests must go — to the TUI itself, since
//! the terminal that `up` prints them on is the TUI's.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

use crate::auth::server::{ConsentEvent, Notify};
use crate::gateway::Gateway;
use crate::launch::stack::RunningStack;

use super::msg::Msg;

/// Who is told of a stack's consent requests: given the stack's name, its notifier.
pub type ConsentTo = Arc<dyn Fn(&str) -> Notify + Send + Sync>;

/// What the TUI asks of [`ServeMcp`] for one launch.
pub struct McpRequest {
    /// A tunnel shares the stacks (OAuth is then the default, as with `up`).
    pub shared: bool,
    /// Where each stack's consent requests go.
    pub consent: ConsentTo,
    /// Where lines for the operator go (the log pane: stderr is under the TUI's screen).
    pub say: Say,
}

/// Says a line to the operator.
pub type Say = Arc<dyn Fn(String) + Send + Sync>;

/// Serves `/mcp` on the stacks just launched: their gateways (shut down when the TUI ends),
/// or why `/mcp` is not served.
pub type ServeMcp = Arc<
    dyn Fn(Vec<RunningStack>, McpRequest) -> BoxFuture<'static, Result<Vec<Gateway>, String>>
        + Send
        + Sync,
>;

/// Consent requests as messages for the app, each with its stack's name (never logged: the
/// one-time code is a secret).
pub(super) fn consent_to_app(tx: mpsc::UnboundedSender<Msg>) -> ConsentTo {
    Arc::new(move |stack: &str| {
        let (tx, stack) = (tx.clone(), stack.to_string());
        Arc::new(move |event: &ConsentEvent| {
            let news = super::screens::consent::ConsentMsg::from_event(&stack, event);
            let _ = tx.send(Msg::Consent(news));
        })
    })
}
