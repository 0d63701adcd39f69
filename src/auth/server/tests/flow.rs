//! Logins and tokens: the whole flow, codes, PKCE, audiences, expiry, revocation, refresh.

use super::*;

#[tokio::test]
async fn a_client_discovers_registers_consents_calls_and_refreshes() {
    let fx = fixture();
    let (status, headers, _) =
        send(&fx.app, Request::post("/mcp").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let challenge = headers[header::WWW_AUTHENTICATE].to_str().unwrap();
    let parsed = crate::auth::challenge::BearerChallenge::parse(challenge).unwrap();
    let metadata_url = parsed.resource_metadata.unwrap();
    assert_eq!(
        metadata_url,
        "http://127.0.0.1:7000/.well-known/oauth-protected-resource/mcp"
    );
    let (_, _, body) = send(&fx.app, get("/.well-known/oauth-protected-resource/mcp")).await;
    let resource: crate::auth::metadata::ProtectedResource = serde_json::from_str(&body).unwrap();
    assert_eq!(resource.resource, "http://127.0.0.1:7000/mcp");
    let (_, _, body) = send(&fx.app, get("/.well-known/oauth-authorization-server")).await;
    let server: crate::auth::metadata::AuthorizationServer = serde_json::from_str(&body).unwrap();
    assert!(server.supports_s256() && server.authorization_response_iss_parameter_supported);
    let (client, tokens) = login(&fx).await;
    assert_eq!(
        call(&fx.app, "/mcp", &token_of(&tokens, "access_token"))
            .await
            .0,
        StatusCode::OK
    );
    let (status, renewed) = refresh(&fx.app, &client, &token_of(&tokens, "refresh_token")).await;
    assert_eq!(status, StatusCode::OK, "{renewed}");
    assert_ne!(
        renewed["refresh_token"], tokens["refresh_token"],
        "the refresh token was not rotated"
    );
    assert_eq!(
        call(&fx.app, "/mcp", &token_of(&renewed, "access_token"))
            .await
            .0,
        StatusCode::OK
    );
    let state = fx.server.store.load().unwrap();
    assert!(state.clients[&client].last_used.is_some());
    let file = serde_json::to_string(&state).unwrap();
    assert!(
        !file.contains(&token_of(&renewed, "access_token")),
        "a token is stored in the clear"
    );
}

#[tokio::test]
async fn a_replayed_code_is_refused() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let pkce = crate::auth::pkce::Pkce::new();
    let code = consent(&fx, &client, &pkce.challenge).await;
    assert_eq!(
        exchange(&fx.app, &client, &code, &pkce.verifier).await.0,
        StatusCode::OK
    );
    let (status, answer) = exchange(&fx.app, &client, &code, &pkce.verifier).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
}

#[tokio::test]
async fn a_pkce_mismatch_is_refused() {
    let fx = fixture();
    let client = register(&fx.app).await;
    let pkce = crate::auth::pkce::Pkce::new();
    let code = consent(&fx, &client, &pkce.challenge).await;
    let other = crate::auth::pkce::Pkce::new();
    let (status, answer) = exchange(&fx.app, &client, &code, &other.verifier).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
}

/// An unregistered redirect URI gets an error page, never a redirect (an open redirect).
#[tokio::test]
async fn an_unregistered_redirect_uri_gets_a_page_not_a_redirect() {
    let fx = fixture();
    let client = register(&fx.app).await;
    for redirect in [
        "https://evil.example/cb",
        "http://127.0.0.1:9/callback/../x",
        "http://127.0.0.1:9/callbackx",
    ] {
        let uri = authorize_uri(&client, "abc", redirect);
        let (status, headers, _) = send(&fx.app, get(&uri)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{redirect}");
        assert!(
            headers.get(header::LOCATION).is_none(),
            "redirected to {redirect}"
        );
    }
    let body = json!({"redirect_uris": ["http://evil.example/cb"]});
    let (status, body) = post_register(&fx.app, &body).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "plain http off loopback was registered: {body}"
    );
}

#[tokio::test]
async fn a_token_in_the_query_string_is_refused() {
    let fx = fixture();
    let (_, tokens) = login(&fx).await;
    let access = token_of(&tokens, "access_token");
    let (status, _, _) = call(&fx.app, &format!("/mcp?access_token={access}"), &access).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// Two servers share a store: a token of one is refused by the other (RFC 8707 audience).
#[tokio::test]
async fn a_token_for_another_resource_is_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::default());
    let ours = fixture_on("http://127.0.0.1:7000", Arc::clone(&store));
    let theirs = fixture_on("http://127.0.0.1:7001", store);
    let (_, tokens) = login(&ours).await;
    let access = token_of(&tokens, "access_token");
    let (status, headers, _) = call(&theirs.app, "/mcp", &access).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers[header::WWW_AUTHENTICATE]
        .to_str()
        .unwrap()
        .contains("invalid_token"));
}

#[tokio::test]
async fn expired_and_revoked_tokens_are_refused_at_once() {
    let fx = fixture();
    let (client, tokens) = login(&fx).await;
    let access = token_of(&tokens, "access_token");
    fx.server
        .store
        .update(&mut |s| s.access.values_mut().for_each(|g| g.expires_at = now() - 1))
        .unwrap();
    assert_eq!(
        call(&fx.app, "/mcp", &access).await.0,
        StatusCode::UNAUTHORIZED,
        "an expired token passed"
    );
    let (_, tokens) = login(&fx).await;
    let access = token_of(&tokens, "access_token");
    assert_eq!(call(&fx.app, "/mcp", &access).await.0, StatusCode::OK);
    let second = fx
        .server
        .store
        .load()
        .unwrap()
        .access
        .values()
        .last()
        .unwrap()
        .client_id
        .clone();
    assert!(admin::revoke(fx.server.store.as_ref(), &second).unwrap());
    assert_eq!(
        call(&fx.app, "/mcp", &access).await.0,
        StatusCode::UNAUTHORIZED,
        "a revoked client's token passed"
    );
    let (status, _) = refresh(&fx.app, &client, &token_of(&tokens, "refresh_token")).await;
    assert_ne!(status, StatusCode::OK);
}

/// A refresh token used twice: the second use is refused and ends the whole login.
#[tokio::test]
async fn a_reused_refresh_token_revokes_its_family() {
    let fx = fixture();
    let (client, tokens) = login(&fx).await;
    let first = token_of(&tokens, "refresh_token");
    let (_, renewed) = refresh(&fx.app, &client, &first).await;
    let (status, _) = refresh(&fx.app, &client, &first).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        call(&fx.app, "/mcp", &token_of(&renewed, "access_token"))
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = refresh(&fx.app, &client, &token_of(&renewed, "refresh_token")).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the family's newest refresh token still works"
    );
}

/// A login made while the server answered at its loopback address holds tokens for that
/// resource; once the same state serves the tunnel's public URL, its refresh token mints
/// nothing there (it would renew a grant for another audience) and stays usable where it
/// belongs.
#[tokio::test]
async fn a_refresh_token_for_another_resource_is_refused_and_kept() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::default());
    let local = fixture_on("http://127.0.0.1:7000", Arc::clone(&store));
    let public = fixture_on("https://quiet-orbit.trycloudflare.com", store);
    let (client, tokens) = login(&local).await;
    let old = token_of(&tokens, "refresh_token");
    let (status, answer) = refresh(&public.app, &client, &old).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"], "invalid_grant", "{answer}");
    let access = token_of(&tokens, "access_token");
    let (status, _, _) = call(&public.app, "/mcp", &access).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, answer) = refresh(&local.app, &client, &old).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the refusal used the token up: {answer}"
    );
}
