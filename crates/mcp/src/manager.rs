//! Starting the configured MCP servers, keeping their connections and tools, reporting their
//! status and shutting them down. A server that cannot start is a warning, never fatal.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;

use crate::config::{McpConfig, RemoteConfig, ServerConfig, TransportConfig};
use crate::naming::qualify_tool_name;
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

type Service = RunningService<RoleClient, ClientConfig>;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Connected,
    /// It did not start (or is not supported); the text says why and what to do.
    Failed(String),
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
}

struct ServerSlot {
    status: ServerStatus,
    tools: Vec<Arc<McpTool>>,
    service: Option<Service>,
}

/// The session's MCP servers and their tools.
pub struct McpManager {
    servers: Vec<ServerSlot>,
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
    pid: Option<u32>,
}

impl McpManager {
    /// Start every enabled server concurrently, each bounded by its startup timeout. Bearer
    /// tokens are read from the process environment. Returns the manager and one warning per
    /// server that could not start.
    pub async fn connect(config: &McpConfig, cwd: &Path) -> (McpManager, Vec<String>) {
        let env: HashMap<String, String> = std::env::vars().collect();
        Self::connect_with_env(config, cwd, &env).await
    }

    /// [`McpManager::connect`] with an explicit environment for `bearerTokenEnvVar` lookups
    /// (stdio servers still inherit the process environment plus their `env`).
    pub async fn connect_with_env(
        config: &McpConfig,
        cwd: &Path,
        env: &HashMap<String, String>,
    ) -> (McpManager, Vec<String>) {
        let starts = config.servers.iter().map(|(name, server)| async move {
            let kind = server.transport.kind();
            if !server.enabled {
                return (name, server, kind, Err(None));
            }
            let stderr = StderrTail::default();
            let limit = server.startup_timeout.unwrap_or(DEFAULT_STARTUP_TIMEOUT);
            let result =
                match tokio::time::timeout(limit, start(server, cwd, env, &stderr)).await {
                    Ok(Ok(started)) => Ok((started, stderr)),
                    Ok(Err(reason)) => Err(Some(reason)),
                    Err(_) => Err(Some(format!(
                        "it did not finish starting within {} ms{}. Raise `startupTimeoutMs` in {} if it needs longer",
                        limit.as_millis(),
                        stderr.suffix(),
                        server.source.display()
                    ))),
                };
            (name, server, kind, result)
        });
        let results = futures::future::join_all(starts).await;

        let mut warnings = Vec::new();
        let mut taken: HashSet<String> = HashSet::new();
        let mut servers = Vec::with_capacity(results.len());
        for (name, server, kind, result) in results {
            let mut status = ServerStatus {
                name: name.clone(),
                transport: kind,
                state: ServerState::Disabled,
                tool_count: 0,
                pid: None,
            };
            match result {
                Err(None) => servers.push(ServerSlot {
                    status,
                    tools: Vec::new(),
                    service: None,
                }),
                Err(Some(reason)) => {
                    warnings.push(format!("MCP server `{name}` failed to start: {reason}"));
                    status.state = ServerState::Failed(reason);
                    servers.push(ServerSlot {
                        status,
                        tools: Vec::new(),
                        service: None,
                    });
                }
                Ok((started, stderr)) => {
                    let conn = Arc::new(Connection {
                        server: name.clone(),
                        peer: started.service.peer().clone(),
                        stderr,
                    });
                    let tools = adapt_tools(
                        name,
                        server,
                        &conn,
                        started.tools,
                        &mut taken,
                        &mut warnings,
                    );
                    status.state = ServerState::Connected;
                    status.tool_count = tools.len();
                    status.pid = started.pid;
                    servers.push(ServerSlot {
                        status,
                        tools,
                        service: Some(started.service),
                    });
                }
            }
        }
        (McpManager { servers }, warnings)
    }

    /// The tools of every connected server, after `enabledTools` / `disabledTools`.
    pub fn tools(&self) -> Vec<Arc<dyn kimi_tools::Tool>> {
        self.servers
            .iter()
            .flat_map(|slot| slot.tools.iter())
            .map(|tool| Arc::clone(tool) as Arc<dyn kimi_tools::Tool>)
            .collect()
    }

    /// Every configured server, in name order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|slot| slot.status.clone())
            .collect()
    }

    /// Close every connection; stdio servers get their stdin closed, then SIGTERM, then a kill,
    /// and have exited when this returns. Tools still held elsewhere then fail with a
    /// "not connected" error.
    pub async fn shutdown(self) {
        let closing = self
            .servers
            .into_iter()
            .filter_map(|slot| slot.service)
            .map(|service| async move {
                // A join error only means the service task was already gone.
                let _ = service.cancel().await;
            });
        futures::future::join_all(closing).await;
    }
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

async fn start(
    server: &ServerConfig,
    cwd: &Path,
    env: &HashMap<String, String>,
    stderr: &StderrTail,
) -> Result<Started, String> {
    let source = server.source.display();
    let (service, pid) = match &server.transport {
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
            match client_info().serve(transport).await {
                Ok(service) => (service, pid),
                Err(e) => {
                    // The server most likely exited; let its last words reach the tail.
                    if let Some(task) = drained {
                        let _ = tokio::time::timeout(STDERR_DRAIN_LIMIT, task).await;
                    }
                    return Err(format!(
                        "the MCP handshake with `{command}` failed: {e}{}. Check that it is an MCP stdio server and that `command`/`args` in {source} are right",
                        stderr.suffix()
                    ));
                }
            }
        }
        TransportConfig::Http(remote) => {
            let transport = http_transport(remote, env, &source.to_string())?;
            let service = client_info().serve(transport).await.map_err(|e| {
                format!(
                    "connecting to {} failed: {e}. Check that the server is running and that `url` in {source} is right",
                    remote.url
                )
            })?;
            (service, None)
        }
        TransportConfig::Sse(remote) => {
            return Err(format!(
                "the legacy SSE transport (`\"transport\": \"sse\"` for {}) is not supported. Use the server's streamable HTTP endpoint with `\"transport\": \"http\"` in {source}",
                remote.url
            ));
        }
    };
    let tools = match service.list_all_tools().await {
        Ok(tools) => tools,
        Err(e) => {
            let _ = service.cancel().await;
            return Err(format!("listing its tools failed: {e}{}", stderr.suffix()));
        }
    };
    Ok(Started {
        service,
        tools,
        pid,
    })
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

fn http_transport(
    remote: &RemoteConfig,
    env: &HashMap<String, String>,
    source: &str,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    use reqwest::header::{HeaderName, HeaderValue};

    // reqwest is built without a default TLS provider; install the same one the rest of
    // kimi-rs uses (a no-op when another part of the program already did).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        // The reference client disables idle pooling too: a half-read body on a pooled
        // connection stalls the next request.
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("cannot create the HTTP client: {e}"))?;
    let mut headers = HashMap::new();
    for (name, value) in &remote.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header name `{name}` in {source} is not a valid HTTP header"))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            format!("the value of header `{name}` in {source} is not a valid HTTP header value")
        })?;
        headers.insert(header, value);
    }
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(remote.url.as_str()).custom_headers(headers);
    if let Some(var) = &remote.bearer_token_env_var {
        match env.get(var).filter(|token| !token.is_empty()) {
            Some(token) => config = config.auth_header(token.as_str()),
            None => {
                return Err(format!(
                    "environment variable `{var}` (its `bearerTokenEnvVar`) is not set. Export it before starting kimi-rs, or remove `bearerTokenEnvVar` from {source}"
                ));
            }
        }
    }
    Ok(StreamableHttpClientTransport::with_client(client, config))
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
