//! Acting on one server of a running manager — sign in with OAuth, sign out, reconnect — for
//! `/mcp-config login|logout|reconnect <server>` and the web server's MCP routes. Each change
//! lands like a first start: the slot goes back to connecting, its tools leave the session and
//! the new ones (or the sign-in tool) join it when the handshake is done.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, TransportConfig};
use crate::manager::{CLIENT_NAME, McpManager, ServerState, Shared, reconnect};
use crate::oauth::{LOGIN_WAIT, TokenDir, begin_login};

/// A sign-in that has started: the URL to open in a browser, and the task that waits for the
/// browser (up to 15 minutes), stores the token and reconnects the server. The task's text
/// says how that went.
pub struct LoginStarted {
    pub url: String,
    pub done: tokio::task::JoinHandle<Result<String, String>>,
}

impl McpManager {
    /// The slot and configuration of the server `name`, or what is wrong with the name.
    fn server(&self, name: &str) -> Result<(usize, ServerConfig), String> {
        let configs = &self.shared.configs;
        match configs.iter().position(|(n, _)| n == name) {
            Some(index) => Ok((index, configs[index].1.clone())),
            None => {
                let known: Vec<&str> = configs.iter().map(|(n, _)| n.as_str()).collect();
                Err(if known.is_empty() {
                    format!("there is no MCP server `{name}`: this session has none")
                } else {
                    format!(
                        "there is no MCP server `{name}` in this session (it has: {})",
                        known.join(", ")
                    )
                })
            }
        }
    }

    /// The server's URL and the credentials folder, for a sign-in or sign-out.
    fn remote(&self, name: &str) -> Result<(usize, ServerConfig, String, TokenDir), String> {
        let (index, server) = self.server(name)?;
        let url = match &server.transport {
            TransportConfig::Http(remote) | TransportConfig::Sse(remote) => remote.url.clone(),
            TransportConfig::Stdio { .. } => {
                return Err(format!(
                    "MCP server `{name}` is a stdio server (it runs a command); only remote (`url`) servers sign in"
                ));
            }
        };
        let dir = self.shared.token_dir.clone().ok_or_else(|| {
            format!("MCP server `{name}` cannot sign in: OAuth is off in this kimi-rs (no credentials folder)")
        })?;
        Ok((index, server, url, dir))
    }

    /// Start the OAuth sign-in of the remote server `name`. Returns once the authorization
    /// URL is known; the returned task finishes the sign-in and reconnects the server.
    pub async fn begin_login(&self, name: &str) -> Result<LoginStarted, String> {
        let (index, server, url, dir) = self.remote(name)?;
        let flow = begin_login(&dir, name, &url, CLIENT_NAME, None)
            .await
            .map_err(|e| format!("signing in to MCP server `{name}` could not start: {e}"))?;
        let open = flow.authorization_url().to_owned();
        let shared = Arc::clone(&self.shared);
        let name = name.to_owned();
        let shown = open.clone();
        let done = tokio::spawn(async move {
            flow.finish(LOGIN_WAIT, &CancellationToken::new())
                .await
                .map_err(|e| {
                    format!("signing in to MCP server `{name}` failed: {e}. The sign-in URL was: {shown}")
                })?;
            let stored = dir.file(&name, &url).display().to_string();
            let state = restart_slot(shared, index, name.clone(), server).await;
            outcome(&name, &state).map(|connected| {
                format!(
                    "Signed in to MCP server `{name}`; the token is stored in {stored}. {connected}"
                )
            })
        });
        Ok(LoginStarted { url: open, done })
    }

    /// Delete the stored sign-in of `name` and reconnect it (a server that requires OAuth
    /// then needs a login again).
    pub async fn logout(&self, name: &str) -> Result<String, String> {
        let (index, server, url, dir) = self.remote(name)?;
        let file = dir.file(name, &url);
        let removed = dir
            .remove(name, &url)
            .map_err(|e| format!("cannot delete {}: {e}", file.display()))?;
        let state = restart_slot(Arc::clone(&self.shared), index, name.to_owned(), server).await;
        let forgot = if removed {
            format!("Deleted the stored sign-in of MCP server `{name}`.")
        } else {
            format!("MCP server `{name}` had no stored sign-in.")
        };
        Ok(match outcome(name, &state) {
            Ok(now) | Err(now) => format!("{forgot} {now}"),
        })
    }

    /// Close the connection of `name` (stopping its process) and connect it again.
    pub async fn restart(&self, name: &str) -> Result<String, String> {
        let (index, server) = self.server(name)?;
        if !server.enabled {
            return Err(format!(
                "MCP server `{name}` is disabled (`enabled: false` in {}); enable it there and start a new session",
                server.source.display()
            ));
        }
        let state = restart_slot(Arc::clone(&self.shared), index, name.to_owned(), server).await;
        outcome(name, &state)
    }
}

/// What the server's state after a reconnect means for the user.
fn outcome(name: &str, state: &ServerState) -> Result<String, String> {
    match state {
        ServerState::Connected => Ok(format!("MCP server `{name}` is connected.")),
        ServerState::NeedsLogin(how) => Err(format!("MCP server `{name}` needs login: {how}")),
        ServerState::Failed(why) => Err(format!("MCP server `{name}` failed to start: {why}")),
        ServerState::Connecting => Err(format!(
            "MCP server `{name}` is still connecting; look at /mcp in a moment"
        )),
        ServerState::Disabled => Err(format!("MCP server `{name}` is disabled")),
    }
}

/// Take the slot's connection and tools away, close the connection, and connect again.
async fn restart_slot(
    shared: Arc<Shared>,
    index: usize,
    name: String,
    server: ServerConfig,
) -> ServerState {
    let service = {
        let mut slots = shared.lock();
        let mut old = None;
        let mut names = Vec::new();
        if let Some(slot) = slots.servers.get_mut(index) {
            old = slot.service.take();
            names = slot
                .tools
                .drain(..)
                .map(|t| kimi_tools::Tool::name(&*t).to_owned())
                .collect();
            slot.status.state = ServerState::Connecting;
            slot.status.tool_count = 0;
            slot.status.pid = None;
        }
        for tool in &names {
            slots.taken.remove(tool);
            shared.late.remove(tool);
        }
        shared.publish(&slots);
        old
    };
    if let Some(service) = service {
        // A join error only means the service task was already gone.
        let _ = service.cancel().await;
    }
    reconnect(shared, index, name, server).await
}
