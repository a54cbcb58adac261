//! The legacy HTTP+SSE MCP transport (protocol 2024-11-05), which rmcp no longer ships: the
//! client opens a `GET` event stream; the server's first event, `endpoint`, names the URL the
//! client `POST`s each JSON-RPC message to; every server message arrives on the stream as a
//! `message` event. Still what many hosted servers and `server-everything sse` speak.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::auth::AuthorizationManager;
use sse_stream::SseStream;
use tokio::sync::mpsc;

/// Server messages buffered between the stream reader and the service.
const INCOMING_BUFFER: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("sending to {endpoint} failed: {source}")]
    Send {
        endpoint: String,
        source: reqwest::Error,
    },
    #[error("{endpoint} refused the message with HTTP {status}{body}")]
    Status {
        endpoint: String,
        status: reqwest::StatusCode,
        body: String,
    },
    #[error("cannot encode the message: {0}")]
    Encode(serde_json::Error),
    /// The server refused the token (HTTP 401) and refreshing it failed.
    #[error(
        "{endpoint} refused the OAuth token (HTTP 401) and refreshing it failed: {reason}. Sign in again (`/mcp-config login <server>`)"
    )]
    Refresh { endpoint: String, reason: String },
}

/// Why the event stream could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SseConnectError {
    /// HTTP 401: the server wants credentials (`challenge` is its `WWW-Authenticate`).
    #[error("{url} answered the event-stream request with HTTP 401 Unauthorized")]
    Unauthorized { url: String, challenge: String },
    #[error("{0}")]
    Other(String),
}

impl From<String> for SseConnectError {
    fn from(message: String) -> Self {
        SseConnectError::Other(message)
    }
}

/// A connected SSE session: where to post, and what the stream delivered.
pub struct SseTransport {
    client: reqwest::Client,
    /// Shared with sends in flight: a refreshed token replaces `Authorization` for later ones.
    headers: Arc<Mutex<HeaderMap>>,
    /// The OAuth sign-in, when the server has one: a POST answered 401 refreshes the token and
    /// is sent once more.
    auth: Option<Arc<AuthorizationManager>>,
    endpoint: String,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A short excerpt of an error body for messages.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let cut: String = text.chars().take(200).collect();
    format!(": {cut}")
}

impl SseTransport {
    /// Open the event stream at `url` and wait for its `endpoint` event. Errors say what the
    /// server did instead.
    pub async fn connect(
        client: reqwest::Client,
        url: &str,
        headers: HeaderMap,
    ) -> Result<SseTransport, SseConnectError> {
        let base = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
        let response = client
            .get(base.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("cannot open the event stream at {url}: {e}"))?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            let challenge = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            return Err(SseConnectError::Unauthorized {
                url: url.to_owned(),
                challenge,
            });
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(format!(
                "{url} answered the event-stream request with HTTP {status}{}",
                excerpt(&body)
            )
            .into());
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse {
            return Err(format!(
                "{url} did not answer with an event stream (no `text/event-stream` content type); if it is a streamable HTTP server, use `\"transport\": \"http\"`"
            ).into());
        }
        let mut events = SseStream::from_bytes_stream(response.bytes_stream());
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    let data = event.data.unwrap_or_default();
                    let joined = base
                        .join(data.trim())
                        .map_err(|e| format!("the `endpoint` event `{data}` is not a URL: {e}"))?;
                    // Messages carry the session (and its credentials): they go back only to
                    // the server the stream came from.
                    if joined.origin() != base.origin() {
                        return Err(format!(
                            "the server named an endpoint on another origin ({joined}); refusing to send messages there"
                        ).into());
                    }
                    break joined.to_string();
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    return Err(format!("the event stream from {url} broke: {e}").into());
                }
                None => {
                    return Err(format!(
                        "the event stream from {url} ended before it named its message endpoint"
                    )
                    .into());
                }
            }
        };
        let (tx, incoming) = mpsc::channel(INCOMING_BUFFER);
        let source = url.to_owned();
        let reader = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        tracing::warn!(url = %source, error = %e, "MCP SSE stream broke");
                        break;
                    }
                };
                if !matches!(event.event.as_deref(), None | Some("message")) {
                    continue;
                }
                let Some(data) = event.data else { continue };
                match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(url = %source, error = %e, "MCP SSE message is not JSON-RPC; skipped");
                    }
                }
            }
            tracing::info!(url = %source, "MCP SSE stream ended");
        });
        Ok(SseTransport {
            client,
            headers: Arc::new(Mutex::new(headers)),
            auth: None,
            endpoint,
            incoming,
            reader,
        })
    }
}

impl SseTransport {
    /// Refresh the token with `auth` when a message is refused with HTTP 401 (once per
    /// message).
    pub fn with_auth(mut self, auth: AuthorizationManager) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }
}

fn lock(headers: &Mutex<HeaderMap>) -> std::sync::MutexGuard<'_, HeaderMap> {
    headers
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A fresh token from `auth`, as an `Authorization` value.
async fn refreshed(auth: &AuthorizationManager) -> Result<HeaderValue, String> {
    auth.refresh_token().await.map_err(|e| e.to_string())?;
    let token = auth.get_access_token().await.map_err(|e| e.to_string())?;
    HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the new token is not a valid HTTP header value".to_owned())
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("SseTransport")
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let endpoint = self.endpoint.clone();
        let client = self.client.clone();
        let headers = Arc::clone(&self.headers);
        let auth = self.auth.clone();
        let body = serde_json::to_vec(&item);
        async move {
            let body = body.map_err(SseError::Encode)?;
            let post = |headers: HeaderMap| {
                client
                    .post(&endpoint)
                    .headers(headers)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone())
                    .send()
            };
            let sent = |source| SseError::Send {
                endpoint: endpoint.clone(),
                source,
            };
            let first = lock(&headers).clone();
            let mut response = post(first).await.map_err(sent)?;
            // The stream stays open past the token's life: a refused token is refreshed and
            // the message sent once more.
            if response.status() == reqwest::StatusCode::UNAUTHORIZED
                && let Some(auth) = &auth
            {
                let value = refreshed(auth).await.map_err(|reason| SseError::Refresh {
                    endpoint: endpoint.clone(),
                    reason,
                })?;
                let retry = {
                    let mut headers = lock(&headers);
                    headers.insert(AUTHORIZATION, value);
                    headers.clone()
                };
                tracing::info!(endpoint = %endpoint, "MCP SSE token refreshed after HTTP 401");
                response = post(retry).await.map_err(sent)?;
            }
            let status = response.status();
            if status.is_success() {
                return Ok(());
            }
            let body = response.text().await.unwrap_or_default();
            Err(SseError::Status {
                endpoint,
                status,
                body: excerpt(&body),
            })
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}
