//! A loopback stand-in for an OAuth-protected MCP server, for kimi-mcp's and kimi-cli's tests.
//! One axum app plays the authorization server (protected resource metadata, authorization
//! server metadata, dynamic client registration, an `/authorize` that approves at once by
//! redirecting, a `/token` that checks PKCE and refreshes) and the MCP server (streamable HTTP
//! at `/mcp` or legacy SSE at `/sse`, answering 401 without a valid bearer token).
//!
//! Tokens: the authorization code yields `tok-1`, which expires at once (`expires_in: 0`), so
//! a client must refresh (`ref-1`) to `tok-2`, the only token the MCP endpoint accepts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::proto;

/// What the stand-in saw.
#[derive(Debug, Default)]
pub struct Log {
    /// `grant_type` of every token request, in order.
    pub grants: Vec<String>,
    /// Registered redirect URIs.
    pub registered: Vec<String>,
    /// The `code_challenge` of the last authorization request.
    pub challenge: Option<String>,
    /// Bearer tokens the MCP endpoint accepted.
    pub accepted: Vec<String>,
    /// Requests the MCP endpoint answered with 401.
    pub refused: usize,
}

/// The running stand-in.
#[derive(Clone)]
pub struct AppState {
    base: String,
    mcp_path: &'static str,
    log: Arc<Mutex<Log>>,
    session: Arc<proto::Session>,
    valid: Arc<Mutex<String>>,
}

impl AppState {
    /// The token the MCP endpoint accepts now.
    fn valid(&self) -> std::sync::MutexGuard<'_, String> {
        self.valid
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The server stops accepting `tok-2` early (before its `expires_in`); a refresh with
    /// `ref-2` yields `tok-3`, which it accepts.
    pub fn expire_token(&self) {
        *self.valid() = "tok-3".to_owned();
    }

    pub fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `tok-1` (from the code) expires at once, so the next use must refresh to `tok-2`.
    fn authorized(&self, headers: &HeaderMap) -> Option<String> {
        let token = headers
            .get(header::AUTHORIZATION)?
            .to_str()
            .ok()?
            .strip_prefix("Bearer ")?
            .to_owned();
        (token == *self.valid()).then_some(token)
    }

    fn challenge(&self) -> Response {
        self.log().refused += 1;
        let value = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            self.base
        );
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, value)],
            "sign in first",
        )
            .into_response()
    }
}

async fn resource_metadata(State(s): State<AppState>) -> Response {
    axum::Json(json!({
        "resource": format!("{}{}", s.base, s.mcp_path),
        "authorization_servers": [s.base],
    }))
    .into_response()
}

async fn server_metadata(State(s): State<AppState>) -> Response {
    axum::Json(json!({
        "issuer": s.base,
        "authorization_endpoint": format!("{}/authorize", s.base),
        "token_endpoint": format!("{}/token", s.base),
        "registration_endpoint": format!("{}/register", s.base),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
    .into_response()
}

async fn register(State(s): State<AppState>, axum::Json(body): axum::Json<Value>) -> Response {
    let uris: Vec<String> = body["redirect_uris"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u.as_str().map(str::to_owned))
        .collect();
    s.log().registered.extend(uris.clone());
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "client_id": "client-1",
            "redirect_uris": uris,
            "token_endpoint_auth_method": "none",
        })),
    )
        .into_response()
}

async fn authorize(
    State(s): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let (Some(redirect), Some(state), Some(challenge)) = (
        q.get("redirect_uri"),
        q.get("state"),
        q.get("code_challenge"),
    ) else {
        return (
            StatusCode::BAD_REQUEST,
            "missing redirect_uri, state or PKCE",
        )
            .into_response();
    };
    if q.get("code_challenge_method").map(String::as_str) != Some("S256")
        || q.get("client_id").map(String::as_str) != Some("client-1")
    {
        return (StatusCode::BAD_REQUEST, "wrong client or PKCE method").into_response();
    }
    s.log().challenge = Some(challenge.clone());
    let location = format!("{redirect}?code=code-1&state={state}");
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn token(State(s): State<AppState>, Form(form): Form<HashMap<String, String>>) -> Response {
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    s.log().grants.push(grant.clone());
    let issued = match grant.as_str() {
        "authorization_code" => {
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(verifier.as_bytes()));
            if form.get("code").map(String::as_str) != Some("code-1")
                || s.log().challenge.as_deref() != Some(digest.as_str())
            {
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": "invalid_grant"})),
                )
                    .into_response();
            }
            json!({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 0, "refresh_token": "ref-1"})
        }
        "refresh_token" if form.get("refresh_token").map(String::as_str) == Some("ref-1") => {
            json!({"access_token": "tok-2", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "ref-2"})
        }
        "refresh_token" if form.get("refresh_token").map(String::as_str) == Some("ref-2") => {
            json!({"access_token": "tok-3", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "ref-3"})
        }
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": "invalid_grant"})),
            )
                .into_response();
        }
    };
    axum::Json(issued).into_response()
}

async fn mcp_post(State(s): State<AppState>, headers: HeaderMap, body: String) -> Response {
    let Some(token) = s.authorized(&headers) else {
        return s.challenge();
    };
    s.log().accepted.push(token);
    let Ok(msg) = serde_json::from_str::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    match proto::handle(&s.session, &msg) {
        proto::Reply::Message(reply) => (
            [(header::CONTENT_TYPE, "application/json")],
            reply.to_string(),
        )
            .into_response(),
        proto::Reply::None => StatusCode::ACCEPTED.into_response(),
        proto::Reply::Exit(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Legacy SSE: the stream names `/messages`, and replies go back on the stream.
#[derive(Clone, Default)]
struct SseChannel(Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>>);

async fn sse_get(
    State((s, channel)): State<(AppState, SseChannel)>,
    headers: HeaderMap,
) -> Response {
    use axum::response::sse::{Event, Sse};
    use futures::StreamExt;
    let Some(token) = s.authorized(&headers) else {
        return s.challenge();
    };
    s.log().accepted.push(token);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    *channel
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(tx);
    let first =
        futures::stream::once(async { Event::default().event("endpoint").data("/messages") });
    let rest = tokio_stream_from(rx).map(|m| Event::default().event("message").data(m));
    Sse::new(first.chain(rest).map(Ok::<_, std::convert::Infallible>)).into_response()
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<String>,
) -> impl futures::Stream<Item = String> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

async fn sse_post(
    State((s, channel)): State<(AppState, SseChannel)>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let Some(token) = s.authorized(&headers) else {
        return s.challenge();
    };
    s.log().accepted.push(token);
    let Ok(msg) = serde_json::from_str::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if let proto::Reply::Message(reply) = proto::handle(&s.session, &msg)
        && let Some(tx) = channel
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
    {
        let _ = tx.send(reply.to_string());
    }
    StatusCode::ACCEPTED.into_response()
}

/// Start the authorization server and the MCP endpoint (`/mcp` or `/sse`); returns the MCP URL.
pub async fn start(sse: bool) -> std::io::Result<(String, AppState)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let state = AppState {
        base: base.clone(),
        mcp_path: if sse { "/sse" } else { "/mcp" },
        log: Arc::default(),
        session: Arc::default(),
        valid: Arc::new(Mutex::new("tok-2".to_owned())),
    };
    let oauth = axum::Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            axum::routing::get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*rest}",
            axum::routing::get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(server_metadata),
        )
        .route("/register", axum::routing::post(register))
        .route("/authorize", axum::routing::get(authorize))
        .route("/token", axum::routing::post(token))
        .with_state(state.clone());
    let mcp = if sse {
        axum::Router::new()
            .route("/sse", axum::routing::get(sse_get))
            .route("/messages", axum::routing::post(sse_post))
            .with_state((state.clone(), SseChannel::default()))
    } else {
        axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(mcp_post)
                    .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
                    .delete(|| async { StatusCode::OK }),
            )
            .with_state(state.clone())
    };
    let app = oauth.merge(mcp);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("{base}{}", state.mcp_path), state))
}

/// The browser: open the authorization URL, and follow its redirect to the callback.
pub async fn play_browser(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let answer = client.get(url).send().await?;
    if answer.status() != reqwest::StatusCode::FOUND {
        return Err(format!("authorize answered {}", answer.status()).into());
    }
    let location = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or("no redirect")?
        .to_owned();
    if !location.starts_with("http://127.0.0.1:") {
        return Err(format!("redirected off loopback: {location}").into());
    }
    let page = client.get(&location).send().await?;
    let status = page.status();
    let text = page.text().await?;
    if status != reqwest::StatusCode::OK || !text.contains("Signed in") {
        return Err(format!("the callback answered {status}: {text}").into());
    }
    Ok(())
}
