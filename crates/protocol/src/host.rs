//! What the session host answers besides the conversation: the payloads of the host ops and
//! events in [`crate::ops`] (session listing, background tasks, `!` shell commands, MCP
//! status). Every front end gets these the same way, as events on the session's stream; later
//! host features (goals, environments, rewind) add their payload types here.

use serde::{Deserialize, Serialize};

/// One stored session, from the session index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: String,
    /// `None` until the first prompt names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The working directory's key in the store (the web API's `workspace_id`).
    pub workspace_id: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub updated_at: u64,
    #[serde(default)]
    pub archived: bool,
    /// Belongs to the working directory of the session that asked.
    #[serde(default)]
    pub this_dir: bool,
}

/// One background task (Bash in the background, a background agent, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub id: String,
    /// `bash`, `agent`, … (the task system's kind).
    pub kind: String,
    /// The task's description, or its command when it has none.
    pub description: String,
    /// `running`, `completed`, `failed`, `killed`, …
    pub status: String,
    /// The last few KiB of its output.
    #[serde(default)]
    pub output_tail: String,
}

/// How an MCP server is doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// Starting in the background; its tools join the session when it is ready.
    Connecting,
    Connected,
    /// Not started; the text says why.
    Failed(String),
    /// `enabled: false` in its config.
    Disabled,
}

/// One MCP server of the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerEntry {
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: String,
    pub state: McpServerState,
    pub tool_count: usize,
}

/// The MCP servers of a session (the `/mcp` panel).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct McpStatus {
    pub servers: Vec<McpServerEntry>,
    /// Why no server was started at all (e.g. an invalid `mcp.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Where servers are configured, user file first (shown when there are none).
    #[serde(default)]
    pub config_files: Vec<String>,
}
