//! Consent requests in the TUI (issue 27): a client asking a launched stack's authorization
//! server for access is shown over any screen — its name, where it redirects, the scopes, the
//! one-time code and the time left —; `a` asks for the approval `mcp-launch auth approve`
//! records, and approved, answered or expired requests leave.

use std::sync::Arc;

use crossterm::event::KeyCode;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::super::app::App;
use super::super::msg::{Effect, Msg};
use super::super::screens::consent::ConsentMsg;
use super::{app, draw, press, snapshot};
use crate::auth::server::store::Pending;
use crate::auth::server::{now, ConsentEvent, ConsentNotice, MemoryStore, Store};

const CODE: &str = "K7QX2M9P";

fn notice(id: &str, name: &str, expires_at: u64) -> ConsentNotice {
    ConsentNotice {
        request_id: id.into(),
        client_id: format!("client-{id}"),
        client_name: Some(name.into()),
        scope: "tools:all".into(),
        code: CODE.into(),
        redirect_uri: "https://claude.ai/api/mcp/auth_callback".into(),
        expires_at,
    }
}

/// News of stack `a`'s authorization server, as the TUI's notifier sends it.
fn told(app: &mut App, event: ConsentEvent) -> Vec<Effect> {
    app.update(Msg::Consent(ConsentMsg::from_event("a", &event)))
}

#[test]
fn a_request_is_shown_over_the_screen_and_approved_with_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    assert!(!draw(&app, 80, 24).contains("asks for access"));
    let expires_at = now() + 300;
    told(
        &mut app,
        ConsentEvent::Asked(notice("r1", "Claude", expires_at)),
    );
    // The clock as of the last tick: 4:59 left.
    app.consent.now = expires_at - 299;
    let screen = draw(&app, 80, 24);
    for shown in [
        "A client asks for access",
        "\"Claude\"",
        "claude.ai",
        "tools:all",
        CODE,
        "4:59",
        "a approve",
    ] {
        assert!(screen.contains(shown), "{shown:?} not shown:\n{screen}");
    }
    snapshot("consent_request", &app);

    // The request takes the keys: `q` does not ask to quit, Enter opens nothing.
    assert!(press(&mut app, &[KeyCode::Char('q'), KeyCode::Enter]).is_empty());
    assert!(!app.confirm_quit);
    let effects = press(&mut app, &[KeyCode::Char('a')]);
    let [Effect::ApproveConsent { request_id }] = effects.as_slice() else {
        panic!("one approval: {effects:?}");
    };
    assert_eq!(request_id, "r1");
    assert!(
        press(&mut app, &[KeyCode::Char('a')]).is_empty(),
        "approved once, not twice"
    );
    assert!(draw(&app, 80, 24).contains("approving"));

    app.update(Msg::Consent(ConsentMsg::Approved {
        request_id: "r1".into(),
        result: Ok(true),
    }));
    let screen = draw(&app, 80, 24);
    assert!(!screen.contains("asks for access"), "{screen}");
    assert!(screen.contains("approved Claude on a"), "{screen}");
}

#[test]
fn expired_answered_and_dismissed_requests_leave_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let mut app = app(dir.path());
    let soon = now() + 2;
    told(&mut app, ConsentEvent::Asked(notice("r1", "First", soon)));
    told(
        &mut app,
        ConsentEvent::Asked(notice("r2", "Second", now() + 300)),
    );
    told(
        &mut app,
        ConsentEvent::Asked(notice("r3", "Third", now() + 300)),
    );
    let screen = draw(&app, 80, 24);
    assert!(
        screen.contains("(1 of 3)") && screen.contains("\"First\""),
        "{screen}"
    );

    // Its five minutes are over: the next tick takes it away.
    app.consent.expire(soon);
    let screen = draw(&app, 80, 24);
    assert!(!screen.contains("\"First\""), "{screen}");
    assert!(
        screen.contains("(1 of 2)") && screen.contains("\"Second\""),
        "{screen}"
    );
    // Answered on its page (the code typed there): gone too.
    told(
        &mut app,
        ConsentEvent::Settled {
            request_id: "r2".into(),
        },
    );
    assert!(draw(&app, 80, 24).contains("\"Third\""));
    // Dismissed: out of the way, the screen's keys are its own again.
    press(&mut app, &[KeyCode::Esc]);
    assert!(!app.consent.is_visible());
    press(&mut app, &[KeyCode::Char('q')]);
    assert!(app.confirm_quit, "q asks to quit again");
    // One already expired when it arrives is never shown.
    told(
        &mut app,
        ConsentEvent::Asked(notice("r4", "Late", now() - 1)),
    );
    assert!(!app.consent.is_visible());
}

/// The approval the key asks for is the one `mcp-launch auth approve` records: the pending
/// request marked approved in the authorization server's state.
#[tokio::test]
async fn the_approval_is_recorded_in_the_authorization_servers_state() {
    use super::super::effects::{Context, Effects};
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::default());
    let pending = Pending {
        client_id: "c1".into(),
        scope: "tools:all".into(),
        redirect_uri: "https://claude.ai/cb".into(),
        expires_at: now() + 300,
        approved: false,
    };
    store
        .update(&mut |state| {
            state.pending.insert("r1".into(), pending.clone());
        })
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let opts = super::effects::opts(dir.path());
    let mut context = Context::new(opts, None, CancellationToken::new(), tx.clone());
    context.oauth_store = store.clone();
    let runner = Effects::start(context, tx);
    for id in ["r1", "gone"] {
        runner.run(Effect::ApproveConsent {
            request_id: id.into(),
        });
        let answer = super::effects::next(&mut rx, |msg| match msg {
            Msg::Consent(ConsentMsg::Approved { request_id, result }) => Some((request_id, result)),
            _ => None,
        })
        .await;
        assert_eq!(answer, (id.to_string(), Ok(id == "r1")));
    }
    assert!(store.load().unwrap().pending["r1"].approved);
}
