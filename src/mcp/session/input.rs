//! SEP-2322 on our side: a server of the 2026-07-28 revision may answer a request with an
//! `InputRequiredResult` (`resultType: "input_required"`, its `inputRequests` keyed, maybe a
//! `requestState`). We answer each embedded request with the session's server-request handler
//! (the one [`Session::on_server_request`] set) and send the request again, under a new id,
//! with `inputResponses` and the `requestState` exactly as received (none when none came).
//! Each retry starts from the caller's params: nothing of one flow reaches another request.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::Session;
use crate::mcp::error::McpError;

/// Rounds of input one request may ask for before we give up on it.
pub const INPUT_ROUNDS: usize = 8;

impl Session {
    /// [`Session::request`], answering the server's `InputRequiredResult`s until it completes.
    /// A result without `resultType` is complete.
    pub async fn request_answering(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        let mut next = params.clone();
        for _ in 0..INPUT_ROUNDS {
            let result = self.request(method, Some(next), timeout).await?;
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Ok(result);
            }
            let responses = self.answer_inputs(method, &result).await?;
            next = params.clone();
            if let Some(retry) = next.as_object_mut() {
                retry.insert("inputResponses".into(), Value::Object(responses));
                if let Some(state) = result.get("requestState") {
                    retry.insert("requestState".into(), state.clone());
                }
            }
        }
        Err(McpError::InputRequired {
            method: method.to_string(),
            asked: "more input".into(),
            reason: format!("still asked after {INPUT_ROUNDS} rounds"),
        })
    }

    /// [`Session::call_tool`], answering the server's requests for input.
    pub async fn call_tool_answering(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        let params = json!({"name": name, "arguments": arguments});
        self.request_answering("tools/call", params, timeout).await
    }

    /// The answers to an `InputRequiredResult`'s requests, by their keys.
    async fn answer_inputs(
        &self,
        method: &str,
        result: &Value,
    ) -> Result<Map<String, Value>, McpError> {
        let requests = result
            .get("inputRequests")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                McpError::Protocol(format!(
                    "{method}: an input_required result without inputRequests"
                ))
            })?;
        let handler = self.peer.server_request_handler();
        let mut responses = Map::new();
        for (key, request) in requests {
            let asked = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("an unnamed request")
                .to_string();
            let refused = |reason: String| McpError::InputRequired {
                method: method.to_string(),
                asked: asked.clone(),
                reason,
            };
            let Some(handler) = &handler else {
                return Err(refused("this session answers no server requests".into()));
            };
            let answer = handler(asked.clone(), request.get("params").cloned())
                .await
                .map_err(|e| refused(format!("answering it failed: {e}")))?;
            responses.insert(key.clone(), answer);
        }
        Ok(responses)
    }
}
