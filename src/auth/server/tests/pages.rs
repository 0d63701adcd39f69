//! The consent page (framing, CSRF, the one-time code, the operator's approval) and the
//! redirect URIs a client may register and be sent to.

use super::*;

#[tokio::test]
async fn the_consent_page_cannot_be_framed_or_cached() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let (_, headers) = open_page(&fx.app, &client, "abc").await;
    assert!(headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .contains("frame-ancestors 'none'"));
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    assert_eq!(headers[header::CACHE_CONTROL], "no-store");
}

/// A form without the page's CSRF token (in the form and its cookie) is refused, even with
/// the right one-time code.
#[tokio::test]
async fn a_consent_form_without_its_csrf_token_is_refused() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let (page, _) = open_page(&fx.app, &client, "abc").await;
    let code = fx.last_code();
    let forged = Page {
        csrf: "x".repeat(32),
        ..Page {
            request: page.request.clone(),
            csrf: String::new(),
            cookie: page.cookie.clone(),
        }
    };
    let (status, headers, _) = submit(&fx.app, &forged, &code).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(headers.get(header::LOCATION).is_none());
    let no_cookie = Page {
        cookie: String::new(),
        request: page.request.clone(),
        csrf: page.csrf.clone(),
    };
    assert_eq!(
        submit(&fx.app, &no_cookie, &code).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(submit(&fx.app, &page, &code).await.0, StatusCode::SEE_OTHER);
}

/// Guessing the one-time code: five wrong tries close the request; the right code after that
/// gets nothing.
#[tokio::test]
async fn the_one_time_code_cannot_be_brute_forced() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let (page, _) = open_page(&fx.app, &client, "abc").await;
    let code = fx.last_code();
    for _ in 0..consent::MAX_TRIES {
        assert_ne!(
            submit(&fx.app, &page, "WRONG000").await.0,
            StatusCode::SEE_OTHER
        );
    }
    let (status, headers, _) = submit(&fx.app, &page, &code).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the request survived {} wrong codes",
        consent::MAX_TRIES
    );
    assert!(headers.get(header::LOCATION).is_none());
}

/// The operator's `auth approve` stands in for the code.
#[tokio::test]
async fn the_operator_approves_a_pending_client() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let (page, _) = open_page(&fx.app, &client, "abc").await;
    assert_eq!(
        submit(&fx.app, &page, "").await.0,
        StatusCode::OK,
        "allowed without consent"
    );
    let state = admin::load(fx.server.store.as_ref()).unwrap();
    let (id, pending) = state.pending.iter().next().unwrap();
    assert_eq!(pending.client_id, client);
    assert!(admin::approve(fx.server.store.as_ref(), id).unwrap());
    assert_eq!(submit(&fx.app, &page, "").await.0, StatusCode::SEE_OTHER);
}

/// Open-redirect attempts on /authorize: a redirect URI that is not the registered one byte
/// for byte — whatever trick makes it look alike — gets an error page, never a `Location`;
/// nor does an unknown client, a second `redirect_uri`, or one slipped into the consent form.
#[tokio::test]
async fn open_redirect_attempts_get_a_page_never_a_redirect() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let lookalikes = [
        "http://127.0.0.1:9@evil.example/callback",
        "//evil.example/callback",
        "http://127.0.0.1:9/callback?next=https://evil.example",
        "http://127.0.0.1:9/callback#@evil.example",
        "HTTP://127.0.0.1:9/callback",
        "http://127.0.0.1:9/callback/",
        "http://127.0.0.1:9/%63allback",
        "http://127.0.0.1:09/callback",
        "http://localhost:9/callback",
        "http://127.0.0.1:9/callback%0d%0aLocation:%20https://evil.example",
        "javascript:alert(1)//http://127.0.0.1:9/callback",
        "",
    ];
    let unknown = authorize_uri("not-a-client", "abc", "https://evil.example/cb");
    let doubled = format!(
        "{}&redirect_uri=https%3A%2F%2Fevil.example%2Fcb",
        authorize_uri(&client, "abc", REDIRECT)
    );
    let attempts = lookalikes
        .iter()
        .map(|r| authorize_uri(&client, "abc", r))
        .chain([unknown, doubled]);
    for uri in attempts {
        let (status, headers, _) = send(&fx.app, get(&uri)).await;
        assert!(status.is_client_error(), "{status} for {uri}");
        assert!(headers.get(header::LOCATION).is_none(), "redirected: {uri}");
    }
    // The consent form names no redirect: the one checked when the page opened is used.
    let (page, _) = open_page(&fx.app, &client, "abc").await;
    let code = fx.last_code();
    let pairs = [
        ("request", page.request.as_str()),
        ("csrf", &page.csrf),
        ("code", &code),
        ("action", "allow"),
        ("redirect_uri", "https://evil.example/cb"),
    ];
    let (status, headers, _) = send(&fx.app, form("/authorize", &pairs, Some(&page.cookie))).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let location = headers[header::LOCATION].to_str().unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
}

/// Schemes a browser would run or that carry their own content are never registered.
#[tokio::test]
async fn script_and_data_redirect_uris_are_not_registered() {
    let fx = fixture();
    for redirect in [
        "javascript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "http://127.0.0.1:9@evil.example/callback",
        "http://localhost.evil.example/callback",
        "https://tools.example/cb#fragment",
    ] {
        let body = json!({"redirect_uris": [redirect], "token_endpoint_auth_method": "none"});
        let (status, body) = post_register(&fx.app, &body).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{redirect} registered: {body}"
        );
    }
}
