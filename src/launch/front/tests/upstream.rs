//! The upstream admin route's refusals (acting on a native bridge's pool is tested end to end:
//! `tests/cli/top.rs`).

use serde_json::json;

use super::harness::*;
use crate::launch::front::UPSTREAM_PATH;

#[tokio::test]
async fn the_upstream_route_needs_the_admin_token_a_known_action_and_a_bridge() {
    let h = Harness::start(|_| {}).await;
    let asked = json!({"server": "everything", "action": "restart"});
    let keyed = h.post(UPSTREAM_PATH).header("x-api-key", KEY).json(&asked);
    let (status, body) = answer(keyed).await;
    assert_eq!((status, error_type(&body)), (401, "admin_unauthorized"));

    let admin = || h.post(UPSTREAM_PATH).header("x-mcp-launch-admin", ADMIN);
    let odd = json!({"server": "everything", "action": "kill"});
    let (status, body) = answer(admin().json(&odd)).await;
    assert_eq!((status, error_type(&body)), (400, "bad_body"), "{body}");
    let (status, body) = answer(admin().body("{")).await;
    assert_eq!((status, error_type(&body)), (400, "bad_body"), "{body}");

    // No bridge: an mcpo stack's servers are mcpo's to stop and start.
    let (status, body) = answer(admin().json(&asked)).await;
    assert_eq!((status, error_type(&body)), (409, "no_bridge"), "{body}");
    assert!(body["error"]["help"].as_str().unwrap().contains("mcpo"));
}
