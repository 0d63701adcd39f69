//! W3C trace context in and out: taken from a client's request (`_meta` first, as the MCP
//! convention (SEP-414) and the semantic conventions ask, else the HTTP `traceparent` and
//! `tracestate` headers) and written into the `_meta` of what we send upstream. With traces on
//! the official propagator parses and writes the values (a malformed `traceparent` is ignored:
//! the span starts a trace of its own); with traces off (or not built in) a valid
//! `traceparent` is passed on as it came.

#[cfg(feature = "otel")]
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
#[cfg(feature = "otel")]
use opentelemetry::trace::TraceContextExt;
#[cfg(feature = "otel")]
use opentelemetry::Context;
#[cfg(feature = "otel")]
use opentelemetry_sdk::propagation::TraceContextPropagator;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value};

#[cfg(feature = "otel")]
use super::Span;

/// Where a client's request may carry its trace context.
#[derive(Clone, Copy, Default)]
pub struct Carrier<'a> {
    /// The request's `params._meta`.
    pub meta: Option<&'a Map<String, Value>>,
    /// The HTTP request's headers (Streamable HTTP).
    pub headers: Option<&'a HeaderMap>,
}

#[cfg(feature = "otel")]
impl Carrier<'_> {
    /// The client's span, to be the parent of ours, when the request names a valid one.
    pub(super) fn adopted(&self) -> Option<Context> {
        let propagator = TraceContextPropagator::new();
        let from_meta = self
            .meta
            .filter(|meta| meta.get("traceparent").is_some_and(Value::is_string))
            .map(|meta| propagator.extract(&MetaCarrier(meta)));
        let parent = from_meta.or_else(|| {
            self.headers
                .filter(|headers| headers.contains_key("traceparent"))
                .map(|headers| propagator.extract(&HeaderCarrier(headers)))
        });
        parent.filter(|cx| cx.span().span_context().is_valid())
    }
}

impl Carrier<'_> {
    /// The client's trace context as it came (`_meta` first, else the headers), to pass on
    /// unchanged while traces are off: the upstream then joins the client's trace even though
    /// the gateway exports no span of its own. `None` when traces are on (the upstream's
    /// parent is then our span, [`inject`]) or the request names no valid context.
    pub fn relayed(&self) -> Option<Relayed> {
        if super::is_on() {
            return None;
        }
        self.as_given()
    }

    /// The client's valid trace context as it came, whether traces are on or off.
    fn as_given(&self) -> Option<Relayed> {
        let pair =
            |get: &dyn Fn(&str) -> Option<String>| Some((get("traceparent")?, get("tracestate")));
        let from_meta = self.meta.and_then(|meta| {
            pair(&|name| meta.get(name).and_then(Value::as_str).map(str::to_string))
        });
        let (parent, state) = from_meta.or_else(|| {
            let headers = self.headers?;
            pair(&|name| headers.get(name)?.to_str().ok().map(str::to_string))
        })?;
        valid_traceparent(&parent).then_some(Relayed { parent, state })
    }
}

/// Whether `value` is a W3C `traceparent` naming a span: `version-traceid-parentid-flags` in
/// lowercase hex, version not `ff` (`00`: exactly these four parts), ids not all zeros.
fn valid_traceparent(value: &str) -> bool {
    let hex = |part: &str, len: usize| {
        part.len() == len && part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let nonzero = |part: &str| part.bytes().any(|b| b != b'0');
    let parts: Vec<&str> = value.trim().split('-').collect();
    let [version, trace, span, flags, rest @ ..] = parts.as_slice() else {
        return false;
    };
    hex(version, 2)
        && *version != "ff"
        && (*version != "00" || rest.is_empty())
        && hex(trace, 32)
        && nonzero(trace)
        && hex(span, 16)
        && nonzero(span)
        && hex(flags, 2)
}

/// A client's W3C trace context, kept as it came (see [`Carrier::relayed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Relayed {
    parent: String,
    state: Option<String>,
}

impl Relayed {
    /// Writes it into `meta` as `traceparent` (and `tracestate`).
    pub fn write_into(&self, meta: &mut Map<String, Value>) {
        meta.insert("traceparent".into(), Value::String(self.parent.clone()));
        if let Some(state) = &self.state {
            meta.insert("tracestate".into(), Value::String(state.clone()));
        }
    }
}

/// Writes `span`'s context as `traceparent` (and `tracestate` when there is one) into
/// `meta`, replacing any the client sent: the upstream's parent is our span.
#[cfg(feature = "otel")]
pub fn inject(span: &Span, meta: &mut Map<String, Value>) {
    let Some(context) = span.context() else {
        return;
    };
    if !context.span().span_context().is_valid() {
        return;
    }
    TraceContextPropagator::new().inject_context(context, &mut MetaCarrier(meta));
}

#[cfg(feature = "otel")]
struct MetaCarrier<M>(M);

#[cfg(feature = "otel")]
impl Extractor for MetaCarrier<&Map<String, Value>> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

#[cfg(feature = "otel")]
impl Injector for MetaCarrier<&mut Map<String, Value>> {
    fn set(&mut self, key: &str, value: String) {
        if key == "tracestate" && value.is_empty() {
            self.0.remove(key);
            return;
        }
        self.0.insert(key.to_string(), Value::String(value));
    }
}

#[cfg(feature = "otel")]
struct HeaderCarrier<'a>(&'a HeaderMap);

#[cfg(feature = "otel")]
impl Extractor for HeaderCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn given(meta: Value, headers: &[(&'static str, &'static str)]) -> Option<Map<String, Value>> {
        let meta = meta.as_object().cloned().unwrap_or_default();
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, value.parse().unwrap());
        }
        let carrier = Carrier {
            meta: Some(&meta),
            headers: Some(&map),
        };
        let relayed = carrier.as_given()?;
        let mut out = Map::new();
        relayed.write_into(&mut out);
        Some(out)
    }

    #[test]
    fn a_clients_context_is_kept_as_it_came_meta_first_and_a_malformed_one_dropped() {
        let meta = json!({"traceparent": PARENT, "tracestate": "client=1"});
        let header = [(
            "traceparent",
            "00-11111111111111111111111111111111-2222222222222222-01",
        )];
        assert_eq!(given(meta.clone(), &header), meta.as_object().cloned());
        let from_header = given(json!({}), &[("traceparent", PARENT)]).unwrap();
        assert_eq!(
            from_header,
            *json!({"traceparent": PARENT}).as_object().unwrap()
        );
        assert_eq!(given(json!({"traceparent": "00-zz-01"}), &[]), None);
        let zeros = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        assert_eq!(given(json!({ "traceparent": zeros }), &[]), None);
        let upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
        assert_eq!(given(json!({ "traceparent": upper }), &[]), None);
        let future = format!("cc-{}-extra", &PARENT[3..]);
        assert!(given(json!({ "traceparent": future }), &[]).is_some());
        let extra = format!("{PARENT}-extra");
        assert_eq!(given(json!({ "traceparent": extra }), &[]), None);
        assert_eq!(given(json!({}), &[]), None);
    }
}
