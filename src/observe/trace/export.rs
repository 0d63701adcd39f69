//! The exporter: the OTLP/HTTP protobuf exporter of the official crates, batching spans on
//! its own thread and posting them through our reqwest client on the process's runtime; its
//! tracer makes the spans ([`super::spans`]).

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

use super::{Settings, TraceError};

/// How long the exporter may take to send the last spans when the process ends (a collector
/// that is down must not hold the exit).
const FLUSH_AT_EXIT: Duration = Duration::from_secs(3);

/// One export's bound (OpenTelemetry's default `OTEL_EXPORTER_OTLP_TIMEOUT`).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read from a collector (it answers an export with a few bytes).
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The installed exporter: its tracer makes the spans, [`Exporter::shutdown`] sends what is
/// left when the process ends.
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
        super::spans::turn_on(provider.tracer("mcp-launch"));
        Ok(Exporter { provider })
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
