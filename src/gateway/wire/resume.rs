//! SSE event ids that say which gateway process wrote them and which request their stream
//! answers, so a client's `Last-Event-ID` is resumed only where that stream lives.
//!
//! rmcp numbers a session's streams per process (`index/stream`). Behind a load balancer a
//! session's requests reach several replicas, each with its own numbers, and a client whose
//! stream was cut (its replica killed) resumes at another: there the same number names
//! another stream (whose answer the client would take for its own) or none (rmcp then sends an
//! empty stream, and the official SDKs reconnect to it forever). So each event id carries the
//! writer's tag and the request's JSON-RPC id: `TAG:REQUEST:INNER`. Resumed where it was
//! written, the inner id goes to rmcp; anywhere else, or when rmcp no longer holds the stream,
//! the request is answered at once with an error saying its outcome is unknown.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use futures_util::{Stream, StreamExt};
use rmcp::model::{ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::ServerSseMessage;
use std::sync::Arc;

/// This process's mark on the event ids it writes (random: a restarted replica is another).
#[derive(Debug, Clone)]
pub struct StreamTags {
    tag: Arc<str>,
}

/// Where a `Last-Event-ID` can be resumed.
#[derive(Debug, PartialEq)]
pub enum Resume {
    /// Written here: rmcp's own id, and the request its stream answered (if any).
    Here {
        inner: String,
        request: Option<RequestId>,
    },
    /// Written by another process: the request its stream answered (`None` for the
    /// session's standalone stream).
    Elsewhere { request: Option<RequestId> },
    /// Not one of ours (rmcp's own priming id of a standalone stream): rmcp reads it.
    Untagged(String),
}

impl Default for StreamTags {
    fn default() -> Self {
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).expect("the operating system's random source failed");
        let tag: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        StreamTags { tag: tag.into() }
    }
}

impl StreamTags {
    /// `stream` with each event id marked with this process and `request`.
    pub fn mark<S>(
        &self,
        stream: S,
        request: Option<RequestId>,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static
    where
        S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    {
        let prefix = format!("{}:{}:", self.tag, encode_request(request.as_ref()));
        stream.map(move |mut event| {
            if let Some(inner) = event.event_id.take() {
                event.event_id = Some(format!("{prefix}{inner}"));
            }
            event
        })
    }

    /// Where `last_event_id` (as a client sent it) can be resumed.
    pub fn read(&self, last_event_id: &str) -> Resume {
        let mut parts = last_event_id.splitn(3, ':');
        let (Some(tag), Some(request), Some(inner)) = (parts.next(), parts.next(), parts.next())
        else {
            return Resume::Untagged(last_event_id.to_string());
        };
        let request = decode_request(request);
        if tag == &*self.tag {
            Resume::Here {
                inner: inner.to_string(),
                request,
            }
        } else {
            Resume::Elsewhere { request }
        }
    }
}

/// The answer to a request whose stream cannot be resumed: one error event, then the end.
pub fn lost(request: RequestId) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    let error = ErrorData::new(
        ErrorCode::INTERNAL_ERROR,
        "the gateway process that was answering this request stopped or no longer holds its \
         stream, so its outcome is unknown: send the request again if doing it twice is safe",
        None,
    );
    let message = ServerJsonRpcMessage::error(error, Some(request));
    futures_util::stream::once(async move { ServerSseMessage::from_message(message) })
}

fn encode_request(request: Option<&RequestId>) -> String {
    request
        .and_then(|id| serde_json::to_vec(id).ok())
        .map(|json| URL_SAFE_NO_PAD.encode(json))
        .unwrap_or_default()
}

fn decode_request(text: &str) -> Option<RequestId> {
    let json = URL_SAFE_NO_PAD.decode(text).ok()?;
    serde_json::from_slice(&json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    async fn ids_of(tags: &StreamTags, request: Option<RequestId>) -> Vec<Option<String>> {
        let events = vec![
            ServerSseMessage::priming("0/7", std::time::Duration::from_secs(3)),
            ServerSseMessage::retry(std::time::Duration::from_secs(3)),
        ];
        let marked = tags.mark(futures_util::stream::iter(events), request);
        marked.map(|e| e.event_id).collect().await
    }

    #[tokio::test]
    async fn an_id_written_here_is_resumed_here_with_its_request() {
        let tags = StreamTags::default();
        let request = NumberOrString::String("call:1/2".into());
        let ids = ids_of(&tags, Some(request.clone())).await;
        assert_eq!(ids[1], None, "an event without an id keeps none");
        let id = ids[0].clone().unwrap();
        assert!(!id.contains('\n') && !id.contains('\r'), "{id}");
        assert_eq!(
            tags.read(&id),
            Resume::Here {
                inner: "0/7".into(),
                request: Some(request)
            }
        );
    }

    #[tokio::test]
    async fn an_id_of_another_process_is_resumed_nowhere_but_names_its_request() {
        let (here, there) = (StreamTags::default(), StreamTags::default());
        let id = ids_of(&there, Some(NumberOrString::Number(5))).await[0]
            .clone()
            .unwrap();
        assert_eq!(
            here.read(&id),
            Resume::Elsewhere {
                request: Some(NumberOrString::Number(5))
            }
        );
        let standalone = ids_of(&there, None).await[0].clone().unwrap();
        assert_eq!(here.read(&standalone), Resume::Elsewhere { request: None });
    }

    #[test]
    fn rmcps_own_and_garbled_ids_are_left_to_rmcp_or_name_no_request() {
        let tags = StreamTags::default();
        assert_eq!(tags.read("0"), Resume::Untagged("0".into()));
        assert_eq!(
            tags.read("zz:!!:0/1"),
            Resume::Elsewhere { request: None },
            "an undecodable request is no request"
        );
    }

    #[tokio::test]
    async fn a_lost_request_gets_one_error_with_its_id() {
        let events: Vec<ServerSseMessage> = lost(NumberOrString::Number(9)).collect().await;
        assert_eq!(events.len(), 1);
        let json = serde_json::to_value(events[0].message.as_deref().unwrap()).unwrap();
        assert_eq!(json["id"], 9);
        assert_eq!(json["error"]["code"], -32603);
        assert!(json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("outcome is unknown"));
    }
}
