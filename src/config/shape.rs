//! The shape of one raw server entry: its transport and typed fields, not yet interpolated.
//!
//! This is the "parse" half of building a server (no variables, no paths resolved); `server`
//! does the "resolve" half. Rules: `type` is `stdio`, `http` (aliases `streamable-http`,
//! `streamableHttp`) or `sse`; without `type`, `command` means stdio and else `url` means http.
//! Unknown keys are ignored and a JSON `null` counts as absent. Only the fields of the chosen
//! transport are type-checked (an http entry's stray `args` is not an error), plus `disabled`.

use serde_json::{Map, Value};

use super::error::{describe, ServerFault};
use super::oauth::{self, OAuthShape};

/// A well-typed server entry, borrowing its strings from the parsed JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape<'e> {
    /// A local process.
    Stdio {
        /// `command`.
        command: &'e str,
        /// `args` (absent → empty).
        args: Vec<&'e str>,
        /// `env`, in file order (absent → empty).
        env: Vec<(&'e str, &'e str)>,
        /// `cwd` as written.
        cwd: Option<&'e str>,
    },
    /// Streamable HTTP.
    Http {
        /// `url`.
        url: &'e str,
        /// `headers`, in file order.
        headers: Vec<(&'e str, &'e str)>,
        /// `oauth`: a client registered by hand.
        oauth: Option<OAuthShape<'e>>,
    },
    /// Legacy HTTP+SSE.
    Sse {
        /// `url`.
        url: &'e str,
        /// `headers`, in file order.
        headers: Vec<(&'e str, &'e str)>,
    },
}

impl<'e> Shape<'e> {
    /// Checks `value` against the rules in the module docs.
    pub(crate) fn of(value: &'e Value) -> Result<Self, ServerFault> {
        let entry = value.as_object().ok_or(ServerFault::NotAnObject {
            found: describe(value),
        })?;
        if !matches!(
            entry.get("disabled"),
            None | Some(Value::Null | Value::Bool(_))
        ) {
            return Err(ServerFault::WrongType {
                field: "disabled",
                expected: "true or false",
            });
        }
        let command = string(entry, "command")?;
        let url = string(entry, "url")?;
        let declared = match string(entry, "type")? {
            None => None,
            Some("stdio") => Some("stdio"),
            Some("http" | "streamable-http" | "streamableHttp") => Some("http"),
            Some("sse") => Some("sse"),
            Some(other) => {
                return Err(ServerFault::UnknownType {
                    value: other.to_string(),
                })
            }
        };
        let missing = |transport, field| ServerFault::MissingField { transport, field };
        match (declared, command, url) {
            (Some("stdio") | None, Some(command), _) => Ok(Self::Stdio {
                command,
                args: strings(entry, "args")?,
                env: string_map(entry, "env")?,
                cwd: string(entry, "cwd")?,
            }),
            (Some("stdio"), None, _) => Err(missing("stdio", "command")),
            (Some("sse"), _, Some(url)) => Ok(Self::Sse {
                url,
                headers: string_map(entry, "headers")?,
            }),
            (Some("sse"), _, None) => Err(missing("sse", "url")),
            (Some(_) | None, _, Some(url)) => Ok(Self::Http {
                url,
                headers: string_map(entry, "headers")?,
                oauth: oauth::shape(entry)?,
            }),
            (Some(_), _, None) => Err(missing("http", "url")),
            (None, None, None) => Err(ServerFault::NoTransport),
        }
    }
}

/// Whether the entry says `"disabled": true` (anything else, including a wrong type, is
/// `false`; the wrong type is reported by [`Shape::of`]).
pub(crate) fn is_disabled(value: &Value) -> bool {
    value
        .get("disabled")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// An optional string field.
fn string<'e>(
    entry: &'e Map<String, Value>,
    field: &'static str,
) -> Result<Option<&'e str>, ServerFault> {
    match entry.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(ServerFault::WrongType {
            field,
            expected: "a string",
        }),
    }
}

/// An optional array-of-strings field (absent → empty).
fn strings<'e>(
    entry: &'e Map<String, Value>,
    field: &'static str,
) -> Result<Vec<&'e str>, ServerFault> {
    let wrong = ServerFault::WrongType {
        field,
        expected: "an array of strings",
    };
    match entry.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().ok_or(wrong.clone()))
            .collect(),
        Some(_) => Err(wrong),
    }
}

/// An optional object-of-strings field (absent → empty), in file order.
fn string_map<'e>(
    entry: &'e Map<String, Value>,
    field: &'static str,
) -> Result<Vec<(&'e str, &'e str)>, ServerFault> {
    let wrong = ServerFault::WrongType {
        field,
        expected: "an object of strings",
    };
    match entry.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| Ok((key.as_str(), value.as_str().ok_or(wrong.clone())?)))
            .collect(),
        Some(_) => Err(wrong),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape(value: &Value) -> Result<Shape<'_>, ServerFault> {
        Shape::of(value)
    }

    fn transport(value: &Value) -> &'static str {
        match shape(value).unwrap() {
            Shape::Stdio { .. } => "stdio",
            Shape::Http { .. } => "http",
            Shape::Sse { .. } => "sse",
        }
    }

    #[test]
    fn type_is_inferred_from_command_then_url() {
        assert_eq!(
            shape(&json!({"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}})),
            Ok(Shape::Stdio {
                command: "npx",
                args: vec!["-y", "pkg"],
                env: vec![("K", "v")],
                cwd: None
            })
        );
        assert_eq!(
            shape(&json!({"url": "https://h/mcp"})),
            Ok(Shape::Http {
                url: "https://h/mcp",
                headers: vec![],
                oauth: None
            })
        );
        assert_eq!(transport(&json!({"command": "x", "url": "u"})), "stdio");
    }

    #[test]
    fn declared_types_and_their_aliases() {
        for alias in ["http", "streamable-http", "streamableHttp"] {
            assert_eq!(
                transport(&json!({"type": alias, "url": "u"})),
                "http",
                "{alias}"
            );
        }
        assert_eq!(
            shape(&json!({"type": "sse", "url": "u", "headers": {"A": "b"}})),
            Ok(Shape::Sse {
                url: "u",
                headers: vec![("A", "b")]
            })
        );
        assert_eq!(
            transport(&json!({"type": "stdio", "command": "x", "url": "u"})),
            "stdio"
        );
        assert_eq!(
            transport(&json!({"type": "http", "command": "x", "url": "u"})),
            "http"
        );
    }

    #[test]
    fn shape_faults() {
        assert_eq!(shape(&json!({"args": []})), Err(ServerFault::NoTransport));
        assert_eq!(
            shape(&json!("npx")),
            Err(ServerFault::NotAnObject { found: "a string" })
        );
        assert_eq!(
            shape(&json!({"type": "websocket", "url": "u"})),
            Err(ServerFault::UnknownType {
                value: "websocket".into()
            })
        );
        assert_eq!(
            shape(&json!({"type": "sse", "command": "x"})),
            Err(ServerFault::MissingField {
                transport: "sse",
                field: "url"
            })
        );
        assert_eq!(
            shape(&json!({"type": "stdio", "url": "u"})),
            Err(ServerFault::MissingField {
                transport: "stdio",
                field: "command"
            })
        );
        assert_eq!(
            shape(&json!({"type": "http"})),
            Err(ServerFault::MissingField {
                transport: "http",
                field: "url"
            })
        );
    }

    #[test]
    fn wrong_field_types() {
        let args = Err(ServerFault::WrongType {
            field: "args",
            expected: "an array of strings",
        });
        assert_eq!(shape(&json!({"command": "x", "args": "-y"})), args);
        assert_eq!(shape(&json!({"command": "x", "args": ["a", 1]})), args);
        assert_eq!(
            shape(&json!({"command": "x", "env": {"PORT": 8080}})),
            Err(ServerFault::WrongType {
                field: "env",
                expected: "an object of strings"
            })
        );
        assert_eq!(
            shape(&json!({"url": "u", "headers": ["A: b"]})),
            Err(ServerFault::WrongType {
                field: "headers",
                expected: "an object of strings"
            })
        );
        assert_eq!(
            shape(&json!({"command": ["npx"]})),
            Err(ServerFault::WrongType {
                field: "command",
                expected: "a string"
            })
        );
        assert_eq!(
            shape(&json!({"command": "x", "disabled": "yes"})),
            Err(ServerFault::WrongType {
                field: "disabled",
                expected: "true or false"
            })
        );
    }

    #[test]
    fn unknown_keys_nulls_and_other_transports_fields_are_ignored() {
        let value = json!({"command": "x", "args": null, "autoApprove": ["t"], "timeout": 5});
        assert_eq!(transport(&value), "stdio");
        assert_eq!(
            transport(&json!({"url": "u", "args": 5, "env": []})),
            "http"
        );
        assert!(is_disabled(&json!({"disabled": true})));
        assert!(!is_disabled(&json!({"disabled": "true"})));
        assert!(!is_disabled(&json!({})));
    }
}
