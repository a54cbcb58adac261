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
    /// A remote server waiting for an OAuth sign-in; the text says how to sign in.
    NeedsLogin(String),
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
    /// The file that configures it (`mcp.json`, a project's `.mcp.json`, a plugin's manifest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// What `Op::McpServer` does to one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerAction {
    /// Start the OAuth sign-in of a remote server: `Event::McpSignIn` carries the URL to
    /// open; when the browser comes back the token is stored and the server reconnected.
    Login,
    /// Delete the server's stored sign-in and reconnect it (it then needs a login again).
    Logout,
    /// Close the server's connection (stop its process) and connect it again.
    Reconnect,
}

impl McpServerAction {
    pub fn as_str(self) -> &'static str {
        match self {
            McpServerAction::Login => "login",
            McpServerAction::Logout => "logout",
            McpServerAction::Reconnect => "reconnect",
        }
    }
}

/// The MCP servers of a session (the `/mcp` panel).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct McpStatus {
    pub servers: Vec<McpServerEntry>,
    /// What did not load, one item a line: invalid `mcp.json` files or entries (each disables
    /// only itself) and project servers skipped because the folder is not trusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Where servers are configured, user file first (shown when there are none).
    #[serde(default)]
    pub config_files: Vec<String>,
}

/// A goal's lifecycle state (surface.md §9.2). `complete` is transient: the goal is cleared
/// right after its completion is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    Active,
    Paused,
    Blocked,
    Complete,
}

impl GoalStatus {
    /// The wire spelling (`active`, `paused`, `blocked`, `complete`).
    pub fn label(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Paused => "paused",
            GoalStatus::Blocked => "blocked",
            GoalStatus::Complete => "complete",
        }
    }
}

/// Who changed a goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalActor {
    User,
    Model,
    Runtime,
    System,
}

/// The hard limits a goal runs under (`SetGoalBudget`); `None` = no limit in that unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalBudgetLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_budget: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock_budget_ms: Option<u64>,
}

/// How a goal stands against its budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalBudgetReport {
    pub token_budget: Option<u64>,
    pub turn_budget: Option<u64>,
    pub wall_clock_budget_ms: Option<u64>,
    pub remaining_tokens: Option<u64>,
    pub remaining_turns: Option<u64>,
    pub remaining_wall_clock_ms: Option<u64>,
    pub token_budget_reached: bool,
    pub turn_budget_reached: bool,
    pub wall_clock_budget_reached: bool,
    pub over_budget: bool,
}

/// The goal as every front end sees it (`GetGoal`, REST `GET /sessions/{id}/goal`, the
/// `goal.updated` event). Field names follow the reference (camelCase).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalSnapshot {
    pub goal_id: String,
    pub objective: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_criterion: Option<String>,
    pub status: GoalStatus,
    pub turns_used: u64,
    pub tokens_used: u64,
    pub wall_clock_ms: u64,
    pub budget: GoalBudgetReport,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
}

/// What a `goal.updated` event reports besides the new snapshot: a lifecycle change (pause,
/// resume, block) or the goal's completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GoalChange {
    Lifecycle {
        status: GoalStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        actor: GoalActor,
    },
    Completion {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        turns_used: u64,
        tokens_used: u64,
        wall_clock_ms: u64,
        actor: GoalActor,
    },
}

/// One goal waiting in the workspace's queue (`/goal next`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedGoal {
    pub id: String,
    pub objective: String,
    /// Unix milliseconds.
    pub created_at: u64,
}
