//! The error answers a stack's documents describe, as components every operation shares: the
//! one error schema ([`ERROR`]: `{"error": {type, message, help, …}}`, what the front and the
//! native bridge send), two refinements of it ([`VALIDATION_ERROR`] for a 422 with the
//! violations, [`TOOL_ERROR`] for the tool's own failure with its `result`), and one response
//! component per status, referencing them.
//!
//! The merge adds the front's statuses ([`FRONT_STATUSES`]) to every operation; the native
//! generator documents the bridge's ([`BRIDGE_STATUSES`]) in each server's document with these
//! very components, which the merge recognizes (same kind, name and value) and keeps once,
//! under their own names, instead of copying them per server. mcpo's documents keep their own
//! answers (FastAPI's 422) and get the front's.

use std::sync::OnceLock;

use serde_json::{json, Map, Value};

/// The schema of every error answer.
pub const ERROR: &str = "Error";

/// The schema of a 422: [`ERROR`] with the violations and the expected parameters.
pub const VALIDATION_ERROR: &str = "ValidationError";

/// The schema of a 424: [`ERROR`] with the tool's own answer.
pub const TOOL_ERROR: &str = "ToolError";

/// The statuses the front itself answers on a tool's route, whatever the controller.
pub const FRONT_STATUSES: [&str; 5] = ["401", "403", "404", "502", "503"];

/// The statuses the native bridge answers on a tool's route (its 401 and 403 never reach a
/// client: the front turns them into a 502).
pub const BRIDGE_STATUSES: [&str; 8] = ["400", "404", "413", "422", "424", "502", "503", "504"];

/// One documented error status.
struct Status {
    code: &'static str,
    /// The name of its response component.
    name: &'static str,
    /// The schema of its body.
    schema: &'static str,
    description: &'static str,
}

/// Every status of [`FRONT_STATUSES`] and [`BRIDGE_STATUSES`], in code order.
const STATUSES: [Status; 10] = [
    Status {
        code: "400",
        name: "BadRequest",
        schema: ERROR,
        description: "The body is not JSON (`invalid_json`; an empty body counts as `{}`).",
    },
    Status {
        code: "401",
        name: "Unauthorized",
        schema: ERROR,
        description: "Missing or wrong API key (`unauthorized`): send `X-API-Key: <key>` or \
                      `Authorization: Bearer <key>`.",
    },
    Status {
        code: "403",
        name: "ToolDenied",
        schema: ERROR,
        description: "The project's overrides deny this tool (`tool_denied`) since this \
                      document was published.",
    },
    Status {
        code: "404",
        name: "NotFound",
        schema: ERROR,
        description: "The server or tool is gone since this document was published \
                      (`server_disabled`, `unknown_server`, `unknown_tool`); `error.help` \
                      names the fix.",
    },
    Status {
        code: "413",
        name: "BodyTooLarge",
        schema: ERROR,
        description: "The arguments are over the size limit (`body_too_large`).",
    },
    Status {
        code: "422",
        name: "InvalidArguments",
        schema: VALIDATION_ERROR,
        description: "The arguments do not fit the tool's input schema (`invalid_arguments`); \
                      the tool was not called.",
    },
    Status {
        code: "424",
        name: "ToolFailed",
        schema: TOOL_ERROR,
        description: "The tool ran and reported a failure (`tool_error`, the tool's \
                      `isError: true`): `result` holds its whole answer. Not a server \
                      error: the call depended on the tool, and the tool said no.",
    },
    Status {
        code: "502",
        name: "ServerUnavailable",
        schema: ERROR,
        description: "The MCP server or the controller is down or failed to answer \
                      (`upstream_unavailable`, …); retry after `Retry-After` seconds when \
                      given.",
    },
    Status {
        code: "503",
        name: "StackUnavailable",
        schema: ERROR,
        description: "The stack is starting or stopping (`not_published`, `shutting_down`).",
    },
    Status {
        code: "504",
        name: "Timeout",
        schema: ERROR,
        description: "The MCP server did not answer in time (`timeout`); the call was \
                      cancelled.",
    },
];

fn status(code: &str) -> &'static Status {
    STATUSES
        .iter()
        .find(|s| s.code == code)
        .unwrap_or_else(|| panic!("no documented error status {code}"))
}

/// `{"$ref": "#/components/responses/<name>"}` for one of the documented statuses.
pub fn response_ref(code: &str) -> Value {
    json!({ "$ref": format!("#/components/responses/{}", status(code).name) })
}

/// The response components of `codes`, in that order.
pub fn responses(codes: &[&str]) -> Map<String, Value> {
    codes
        .iter()
        .map(|code| {
            let status = status(code);
            (status.name.to_string(), response(status))
        })
        .collect()
}

fn response(status: &Status) -> Value {
    let mut response = json!({
        "description": status.description,
        "content": {"application/json": {"schema": schema_ref(status.schema)}},
    });
    if status.code == "502" {
        response["headers"] = json!({"Retry-After": {
            "description": "Seconds until the bridge restarts a server that is backing off.",
            "schema": {"type": "integer", "minimum": 1},
        }});
    }
    response
}

/// The error schemas, [`ERROR`] first.
pub fn schemas() -> Map<String, Value> {
    Map::from_iter([
        (ERROR.to_string(), error_schema()),
        (VALIDATION_ERROR.to_string(), validation_error_schema()),
        (TOOL_ERROR.to_string(), tool_error_schema()),
    ])
}

/// Every shared component, by kind: the schemas and every status's response.
pub(super) fn components() -> Value {
    let codes: Vec<&str> = STATUSES.iter().map(|s| s.code).collect();
    json!({"schemas": schemas(), "responses": responses(&codes)})
}

/// Whether `value` is the shared component `kind`/`name`, which the merge keeps once under its
/// own name.
pub(super) fn is_shared(kind: &str, name: &str, value: &Value) -> bool {
    static COMPONENTS: OnceLock<Value> = OnceLock::new();
    (COMPONENTS.get_or_init(components))
        .get(kind)
        .and_then(|members| members.get(name))
        .is_some_and(|shared| shared == value)
}

/// `{"$ref": "#/components/schemas/<name>"}`.
fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// The body of every error answer of the front and the native bridge.
fn error_schema() -> Value {
    json!({
        "type": "object",
        "title": ERROR,
        "description": "Why the call did not return the tool's result. Some errors carry more \
                        facts in `error` (`cause`, `stderr`, `violations`, `expected`).",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "type": {
                        "type": "string",
                        "description": "What went wrong, for programs (`unauthorized`, \
                                        `invalid_arguments`, `tool_error`, `timeout`, …).",
                    },
                    "message": {"type": "string", "description": "What went wrong."},
                    "help": {"type": "string", "description": "The next step."},
                },
                "required": ["type", "message", "help"],
            },
        },
        "required": ["error"],
    })
}

/// The body of a 422: the arguments do not fit the tool's `inputSchema`, so nothing was sent
/// to the server. What `mcp-launch call` reports for the same mistake: the violations, one
/// line each, and the parameters the tool expects.
fn validation_error_schema() -> Value {
    json!({
        "title": VALIDATION_ERROR,
        "description": "The arguments do not fit the tool's input schema; the tool was not \
                        called.",
        "allOf": [schema_ref(ERROR)],
        "properties": {
            "error": {
                "properties": {
                    "type": {"const": "invalid_arguments"},
                    "violations": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "One per violation: `at /path: message`.",
                    },
                    "expected": {
                        "type": "string",
                        "description": "The parameters the tool expects, one per line: \
                                        `name: type (required) — description`.",
                    },
                },
                "required": ["violations", "expected"],
            },
        },
    })
}

/// The body of a 424: the tool ran and answered `isError: true`.
fn tool_error_schema() -> Value {
    json!({
        "title": TOOL_ERROR,
        "description": "The tool ran and reported a failure; `error.message` is its text.",
        "allOf": [schema_ref(ERROR)],
        "properties": {
            "error": {"properties": {"type": {"const": "tool_error"}}},
            "result": {
                "type": "object",
                "description": "The tool's `CallToolResult` as the server sent it.",
                "properties": {
                    "content": {"type": "array"},
                    "isError": {"const": true},
                },
                "required": ["isError"],
            },
        },
        "required": ["result"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_one_response_and_every_response_a_schema() {
        let all: Vec<&str> = FRONT_STATUSES
            .iter()
            .chain(&BRIDGE_STATUSES)
            .copied()
            .collect();
        let components = components();
        for code in all {
            let reference = response_ref(code);
            let name = reference["$ref"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap();
            let response = &components["responses"][name];
            let schema = response["content"]["application/json"]["schema"]["$ref"]
                .as_str()
                .unwrap();
            let schema = schema.rsplit('/').next().unwrap();
            assert!(
                components["schemas"][schema].is_object(),
                "{code}: {schema}"
            );
        }
        assert!(is_shared("schemas", ERROR, &error_schema()));
        assert!(!is_shared("schemas", ERROR, &json!({"type": "object"})));
        assert!(!is_shared("schemas", "Other", &error_schema()));
    }
}
