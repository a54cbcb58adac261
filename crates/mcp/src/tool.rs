//! One MCP tool as a kimi-rs [`Tool`]: the server's description and input schema, an exclusive
//! plan approved by name, and a `tools/call` bounded by the tool timeout and the call's cancel
//! token. Failures (dead server, timeout, protocol error) become error results, never panics.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use kimi_tools::context::{ProgressSink, ToolContext};
use kimi_tools::{
    Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolError, ToolPlan, ToolResult,
};

use crate::output::convert_result;

/// How many of the server's last stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 20;
/// Longest stderr line kept (a server printing a minified blob must not bloat messages).
const STDERR_LINE_CHARS: usize = 500;

/// The last lines a stdio server wrote to stderr. Captured so its noise never reaches the
/// terminal, yet a crash can still be explained.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    pub(crate) fn push(&self, line: &str) {
        let line: String = line.chars().take(STDERR_LINE_CHARS).collect();
        let mut lines = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// `"; last stderr: a | b"`, or nothing when the server wrote nothing.
    pub(crate) fn suffix(&self) -> String {
        let lines = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let shown: Vec<&str> = lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect();
        if shown.is_empty() {
            String::new()
        } else {
            format!("; last stderr: {}", shown.join(" | "))
        }
    }
}

/// What every tool of one server shares: the connection and its stderr.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) server: String,
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) stderr: StderrTail,
}

impl Connection {
    fn not_connected(&self, reason: &str) -> ToolResult {
        tracing::warn!(server = %self.server, reason, stderr = %self.stderr.suffix(), "MCP server gone");
        ToolResult::error(format!(
            "MCP server `{}` is not connected: {reason}{}. Restart the session (or fix the server) to use its tools again.",
            self.server,
            self.stderr.suffix()
        ))
    }
}

/// An MCP tool exposed as `mcp__<server>__<tool>`.
#[derive(Debug)]
pub struct McpTool {
    pub(crate) qualified: String,
    /// The server's own name for the tool (what `tools/call` needs).
    pub(crate) remote_name: String,
    pub(crate) description: String,
    pub(crate) parameters: Value,
    pub(crate) timeout: Duration,
    pub(crate) conn: Arc<Connection>,
}

impl McpTool {
    /// The server this tool belongs to (its configured name, unsanitized).
    pub fn server(&self) -> &str {
        &self.conn.server
    }

    /// The tool's name on the server.
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.qualified
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let arguments = match args {
            Value::Null => serde_json::Map::new(),
            Value::Object(map) => map,
            other => {
                return Err(ToolError::InvalidArgs(format!(
                    "MCP tool arguments must be a JSON object, got {other}"
                )));
            }
        };
        let summary = format!("{} · {}", self.conn.server, self.remote_name);
        Ok(Resolution::Run(Box::new(McpExecution {
            plan: ToolPlan {
                // MCP tools may touch anything: no accesses = run exclusively.
                accesses: None,
                approval_rule: self.qualified.clone(),
                subject: RuleSubject::NameOnly,
                display: ToolDisplay {
                    kind: "mcp".to_owned(),
                    summary,
                    detail: None,
                    diff: None,
                },
                description: format!(
                    "Call MCP tool `{}` on server `{}`",
                    self.remote_name, self.conn.server
                ),
                stop_batch_after_this: false,
            },
            qualified: self.qualified.clone(),
            remote_name: self.remote_name.clone(),
            arguments,
            timeout: self.timeout,
            conn: Arc::clone(&self.conn),
        })))
    }
}

struct McpExecution {
    plan: ToolPlan,
    qualified: String,
    remote_name: String,
    arguments: serde_json::Map<String, Value>,
    timeout: Duration,
    conn: Arc<Connection>,
}

#[async_trait]
impl Execution for McpExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        if self.conn.peer.is_transport_closed() {
            return self.conn.not_connected("its connection is closed");
        }
        let params = CallToolRequestParams::new(self.remote_name.clone())
            .with_arguments(self.arguments.clone());
        // rmcp sends `notifications/cancelled` when this future is dropped, so losing the
        // race to the timeout or the cancel token also tells the server to stop.
        let call = self.conn.peer.call_tool(params);
        let outcome = tokio::select! {
            () = cancel.cancelled() => {
                return ToolResult::error(format!("{} was cancelled.", self.qualified));
            }
            outcome = tokio::time::timeout(self.timeout, call) => outcome,
        };
        match outcome {
            Err(_) => ToolResult::error(format!(
                "MCP tool `{}` timed out after {} ms. Raise `toolTimeoutMs` for server `{}` in mcp.json if it needs longer.",
                self.qualified,
                self.timeout.as_millis(),
                self.conn.server
            )),
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(json) => convert_result(&json, &self.qualified),
                Err(e) => ToolResult::error(format!(
                    "MCP server `{}` returned a result that cannot be read: {e}",
                    self.conn.server
                )),
            },
            Ok(Err(ServiceError::McpError(data))) => ToolResult::error(format!(
                "MCP server `{}` rejected the call to `{}`: {} (code {}).",
                self.conn.server, self.remote_name, data.message, data.code.0
            )),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => self
                .conn
                .not_connected("the connection closed during the call"),
            Ok(Err(e)) => {
                ToolResult::error(format!("Calling MCP tool `{}` failed: {e}", self.qualified))
            }
        }
    }
}
