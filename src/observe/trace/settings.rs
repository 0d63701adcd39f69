//! What turns traces on: the `--otlp` flag or the standard `OTEL_EXPORTER_OTLP_*` variables
//! (read whether or not this build has the exporter: a build without the `otel` feature
//! refuses them, never ignores them).

/// The variables that turn traces on without the flag (the OpenTelemetry SDKs' own).
pub const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// Where traces go, when they go anywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The traces URL given with `--otlp` (`/v1/traces` added to a bare collector URL); `None`
    /// when the variables name it (the exporter reads them itself, headers included).
    pub endpoint: Option<String>,
}

impl Settings {
    /// Traces are on with `--otlp URL`, or when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is set (unless `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER=none`); else off.
    pub fn from_env(flag: Option<&str>) -> Result<Option<Settings>, TraceError> {
        Settings::from_lookup(flag, |name| std::env::var(name).ok())
    }

    fn from_lookup(
        flag: Option<&str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, TraceError> {
        if let Some(url) = flag {
            return Ok(Some(Settings {
                endpoint: Some(traces_url(url)?),
            }));
        }
        let said = |name: &str| var(name).map(|v| v.trim().to_ascii_lowercase());
        let disabled = said("OTEL_SDK_DISABLED").as_deref() == Some("true")
            || said("OTEL_TRACES_EXPORTER").as_deref() == Some("none");
        let named = ENDPOINT_VARIABLES
            .iter()
            .any(|name| var(name).is_some_and(|v| !v.trim().is_empty()));
        Ok((named && !disabled).then_some(Settings { endpoint: None }))
    }
}

/// The traces URL of `--otlp URL`: a collector's base URL gets `/v1/traces`, as
/// `OTEL_EXPORTER_OTLP_ENDPOINT` does; a URL with a path of its own is taken as it is.
fn traces_url(url: &str) -> Result<String, TraceError> {
    let bad = |reason: &str| TraceError::BadEndpoint {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https (OTLP/HTTP)"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad(
            "credentials in the URL would be sent in clear; pass them in OTEL_EXPORTER_OTLP_HEADERS",
        ));
    }
    Ok(match parsed.path() {
        "" | "/" => format!("{}/v1/traces", url.trim_end_matches('/')),
        _ => url.to_string(),
    })
}

/// Why traces cannot be exported as asked.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// `--otlp` names no usable OTLP/HTTP URL.
    #[error("--otlp {url}: {reason}")]
    BadEndpoint {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The exporter could not be built (a bad `OTEL_EXPORTER_OTLP_*` value).
    #[error("cannot export traces: {0}")]
    Exporter(String),
    /// Traces were asked for, but this build has no exporter (cargo feature `otel` off).
    #[error("this mcp-launch was built without traces (cargo feature `otel`)")]
    NotBuiltIn,
}

impl crate::error::Actionable for TraceError {
    fn kind(&self) -> &'static str {
        match self {
            TraceError::NotBuiltIn => "traces_not_built",
            _ => "invalid_otlp",
        }
    }

    fn help(&self) -> String {
        match self {
            TraceError::BadEndpoint { .. } => "give the collector's OTLP/HTTP URL, e.g. `--otlp http://127.0.0.1:4318` (`/v1/traces` is added), or set OTEL_EXPORTER_OTLP_ENDPOINT".into(),
            TraceError::NotBuiltIn => "rebuild with default features (`cargo build --release`), or drop `--otlp` and unset OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".into(),
            TraceError::Exporter(_) => "check OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS (`key=value,key2=value2`), or unset them to turn traces off".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(flag: Option<&str>, vars: &[(&str, &str)]) -> Option<Settings> {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        };
        Settings::from_lookup(flag, lookup).unwrap()
    }

    #[test]
    fn traces_are_off_unless_a_flag_or_an_endpoint_variable_asks() {
        assert_eq!(settings(None, &[]), None);
        assert_eq!(settings(None, &[("OTEL_SERVICE_NAME", "gw")]), None);
        let by_env = Some(Settings { endpoint: None });
        for name in ENDPOINT_VARIABLES {
            assert_eq!(settings(None, &[(name, "http://c:4318")]), by_env);
        }
        let off = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ];
        assert_eq!(settings(None, &off), None);
        let none = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ];
        assert_eq!(settings(None, &none), None);
    }

    #[test]
    fn the_flag_takes_a_collector_url_and_adds_the_traces_path() {
        let url = |flag| settings(Some(flag), &[]).unwrap().endpoint.unwrap();
        assert_eq!(
            url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            url("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            url("https://c.example/otlp/v1/traces"),
            "https://c.example/otlp/v1/traces"
        );
    }

    #[test]
    fn a_bad_flag_is_refused_with_what_to_give() {
        for bad in [
            "127.0.0.1:4318",
            "grpc://c:4317",
            "http://user:pw@c:4318",
            "not a url",
        ] {
            let error = Settings::from_lookup(Some(bad), |_| None).unwrap_err();
            assert!(error.to_string().contains("--otlp"), "{error}");
            let help = crate::error::Actionable::help(&error);
            assert!(help.contains("http://127.0.0.1:4318"), "{help}");
        }
    }
}
