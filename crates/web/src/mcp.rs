//! A session's MCP servers over REST: their status (state, reason, tool count, the file that
//! configures them), and the actions `:login` (starts the OAuth sign-in and answers with the
//! URL to open; the server reconnects when the browser comes back), `:logout` and `:restart`.
//! kimi-rs starts MCP servers per session (they depend on its working directory), so the
//! routes sit under the session rather than at the reference's `/mcp/servers`.

use std::sync::Arc;

use axum::extract::{Path, State};
use kimi_protocol::host::{McpServerState, McpStatus};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, Data, code};
use crate::server::App;

/// One server as the API shows it.
fn server_item(server: &kimi_protocol::host::McpServerEntry) -> Value {
    let (status, reason) = match &server.state {
        McpServerState::Connecting => ("connecting", None),
        McpServerState::Connected => ("connected", None),
        McpServerState::Failed(why) => ("failed", Some(why.as_str())),
        McpServerState::NeedsLogin(how) => ("needs_login", Some(how.as_str())),
        McpServerState::Disabled => ("disabled", None),
    };
    json!({
        "name": server.name,
        "transport": server.transport,
        "status": status,
        "reason": reason,
        "tool_count": server.tool_count,
        "source": server.source,
    })
}

fn status_body(status: &McpStatus) -> Value {
    json!({
        "items": status.servers.iter().map(server_item).collect::<Vec<_>>(),
        "problem": status.problem,
        "config_files": status.config_files,
    })
}

/// `GET /sessions/{id}/mcp/servers`.
pub async fn list_servers(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult<Value> {
    let live = app.registry.get(&id).await?;
    let extras = app
        .registry
        .host()
        .extras(&live.id)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(Data(status_body(&extras.mcp_status())))
}

/// `POST /sessions/{id}/mcp/servers/{name}:login|:logout|:restart`.
pub async fn server_action(
    State(app): State<Arc<App>>,
    Path((id, target)): Path<(String, String)>,
) -> ApiResult<Value> {
    let Some((name, action)) = target.rsplit_once(':') else {
        return Err(ApiError::validation(format!(
            "`{target}` names no action: POST …/mcp/servers/<name>:login, :logout or :restart"
        )));
    };
    let live = app.registry.get(&id).await?;
    let extras = app
        .registry
        .host()
        .extras(&live.id)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let failed = |message: String| ApiError::new(code::MCP_FAILED, message);
    let (message, url) = match action {
        "login" => {
            let started = extras.mcp_login(name).await.map_err(failed)?;
            let server = name.to_owned();
            // The sign-in ends when the browser comes back (or after 15 minutes); its outcome
            // shows in the server's status.
            tokio::spawn(async move {
                match started.done.await {
                    Ok(Ok(message)) => tracing::info!(server = %server, "{message}"),
                    Ok(Err(message)) => tracing::warn!(server = %server, "{message}"),
                    Err(e) => {
                        tracing::warn!(server = %server, "the MCP sign-in task ended early: {e}")
                    }
                }
            });
            (
                format!(
                    "Open authorization_url in a browser to sign in to MCP server `{name}`; it reconnects when the sign-in is done (GET …/mcp/servers shows its status)."
                ),
                Some(started.url),
            )
        }
        "logout" => (extras.mcp_logout(name).await.map_err(failed)?, None),
        "restart" => (extras.mcp_reconnect(name).await.map_err(failed)?, None),
        other => {
            return Err(ApiError::validation(format!(
                "unknown MCP server action `:{other}`: use :login, :logout or :restart"
            )));
        }
    };
    let status = extras.mcp_status();
    let server = status
        .servers
        .iter()
        .find(|s| s.name == name)
        .map(server_item);
    Ok(Data(json!({
        "server": server,
        "message": message,
        "authorization_url": url,
    })))
}
