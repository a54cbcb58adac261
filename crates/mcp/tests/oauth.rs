//! MCP OAuth end to end, all on loopback: one axum app plays the authorization server
//! (protected resource metadata, authorization server metadata, dynamic client registration,
//! an `/authorize` that approves at once by redirecting, a `/token` that checks PKCE and
//! refreshes) and the MCP server (streamable HTTP or legacy SSE, answering 401 without a
//! valid bearer token). The test plays the browser: it opens the URL the authenticate tool
//! reports and follows the redirect to kimi-rs's loopback callback.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use kimi_mcp::oauth::TokenDir;
use kimi_mcp::{McpConfig, McpManager, RemoteConfig, ServerConfig, ServerState, TransportConfig};
use kimi_test_support::mcp_fixture::proto;
use kimi_tools::tool::run_tool;
use kimi_tools::{
    LateTools, ProgressSink, Resolution, Tool, ToolContext, ToolProgress, ToolResult,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Upper bound of every wait in these tests.
const LIMIT: Duration = Duration::from_secs(20);

#[derive(Default)]
struct Log {
    /// `grant_type` of every token request, in order.
    grants: Vec<String>,
    /// Registered redirect URIs.
    registered: Vec<String>,
    /// The `code_challenge` of the last authorization request.
    challenge: Option<String>,
    /// Bearer tokens the MCP endpoint accepted.
    accepted: Vec<String>,
    /// Requests the MCP endpoint answered with 401.
    refused: usize,
}

#[derive(Clone)]
struct AppState {
    base: String,
    mcp_path: &'static str,
    log: Arc<Mutex<Log>>,
    session: Arc<proto::Session>,
}

impl AppState {
    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
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
        (token == "tok-2").then_some(token)
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
async fn start(sse: bool) -> Result<(String, AppState), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let state = AppState {
        base: base.clone(),
        mcp_path: if sse { "/sse" } else { "/mcp" },
        log: Arc::default(),
        session: Arc::default(),
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

fn server(url: String, sse: bool, oauth: bool) -> ServerConfig {
    let remote = RemoteConfig {
        url,
        headers: BTreeMap::new(),
        bearer_token_env_var: None,
        oauth,
    };
    ServerConfig {
        transport: if sse {
            TransportConfig::Sse(remote)
        } else {
            TransportConfig::Http(remote)
        },
        enabled: true,
        startup_timeout: Some(LIMIT),
        tool_timeout: None,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        source: PathBuf::from("/test/mcp.json"),
    }
}

fn config(server: ServerConfig, home: &std::path::Path) -> McpConfig {
    McpConfig {
        servers: BTreeMap::from([("web".to_owned(), server)]),
        token_dir: Some(TokenDir::in_home(home)),
        ..McpConfig::default()
    }
}

fn names(late: &LateTools) -> Vec<String> {
    late.tools().iter().map(|t| t.name().to_owned()).collect()
}

/// The browser: open the authorization URL, and follow its redirect to the callback.
async fn play_browser(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let answer = client.get(url).send().await?;
    assert_eq!(answer.status(), reqwest::StatusCode::FOUND);
    let location = answer
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or("no redirect")?
        .to_owned();
    assert!(location.starts_with("http://127.0.0.1:"), "{location}");
    let page = client.get(&location).send().await?;
    assert_eq!(page.status(), reqwest::StatusCode::OK);
    assert!(page.text().await?.contains("Signed in"));
    Ok(())
}

/// Run the authenticate tool, playing the browser when it reports the URL.
async fn authenticate(
    tool: Arc<dyn Tool>,
    ctx: &ToolContext,
) -> Result<ToolResult, Box<dyn std::error::Error>> {
    let Resolution::Run(exec) = tool.resolve(json!({}), ctx)? else {
        return Err("the authenticate tool did not plan a run".into());
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let run = exec.execute(ctx, CancellationToken::new(), ProgressSink::new(tx));
    tokio::pin!(run);
    let url = tokio::select! {
        update = rx.recv() => match update {
            Some(ToolProgress::Status(text)) => text
                .split_whitespace()
                .find(|w| w.starts_with("http://"))
                .ok_or_else(|| format!("no URL in {text}"))?
                .to_owned(),
            other => return Err(format!("unexpected progress {other:?}").into()),
        },
        result = &mut run => return Err(format!("ended before showing a URL: {result:?}").into()),
    };
    let (browser, result) = tokio::join!(play_browser(&url), tokio::time::timeout(LIMIT, run));
    browser?;
    Ok(result?)
}

async fn settled(manager: &McpManager) -> Result<(), Box<dyn std::error::Error>> {
    tokio::time::timeout(LIMIT, manager.wait_settled()).await?;
    Ok(())
}

async fn sign_in_then_use(sse: bool) -> TestResult {
    let (url, state) = start(sse).await?;
    let home = tempfile::tempdir()?;
    let cfg = config(server(url.clone(), sse, false), home.path());
    let late = LateTools::new();
    let (manager, initial) = McpManager::start_with_env(&cfg, home.path(), &HashMap::new(), &late);
    assert_eq!(initial, Vec::<String>::new());
    settled(&manager).await?;

    // A 401 makes the server "needs login", with only the sign-in tool offered.
    let status = manager.status();
    let ServerState::NeedsLogin(how) = &status[0].state else {
        return Err(format!("expected needs login, got {status:?}").into());
    };
    assert!(how.contains("kimi-rs mcp login web"), "{how}");
    assert!(how.contains("mcp__web__authenticate"), "{how}");
    let mut progress = manager.progress();
    let warnings = progress.unreported();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("MCP server `web` needs login")),
        "{warnings:?}"
    );
    assert_eq!(names(&late), vec!["mcp__web__authenticate".to_owned()]);

    let ctx = ToolContext::new(home.path(), &home.path().join("agent"));
    let tool = late.tools().remove(0);
    let result = authenticate(tool, &ctx).await?;
    assert!(!result.is_error, "{result:?}");
    let text = result.text().unwrap_or_default();
    assert!(text.contains("Signed in to MCP server `web`"), "{text}");
    assert!(text.contains("mcp__web__add"), "{text}");

    // Registered with the loopback callback; code exchanged with PKCE; the code's token
    // expired at once, so it was refreshed before use.
    {
        let log = state.log();
        assert_eq!(log.registered.len(), 1);
        assert!(
            log.registered[0].starts_with("http://127.0.0.1:")
                && log.registered[0].ends_with("/callback"),
            "{:?}",
            log.registered
        );
        assert_eq!(log.grants, vec!["authorization_code", "refresh_token"]);
        assert!(log.accepted.iter().all(|t| t == "tok-2") && !log.accepted.is_empty());
    }
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    let now = names(&late);
    assert!(
        !now.contains(&"mcp__web__authenticate".to_owned()),
        "{now:?}"
    );
    let add = late
        .tools()
        .into_iter()
        .find(|t| t.name() == "mcp__web__add")
        .ok_or("no add tool")?;
    assert_eq!(
        run_tool(add.as_ref(), json!({"a": 2, "b": 3}), &ctx).await,
        ToolResult::ok("5")
    );

    // The token file is the user's alone.
    let dir = TokenDir::in_home(home.path());
    let file = dir.file("web", &url);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file)?.permissions().mode() & 0o777,
            0o600
        );
    }
    assert!(std::fs::read_to_string(&file)?.contains("ref-2"));
    manager.shutdown().await;

    // A new session uses the stored sign-in without asking again.
    let late = LateTools::new();
    let (manager, _) = McpManager::start_with_env(&cfg, home.path(), &HashMap::new(), &late);
    settled(&manager).await?;
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    assert!(names(&late).contains(&"mcp__web__add".to_owned()));
    assert_eq!(state.log().registered.len(), 1, "no second registration");
    manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn streamable_http_server_signs_in_with_oauth_and_pkce() -> TestResult {
    sign_in_then_use(false).await
}

#[tokio::test]
async fn sse_server_signs_in_with_oauth_and_pkce() -> TestResult {
    sign_in_then_use(true).await
}

#[tokio::test]
async fn auth_oauth_without_a_stored_token_needs_login_before_connecting() -> TestResult {
    let (url, state) = start(false).await?;
    let home = tempfile::tempdir()?;
    let cfg = config(server(url, false, true), home.path());
    let late = LateTools::new();
    let (manager, _) = McpManager::start_with_env(&cfg, home.path(), &HashMap::new(), &late);
    settled(&manager).await?;
    assert!(matches!(
        manager.status()[0].state,
        ServerState::NeedsLogin(_)
    ));
    assert_eq!(state.log().refused, 0, "it did not try to connect");
    assert_eq!(names(&late), vec!["mcp__web__authenticate".to_owned()]);
    manager.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_server_with_static_headers_that_answers_401_fails_instead_of_signing_in() -> TestResult {
    let (url, _state) = start(false).await?;
    let home = tempfile::tempdir()?;
    let mut server = server(url, false, false);
    if let TransportConfig::Http(remote) = &mut server.transport {
        remote
            .headers
            .insert("X-Api-Key".to_owned(), "k".to_owned());
    }
    let cfg = config(server, home.path());
    let late = LateTools::new();
    let (manager, _) = McpManager::start_with_env(&cfg, home.path(), &HashMap::new(), &late);
    settled(&manager).await?;
    assert!(matches!(manager.status()[0].state, ServerState::Failed(_)));
    assert_eq!(names(&late), Vec::<String>::new());
    Ok(())
}
