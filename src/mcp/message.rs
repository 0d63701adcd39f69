//! JSON-RPC 2.0 messages as MCP uses them, over `serde_json::Value` so that unknown fields
//! (`structuredContent`, `outputSchema`, `_meta`, `annotations`, …) pass through untouched.

use serde_json::{json, Value};

/// The protocol version we ask for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// Versions we know servers may answer with; all use the `initialize` handshake.
pub const KNOWN_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The stateless revision (SEP-2575): no handshake; `server/discover`, and the client's
/// protocol version and capabilities in each request's `_meta`.
pub const STATELESS_PROTOCOL_VERSION: &str = "2026-07-28";

/// The `_meta` keys a stateless request carries (reserved: the client's own, passed on).
pub const META_PREFIX: &str = "io.modelcontextprotocol/";

/// JSON-RPC error code: the method does not exist.
pub const METHOD_NOT_FOUND: i64 = -32601;

/// The 2026-07-28 revision's error code: the protocol version named is not supported (its
/// `data.supported` lists those that are).
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// A JSON-RPC error object as a server sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The numeric error code.
    pub code: i64,
    /// The server's message.
    pub message: String,
    /// Optional extra data.
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// One message received from a server, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// An answer to one of our requests.
    Response {
        /// The id we sent; only numeric ids are ours.
        id: Value,
        /// The result, or the server's error.
        outcome: Result<Value, RpcError>,
    },
    /// A request from the server (`ping`, `roots/list`, …) that wants an answer.
    Request {
        /// The server's id, echoed in our answer.
        id: Value,
        /// The method name.
        method: String,
        /// The params, if any.
        params: Option<Value>,
    },
    /// A notification from the server (no answer expected).
    Notification {
        /// The method name.
        method: String,
        /// Its parameters, if any.
        params: Option<Value>,
    },
}

impl Incoming {
    /// Classifies a parsed JSON value; `None` when it is not JSON-RPC at all (a server printed
    /// some other JSON on stdout).
    pub fn classify(value: Value) -> Option<Incoming> {
        let Value::Object(mut obj) = value else {
            return None;
        };
        let method = obj.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = obj.remove("id").filter(|id| !id.is_null());
        // JSON-RPC ids are strings or numbers: a request with any other id cannot be answered
        // (our answer would carry an id no client library reads), so it is no message.
        if id
            .as_ref()
            .is_some_and(|id| !id.is_string() && !id.is_number())
        {
            return None;
        }
        match (method, id) {
            (Some(method), Some(id)) => Some(Incoming::Request {
                id,
                method,
                params: obj.remove("params"),
            }),
            (Some(method), None) => Some(Incoming::Notification {
                method,
                params: obj.remove("params"),
            }),
            (None, Some(id)) => {
                let outcome = match (obj.remove("result"), obj.remove("error")) {
                    (Some(result), _) => Ok(result),
                    (None, Some(error)) => Err(parse_error(&error)),
                    (None, None) => return None,
                };
                Some(Incoming::Response { id, outcome })
            }
            (None, None) => None,
        }
    }
}

fn parse_error(error: &Value) -> RpcError {
    RpcError {
        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
            .to_string(),
        data: error.get("data").cloned(),
    }
}

/// A request object.
pub fn request(id: u64, method: &str, params: Option<Value>) -> Value {
    match params {
        Some(params) => json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        None => json!({"jsonrpc": "2.0", "id": id, "method": method}),
    }
}

/// A notification object.
pub fn notification(method: &str, params: Option<Value>) -> Value {
    match params {
        Some(params) => json!({"jsonrpc": "2.0", "method": method, "params": params}),
        None => json!({"jsonrpc": "2.0", "method": method}),
    }
}

/// A successful answer to a server's request.
pub fn response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error answer to a server's request.
pub fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_every_kind() {
        let resp = Incoming::classify(json!({"jsonrpc": "2.0", "id": 3, "result": {"a": 1}}));
        assert_eq!(
            resp,
            Some(Incoming::Response {
                id: json!(3),
                outcome: Ok(json!({"a": 1}))
            })
        );
        let err = Incoming::classify(
            json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "bad"}}),
        );
        assert!(matches!(
            err,
            Some(Incoming::Response {
                outcome: Err(RpcError { code: -32602, .. }),
                ..
            })
        ));
        let req = Incoming::classify(json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"}));
        assert!(matches!(req, Some(Incoming::Request { ref method, .. }) if method == "ping"));
        let note = Incoming::classify(json!({"jsonrpc": "2.0", "method": "notifications/message"}));
        assert!(matches!(note, Some(Incoming::Notification { .. })));
    }

    #[test]
    fn non_rpc_json_is_not_classified() {
        assert_eq!(Incoming::classify(json!({"hello": "world"})), None);
        assert_eq!(Incoming::classify(json!([1, 2])), None);
        assert_eq!(Incoming::classify(json!({"id": 1})), None);
    }

    /// Found by the `stdio` fuzz target: a server's request with an object id was answered
    /// with that id (`fuzz/corpus/stdio/responses`).
    #[test]
    fn ids_other_than_strings_and_numbers_are_not_classified() {
        for id in [json!({"a": 1}), json!([1]), json!(true)] {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"});
            assert_eq!(Incoming::classify(request), None, "{id}");
            let response = json!({"jsonrpc": "2.0", "id": id, "result": {}});
            assert_eq!(Incoming::classify(response), None, "{id}");
        }
    }
}
