//! Device authorization (RFC 8628), for a person whose browser is not on this machine (an SSH
//! session, a container): the authorization server hands out a user code and a URI, the person
//! enters the code there on any device, and we poll the token endpoint at the pace the server
//! sets until the person approves, denies, or the code expires.
//!
//! There is no authorization code and no redirect (RFC 8628 §3.4), so no PKCE verifier and no
//! `iss` to check; the rest holds as in the code flow: discovery's checks (the `issuer`, S256
//! offered, every endpoint on HTTPS or loopback), the resource indicator (RFC 8707) on both
//! requests, the token's checks. What the device endpoint answers is checked before a person
//! sees it: every field there, the verification URI on HTTPS (or loopback), the user code short
//! and printable.

use std::time::Duration;

use reqwest::Client;
use serde::Deserialize;
use tokio::time::Instant;

use super::discover::parse_url;
use super::error::{AuthError, Step};
use super::fetch::{Answer, Fetch};
use super::login::Started;
use super::Grant;
use crate::auth::metadata::{ErrorResponse, TokenResponse};

/// The grant type of the token requests (RFC 8628 §3.4).
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// RFC 8628 §3.2: the pace when the server names none.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// The fastest pace we poll at, whatever the server says (an interval of 0 is a busy loop).
const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// The slowest: a server asking for more would leave the person waiting after approving.
const MAX_INTERVAL: Duration = Duration::from_secs(60);
/// RFC 8628 §3.5: each `slow_down` adds five seconds to the interval.
const SLOW_DOWN: Duration = Duration::from_secs(5);
/// The longest a login waits for the person, whatever `expires_in` says (a code said to be
/// valid for days would keep a terminal waiting for days).
const MAX_WAIT: Duration = Duration::from_secs(30 * 60);
/// A user code is typed by a person (RFC 8628 §6.1: short); longer is no user code.
const USER_CODE_CAP: usize = 64;
/// A URI a person opens; longer is refused.
const URI_CAP: usize = 2048;

/// The device authorization response (RFC 8628 §3.2), every field optional so a missing one
/// is named.
#[derive(Deserialize)]
struct Authorization {
    device_code: Option<String>,
    user_code: Option<String>,
    /// Some servers (Google's) spell it `verification_url`.
    #[serde(alias = "verification_url")]
    verification_uri: Option<String>,
    verification_uri_complete: Option<String>,
    expires_in: Option<u64>,
    interval: Option<u64>,
}

/// A device login waiting for the person.
pub struct DeviceLogin {
    started: Started,
    device_code: String,
    /// What the person enters.
    pub user_code: String,
    /// Where the person enters it.
    pub verification_uri: String,
    /// The same with the code in it (nothing to type), when the server offers one.
    pub verification_uri_complete: Option<String>,
    poll: Poll,
}

/// Asks the authorization server for a user code (RFC 8628 §3.1), with the client's
/// credentials, the scopes and the resource; checks the answer.
pub async fn begin(http: &Client, started: Started) -> Result<DeviceLogin, AuthError> {
    let url = started.request.url.clone();
    let endpoint = started
        .discovery
        .server
        .device_authorization_endpoint
        .clone()
        .ok_or_else(|| AuthError::Failed {
            resource: url.clone(),
            step: Step::DeviceAuthorization,
            reason: format!(
                "its authorization server {} offers no device authorization (no device_authorization_endpoint in its metadata); log in with a browser, or --no-browser to paste the redirect",
                started.discovery.server.issuer
            ),
        })?;
    let grant = started.grant();
    let client = grant.token_client(http);
    let fetch = client.fetch(Step::DeviceAuthorization);
    let mut pairs = vec![];
    if let Some(scope) = &started.scope {
        pairs.push(("scope", scope.as_str()));
    }
    let answer = client
        .post(&fetch, &endpoint, &pairs)
        .await
        .map_err(|error| started.at_token_endpoint(error))?;
    let said: Authorization = fetch
        .json(&answer)
        .map_err(|error| started.at_token_endpoint(error))?;
    let checked = check(&fetch, said)?;
    Ok(DeviceLogin {
        started,
        device_code: checked.device_code,
        user_code: checked.user_code,
        verification_uri: checked.verification_uri,
        verification_uri_complete: checked.verification_uri_complete,
        poll: Poll::new(checked.interval, checked.expires_in),
    })
}

/// The checked fields of a device authorization response.
struct Checked {
    device_code: String,
    user_code: String,
    verification_uri: String,
    verification_uri_complete: Option<String>,
    interval: Option<u64>,
    expires_in: u64,
}

/// Every required field there, the URIs ones a person may be sent to, the code printable.
fn check(fetch: &Fetch<'_>, said: Authorization) -> Result<Checked, AuthError> {
    let missing = |field: &str| fetch.refused(format!("its answer lacks {field} (RFC 8628 §3.2)"));
    let device_code = said
        .device_code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| missing("device_code"))?;
    let user_code = said
        .user_code
        .filter(|c| !c.is_empty())
        .ok_or_else(|| missing("user_code"))?;
    let printable = user_code.chars().all(|c| c.is_ascii_graphic() || c == ' ');
    if user_code.len() > USER_CODE_CAP || !printable {
        return Err(fetch.refused(format!(
            "its user_code is not a code a person types (printable, at most {USER_CODE_CAP} characters)"
        )));
    }
    let verification_uri = said
        .verification_uri
        .ok_or_else(|| missing("verification_uri"))?;
    let verification_uri = person_uri(fetch, &verification_uri)?;
    let verification_uri_complete = said
        .verification_uri_complete
        .map(|uri| person_uri(fetch, &uri))
        .transpose()?;
    let expires_in = said.expires_in.ok_or_else(|| missing("expires_in"))?;
    Ok(Checked {
        device_code,
        user_code,
        verification_uri,
        verification_uri_complete,
        interval: said.interval,
        expires_in,
    })
}

/// A URI to show a person: HTTPS, or HTTP on this machine; bounded; as the URL parser writes it
/// (no control characters reach the terminal).
fn person_uri(fetch: &Fetch<'_>, text: &str) -> Result<String, AuthError> {
    if text.len() > URI_CAP {
        return Err(fetch.refused(format!(
            "its verification URI is longer than {URI_CAP} characters"
        )));
    }
    let url = parse_url(fetch.resource, text, fetch.step).map_err(|_| {
        fetch.refused(format!(
            "its verification URI {:?} is neither HTTPS nor on this machine: a person must not be sent there",
            text.chars().take(200).collect::<String>()
        ))
    })?;
    Ok(url.to_string())
}

impl DeviceLogin {
    /// The authorization server of the grant stored before, when it was another one.
    pub fn replaces_issuer(&self) -> Option<&str> {
        self.started.replaces_issuer.as_deref()
    }

    /// Polls the token endpoint until the person approves (the grant, ready to store), denies,
    /// or the code expires.
    pub async fn finish(mut self, http: &Client) -> Result<Grant, AuthError> {
        let mut grant = self.started.grant();
        let token = {
            let client = grant.token_client(http);
            let fetch = client.fetch(Step::Token);
            let pairs = [
                ("grant_type", GRANT_TYPE),
                ("device_code", self.device_code.as_str()),
            ];
            loop {
                self.poll.wait(&fetch).await?;
                let answer = client.post(&fetch, &grant.token_endpoint, &pairs).await;
                let answer = match answer {
                    Ok(answer) => answer,
                    // RFC 8628 §3.5: a server that does not answer is polled less often.
                    Err(AuthError::Failed { .. }) => {
                        self.poll.back_off();
                        continue;
                    }
                    Err(refused) => return Err(refused),
                };
                if (200..300).contains(&answer.status) {
                    break client
                        .accept(&fetch, &answer)
                        .map_err(|error| self.started.at_token_endpoint(error))?;
                }
                if let Some(ended) = self.poll.ended(&fetch, &answer) {
                    return Err(self.started.at_token_endpoint(ended));
                }
            }
        };
        grant.take(token);
        Ok(grant)
    }
}

/// What a refused poll means (RFC 8628 §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// `authorization_pending`: the person has not finished; ask again.
    Pending,
    /// `slow_down`: ask again, five seconds slower from now on.
    SlowDown,
    /// `access_denied`: the person said no.
    Denied,
    /// `expired_token`: the code expired before the person approved.
    Expired,
    /// Any other error: the login failed.
    Failed,
}

impl Verdict {
    fn of(error: &str) -> Verdict {
        match error {
            "authorization_pending" => Verdict::Pending,
            "slow_down" => Verdict::SlowDown,
            "access_denied" => Verdict::Denied,
            "expired_token" => Verdict::Expired,
            _ => Verdict::Failed,
        }
    }
}

/// The pace of the polls and when to give up.
#[derive(Debug)]
struct Poll {
    interval: Duration,
    /// When the code expires (by `expires_in`, at most [`MAX_WAIT`] from now).
    deadline: Instant,
}

impl Poll {
    fn new(interval: Option<u64>, expires_in: u64) -> Poll {
        let interval = interval
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_INTERVAL)
            .clamp(MIN_INTERVAL, MAX_INTERVAL);
        let lasts = Duration::from_secs(expires_in).min(MAX_WAIT);
        Poll {
            interval,
            deadline: Instant::now() + lasts,
        }
    }

    /// Waits one interval before the next poll; the code's expiry once its time has passed (a
    /// last poll may still come after it: the server then says `expired_token` itself).
    async fn wait(&self, fetch: &Fetch<'_>) -> Result<(), AuthError> {
        if Instant::now() >= self.deadline {
            return Err(expired(fetch));
        }
        tokio::time::sleep(self.interval).await;
        Ok(())
    }

    /// `slow_down`: five seconds more between polls from now on (bounded).
    fn slow_down(&mut self) {
        self.interval = (self.interval + SLOW_DOWN).min(MAX_INTERVAL);
    }

    /// No answer: twice the interval (bounded).
    fn back_off(&mut self) {
        self.interval = (self.interval * 2).min(MAX_INTERVAL);
    }

    /// What a refused poll ends with; `None` (after slowing down when asked) to poll again.
    fn ended(&mut self, fetch: &Fetch<'_>, answer: &Answer) -> Option<AuthError> {
        let error = serde_json::from_slice::<ErrorResponse>(&answer.body)
            .map(|said| said.error)
            .unwrap_or_default();
        match Verdict::of(&error) {
            Verdict::Pending => None,
            Verdict::SlowDown => {
                self.slow_down();
                None
            }
            Verdict::Denied => Some(fetch.failed(
                "the person denied the request at the authorization server (access_denied)".into(),
            )),
            Verdict::Expired => Some(expired(fetch)),
            Verdict::Failed => fetch.json::<TokenResponse>(answer).err().or_else(|| {
                Some(fetch.refused(format!(
                    "HTTP {} with a body that is no token",
                    answer.status
                )))
            }),
        }
    }
}

/// The code expired before the person approved it.
fn expired(fetch: &Fetch<'_>) -> AuthError {
    fetch.failed(
        "the user code expired before it was approved (expired_token): run the login again and enter the new code in time".into(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::auth::client::login::{self, Flow};

    /// A login to `http://127.0.0.1:9/mcp` whose authorization server's device endpoint is
    /// `endpoint`.
    fn started(endpoint: &str) -> Started {
        let server = json!({
            "issuer": "http://127.0.0.1:9",
            "token_endpoint": "http://127.0.0.1:9/token",
            "device_authorization_endpoint": endpoint,
            "code_challenge_methods_supported": ["S256"],
        });
        let mut started = login::tests::started("http://127.0.0.1:9/mcp", server, Flow::Device);
        started.scope = Some("mcp".into());
        started
    }

    /// A device endpoint that answers one request with `body` (endless when `None`).
    async fn hostile(body: Option<String>) -> String {
        let addr = crate::auth::client::fetch::tests::serve_once(body).await;
        format!("http://{addr}/device")
    }

    /// What `begin` says to a device endpoint answering `body`.
    async fn refusal(body: Option<Value>) -> String {
        let endpoint = hostile(body.map(|b| b.to_string())).await;
        let http = crate::auth::client::http_client();
        let refused = begin(&http, started(&endpoint))
            .await
            .err()
            .expect("refused");
        assert_eq!(refused.kind(), "auth_refused", "{refused}");
        let text = refused.to_string();
        assert!(
            text.contains("http://127.0.0.1:9/mcp") && text.contains("device authorization"),
            "the server and the step: {text}"
        );
        text
    }

    #[tokio::test]
    async fn a_hostile_device_endpoint_is_refused_naming_the_server_and_the_step() {
        let good = json!({"device_code": "d", "user_code": "ABCD-EFGH",
            "verification_uri": "https://as.example/device", "expires_in": 600});
        let endpoint = hostile(Some(good.to_string())).await;
        let http = crate::auth::client::http_client();
        let login = begin(&http, started(&endpoint)).await.unwrap();
        assert_eq!(login.user_code, "ABCD-EFGH");
        assert_eq!(login.poll.interval, DEFAULT_INTERVAL);

        assert!(refusal(None).await.contains("256 KiB"));
        for field in ["device_code", "user_code", "verification_uri", "expires_in"] {
            let mut lacking = good.clone();
            lacking.as_object_mut().unwrap().remove(field);
            let text = refusal(Some(lacking)).await;
            assert!(text.contains(&format!("lacks {field}")), "{text}");
        }
        for uri in ["http://evil.example/device", "javascript:alert(1)"] {
            let mut elsewhere = good.clone();
            elsewhere["verification_uri"] = json!(uri);
            let text = refusal(Some(elsewhere)).await;
            assert!(text.contains("neither HTTPS nor on this machine"), "{text}");
        }
        let mut complete = good.clone();
        complete["verification_uri_complete"] = json!("http://evil.example/device?c=1");
        assert!(refusal(Some(complete)).await.contains("verification URI"));
        let mut escape = good.clone();
        escape["user_code"] = json!("\u{1b}]0;owned\u{7}");
        assert!(refusal(Some(escape)).await.contains("user_code"));
    }

    #[tokio::test]
    async fn an_authorization_server_without_a_device_endpoint_is_named() {
        let mut started = started("http://127.0.0.1:9/device");
        started.discovery.server.device_authorization_endpoint = None;
        let http = crate::auth::client::http_client();
        let failed = begin(&http, started).await.err().unwrap();
        assert_eq!(failed.kind(), "auth_failed");
        assert!(
            failed
                .to_string()
                .contains("no device_authorization_endpoint"),
            "{failed}"
        );
    }

    /// RFC 8628 §3.5: `authorization_pending` polls again at the same pace, `slow_down` five
    /// seconds slower, `access_denied` and `expired_token` end the login, each said.
    #[test]
    fn each_poll_answer_is_read_as_the_rfc_says() {
        let client = crate::auth::client::http_client();
        let fetch = Fetch {
            client: &client,
            resource: "http://127.0.0.1:9/mcp",
            step: Step::Token,
        };
        let answer = |error: &str| Answer {
            status: 400,
            body: json!({"error": error}).to_string().into_bytes(),
        };
        let mut poll = Poll::new(Some(2), 600);
        assert!(poll
            .ended(&fetch, &answer("authorization_pending"))
            .is_none());
        assert_eq!(poll.interval, Duration::from_secs(2));
        assert!(poll.ended(&fetch, &answer("slow_down")).is_none());
        assert_eq!(poll.interval, Duration::from_secs(7));
        let denied = poll.ended(&fetch, &answer("access_denied")).unwrap();
        assert!(denied.to_string().contains("access_denied"), "{denied}");
        let expired = poll.ended(&fetch, &answer("expired_token")).unwrap();
        assert!(expired.to_string().contains("expired"), "{expired}");
        let other = poll.ended(&fetch, &answer("invalid_grant")).unwrap();
        assert!(other.to_string().contains("invalid_grant"), "{other}");
        let junk = Answer {
            status: 500,
            body: b"<html>".to_vec(),
        };
        assert!(poll.ended(&fetch, &junk).is_some());
    }

    /// The pace stays between one second and a minute, and the wait ends at `expires_in` (at
    /// most half an hour) with the code's expiry.
    #[tokio::test(start_paused = true)]
    async fn the_pace_is_bounded_and_the_wait_ends_with_the_code() {
        assert_eq!(Poll::new(None, 60).interval, DEFAULT_INTERVAL);
        assert_eq!(Poll::new(Some(0), 60).interval, MIN_INTERVAL);
        assert_eq!(Poll::new(Some(86_400), 60).interval, MAX_INTERVAL);
        let mut slow = Poll::new(Some(58), 60);
        slow.slow_down();
        assert_eq!(slow.interval, MAX_INTERVAL);
        let mut unanswered = Poll::new(Some(5), 60);
        unanswered.back_off();
        assert_eq!(unanswered.interval, Duration::from_secs(10));

        let forever = Poll::new(None, u64::MAX);
        assert_eq!(forever.deadline - Instant::now(), MAX_WAIT);

        let client = crate::auth::client::http_client();
        let fetch = Fetch {
            client: &client,
            resource: "http://127.0.0.1:9/mcp",
            step: Step::Token,
        };
        let poll = Poll::new(Some(5), 12);
        let started = Instant::now();
        let mut polls = 0;
        let error = loop {
            match poll.wait(&fetch).await {
                Ok(()) => polls += 1,
                Err(error) => break error,
            }
        };
        assert_eq!(polls, 3, "at 5, 10 and 15 s: the last after the expiry");
        assert_eq!(started.elapsed(), Duration::from_secs(15));
        assert!(error.to_string().contains("expired"), "{error}");
    }
}
