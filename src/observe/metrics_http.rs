//! The pages every HTTP listener of ours serves about itself: `/healthz` (the process answers),
//! `/readyz` (it can serve: its catalog is loaded, its state store answers) and `/metrics`
//! (the exposition; behind the listener's own key, or on a loopback listener of its own:
//! [`serve_metrics`]).

use std::sync::Arc;

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Whether the listener's service is ready to serve (asked on each `/readyz`).
pub type Readiness = Arc<dyn Fn() -> bool + Send + Sync>;

/// `/healthz` and `/readyz`, open (load balancers and probes send no key).
pub fn health_routes<S: Clone + Send + Sync + 'static>(ready: Readiness) -> Router<S> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(move || readyz(Arc::clone(&ready))))
}

/// `GET /healthz`: the process is alive and its loop answers.
async fn healthz() -> Response {
    no_store(Json(json!({"status": "ok"})).into_response())
}

/// `GET /readyz`: 200 once the service can serve, else 503 saying what it waits for.
async fn readyz(ready: Readiness) -> Response {
    let answer = match ready() {
        true => (StatusCode::OK, Json(json!({"status": "ready"}))),
        false if !crate::state::is_reachable() => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "state_unreachable",
                "help": "the state store (--state) does not answer: check Redis; this replica is ready again once it does"})),
        ),
        false => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "starting",
                "help": "the catalog is still being loaded (servers the tool index does not know are checked first); ask again shortly"})),
        ),
    };
    no_store(answer.into_response())
}

/// `GET /metrics`: every metric of the process, as Prometheus scrapes it.
pub async fn metrics_page() -> Response {
    let mut response = super::metrics::render().into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(super::metrics::CONTENT_TYPE),
    );
    no_store(response)
}

fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Serves `/metrics`, `/healthz` and `/readyz` (no key: the caller binds loopback only) on
/// `listener` through the one hardened loop, until `shutdown`.
pub async fn serve_metrics(
    listener: TcpListener,
    ready: Readiness,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics_page))
        .merge(health_routes(ready));
    crate::listen::serve(listener, app, shutdown).await
}
