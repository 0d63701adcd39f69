//! Request paths as the gate sees them. Each segment is percent-decoded exactly once before
//! the verdict, and the controller is sent a canonical re-encoding of those same segments, so
//! what was judged is what runs: `/everything/get%2Denv` is judged (and denied) as `get-env`.
//! Anything that could decode differently downstream (encoded `/`, `\` or `%`, dot segments,
//! empty segments, control characters) is refused outright.

use axum::http::Method;

use super::error::FrontError;
use crate::launch::exposure::READ_OUTPUT_PATH;
use crate::launch::{Exposure, Verdict};

/// What the gate lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pass {
    /// To the controller.
    Forward,
    /// `/<server>/openapi.json`, answered by the front from the merged spec.
    ServerSpec(String),
}

/// A decoded, validated request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestPath {
    /// The decoded segments (none for `/`).
    segments: Vec<String>,
    /// Whether the path ended with `/` (kept: FastAPI routes `/x` and `/x/` differently).
    trailing_slash: bool,
}

impl RequestPath {
    /// Decodes and validates a raw (still percent-encoded) path.
    pub(crate) fn parse(raw: &str) -> Result<Self, FrontError> {
        let rest = raw
            .strip_prefix('/')
            .ok_or_else(|| bad("the path must start with `/`"))?;
        if rest.is_empty() {
            return Ok(Self {
                segments: Vec::new(),
                trailing_slash: false,
            });
        }
        let mut parts: Vec<&str> = rest.split('/').collect();
        let trailing_slash = parts.last() == Some(&"");
        if trailing_slash {
            parts.pop();
        }
        let segments = parts
            .into_iter()
            .map(decode_segment)
            .collect::<Result<_, _>>()?;
        Ok(Self {
            segments,
            trailing_slash,
        })
    }

    /// The first segment (a server's name, if the exposure knows it) and the rest, joined.
    pub(crate) fn server_and_rest(&self) -> Option<(&str, String)> {
        let (server, tail) = self.segments.split_first()?;
        Some((server, tail.join("/")))
    }

    /// The path to send upstream: the same segments, each percent-encoded canonically.
    pub(crate) fn canonical(&self) -> String {
        let mut path = String::from("/");
        path.push_str(
            &self
                .segments
                .iter()
                .map(|s| encode_segment(s))
                .collect::<Vec<_>>()
                .join("/"),
        );
        if self.trailing_slash && !self.segments.is_empty() {
            path.push('/');
        }
        path
    }

    /// Lets the request through ([`Pass`]), or says why not. `/` and single-segment paths
    /// that name no server (`/docs`) are the controller's own pages, read-only; everything
    /// else is `/<server>/<rest>` and goes through [`Exposure::verdict`].
    pub(crate) fn gate(
        &self,
        stack: &str,
        exposure: Option<&Exposure>,
        method: &Method,
    ) -> Result<Pass, FrontError> {
        let read = method == Method::GET || method == Method::HEAD;
        let read_only = |path: &RequestPath| FrontError::MethodNotAllowed {
            method: method.to_string(),
            path: path.canonical(),
        };
        let Some((server, tail)) = self.segments.split_first() else {
            return if read {
                Ok(Pass::Forward)
            } else {
                Err(read_only(self))
            };
        };
        let exposure = exposure.ok_or_else(|| FrontError::NotPublished {
            stack: stack.to_string(),
        })?;
        let is_read_output = tail.is_empty() && READ_OUTPUT_PATH[1..] == *server;
        if is_read_output && exposure.reads_outputs() && method == Method::POST {
            return Ok(Pass::Forward);
        }
        if tail.is_empty() && exposure.server(server).is_none() {
            return if read {
                Ok(Pass::Forward)
            } else {
                Err(read_only(self))
            };
        }
        let rest = tail.join("/");
        match exposure.verdict(server, &rest, read) {
            Verdict::Forward => Ok(Pass::Forward),
            Verdict::ServerSpec => Ok(Pass::ServerSpec(server.clone())),
            Verdict::PageIsReadOnly => Err(read_only(self)),
            Verdict::UnknownServer => Err(FrontError::UnknownServer {
                stack: stack.to_string(),
                server: server.clone(),
                enabled: exposure
                    .servers()
                    .filter(|(_, s)| s.enabled)
                    .map(|(name, _)| name.to_string())
                    .collect(),
            }),
            Verdict::DisabledServer { started } => Err(FrontError::ServerDisabled {
                stack: stack.to_string(),
                server: server.clone(),
                started,
            }),
            Verdict::DeniedTool => Err(FrontError::ToolDenied {
                stack: stack.to_string(),
                server: server.clone(),
                tool: rest,
            }),
            Verdict::WithheldTool => Err(FrontError::ToolWithheld {
                server: server.clone(),
                tool: rest,
            }),
            Verdict::UnknownTool => Err(FrontError::UnknownTool {
                server: server.clone(),
                suggestions: similar_allowed_tools(exposure, server, &rest),
                tool: rest,
            }),
        }
    }
}

/// Up to three allowed tools of `server` named like `wanted` (denied tools are not offered).
fn similar_allowed_tools(exposure: &Exposure, server: &str, wanted: &str) -> Vec<String> {
    let allowed = exposure
        .server(server)
        .into_iter()
        .flat_map(|s| s.tools.iter())
        .filter(|(_, rule)| rule.allowed)
        .map(|(name, _)| name.as_str());
    crate::catalog::similar_names(wanted, allowed, 3)
}

fn bad(reason: &str) -> FrontError {
    FrontError::BadPath {
        reason: reason.to_string(),
    }
}

/// Percent-decodes one segment and refuses what could be read differently downstream.
fn decode_segment(raw: &str) -> Result<String, FrontError> {
    if raw.is_empty() {
        return Err(bad("empty segment (`//`)"));
    }
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let escaped = bytes
                .get(i + 1..i + 3)
                .and_then(|hex| Some((hex_value(hex[0])? << 4) | hex_value(hex[1])?))
                .ok_or_else(|| bad("malformed percent-escape"))?;
            decoded.push(escaped);
            i += 3;
        } else {
            decoded.push(bytes[i]);
            i += 1;
        }
    }
    let segment = String::from_utf8(decoded).map_err(|_| bad("segment is not UTF-8"))?;
    if segment == "." || segment == ".." {
        return Err(bad("`.` and `..` segments are not allowed"));
    }
    if segment.contains(['/', '\\', '%']) {
        return Err(bad("encoded `/`, `\\` or `%` in a segment"));
    }
    if segment.chars().any(char::is_control) {
        return Err(bad("control character in a segment"));
    }
    Ok(segment)
}

fn hex_value(digit: u8) -> Option<u8> {
    (digit as char)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

/// Percent-encodes every byte but RFC 3986 unreserved characters.
fn encode_segment(segment: &str) -> String {
    let mut encoded = String::with_capacity(segment.len());
    for &byte in segment.as_bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(raw: &str) -> Result<String, FrontError> {
        RequestPath::parse(raw).map(|p| p.canonical())
    }

    #[test]
    fn decodes_once_and_reencodes_canonically() {
        assert_eq!(canonical("/").unwrap(), "/");
        assert_eq!(
            canonical("/everything/get%2Denv").unwrap(),
            "/everything/get-env"
        );
        assert_eq!(canonical("/everything/").unwrap(), "/everything/");
        assert_eq!(canonical("/a/b%20c/").unwrap(), "/a/b%20c/");
        assert_eq!(canonical("/caf%C3%A9").unwrap(), "/caf%C3%A9");
        assert_eq!(canonical("/x:y").unwrap(), "/x%3Ay");
    }

    #[test]
    fn refuses_what_could_decode_differently() {
        for raw in [
            "/everything/..",
            "/everything/./echo",
            "/everything/%2E%2E",
            "/everything/%2e",
            "/everything//echo",
            "/everything/a%2Fb",
            "/everything/a%5Cb",
            "/everything/get%252Denv",
            "/everything/%zz",
            "/everything/%4",
            "/everything/%+1",
            "/everything/%FF",
            "/everything/a%00b",
            "everything",
        ] {
            assert!(canonical(raw).is_err(), "{raw} should be refused");
        }
    }
}
