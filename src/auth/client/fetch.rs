//! Bounded HTTP for the OAuth steps: every request has a total timeout and every answer is
//! read up to a cap, so a slow or oversized authorization server cannot hang or flood us.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Client, RequestBuilder, Url};
use serde::de::DeserializeOwned;

use super::error::{AuthError, Step};
use crate::auth::metadata::ErrorResponse;

/// The whole of one request and its answer.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Metadata, registrations and token answers are small; more is refused.
pub(crate) const BODY_CAP: usize = 256 * 1024;

/// One HTTP exchange of a step, for one server.
pub(crate) struct Fetch<'a> {
    pub(crate) client: &'a Client,
    pub(crate) resource: &'a str,
    pub(crate) step: Step,
}

/// An answer: its status and its body (capped).
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

impl Fetch<'_> {
    pub(crate) async fn get(&self, url: &Url) -> Result<Answer, AuthError> {
        self.send(self.client.get(url.clone())).await
    }

    /// POSTs `pairs` as a form.
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        pairs: &[(&str, &str)],
    ) -> Result<Answer, AuthError> {
        self.send(self.form(url, pairs)).await
    }

    /// POSTs `pairs` form-encoded with the client's id and secret as HTTP Basic credentials
    /// (RFC 6749 §2.3.1: each form-encoded first).
    pub(crate) async fn post_form_basic(
        &self,
        url: &Url,
        pairs: &[(&str, &str)],
        (id, secret): (&str, &str),
    ) -> Result<Answer, AuthError> {
        let encode = |text: &str| form_body(&[("", text)])[1..].to_string();
        let req = self
            .form(url, pairs)
            .basic_auth(encode(id), Some(encode(secret)));
        self.send(req).await
    }

    fn form(&self, url: &Url, pairs: &[(&str, &str)]) -> RequestBuilder {
        self.client
            .post(url.clone())
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form_body(pairs))
    }

    /// POSTs `value` as JSON.
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        value: &impl serde::Serialize,
    ) -> Result<Answer, AuthError> {
        self.send(self.client.post(url.clone()).json(value)).await
    }

    async fn send(&self, req: RequestBuilder) -> Result<Answer, AuthError> {
        let exchange = async {
            let resp = req
                .header(ACCEPT, "application/json")
                .send()
                .await
                .map_err(|e| self.failed(format!("cannot reach it: {}", e.without_url())))?;
            let status = resp.status().as_u16();
            let body = self.read_capped(resp).await?;
            Ok(Answer { status, body })
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .unwrap_or_else(
                |_| Err(self.failed(format!("no answer within {}s", TIMEOUT.as_secs()))),
            )
    }

    pub(crate) async fn read_capped(&self, resp: reqwest::Response) -> Result<Vec<u8>, AuthError> {
        let mut body = Vec::new();
        let mut chunks = resp.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk =
                chunk.map_err(|e| self.failed(format!("answer broke off: {}", e.without_url())))?;
            body.extend_from_slice(&chunk);
            if body.len() > BODY_CAP {
                return Err(
                    self.refused(format!("the answer is larger than {} KiB", BODY_CAP / 1024))
                );
            }
        }
        Ok(body)
    }

    /// The answer as `T` when its status is 2xx; else the OAuth error it carries.
    pub(crate) fn json<T: DeserializeOwned>(&self, answer: &Answer) -> Result<T, AuthError> {
        if !(200..300).contains(&answer.status) {
            let said = serde_json::from_slice::<ErrorResponse>(&answer.body)
                .map(|e| match e.error_description {
                    Some(d) => format!("{}: {}", e.error, clip(&d)),
                    None => e.error,
                })
                .unwrap_or_else(|_| "no OAuth error in the body".into());
            return Err(self.failed(format!("HTTP {} ({said})", answer.status)));
        }
        serde_json::from_slice(&answer.body)
            .map_err(|e| self.refused(format!("the answer is not the expected JSON: {e}")))
    }

    pub(crate) fn failed(&self, reason: String) -> AuthError {
        AuthError::Failed {
            resource: self.resource.to_string(),
            step: self.step,
            reason,
        }
    }

    pub(crate) fn refused(&self, reason: String) -> AuthError {
        AuthError::Refused {
            resource: self.resource.to_string(),
            step: self.step,
            reason,
        }
    }
}

/// A client for the OAuth steps: no redirects followed (an authorization server must answer
/// where it said it would), connect bounded.
pub fn http_client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(TIMEOUT)
        .build()
        .unwrap_or_default()
}

/// `pairs` as `application/x-www-form-urlencoded`.
pub(crate) fn form_body(pairs: &[(&str, &str)]) -> String {
    let mut url = Url::parse("http://form.invalid/").expect("a valid URL");
    url.query_pairs_mut().extend_pairs(pairs);
    url.query().unwrap_or_default().to_string()
}

/// A server's words, kept short in our errors.
fn clip(text: &str) -> String {
    text.chars().take(200).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A hostile authorization server on loopback that answers one request with `body` as
    /// JSON, or with a body that never ends (`None`); its address.
    pub(crate) async fn serve_once(body: Option<String>) -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let length = body
                .as_ref()
                .map(|b| format!("content-length: {}\r\n", b.len()))
                .unwrap_or_default();
            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{length}connection: close\r\n\r\n");
            socket.write_all(head.as_bytes()).await.unwrap();
            match body {
                Some(body) => socket.write_all(body.as_bytes()).await.unwrap(),
                None => {
                    let chunk = vec![b' '; 64 * 1024];
                    while socket.write_all(&chunk).await.is_ok() {}
                }
            }
        });
        addr
    }

    /// An authorization server whose metadata never ends: the read stops at the cap.
    #[tokio::test]
    async fn an_oversized_answer_is_refused_naming_the_step() {
        let addr = serve_once(None).await;
        let client = http_client();
        let fetch = Fetch {
            client: &client,
            resource: "http://127.0.0.1:1/mcp",
            step: Step::ServerMetadata,
        };
        let url = Url::parse(&format!(
            "http://{addr}/.well-known/oauth-authorization-server"
        ))
        .unwrap();
        let refused = fetch.get(&url).await.err().expect("refused");
        assert_eq!(refused.kind(), "auth_refused");
        let text = refused.to_string();
        assert!(
            text.contains("authorization-server metadata") && text.contains("256 KiB"),
            "{text}"
        );
    }
}
