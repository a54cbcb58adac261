//! `mcp__<server>__authenticate` (surface.md §2.8): the one tool a remote server that needs an
//! OAuth sign-in offers until it has one. Calling it starts the sign-in, shows the URL to open
//! (as the call's progress, so every front end displays it while the call runs), waits up to
//! 15 minutes for the browser to come back to the loopback callback, stores the token and
//! reconnects the server; its real tools then replace this one.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use kimi_tools::context::{ProgressSink, ToolContext, ToolProgress};
use kimi_tools::{
    Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolError, ToolPlan, ToolResult,
};

use crate::config::{ServerConfig, TransportConfig};
use crate::manager::{CLIENT_NAME, ServerState, Shared, reconnect};
use crate::naming::qualify_tool_name;
use crate::oauth::{LOGIN_WAIT, begin_login};

/// The synthetic sign-in tool of one server.
pub(crate) struct AuthenticateTool {
    qualified: String,
    shared: Arc<Shared>,
    index: usize,
    server: String,
    config: ServerConfig,
    /// The `WWW-Authenticate` of the server's 401, when it sent one.
    challenge: Option<String>,
}

impl AuthenticateTool {
    pub(crate) fn qualified_name(server: &str) -> String {
        qualify_tool_name(server, "authenticate")
    }

    pub(crate) fn new(
        shared: Arc<Shared>,
        index: usize,
        server: String,
        config: ServerConfig,
        challenge: Option<String>,
    ) -> Self {
        AuthenticateTool {
            qualified: Self::qualified_name(&server),
            shared,
            index,
            server,
            config,
            challenge,
        }
    }
}

#[async_trait]
impl Tool for AuthenticateTool {
    fn name(&self) -> &str {
        &self.qualified
    }

    fn description(&self) -> String {
        format!(
            "Sign in to the MCP server `{}`, which needs an OAuth login before its tools can be used. Shows the user a URL to open in a browser, waits up to 15 minutes for the sign-in to finish, then connects the server so its tools become available. Takes no arguments.",
            self.server
        )
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn resolve(&self, _args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let url = match &self.config.transport {
            TransportConfig::Http(remote) | TransportConfig::Sse(remote) => remote.url.clone(),
            TransportConfig::Stdio { .. } => {
                return Err(ToolError::InvalidArgs(format!(
                    "MCP server `{}` is a stdio server; only remote servers sign in",
                    self.server
                )));
            }
        };
        Ok(Resolution::Run(Box::new(Authenticate {
            plan: ToolPlan {
                accesses: None,
                approval_rule: self.qualified.clone(),
                subject: RuleSubject::NameOnly,
                display: ToolDisplay {
                    kind: "mcp".to_owned(),
                    summary: format!("{} · sign in", self.server),
                    detail: None,
                    diff: None,
                },
                description: format!("Sign in to MCP server `{}` ({url})", self.server),
                stop_batch_after_this: false,
            },
            url,
            shared: Arc::clone(&self.shared),
            index: self.index,
            server: self.server.clone(),
            config: self.config.clone(),
            challenge: self.challenge.clone(),
        })))
    }
}

struct Authenticate {
    plan: ToolPlan,
    url: String,
    shared: Arc<Shared>,
    index: usize,
    server: String,
    config: ServerConfig,
    challenge: Option<String>,
}

#[async_trait]
impl Execution for Authenticate {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        cancel: CancellationToken,
        progress: ProgressSink,
    ) -> ToolResult {
        let server = &self.server;
        let Some(dir) = self.shared.token_dir.clone() else {
            return ToolResult::error(format!(
                "MCP server `{server}` cannot sign in: OAuth is off in this kimi-rs (no credentials folder)."
            ));
        };
        let flow = match begin_login(
            &dir,
            server,
            &self.url,
            CLIENT_NAME,
            self.challenge.as_deref(),
        )
        .await
        {
            Ok(flow) => flow,
            Err(e) => {
                tracing::warn!(server = %server, error = %e, "MCP OAuth sign-in could not start");
                return ToolResult::error(format!(
                    "Signing in to MCP server `{server}` could not start: {e}"
                ));
            }
        };
        let url = flow.authorization_url().to_owned();
        progress.send(ToolProgress::Status(format!(
            "Open this URL in a browser to sign in to MCP server `{server}` (waiting up to {} minutes): {url}",
            LOGIN_WAIT.as_secs() / 60
        )));
        if let Err(e) = flow.finish(LOGIN_WAIT, &cancel).await {
            tracing::warn!(server = %server, error = %e, "MCP OAuth sign-in failed");
            return ToolResult::error(format!(
                "Signing in to MCP server `{server}` failed: {e}. The sign-in URL was: {url}"
            ));
        }
        progress.send(ToolProgress::Status(format!(
            "Signed in; connecting to `{server}`…"
        )));
        let state = reconnect(
            Arc::clone(&self.shared),
            self.index,
            server.clone(),
            self.config.clone(),
        )
        .await;
        match state {
            ServerState::Connected => {
                let prefix = format!("mcp__{}__", crate::naming::sanitize_name_part(server));
                let names: Vec<String> = self
                    .shared
                    .late
                    .tools()
                    .iter()
                    .map(|t| t.name().to_owned())
                    .filter(|n| n.starts_with(&prefix))
                    .collect();
                ToolResult::ok(format!(
                    "Signed in to MCP server `{server}`; the token is stored in {}. Its tools are available now: {}.",
                    dir.file(server, &self.url).display(),
                    names.join(", ")
                ))
            }
            ServerState::Failed(reason) | ServerState::NeedsLogin(reason) => {
                ToolResult::error(format!(
                    "Signed in to MCP server `{server}`, but connecting to it failed: {reason}"
                ))
            }
            ServerState::Connecting | ServerState::Disabled => ToolResult::error(format!(
                "Signed in to MCP server `{server}`, but it is not connected; look at /mcp."
            )),
        }
    }
}
