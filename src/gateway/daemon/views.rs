//! The data `list`, `inspect` and `search` read through a daemon, as protocol JSON both ways:
//! the daemon sends reports and hits, the command line renders them with the direct path's
//! renderers. Every field a renderer reads travels; a value that does not decode makes the
//! answer unusable (the command line then takes the direct path), never a panic.

use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::catalog::{RelayedProblem, ServerReport, Status};
use crate::error::Actionable;
use crate::gateway::{Found, FoundTool};
use crate::search::{Hit, Parts, ToolDoc};

/// A report on its way out: borrowed, so the daemon serialises its reports without copying
/// them (479 tools' definitions copied three times cost `list` ~15 ms).
#[derive(Serialize)]
struct ReportOut<'a> {
    name: &'a str,
    config_name: &'a str,
    stack: &'a str,
    transport: &'a str,
    status: &'a str,
    tools: ToolsOut<'a>,
    tool_tokens: &'a [usize],
    init_ns: Option<u64>,
    protocol_version: Option<&'a str>,
    used_slow_window: bool,
    warnings: &'a [String],
    error: Option<ProblemWire>,
    stale: &'a [String],
    checked_at_ms: Option<u64>,
}

/// A report's tools on their way out: their definitions, or as many `null`s when the reader
/// needs only their number (their token counts travel beside them).
enum ToolsOut<'a> {
    Definitions(&'a [Value]),
    Counted(usize),
}

impl Serialize for ToolsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolsOut::Definitions(tools) => tools.serialize(serializer),
            ToolsOut::Counted(n) => serializer.collect_seq(std::iter::repeat_n(&Value::Null, *n)),
        }
    }
}

/// A report as it arrives (every field required but the optional ones).
#[derive(Deserialize)]
struct ReportIn {
    name: String,
    config_name: String,
    stack: String,
    transport: String,
    status: String,
    tools: Vec<Value>,
    tool_tokens: Vec<usize>,
    init_ns: Option<u64>,
    protocol_version: Option<String>,
    used_slow_window: bool,
    warnings: Vec<String>,
    error: Option<ProblemWire>,
    stale: Vec<String>,
    checked_at_ms: Option<u64>,
}

/// A server problem as words.
#[derive(Serialize, Deserialize)]
struct ProblemWire {
    #[serde(rename = "type")]
    kind: String,
    message: String,
    help: String,
    config: bool,
    /// A step-up's scopes: `list` names them in its login command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
}

/// The reports as one protocol JSON document, `{"reports": […]}`, written straight from
/// the borrowed reports; those `counted` says so of carry `null`s for their tools' definitions
/// (what `list` without SERVER renders needs their number and token counts only).
pub fn reports_json(reports: &[ServerReport], counted: impl Fn(&ServerReport) -> bool) -> String {
    #[derive(Serialize)]
    struct Reports<'a> {
        reports: Vec<ReportOut<'a>>,
    }
    let reports = Reports {
        reports: (reports.iter())
            .map(|r| ReportOut {
                tools: match counted(r) {
                    true => ToolsOut::Counted(r.tools.len()),
                    false => ToolsOut::Definitions(&r.tools),
                },
                ..report_out(r)
            })
            .collect(),
    };
    serde_json::to_string(&reports).unwrap_or_else(|_| r#"{"reports":null}"#.into())
}

/// A report as protocol JSON.
pub fn report_json(r: &ServerReport) -> Value {
    serde_json::to_value(report_out(r)).unwrap_or(Value::Null)
}

fn report_out(r: &ServerReport) -> ReportOut<'_> {
    ReportOut {
        name: &r.name,
        config_name: &r.config_name,
        stack: &r.stack,
        transport: r.transport,
        status: r.status.as_str(),
        tools: ToolsOut::Definitions(&r.tools),
        tool_tokens: &r.tool_tokens,
        init_ns: r.init_time.map(|t| t.as_nanos() as u64),
        protocol_version: r.protocol_version.as_deref(),
        used_slow_window: r.used_slow_window,
        warnings: &r.warnings,
        error: r.error.as_ref().map(|p| ProblemWire {
            kind: p.kind().to_string(),
            message: p.to_string(),
            help: p.help(),
            config: p.is_config(),
            scope: p.step_up_scope().map(str::to_string),
        }),
        stale: &r.stale,
        checked_at_ms: (r.checked_at)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64),
    }
}

/// A `list` answer line: its id, and its reports or its error (`None` when it does not
/// decode).
pub fn reports_answer(line: &str) -> Option<(u64, Result<Vec<ServerReport>, Value>)> {
    #[derive(Deserialize)]
    struct Reports {
        reports: Vec<ReportIn>,
    }
    #[derive(Deserialize)]
    struct Answer {
        id: u64,
        result: Option<Reports>,
        error: Option<Value>,
    }
    let answer: Answer = serde_json::from_str(line).ok()?;
    match (answer.result, answer.error) {
        (_, Some(error)) => Some((answer.id, Err(error))),
        (Some(result), None) => {
            let reports = result.reports.into_iter().map(report_in).collect();
            Some((answer.id, Ok(reports)))
        }
        (None, None) => None,
    }
}

/// A report from protocol JSON, moved out of it (`None` when a field is missing or of the
/// wrong kind).
pub fn report_from(v: Value) -> Option<ServerReport> {
    serde_json::from_value(v).ok().map(report_in)
}

fn report_in(r: ReportIn) -> ServerReport {
    let error = match r.error {
        None => None,
        Some(e) => Some(crate::catalog::ServerProblem::Relayed(RelayedProblem {
            kind: super::remote_kind(&e.kind),
            message: e.message,
            help: e.help,
            is_config: e.config,
            scope: e.scope,
        })),
    };
    ServerReport {
        name: r.name,
        config_name: r.config_name,
        stack: r.stack,
        transport: match r.transport.as_str() {
            "stdio" => "stdio",
            "http" => "http",
            "sse" => "sse",
            _ => "-",
        },
        status: match r.status.as_str() {
            "connected" => Status::Connected,
            "cached" => Status::Cached,
            "disabled" => Status::Disabled,
            "needs_login" => Status::NeedsLogin,
            _ => Status::Error,
        },
        tools: r.tools,
        tool_tokens: r.tool_tokens,
        init_time: r.init_ns.map(Duration::from_nanos),
        protocol_version: r.protocol_version,
        used_slow_window: r.used_slow_window,
        warnings: r.warnings,
        error,
        stale: r.stale,
        checked_at: (r.checked_at_ms).map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
        listed_with: None,
        items: None,
        changed: Default::default(),
        needs: Default::default(),
    }
}

/// What a search found, as protocol JSON.
pub fn found_json(found: &Found) -> Value {
    let hits: Vec<Value> = found
        .hits
        .iter()
        .map(|f| {
            json!({
                "doc": f.hit.doc,
                "score": f.hit.score,
                "lexical": f.hit.parts.lexical,
                "semantic": f.hit.parts.semantic,
                "pinned": f.hit.parts.pinned,
                "tool": f.tool,
                "schema": f.schema,
            })
        })
        .collect();
    json!({"hits": hits, "searched": found.searched, "unavailable": found.unavailable, "denied": found.denied})
}

/// What a search found, from protocol JSON (`None` when it does not decode).
pub fn found_from(v: &Value) -> Option<Found> {
    let hits = v
        .get("hits")?
        .as_array()?
        .iter()
        .map(|h| {
            Some(FoundTool {
                hit: Hit {
                    doc: usize::try_from(h.get("doc")?.as_u64()?).ok()?,
                    score: h.get("score")?.as_f64()?,
                    parts: Parts {
                        lexical: h.get("lexical")?.as_f64()?,
                        semantic: h.get("semantic").and_then(Value::as_f64),
                        pinned: h.get("pinned")?.as_bool()?,
                    },
                },
                tool: serde_json::from_value::<ToolDoc>(h.get("tool")?.clone()).ok()?,
                schema: h.get("schema").filter(|s| !s.is_null()).cloned(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Found {
        hits,
        searched: usize::try_from(v.get("searched")?.as_u64()?).ok()?,
        unavailable: v
            .get("unavailable")?
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect::<Option<_>>()?,
        denied: (v.get("denied").and_then(Value::as_u64).unwrap_or(0)) as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_survives_the_trip() {
        let report = ServerReport {
            name: "s".into(),
            config_name: "s".into(),
            stack: "config".into(),
            transport: "stdio",
            status: Status::Cached,
            tools: vec![json!({"name": "t", "inputSchema": {"type": "object"}})],
            tool_tokens: vec![12],
            init_time: Some(Duration::from_micros(12_345)),
            protocol_version: Some("2025-06-18".into()),
            used_slow_window: true,
            warnings: vec!["w".into()],
            error: Some(crate::catalog::ServerProblem::Relayed(RelayedProblem {
                kind: "server_exited",
                message: "it exited".into(),
                help: "read its stderr".into(),
                is_config: false,
                scope: None,
            })),
            stale: vec!["old".into()],
            checked_at: Some(UNIX_EPOCH + Duration::from_millis(1_700_000_000_123)),
            listed_with: None,
            items: None,
            changed: Default::default(),
            needs: Default::default(),
        };
        let back = report_from(report_json(&report)).expect("decodes");
        let line = format!(
            r#"{{"id":7,"result":{}}}"#,
            reports_json(std::slice::from_ref(&report), |_| false)
        );
        let (id, listed) = reports_answer(&line).expect("decodes");
        assert_eq!(id, 7);
        assert_eq!(report_json(&listed.unwrap()[0]), report_json(&report));
        assert_eq!(report_json(&back), report_json(&report));
        assert_eq!(back.init_time, report.init_time);
        assert_eq!(back.checked_at, report.checked_at);
        assert_eq!(back.error.as_ref().map(|e| e.kind()), Some("server_exited"));
    }

    #[test]
    fn broken_answers_decode_to_nothing_not_a_panic() {
        for bad in [
            json!(null),
            json!({"name": 1}),
            json!({"name": "s", "tools": "no"}),
            json!([1, 2]),
        ] {
            assert!(report_from(bad.clone()).is_none(), "{bad}");
            let line = json!({"id": 1, "result": {"reports": [bad]}}).to_string();
            assert!(reports_answer(&line).is_none(), "{bad}");
            assert!(found_from(&bad).is_none(), "{bad}");
        }
        let hit = json!({"hits": [{"doc": -1, "score": 1.0}], "searched": 1, "unavailable": []});
        assert!(found_from(&hit).is_none());
    }

    #[test]
    fn scores_keep_every_bit() {
        let found = Found {
            hits: vec![FoundTool {
                hit: Hit {
                    doc: 3,
                    score: 0.1 + 0.2,
                    parts: Parts {
                        lexical: 1.0 / 3.0,
                        semantic: Some(0.713_f64.sqrt()),
                        pinned: false,
                    },
                },
                tool: ToolDoc::from_definition("s", &json!({"name": "t", "description": "d"})),
                schema: Some(json!({"type": "object"})),
            }],
            searched: 9,
            unavailable: vec!["x".into()],
            denied: 2,
        };
        let back = found_from(&found_json(&found)).expect("decodes");
        assert_eq!(back.hits[0].hit, found.hits[0].hit);
        assert_eq!(back.hits[0].tool, found.hits[0].tool);
        assert_eq!(back.unavailable, found.unavailable);
        assert_eq!(back.denied, 2);
    }
}
