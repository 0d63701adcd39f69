//! The bounds on forwarding: a total timeout on an exchange with mcpo (a clear 504 that
//! names neither mcpo's URL nor anything it logged) and a number of requests in flight per
//! stack (a 503 with `Retry-After` once every slot stayed taken for the queue wait).

use std::time::Duration;

use super::harness::*;
use super::*;

#[tokio::test]
async fn a_stuck_controller_is_a_504_that_names_nothing_upstream() {
    let h = Harness::start(|c| c.forward.timeout = Duration::from_millis(300)).await;
    let upstream = h.front.inner.upstream_base.clone();
    let started = std::time::Instant::now();
    let (status, body) = answer(h.post("/everything/hang").header("x-api-key", KEY)).await;
    assert_eq!(
        (status, error_type(&body)),
        (504, "upstream_timeout"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let text = body.to_string();
    assert!(
        text.contains("300ms") && text.contains(FORWARD_TIMEOUT_ENV),
        "{text}"
    );
    assert!(
        !text.contains(&upstream) && !text.contains("127.0.0.1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_stack_forwards_at_most_its_in_flight_requests() {
    let h = Harness::start(|c| {
        c.forward.in_flight = 1;
        c.forward.queue_wait = Duration::from_millis(200);
    })
    .await;
    let stuck = tokio::spawn(h.post("/everything/hang").header("x-api-key", KEY).send());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !h.controller.seen().iter().any(|s| s.uri.ends_with("/hang")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the first call never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let response = h
        .post("/everything/echo")
        .header("x-api-key", KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.unwrap();
    assert_eq!(error_type(&body), "busy", "{body}");
    assert!(body.to_string().contains(IN_FLIGHT_ENV), "{body}");

    // The client gives up: its slot is free again.
    stuck.abort();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = answer(h.post("/everything/echo").header("x-api-key", KEY)).await;
        if status == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the slot was never freed: {status}"
        );
    }
}
