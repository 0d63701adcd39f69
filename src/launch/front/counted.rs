//! REST requests counted for `/metrics` (`crate::observe::rest_served`). The labels come from
//! the published exposure only — a server the stack exposes, one of its tools — so a client's
//! made-up path reads `other` and the label set stays as small as the stack.

use axum::http::StatusCode;

use super::path::RequestPath;
use crate::launch::Exposure;
use crate::observe::Outcome;

/// The `server` and `tool` labels of the request path `raw`, as far as `exposure` knows them
/// (`None` reads `other`).
pub(super) fn labels(raw: &str, exposure: Option<&Exposure>) -> (Option<String>, Option<String>) {
    let path = RequestPath::parse(raw).ok();
    let named = path.as_ref().and_then(RequestPath::server_and_rest);
    let Some(((server, rest), exposure)) = named.zip(exposure) else {
        return (None, None);
    };
    let Some(known) = exposure.server(server) else {
        return (None, None);
    };
    let tool = rest.trim_end_matches('/');
    let tool = known.tools.contains_key(tool).then(|| tool.to_string());
    (Some(server.to_string()), tool)
}

/// How an answer's status reads: 2xx and 3xx ok, 424 (the tool ran and said no) a tool
/// error, anything else an error.
pub(super) fn outcome(status: StatusCode) -> Outcome {
    match status {
        StatusCode::FAILED_DEPENDENCY => Outcome::ToolError,
        s if s.is_success() || s.is_redirection() => Outcome::Ok,
        _ => Outcome::Error,
    }
}
