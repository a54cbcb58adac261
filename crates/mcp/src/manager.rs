//! Starting the configured MCP servers, keeping their connections and tools, reporting their
//! status and shutting them down. Servers connect in the background: [`McpManager::start`]
//! returns at once, each server's tools join a [`LateTools`] set when its handshake is done,
//! and [`McpManager::progress`] tells front ends what is still connecting and what failed. A
//! server that cannot start is a warning, never fatal.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kimi_tools::{LateTools, PendingSource};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::auth::{AuthClient, AuthError};
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;

use crate::authenticate::AuthenticateTool;
use crate::config::{McpConfig, ServerConfig, TransportConfig};
use crate::naming::{qualify_tool_name, sanitize_name_part};
use crate::oauth::TokenDir;
use crate::remote::{HandshakeError, Remote, remote_parts, stored_login};
use crate::sse::SseConnectError;
use crate::sse::SseTransport;
use crate::tool::{Connection, McpTool, StderrTail};

/// Used when a server sets no `startupTimeoutMs`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Used when a server sets no `toolTimeoutMs`.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a failed start waits for the server's stderr to reach end-of-file, so the warning
/// can quote it.
const STDERR_DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// The name this client announces in `initialize`.
pub const CLIENT_NAME: &str = "kimi-rs";

pub(crate) type Service = RunningService<RoleClient, ClientConfig>;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Started; its handshake (or tool listing) is not done yet.
    Connecting,
    Connected,
    /// It did not start (or is not supported); the text says why and what to do.
    Failed(String),
    /// A remote server that wants an OAuth sign-in first (`auth: "oauth"` with no stored
    /// token, or a 401 answer); the text says how to sign in. Its only tool meanwhile is
    /// `mcp__<server>__authenticate`.
    NeedsLogin(String),
    /// `enabled: false` in its config.
    Disabled,
}

/// One line of the `/mcp` panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    pub state: ServerState,
    /// Tools exposed after `enabledTools` / `disabledTools`.
    pub tool_count: usize,
    /// The stdio server's process id while it runs.
    pub pid: Option<u32>,
    /// The file that configures it.
    pub source: String,
}

/// What observers see: every server's status and every warning so far (append-only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpState {
    pub servers: Vec<ServerStatus>,
    pub warnings: Vec<String>,
}

impl McpState {
    /// Servers still connecting.
    pub fn connecting(&self) -> usize {
        self.servers
            .iter()
            .filter(|s| s.state == ServerState::Connecting)
            .count()
    }
}

pub(crate) struct ServerSlot {
    pub(crate) status: ServerStatus,
    pub(crate) tools: Vec<Arc<McpTool>>,
    pub(crate) service: Option<Service>,
}

pub(crate) struct Slots {
    pub(crate) servers: Vec<ServerSlot>,
    /// Qualified tool names in use (sanitizing can map two names to one; first come wins).
    pub(crate) taken: HashSet<String>,
    warnings: Vec<String>,
}

pub(crate) struct Shared {
    slots: Mutex<Slots>,
    state: watch::Sender<McpState>,
    /// What a later reconnect (after a sign-in) needs.
    pub(crate) late: LateTools,
    cwd: PathBuf,
    env: HashMap<String, String>,
    pub(crate) token_dir: Option<TokenDir>,
    /// Every server's configuration, by slot index (for sign-ins and reconnects).
    pub(crate) configs: Vec<(String, ServerConfig)>,
}

impl Shared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn publish(&self, slots: &Slots) {
        let state = McpState {
            servers: slots.servers.iter().map(|s| s.status.clone()).collect(),
            warnings: slots.warnings.clone(),
        };
        self.state.send_replace(state);
    }
}

/// The session's MCP servers and their tools.
pub struct McpManager {
    pub(crate) shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Warnings known when `start` returned (it hands them to the caller itself).
    initial_warnings: usize,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.status())
            .finish()
    }
}

struct Started {
    service: Service,
    tools: Vec<rmcp::model::Tool>,
}

/// A server whose process is spawned (or whose HTTP client is built), before the handshake.
pub(crate) enum Launched {
    Stdio {
        transport: TokioChildProcess,
        command: String,
        drained: Option<tokio::task::JoinHandle<()>>,
    },
    /// Remote transports connect in the handshake, where a stored OAuth sign-in can be loaded.
    Http(Remote),
    /// The legacy SSE transport (opening the stream is a request).
    Sse(Remote),
}

impl McpManager {
    /// Start every enabled server and return at once: each connects in the background and
    /// its tools join `late` when it is ready. Must be called inside a tokio runtime. Bearer
    /// tokens are read from the process environment. Returns the manager and the warnings
    /// known right away (a command that does not exist, a missing bearer variable); later
    /// failures come through [`McpManager::progress`].
    pub fn start(config: &McpConfig, cwd: &Path, late: &LateTools) -> (McpManager, Vec<String>) {
        let env: HashMap<String, String> = std::env::vars().collect();
        Self::start_with_env(config, cwd, &env, late)
    }

    /// [`McpManager::start`] with an explicit environment for `bearerTokenEnvVar` lookups
    /// (stdio servers still inherit the process environment plus their `env`).
    pub fn start_with_env(
        config: &McpConfig,
        cwd: &Path,
        env: &HashMap<String, String>,
        late: &LateTools,
    ) -> (McpManager, Vec<String>) {
        let mut slots = Slots {
            servers: Vec::with_capacity(config.servers.len()),
            taken: HashSet::new(),
            warnings: Vec::new(),
        };
        let mut launches = Vec::new();
        for (name, server) in &config.servers {
            let mut status = ServerStatus {
                name: name.clone(),
                transport: server.transport.kind(),
                state: ServerState::Disabled,
                tool_count: 0,
                pid: None,
                source: server.source.display().to_string(),
            };
            if server.enabled {
                let stderr = StderrTail::default();
                match launch(server, cwd, env, &stderr) {
                    Ok((launched, pid)) => {
                        status.state = ServerState::Connecting;
                        status.pid = pid;
                        // Announced now, so the first request knows what is on its way.
                        let pending = late.expect(server_prefix(name));
                        launches.push((slots.servers.len(), launched, stderr, pending));
                    }
                    Err(reason) => {
                        slots
                            .warnings
                            .push(format!("MCP server `{name}` failed to start: {reason}"));
                        status.state = ServerState::Failed(reason);
                    }
                }
            }
            slots.servers.push(ServerSlot {
                status,
                tools: Vec::new(),
                service: None,
            });
        }
        let initial = slots.warnings.clone();
        let (state, _) = watch::channel(McpState::default());
        let shared = Arc::new(Shared {
            slots: Mutex::new(slots),
            state,
            late: late.clone(),
            cwd: cwd.to_path_buf(),
            env: env.clone(),
            token_dir: config.token_dir.clone(),
            configs: config
                .servers
                .iter()
                .map(|(name, server)| (name.clone(), server.clone()))
                .collect(),
        });
        shared.publish(&shared.lock());
        let servers: Vec<(&String, &ServerConfig)> = config.servers.iter().collect();
        let tasks = launches
            .into_iter()
            .map(|(index, launched, stderr, pending)| {
                let (name, server) = servers[index];
                tokio::spawn(connect_one(
                    Arc::clone(&shared),
                    index,
                    name.clone(),
                    server.clone(),
                    launched,
                    stderr,
                    pending,
                ))
            })
            .collect();
        let manager = McpManager {
            shared,
            tasks,
            initial_warnings: initial.len(),
        };
        (manager, initial)
    }

    /// Start every enabled server and wait until each is connected or has failed. Returns the
    /// manager and one warning per server that could not start (or tool it had to skip).
    pub async fn connect(config: &McpConfig, cwd: &Path) -> (McpManager, Vec<String>) {
        let env: HashMap<String, String> = std::env::vars().collect();
        Self::connect_with_env(config, cwd, &env).await
    }

    /// [`McpManager::connect`] with an explicit environment for `bearerTokenEnvVar` lookups.
    pub async fn connect_with_env(
        config: &McpConfig,
        cwd: &Path,
        env: &HashMap<String, String>,
    ) -> (McpManager, Vec<String>) {
        let (manager, _) = Self::start_with_env(config, cwd, env, &LateTools::new());
        manager.wait_settled().await;
        // Servers finish in any order; warnings come back in name order, as they start.
        let mut warnings = manager.shared.lock().warnings.clone();
        warnings.sort();
        (manager, warnings)
    }

    /// Wait until no server is connecting any more.
    pub async fn wait_settled(&self) {
        let mut state = self.shared.state.subscribe();
        // The sender lives in `self`, so `changed` cannot fail while we wait.
        while state.borrow_and_update().connecting() > 0 {
            if state.changed().await.is_err() {
                return;
            }
        }
    }

    /// Status changes from now on: servers still connecting, and warnings that arrived after
    /// `start` returned (failures, skipped tools), each reported once.
    pub fn progress(&self) -> McpProgress {
        McpProgress {
            state: self.shared.state.subscribe(),
            reported: self.initial_warnings,
            last_connecting: None,
        }
    }

    /// The tools of every connected server, after `enabledTools` / `disabledTools`.
    pub fn tools(&self) -> Vec<Arc<dyn kimi_tools::Tool>> {
        self.shared
            .lock()
            .servers
            .iter()
            .flat_map(|slot| slot.tools.iter())
            .map(|tool| Arc::clone(tool) as Arc<dyn kimi_tools::Tool>)
            .collect()
    }

    /// Every configured server, in name order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.shared.state.borrow().servers.clone()
    }

    /// Stop connecting, close every connection; connected stdio servers get their stdin
    /// closed, then SIGTERM, then a kill, and have exited when this returns (ones still
    /// connecting are killed without waiting). Tools still held elsewhere then fail with a
    /// "not connected" error.
    pub async fn shutdown(mut self) {
        let tasks = std::mem::take(&mut self.tasks);
        for task in &tasks {
            task.abort();
        }
        // An aborted start drops its child process, which kills it (`kill_on_drop`).
        futures::future::join_all(tasks).await;
        let services: Vec<Service> = self
            .shared
            .lock()
            .servers
            .iter_mut()
            .filter_map(|slot| slot.service.take())
            .collect();
        let closing = services.into_iter().map(|service| async move {
            // A join error only means the service task was already gone.
            let _ = service.cancel().await;
        });
        futures::future::join_all(closing).await;
    }
}

impl Drop for McpManager {
    /// A manager dropped without `shutdown` still stops its servers: starts still under way
    /// are abandoned (their processes killed), connections close with their services.
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// An observer of one manager's status (see [`McpManager::progress`]).
pub struct McpProgress {
    state: watch::Receiver<McpState>,
    reported: usize,
    last_connecting: Option<usize>,
}

/// What changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpUpdate {
    /// Servers still connecting.
    pub connecting: usize,
    /// Warnings not reported before.
    pub warnings: Vec<String>,
}

impl McpProgress {
    fn take(&mut self) -> (usize, Vec<String>) {
        let state = self.state.borrow_and_update();
        let fresh = state
            .warnings
            .get(self.reported..)
            .unwrap_or_default()
            .to_vec();
        self.reported = state.warnings.len();
        (state.connecting(), fresh)
    }

    /// The next change (the first call reports the current count). `None` once every server
    /// has settled and everything was reported, or the manager is gone.
    pub async fn next(&mut self) -> Option<McpUpdate> {
        loop {
            let (connecting, warnings) = self.take();
            if self.last_connecting != Some(connecting) || !warnings.is_empty() {
                self.last_connecting = Some(connecting);
                return Some(McpUpdate {
                    connecting,
                    warnings,
                });
            }
            if connecting == 0 {
                return None;
            }
            self.state.changed().await.ok()?;
        }
    }

    /// Warnings that arrived and were not reported yet, without waiting.
    pub fn unreported(&mut self) -> Vec<String> {
        self.take().1
    }
}

/// The name prefix of a server's qualified tools (what a call to one of them starts with).
pub(crate) fn server_prefix(name: &str) -> String {
    let prefix = format!("mcp__{}__", sanitize_name_part(name));
    // Long names are cut and hashed by `qualify_tool_name`; keep only what survives the cut.
    prefix.chars().take(48).collect()
}

/// The handshake of one server, bounded by its startup timeout; its slot and `late` learn the
/// outcome.
pub(crate) async fn connect_one(
    shared: Arc<Shared>,
    index: usize,
    name: String,
    server: ServerConfig,
    launched: Launched,
    stderr: StderrTail,
    pending: PendingSource,
) {
    let limit = server.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT);
    tracing::info!(server = %name, transport = server.transport.kind(), "MCP server starting");
    let began = std::time::Instant::now();
    let token_dir = shared.token_dir.clone();
    let handshake = handshake(launched, &name, &server, token_dir.as_ref(), &stderr);
    let result = match tokio::time::timeout(limit, handshake).await {
        Ok(result) => result,
        Err(_) => Err(HandshakeError::Failed(format!(
            "it did not finish starting within {} ms{}. Raise `startupTimeoutMs` in {} if it needs longer",
            limit.as_millis(),
            stderr.suffix(),
            server.source.display()
        ))),
    };
    let authenticate = AuthenticateTool::qualified_name(&name);
    let mut slots = shared.lock();
    match result {
        Ok(started) => {
            let conn = Arc::new(Connection {
                server: name.clone(),
                peer: started.service.peer().clone(),
                stderr,
            });
            let Slots {
                taken, warnings, ..
            } = &mut *slots;
            let tools = adapt_tools(&name, &server, &conn, started.tools, taken, warnings);
            let duration_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
            tracing::info!(server = %name, duration_ms, tools = tools.len(), "MCP server ready");
            // After a sign-in the synthetic tool has done its work.
            shared.late.remove(&authenticate);
            pending.supply(
                tools
                    .iter()
                    .map(|t| Arc::clone(t) as Arc<dyn kimi_tools::Tool>)
                    .collect(),
            );
            if let Some(slot) = slots.servers.get_mut(index) {
                slot.status.state = ServerState::Connected;
                slot.status.tool_count = tools.len();
                slot.tools = tools;
                slot.service = Some(started.service);
            }
        }
        Err(HandshakeError::NeedsLogin { why, challenge }) => {
            let reason = format!(
                "{why}. Sign in with `kimi-rs mcp login {name}`, or ask kimi-rs to sign in (`/mcp-config login {name}`, which calls `{authenticate}`)"
            );
            tracing::info!(server = %name, "MCP server needs an OAuth sign-in");
            slots
                .warnings
                .push(format!("MCP server `{name}` needs login: {reason}"));
            let tool = AuthenticateTool::new(
                Arc::clone(&shared),
                index,
                name.clone(),
                server.clone(),
                challenge,
            );
            pending.supply(vec![Arc::new(tool) as Arc<dyn kimi_tools::Tool>]);
            if let Some(slot) = slots.servers.get_mut(index) {
                slot.status.state = ServerState::NeedsLogin(reason);
                slot.status.tool_count = 0;
            }
        }
        Err(HandshakeError::Failed(reason)) => {
            tracing::warn!(server = %name, reason = %reason, "MCP server failed to start");
            drop(pending);
            slots
                .warnings
                .push(format!("MCP server `{name}` failed to start: {reason}"));
            if let Some(slot) = slots.servers.get_mut(index) {
                slot.status.state = ServerState::Failed(reason);
                slot.status.pid = None;
            }
        }
    }
    shared.publish(&slots);
}

/// Connect a server again (after a sign-in): the slot goes back to connecting, and the
/// outcome lands like a first start's. Returns the slot's state afterwards.
pub(crate) async fn reconnect(
    shared: Arc<Shared>,
    index: usize,
    name: String,
    server: ServerConfig,
) -> ServerState {
    let stderr = StderrTail::default();
    let launched = launch(&server, &shared.cwd, &shared.env, &stderr);
    {
        let mut slots = shared.lock();
        if let Some(slot) = slots.servers.get_mut(index) {
            slot.status.state = match &launched {
                Ok(_) => ServerState::Connecting,
                Err(reason) => ServerState::Failed(reason.clone()),
            };
        }
        shared.publish(&slots);
    }
    if let Ok((launched, _)) = launched {
        let pending = shared.late.expect(server_prefix(&name));
        connect_one(
            Arc::clone(&shared),
            index,
            name,
            server,
            launched,
            stderr,
            pending,
        )
        .await;
    }
    shared
        .lock()
        .servers
        .get(index)
        .map_or(ServerState::Disabled, |slot| slot.status.state.clone())
}

fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
    )
    // rmcp's newest version has no `initialize`; the classic handshake needs the newest one
    // that still has it, or servers echoing our version would switch to the new lifecycle.
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// Spawn the stdio server (or build the HTTP client): what can fail at once does so here.
fn launch(
    server: &ServerConfig,
    cwd: &Path,
    env: &HashMap<String, String>,
    stderr: &StderrTail,
) -> Result<(Launched, Option<u32>), String> {
    let source = server.source.display();
    match &server.transport {
        TransportConfig::Stdio {
            command,
            args,
            env: server_env,
            cwd: server_cwd,
        } => {
            let dir = server_cwd
                .as_ref()
                .map_or_else(|| cwd.to_path_buf(), |dir| cwd.join(dir));
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(server_env)
                .current_dir(&dir)
                .kill_on_drop(true);
            let (transport, child_stderr) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| spawn_error(command, &dir, &e, &source.to_string()))?;
            let pid = transport.id();
            let drained = child_stderr.map(|pipe| {
                let tail = stderr.clone();
                tokio::spawn(async move {
                    let mut lines = tokio::io::BufReader::new(pipe).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tail.push(&line);
                    }
                })
            });
            let launched = Launched::Stdio {
                transport,
                command: command.clone(),
                drained,
            };
            Ok((launched, pid))
        }
        TransportConfig::Http(remote) => Ok((
            Launched::Http(remote_parts(remote, env, &source.to_string())?),
            None,
        )),
        TransportConfig::Sse(remote) => Ok((
            Launched::Sse(remote_parts(remote, env, &source.to_string())?),
            None,
        )),
    }
}

/// `initialize` and `tools/list`.
async fn handshake(
    launched: Launched,
    name: &str,
    server: &ServerConfig,
    token_dir: Option<&TokenDir>,
    stderr: &StderrTail,
) -> Result<Started, HandshakeError> {
    let source = server.source.display();
    let service = match launched {
        Launched::Stdio {
            transport,
            command,
            drained,
        } => match client_info().serve(transport).await {
            Ok(service) => service,
            Err(e) => {
                // The server most likely exited; let its last words reach the tail.
                if let Some(task) = drained {
                    let _ = tokio::time::timeout(STDERR_DRAIN_LIMIT, task).await;
                }
                return Err(HandshakeError::Failed(format!(
                    "the MCP handshake with `{command}` failed: {e}{}. Check that it is an MCP stdio server and that `command`/`args` in {source} are right",
                    stderr.suffix()
                )));
            }
        },
        Launched::Http(remote) => {
            let login = stored_login(&remote, name, token_dir).await?;
            let mut headers = remote.headers;
            let mut config = StreamableHttpClientTransportConfig::with_uri(remote.url.as_str());
            // rmcp sets `Authorization` itself from `auth_header` (it refuses it among custom
            // headers).
            if let Some(value) = headers.remove(reqwest::header::AUTHORIZATION)
                && let Some(token) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer "))
            {
                config = config.auth_header(token);
            }
            let custom: HashMap<_, _> = headers
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            let config = config.custom_headers(custom);
            let served = match login {
                Some(manager) => {
                    let client = AuthClient::new(remote.client, manager);
                    client_info()
                        .serve(StreamableHttpClientTransport::with_client(client, config))
                        .await
                }
                None => {
                    client_info()
                        .serve(StreamableHttpClientTransport::with_client(
                            remote.client,
                            config,
                        ))
                        .await
                }
            };
            match served {
                Ok(service) => service,
                Err(e) => {
                    if remote.oauth_allowed
                        && token_dir.is_some()
                        && let Some(challenge) = e.auth_challenge()
                    {
                        return Err(HandshakeError::NeedsLogin {
                            why: format!("{} asks for an OAuth sign-in (HTTP 401)", remote.url),
                            challenge: Some(challenge.to_owned()),
                        });
                    }
                    return Err(HandshakeError::Failed(format!(
                        "connecting to {} failed: {e}. Check that the server is running and that `url` in {source} is right",
                        remote.url
                    )));
                }
            }
        }
        Launched::Sse(remote) => {
            let fix = format!(
                "Check that the server is running and that `url` in {source} is its SSE endpoint"
            );
            let mut headers = remote.headers.clone();
            let login = stored_login(&remote, name, token_dir).await?;
            if let Some(manager) = &login {
                // The stream is opened once, so the token is taken (refreshed if due) now.
                let token = manager.get_access_token().await.map_err(|e| match e {
                    AuthError::AuthorizationRequired => HandshakeError::NeedsLogin {
                        why: "its stored sign-in has expired and could not be refreshed".to_owned(),
                        challenge: None,
                    },
                    other => HandshakeError::Failed(format!(
                        "using its stored OAuth sign-in failed: {other}"
                    )),
                })?;
                let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| {
                        "the stored OAuth token is not a valid HTTP header value; sign in again"
                            .to_owned()
                    })?;
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
            let transport = match SseTransport::connect(remote.client, &remote.url, headers).await {
                Ok(transport) => match login {
                    Some(manager) => transport.with_auth(manager),
                    None => transport,
                },
                Err(SseConnectError::Unauthorized { url, challenge })
                    if remote.oauth_allowed && token_dir.is_some() =>
                {
                    return Err(HandshakeError::NeedsLogin {
                        why: format!("{url} asks for an OAuth sign-in (HTTP 401)"),
                        challenge: Some(challenge).filter(|c| !c.is_empty()),
                    });
                }
                Err(e) => return Err(HandshakeError::Failed(format!("{e}. {fix}"))),
            };
            client_info().serve(transport).await.map_err(|e| {
                format!(
                    "the MCP handshake over SSE with {} failed: {e}. {fix}",
                    remote.url
                )
            })?
        }
    };
    let tools = match service.list_all_tools().await {
        Ok(tools) => tools,
        Err(e) => {
            let _ = service.cancel().await;
            return Err(HandshakeError::Failed(format!(
                "listing its tools failed: {e}{}",
                stderr.suffix()
            )));
        }
    };
    Ok(Started { service, tools })
}

fn spawn_error(command: &str, dir: &Path, error: &std::io::Error, source: &str) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound if !dir.is_dir() => format!(
            "its working directory {} does not exist. Fix `cwd` in {source}",
            dir.display()
        ),
        std::io::ErrorKind::NotFound => format!(
            "command `{command}` was not found. Install it or fix `command` in {source} (use an absolute path if it is not on PATH)"
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "command `{command}` is not executable ({error}). Fix its permissions or `command` in {source}"
        ),
        _ => format!("cannot run `{command}`: {error}. Check `command` and `cwd` in {source}"),
    }
}

/// Wrap the server's tools, applying its filters and skipping names already taken by an
/// earlier server (sanitizing can map two names to one).
fn adapt_tools(
    name: &str,
    server: &ServerConfig,
    conn: &Arc<Connection>,
    tools: Vec<rmcp::model::Tool>,
    taken: &mut HashSet<String>,
    warnings: &mut Vec<String>,
) -> Vec<Arc<McpTool>> {
    let timeout = server.tool_timeout.unwrap_or(DEFAULT_TOOL_TIMEOUT);
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        let remote_name = tool.name.to_string();
        let qualified = qualify_tool_name(name, &remote_name);
        let listed = |list: &[String]| list.iter().any(|n| *n == remote_name || *n == qualified);
        if server
            .enabled_tools
            .as_deref()
            .is_some_and(|list| !listed(list))
            || listed(&server.disabled_tools)
        {
            continue;
        }
        if !taken.insert(qualified.clone()) {
            warnings.push(format!(
                "MCP tool `{remote_name}` of server `{name}` is skipped: its name `{qualified}` is already used by another MCP tool. Rename one of the servers in mcp.json"
            ));
            continue;
        }
        let description = tool
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map_or_else(
                || format!("MCP tool `{remote_name}` from server `{name}`."),
                str::to_owned,
            );
        out.push(Arc::new(McpTool {
            qualified,
            remote_name,
            description,
            parameters: serde_json::Value::Object((*tool.input_schema).clone()),
            timeout,
            conn: Arc::clone(conn),
        }));
    }
    out
}
