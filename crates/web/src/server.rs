//! Binding (default 127.0.0.1:58627, the next port when busy), the router, and the middleware
//! every request passes: request ids, the Host allowlist and the bearer token (plus the Origin
//! check of the WebSocket upgrade). Connections are accepted and bounded in `listen`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State, WebSocketUpgrade};
use axum::http::{Method, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;

use crate::auth;
use crate::error::{ApiError, REQUEST_ID, code, is_ulid, new_ulid};
use crate::listen::{self, Limits, Notices};
use crate::live::Registry;
use crate::page;
use crate::questions;
use crate::rest;
use crate::terminals;
use kimi_core::host::SessionHost;

/// The reference's default port.
pub const DEFAULT_PORT: u16 = 58627;
/// Ports tried after a busy one.
const PORT_TRIES: u16 = 100;

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(transparent)]
    Token(#[from] auth::TokenError),
    #[error("cannot listen on {host}:{port}: {source}; pick another address with --host/--port")]
    Bind {
        host: String,
        port: u16,
        source: std::io::Error,
    },
}

/// Where to listen, which kimi-rs home holds the token, the connection limits and where
/// run-time notices go.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub host: String,
    /// 0 lets the system pick a free port.
    pub port: u16,
    pub home: PathBuf,
    pub limits: Limits,
    pub notices: Notices,
    /// The directory the page offers for a new session (the server's working directory by
    /// default).
    pub default_cwd: Option<PathBuf>,
    /// The experimental flags `GET /meta` reports (`{id: on}`), read when asked so a flag
    /// switched meanwhile shows; none when the embedder has no configuration.
    pub experimental_flags: Option<FlagsSource>,
    /// Serve terminals to clients on other machines too (`--allow-remote-terminals`).
    pub allow_remote_terminals: bool,
}

/// Reads the experimental flags as they are now.
#[derive(Clone)]
pub struct FlagsSource(
    pub Arc<dyn Fn() -> serde_json::Map<String, serde_json::Value> + Send + Sync>,
);

impl std::fmt::Debug for FlagsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlagsSource(..)")
    }
}

impl ServerOptions {
    /// The default limits and no notices besides the log.
    pub fn new(host: impl Into<String>, port: u16, home: impl Into<PathBuf>) -> Self {
        ServerOptions {
            host: host.into(),
            port,
            home: home.into(),
            limits: Limits::default(),
            notices: Notices::default(),
            default_cwd: std::env::current_dir().ok(),
            experimental_flags: None,
            allow_remote_terminals: false,
        }
    }
}

/// Shared by every handler.
pub struct App {
    pub registry: Registry,
    pub token: String,
    pub bind_host: String,
    pub server_id: String,
    pub started_at: String,
    pub default_cwd: Option<String>,
    /// What [`api_routes`] serves, for the capabilities `GET /meta` reports.
    pub routes: Vec<(Method, &'static str)>,
    pub experimental_flags: Option<FlagsSource>,
    pub terminals: crate::terminals::Terminals,
    pub allow_remote_terminals: bool,
}

/// A bound listener, ready to serve.
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
    options: ServerOptions,
    token: String,
    token_rotated: Option<String>,
}

/// Read (or create) the token and bind, moving to the next port while the port is taken.
pub async fn bind(options: ServerOptions) -> Result<Bound, WebError> {
    let auth::ServerToken {
        token,
        rotated: token_rotated,
    } = auth::load_or_create_token(&options.home)?;
    let tries = if options.port == 0 { 1 } else { PORT_TRIES };
    let mut last = None;
    for i in 0..tries {
        let Some(port) = options.port.checked_add(i) else {
            break;
        };
        match TcpListener::bind((options.host.as_str(), port)).await {
            Ok(listener) => {
                let addr = listener.local_addr().map_err(|source| WebError::Bind {
                    host: options.host.clone(),
                    port,
                    source,
                })?;
                return Ok(Bound {
                    listener,
                    addr,
                    options,
                    token,
                    token_rotated,
                });
            }
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => last = Some(err),
            Err(source) => {
                return Err(WebError::Bind {
                    host: options.host,
                    port,
                    source,
                });
            }
        }
    }
    Err(WebError::Bind {
        host: options.host,
        port: options.port,
        source: last.unwrap_or_else(|| std::io::Error::other("no port left to try")),
    })
}

impl Bound {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// Why the token file on disk was replaced by a new token, when it was (see
    /// [`auth::load_or_create_token`]).
    pub fn token_rotated(&self) -> Option<&str> {
        self.token_rotated.as_deref()
    }

    /// The page's URL without the token: what may be handed to other programs (a browser
    /// launcher's command line is visible to every user of the machine). The page asks for the
    /// token, or remembers it from an earlier visit.
    pub fn page_url(&self) -> String {
        let host = match self.addr.ip() {
            ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        format!("http://{host}:{}/", self.addr.port())
    }

    /// The page's URL with the token in the fragment (never sent to the server in requests):
    /// for the terminal only.
    pub fn url(&self) -> String {
        format!("{}#token={}", self.page_url(), self.token)
    }

    /// Serve until `shutdown` resolves, then stop every session cleanly.
    pub async fn serve(
        self,
        host: Arc<SessionHost>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        let app = Arc::new(App {
            registry: Registry::new(host),
            token: self.token,
            bind_host: self.options.host.clone(),
            server_id: new_ulid(),
            started_at: crate::events::timestamp(),
            default_cwd: self
                .options
                .default_cwd
                .as_ref()
                .map(|p| p.display().to_string()),
            routes: api_routes().listed().to_vec(),
            experimental_flags: self.options.experimental_flags.clone(),
            terminals: crate::terminals::Terminals::default(),
            allow_remote_terminals: self.options.allow_remote_terminals,
        });
        listen::serve(
            self.listener,
            router(app.clone()),
            self.options.limits,
            self.options.notices,
            shutdown,
        )
        .await;
        app.terminals.close_all().await;
        app.registry.shutdown().await;
    }
}

/// The API's routes (under `/api/v1`) as `(method, path)`, in the order they are served: the
/// OpenAPI document and its test are checked against this list, and it is built by the same
/// calls that build the router, so the two cannot drift.
pub(crate) struct Routes {
    router: Router<Arc<App>>,
    listed: Vec<(Method, &'static str)>,
}

impl Routes {
    fn new() -> Self {
        Routes {
            router: Router::new(),
            listed: Vec::new(),
        }
    }

    fn get<H, T>(mut self, path: &'static str, handler: H) -> Self
    where
        H: axum::handler::Handler<T, Arc<App>>,
        T: 'static,
    {
        self.listed.push((Method::GET, path));
        self.router = self.router.route(path, get(handler));
        self
    }

    fn post<H, T>(mut self, path: &'static str, handler: H) -> Self
    where
        H: axum::handler::Handler<T, Arc<App>>,
        T: 'static,
    {
        self.listed.push((Method::POST, path));
        self.router = self.router.route(path, post(handler));
        self
    }

    /// Every route this server answers under `/api/v1`.
    pub(crate) fn listed(&self) -> &[(Method, &'static str)] {
        &self.listed
    }
}

/// The `/api/v1` routes.
pub(crate) fn api_routes() -> Routes {
    Routes::new()
        .get("/healthz", rest::healthz)
        .get("/meta", rest::meta)
        .get("/openapi.json", crate::openapi::serve)
        .get("/sessions", rest::list_sessions)
        .post("/sessions", rest::create_session)
        .get("/sessions/{id}", rest::get_session)
        .post("/sessions/{id}", rest::session_action)
        .get("/sessions/{id}/status", rest::session_status)
        .get("/sessions/{id}/goal", rest::session_goal)
        .get("/sessions/{id}/messages", rest::list_messages)
        .post("/sessions/{id}/prompts", rest::submit_prompt)
        .post("/sessions/{id}/rewind", crate::rewind::rewind)
        .get("/sessions/{id}/approvals", rest::list_approvals)
        .post("/sessions/{id}/approvals/{aid}", rest::resolve_approval)
        .get("/sessions/{id}/mcp/servers", crate::mcp::list_servers)
        .post(
            "/sessions/{id}/mcp/servers/{name}",
            crate::mcp::server_action,
        )
        .get("/sessions/{id}/questions", questions::list_questions)
        .post("/sessions/{id}/questions/{qid}", questions::answer_question)
        .get("/sessions/{id}/terminals", terminals::list)
        .post("/sessions/{id}/terminals", terminals::open)
        .get("/sessions/{id}/terminals/{tid}", terminals::get)
        .post("/sessions/{id}/terminals/{tid}", terminals::action)
        .get("/ws", websocket)
}

fn router(app: Arc<App>) -> Router {
    let api = api_routes().router.fallback(rest::no_endpoint);
    Router::new()
        .nest("/api/v1", api)
        .route("/", get(page::index))
        .route("/index.html", get(page::index))
        .route("/assets/{name}", get(page::asset))
        .fallback(rest::no_endpoint)
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

async fn websocket(
    State(app): State<Arc<App>>,
    peer: Option<axum::Extension<terminals::Peer>>,
    upgrade: WebSocketUpgrade,
    request_headers: axum::http::HeaderMap,
) -> Response {
    let peer = peer.map(|p| p.0);
    if !auth::origin_allowed(&request_headers) {
        let origin = request_headers
            .get(header::ORIGIN)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        tracing::warn!("refused a WebSocket from the page at {origin:?}");
        return ApiError::new(
            code::FORBIDDEN_ORIGIN,
            format!(
                "a WebSocket may only be opened by this server's own page, not one from {origin:?}: open the URL kimi-rs web printed, or connect without an Origin header from a script"
            ),
        )
        .into_response();
    }
    // A browser only accepts the upgrade when the server echoes the subprotocol it offered.
    let protocols: Vec<String> = auth::offered_ws_protocol(&request_headers, &app.token)
        .into_iter()
        .collect();
    upgrade
        .protocols(protocols)
        .on_upgrade(move |socket| crate::ws::serve(app, socket, peer))
}

/// Request id, Host allowlist, then the token (except for healthz, preflights and the UI).
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| is_ulid(v))
        .map_or_else(new_ulid, str::to_owned);
    REQUEST_ID
        .scope(id, async move {
            if !auth::host_allowed(request.headers(), &app.bind_host) {
                return ApiError::new(
                    code::FORBIDDEN_HOST,
                    "the Host header names a host this server does not serve: open it through 127.0.0.1 or localhost",
                )
                .into_response();
            }
            let path = request.uri().path();
            let exempt = request.method() == Method::OPTIONS
                || !path.starts_with("/api/")
                || (request.method() == Method::GET && path == "/api/v1/healthz");
            if !exempt && !auth::authorized(request.headers(), &app.token) {
                return ApiError::new(
                    code::UNAUTHORIZED,
                    format!(
                        "missing or wrong bearer token: send Authorization: Bearer <token> with the token from {} (or open the URL kimi-rs web printed)",
                        auth::token_path(std::path::Path::new("$KIMI_RS_HOME")).display()
                    ),
                )
                .into_response();
            }
            next.run(request).await
        })
        .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn a_busy_port_moves_to_the_next_one_and_only_the_terminal_url_carries_the_token() {
        let home = tempfile::tempdir().unwrap();
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let bound = bind(ServerOptions::new("127.0.0.1", port, home.path()))
            .await
            .unwrap();
        assert!(bound.addr().port() > port);
        assert_eq!(
            bound.url(),
            format!(
                "http://127.0.0.1:{}/#token={}",
                bound.addr().port(),
                bound.token()
            )
        );
        assert_eq!(
            bound.page_url(),
            format!("http://127.0.0.1:{}/", bound.addr().port())
        );
        assert_eq!(
            auth::load_or_create_token(home.path()).unwrap().token,
            bound.token()
        );
        assert_eq!(bound.token_rotated(), None);
    }
}
