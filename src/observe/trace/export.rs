//! The exporter: what turns traces on (the `--otlp` flag or the standard variables), and the
//! OTLP/HTTP protobuf exporter of the official crates, batching spans on its own thread and
//! posting them through our reqwest client on the process's runtime.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::{filter_fn, Filtered};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use super::TARGET;

/// The variables that turn traces on without the flag (the OpenTelemetry SDKs' own).
pub const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// How long the exporter may take to send the last spans when the process ends (a collector
/// that is down must not hold the exit).
const FLUSH_AT_EXIT: Duration = Duration::from_secs(3);

/// One export's bound (OpenTelemetry's default `OTEL_EXPORTER_OTLP_TIMEOUT`).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read from a collector (it answers an export with a few bytes).
const MAX_ANSWER_BYTES: usize = 1 << 20;

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

/// The installed exporter: its layer goes into the subscriber, [`Exporter::shutdown`]
/// sends what is left when the process ends.
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Builds the exporter and turns traces on. `runtime` runs its HTTP posts (the batch
    /// thread has no runtime of its own).
    pub fn install(
        settings: &Settings,
        runtime: tokio::runtime::Handle,
    ) -> Result<Exporter, TraceError> {
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TraceError::Exporter(e.to_string()))?;
        let mut builder = SpanExporter::builder()
            .with_http()
            .with_http_client(Post { client, runtime });
        if let Some(endpoint) = &settings.endpoint {
            builder = builder.with_endpoint(endpoint.clone());
        }
        let exporter = builder
            .build()
            .map_err(|e| TraceError::Exporter(e.to_string()))?;
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("mcp-launch");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        super::turn_on();
        Ok(Exporter { provider })
    }

    /// The layer that makes our spans (and only ours, [`TARGET`]) OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl Layer<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let layer: Filtered<_, _, S> = tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("mcp-launch"))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(filter_fn(|meta| meta.target() == TARGET));
        layer
    }

    /// Sends the spans still batched (bounded by [`FLUSH_AT_EXIT`]).
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown_with_timeout(FLUSH_AT_EXIT) {
            tracing::warn!("traces: the last spans were not sent: {e}");
        }
    }
}

/// The exporter's HTTP client: our reqwest, its posts spawned on the process's runtime.
#[derive(Debug)]
struct Post {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for Post {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let answer = self.runtime.spawn(async move {
            let mut response = client.execute(request).await?;
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, reqwest::Error>((response.status(), Bytes::from(body)))
        });
        let (status, body) = answer.await??;
        Ok(Response::builder().status(status).body(body)?)
    }
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
}

impl crate::error::Actionable for TraceError {
    fn kind(&self) -> &'static str {
        "invalid_otlp"
    }

    fn help(&self) -> String {
        match self {
            TraceError::BadEndpoint { .. } => "give the collector's OTLP/HTTP URL, e.g. `--otlp http://127.0.0.1:4318` (`/v1/traces` is added), or set OTEL_EXPORTER_OTLP_ENDPOINT".into(),
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
