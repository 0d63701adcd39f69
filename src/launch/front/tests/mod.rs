//! In-process tests of the front against a stand-in controller (no python needed).

mod counted;
mod harness;
mod limits;
mod upstream;

use std::time::Duration;

use axum::http::Method;
use tokio::sync::mpsc;

use super::*;
use crate::launch::ServerExposure;
use harness::*;

#[tokio::test]
async fn healthz_is_open_and_follows_readiness() {
    let h = Harness::start(|_| {}).await;
    let (status, body) = answer(h.get("/healthz")).await;
    assert_eq!(
        (status, body),
        (200, json!({"status": "ok", "stack": "demo"}))
    );
    let (status, body) = answer(h.post("/healthz")).await;
    assert_eq!((status, error_type(&body)), (405, "method_not_allowed"));
    h.front.set_upstream_ready(false);
    let (status, body) = answer(h.get("/healthz")).await;
    assert_eq!(
        (status, body),
        (503, json!({"status": "unavailable", "stack": "demo"}))
    );
}

/// `/readyz` is open and says whether the stack can serve; `/metrics` needs the key.
#[tokio::test]
async fn readyz_is_open_and_metrics_need_the_key() {
    let h = Harness::start(|_| {}).await;
    let (status, body) = answer(h.get("/readyz")).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ready")));
    h.front.set_upstream_ready(false);
    assert_eq!(answer(h.get("/readyz")).await.0, 503);
    let (status, body) = answer(h.get("/metrics")).await;
    assert_eq!((status, error_type(&body)), (401, "unauthorized"));
    let keyed = h
        .get("/metrics")
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(keyed.status(), 200);
    assert!(keyed.text().await.unwrap().ends_with("# EOF\n"));
}

#[tokio::test]
async fn spec_is_open_unless_protected() {
    let open = Harness::start(|_| {}).await;
    let response = open.get("/openapi.json").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"openapi": "3.1.0", "v": 1})
    );

    let protected = Harness::start(|c| c.protect_spec = true).await;
    let (status, body) = answer(protected.get("/openapi.json")).await;
    assert_eq!((status, error_type(&body)), (401, "unauthorized"));
    let (status, body) = protected.get_keyed("/openapi.json").await;
    assert_eq!((status, body["v"].clone()), (200, json!(1)));
}

#[tokio::test]
async fn nothing_published_answers_503() {
    let h = Harness::start(|_| {}).await;
    let fresh = Front::new(h.front.inner.config.clone()).unwrap();
    let listener = listen().await;
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(fresh.serve(listener, h.shutdown.clone()));
    for path in ["/openapi.json", "/everything/echo"] {
        let request = h.http.get(format!("{url}{path}")).header("x-api-key", KEY);
        let (status, body) = answer(request).await;
        assert_eq!(
            (status, error_type(&body)),
            (503, "not_published"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn key_is_required_in_the_right_header() {
    let h = Harness::start(|_| {}).await;
    let refused = [
        h.get("/everything/echo"),
        h.get("/everything/echo").header("x-api-key", "wrong"),
        h.get("/everything/echo").bearer_auth("wrong"),
        h.get("/everything/echo").header("authorization", KEY),
        h.get("/everything/echo").header("x-api-token", KEY),
        h.get("/docs"),
    ];
    for request in refused {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401);
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body: Value = response.json().await.unwrap();
        assert_eq!(error_type(&body), "unauthorized");
        assert!(body["error"]["help"]
            .as_str()
            .unwrap()
            .contains("X-API-Key"));
    }
    assert!(h.controller.seen().is_empty(), "refused requests leaked");

    let accepted = [
        h.get("/everything/echo").header("x-api-key", KEY),
        h.get("/everything/echo").bearer_auth(KEY),
        h.get("/everything/echo")
            .header("authorization", format!("bearer {KEY}")),
    ];
    for request in accepted {
        assert_eq!(request.send().await.unwrap().status(), 200);
    }
}

#[tokio::test]
async fn controller_sees_only_the_internal_key() {
    controller_sees_only_the_internal_key_when(Reach::Http).await;
}

#[tokio::test]
async fn an_in_process_controller_sees_the_same_request() {
    controller_sees_only_the_internal_key_when(Reach::InProcess).await;
}

async fn controller_sees_only_the_internal_key_when(reach: Reach) {
    let h = Harness::start_with(reach, |_| {}).await;
    let response = h
        .post("/everything/echo?x=1&y=%20")
        .header("x-api-key", KEY)
        .header("x-mcp-launch-admin", ADMIN)
        .bearer_auth(KEY)
        .header("x-custom", "kept")
        .json(&json!({"message": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), r#"{"message":"hi"}"#);

    let seen = h.controller.seen();
    let [seen] = seen.as_slice() else {
        panic!("expected one forwarded request, got {seen:?}")
    };
    assert_eq!(seen.method, Method::POST);
    assert_eq!(seen.uri, "/everything/echo?x=1&y=%20");
    let authorization: Vec<_> = seen.headers.get_all("authorization").iter().collect();
    assert_eq!(authorization, [&format!("Bearer {UPSTREAM_KEY}")]);
    assert!(!seen.headers.contains_key("x-api-key"));
    assert!(!seen.headers.contains_key("x-mcp-launch-admin"));
    assert_eq!(seen.headers["x-custom"], "kept");
    assert_eq!(seen.headers["x-forwarded-for"], "127.0.0.1");
    assert_eq!(seen.headers["x-forwarded-proto"], "http");
    let all_values = format!("{:?}", seen.headers);
    assert!(
        !all_values.contains(KEY),
        "the public key reached the controller"
    );
}

#[tokio::test]
async fn gate_refuses_with_actionable_errors() {
    let h = Harness::start(|_| {}).await;
    let cases = [
        (
            "/everything/get-env",
            403,
            "tool_denied",
            "tool allow everything get-env",
        ),
        (
            "/time/get_current_time",
            404,
            "server_disabled",
            "server enable time",
        ),
        ("/time/docs", 404, "server_disabled", "mcp-launch openapi"),
        ("/nope/echo", 404, "unknown_server", "`everything`"),
        ("/everything/ecko", 404, "unknown_tool", "`echo`"),
    ];
    for (path, status, kind, help) in cases {
        let (got, body) = h.get_keyed(path).await;
        assert_eq!((got, error_type(&body)), (status, kind), "{path}");
        let text = body["error"]["help"].as_str().unwrap();
        assert!(text.contains(help), "{path}: {text:?} lacks {help:?}");
    }
    let (_, body) = h.get_keyed("/nope/echo").await;
    assert!(!body["error"]["help"].as_str().unwrap().contains("time"));
    let (_, body) = h.get_keyed("/everything/get-enx").await;
    assert!(!body["error"]["help"].as_str().unwrap().contains("get-env"));
    assert!(h.controller.seen().is_empty(), "refused requests leaked");
}

#[tokio::test]
async fn read_output_is_forwarded_only_when_the_exposure_reads_outputs() {
    let h = Harness::start(|_| {}).await;
    let read = || h.post("/read_output").header("x-api-key", KEY).body("{}");
    let (status, body) = answer(read()).await;
    assert_eq!((status, error_type(&body)), (405, "method_not_allowed"));
    assert!(h.controller.seen().is_empty(), "refused, not forwarded");

    let mut reading = exposure();
    reading.set_reads_outputs(true);
    h.front
        .publish(json!({"openapi": "3.1.0", "v": 2}), reading);
    assert_eq!(answer(read()).await.0, 200);
    let (status, _) = answer(h.post("/read_output").body("{}")).await;
    assert_eq!(status, 401, "behind the key");
    let uris: Vec<_> = h.controller.seen().into_iter().map(|s| s.uri).collect();
    assert_eq!(uris, ["/read_output"]);
}

#[tokio::test]
async fn root_pages_and_server_pages_are_forwarded_read_only() {
    let h = Harness::start(|_| {}).await;
    for path in ["/docs", "/everything/docs", "/"] {
        assert_eq!(h.get_keyed(path).await.0, 200, "{path}");
    }
    let uris: Vec<_> = h.controller.seen().into_iter().map(|s| s.uri).collect();
    assert_eq!(uris, ["/docs", "/everything/docs", "/"]);
    // Pages take GET (and HEAD) only: a POST to one never reaches the controller.
    for path in ["/docs", "/everything/docs", "/everything/redoc", "/"] {
        let (status, body) = answer(h.post(path).header("x-api-key", KEY)).await;
        assert_eq!(
            (status, error_type(&body)),
            (405, "method_not_allowed"),
            "{path}"
        );
    }
    assert_eq!(h.controller.seen().len(), 3, "a POST to a page leaked");
}

/// A server's own spec comes from the merged one: what the gate refuses never shows there.
#[tokio::test]
async fn a_servers_spec_is_its_part_of_the_merged_spec() {
    let h = Harness::start(|_| {}).await;
    let merged = json!({"openapi": "3.1.0", "info": {"title": "demo"},
        "servers": [{"url": "http://x"}],
        "paths": {"/everything/echo": {"post": {}}, "/time/now": {"post": {}}}});
    h.front.publish(merged, exposure());
    let (status, part) = h.get_keyed("/everything/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(part["paths"], json!({"/echo": {"post": {}}}));
    assert!(h.controller.seen().is_empty(), "answered by the front");
}

/// Tools named like pages keep their rules whatever the method: denied `docs`, `redoc` and
/// `openapi.json` were callable (the front forwarded pages before applying tool rules).
#[tokio::test]
async fn denied_tools_named_like_pages_are_refused() {
    let h = Harness::start(|_| {}).await;
    let mut e = exposure();
    e.insert(
        "everything",
        ServerExposure {
            enabled: true,
            started: true,
            tools: tools(&[
                ("echo", true),
                ("docs", false),
                ("redoc", false),
                ("openapi.json", false),
            ]),
        },
    );
    h.front.publish(json!({"openapi": "3.1.0"}), e);
    for path in [
        "/everything/docs",
        "/everything/redoc",
        "/everything/openapi.json",
    ] {
        let (status, body) = answer(h.post(path).header("x-api-key", KEY)).await;
        assert_eq!(
            (status, error_type(&body)),
            (403, "tool_denied"),
            "POST {path}"
        );
        let (status, body) = h.get_keyed(path).await;
        assert_eq!(
            (status, error_type(&body)),
            (403, "tool_denied"),
            "GET {path}"
        );
    }
    assert!(
        h.controller.seen().is_empty(),
        "a denied tool reached the controller"
    );
}

#[tokio::test]
async fn encoded_and_dotted_paths_cannot_bypass_the_gate() {
    let h = Harness::start(|_| {}).await;
    let (status, body) = h.get_keyed("/everything/get%2Denv").await;
    assert_eq!((status, error_type(&body)), (403, "tool_denied"));
    for path in ["/everything/get%252Denv", "/everything/x%2F..%2Fget-env"] {
        let (status, body) = h.get_keyed(path).await;
        assert_eq!((status, error_type(&body)), (400, "bad_path"), "{path}");
    }
    // reqwest normalizes `..` away, so this one goes over a raw socket.
    let raw = raw_status(&h.url, "/everything/../time/get_current_time").await;
    assert_eq!(raw, 400);
    assert!(h.controller.seen().is_empty(), "refused requests leaked");

    h.get_keyed("/everything/%65cho").await;
    let uris: Vec<_> = h.controller.seen().into_iter().map(|s| s.uri).collect();
    assert_eq!(uris, ["/everything/echo"], "forwarded path is canonical");
}

#[tokio::test]
async fn large_bodies_stream_both_ways() {
    large_bodies_stream_both_ways_when(Reach::Http).await;
}

#[tokio::test]
async fn large_bodies_stream_both_ways_in_process() {
    large_bodies_stream_both_ways_when(Reach::InProcess).await;
}

async fn large_bodies_stream_both_ways_when(reach: Reach) {
    let h = Harness::start_with(reach, |_| {}).await;
    let mut response = h
        .get("/everything/big")
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The controller holds the rest until the first chunk is through: a buffering front
    // would never deliver it.
    let mut received = tokio::time::timeout(Duration::from_secs(10), response.chunk())
        .await
        .expect("first chunk not streamed")
        .unwrap()
        .unwrap()
        .to_vec();
    h.controller.release_big.notify_one();
    while let Some(chunk) = response.chunk().await.unwrap() {
        received.extend_from_slice(&chunk);
    }
    assert_eq!(received.len(), BIG);
    assert!(received == pattern(0, BIG), "the body arrived altered");

    let (sender, receiver) = mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    tokio::spawn(async move {
        for offset in (0..BIG).step_by(CHUNK) {
            let _ = sender.send(Ok(pattern(offset, CHUNK))).await;
        }
    });
    let upload = reqwest::Body::wrap_stream(tokio_stream(receiver));
    let response = h
        .post("/everything/echo")
        .bearer_auth(KEY)
        .body(upload)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let echoed = response.bytes().await.unwrap();
    assert!(echoed == pattern(0, BIG), "the upload arrived altered");
}

#[tokio::test]
async fn unreachable_controller_is_a_502() {
    let closed = listen().await;
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let h = Harness::start(|c| c.upstream = format!("http://127.0.0.1:{port}")).await;
    let (status, body) = h.get_keyed("/everything/echo").await;
    assert_eq!((status, error_type(&body)), (502, "upstream_unavailable"));
    assert!(body["error"]["message"].as_str().unwrap().contains("demo"));
}

#[tokio::test]
async fn controller_rejecting_our_key_is_a_502_not_the_clients_fault() {
    for reach in [Reach::Http, Reach::InProcess] {
        let h = Harness::start_with(reach, |c| c.upstream_key = "stale".into()).await;
        let (status, body) = h.get_keyed("/everything/echo").await;
        assert_eq!(
            (status, error_type(&body)),
            (502, "upstream_rejected_key"),
            "{reach:?}"
        );
        assert!(!body.to_string().contains("Invalid API key"));
    }
}

#[tokio::test]
async fn publish_swaps_spec_and_gate_together() {
    let h = Harness::start(|_| {}).await;
    assert_eq!(h.get_keyed("/everything/echo").await.0, 200);
    let mut narrower = exposure();
    narrower.insert(
        "everything",
        ServerExposure {
            enabled: true,
            started: true,
            tools: tools(&[("echo", false), ("get-env", true)]),
        },
    );
    h.front.publish(json!({"v": 2}), narrower);
    assert_eq!(h.get_keyed("/openapi.json").await.1, json!({"v": 2}));
    assert_eq!(h.get_keyed("/everything/echo").await.0, 403);
    assert_eq!(h.get_keyed("/everything/get-env").await.0, 200);
}

#[tokio::test]
async fn reload_needs_the_admin_token_and_passes_public_url() {
    let h = Harness::start(|_| {}).await;
    let reload = || h.post(RELOAD_PATH);
    let (status, body) = answer(reload().header("x-mcp-launch-admin", ADMIN)).await;
    assert_eq!((status, error_type(&body)), (503, "reload_unavailable"));

    let (sender, mut received) = mpsc::unbounded_channel();
    h.front
        .set_reload_handler(Arc::new(move |request: ReloadRequest| {
            let _ = sender.send(request.clone());
            Box::pin(async move {
                match request.public_url {
                    Some(url) if url.contains("fail") => {
                        let stopping = crate::launch::stack::StackError::Stopping;
                        Err(Arc::new(stopping) as super::ReloadError)
                    }
                    url => Ok(json!({"reloaded": true, "public_url": url})),
                }
            })
        }));

    for request in [reload(), reload().header("x-api-key", KEY).bearer_auth(KEY)] {
        let (status, body) = answer(request.json(&json!({}))).await;
        assert_eq!((status, error_type(&body)), (401, "admin_unauthorized"));
    }
    let wrong = reload().header("x-mcp-launch-admin", "nope");
    assert_eq!(answer(wrong).await.0, 401);
    assert!(
        received.try_recv().is_err(),
        "handler ran without the token"
    );

    let admin = || reload().header("x-mcp-launch-admin", ADMIN);
    let (status, body) = answer(admin()).await;
    assert_eq!(
        (status, body),
        (200, json!({"reloaded": true, "public_url": null}))
    );
    let url = "https://x.trycloudflare.com";
    let (status, body) = answer(admin().json(&json!({"public_url": url}))).await;
    assert_eq!((status, body["public_url"].clone()), (200, json!(url)));
    assert_eq!(received.recv().await.unwrap(), ReloadRequest::default());
    assert_eq!(
        received.recv().await.unwrap().public_url.as_deref(),
        Some(url)
    );

    let (status, body) = answer(admin().json(&json!({"public_url": "fail"}))).await;
    assert_eq!((status, error_type(&body)), (500, "reload_failed"));
    // The handler's own error reaches the answer, its help included.
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stopping"),
        "{body}"
    );
    assert_eq!(
        body["error"]["help"], "start it again with `mcp-launch up`",
        "{body}"
    );
    let (status, body) = answer(admin().json(&json!({"publicUrl": url}))).await;
    assert_eq!((status, error_type(&body)), (400, "bad_body"));
}

#[tokio::test]
async fn config_debug_hides_the_secrets() {
    let h = Harness::start(|_| {}).await;
    let printed = format!("{:?}", h.front.inner.config);
    for secret in [KEY, UPSTREAM_KEY, ADMIN] {
        assert!(!printed.contains(secret), "{printed}");
    }
}

#[tokio::test]
async fn cancel_shuts_down_gracefully() {
    let h = Harness::start(|_| {}).await;
    assert_eq!(answer(h.get("/healthz")).await.0, 200);
    h.shutdown.cancel();
    let served = tokio::time::timeout(Duration::from_secs(5), h.served)
        .await
        .expect("serve did not return after cancel");
    assert!(served.unwrap().is_ok());
    let fresh = reqwest::Client::builder().no_proxy().build().unwrap();
    assert!(fresh
        .get(format!("{}/healthz", h.url))
        .send()
        .await
        .is_err());
}
