//! Journal records of kimi-rs itself (not in the reference's vocabulary): plan mode, queued
//! prompts, profile binding, cron jobs and the todo list. The reference's readers keep them as
//! unknown records; ours type them here.
//!
//! Their JSON shape is the one earlier kimi-rs versions wrote by hand (`type` first, camelCase
//! fields, `time` last, no `agentId`: each agent has its own journal), so journals written before
//! they were typed read unchanged. `record_tests.rs` decodes each of those old shapes.

use serde::{Deserialize, Serialize};

use crate::message::{ContentPart, deserialize_content};

/// `plan.mode`: plan mode was turned on or off. `planId` names the plan file
/// (`<agentDir>/plans/<id>.md`) and is kept after exit so re-entering continues that plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanModeRecord {
    #[serde(default)]
    pub active: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_id: Option<String>,
}

/// `prompt.queued`: a prompt accepted while a turn was running, journaled so a restart does not
/// lose what the user typed. It leaves the queue with a `turn.prompt`, `prompt.steered` or
/// `prompt.aborted` naming the same id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptQueued {
    pub prompt_id: String,
    #[serde(default, deserialize_with = "deserialize_content")]
    pub input: Vec<ContentPart>,
}

/// `prompt.steer`: a steer accepted into a running turn, journaled on receipt so a crash before
/// the turn's next step gate does not lose it. It is consumed by the `turn.steer` (its
/// `promptIds`) the gate writes, or by the `turn.prompt` of the turn it starts (a steer that
/// came too late for its turn); one still unconsumed on resume is delivered then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptSteer {
    pub prompt_id: String,
    #[serde(default, deserialize_with = "deserialize_content")]
    pub input: Vec<ContentPart>,
}

/// `profile.bind`: the profile an agent runs as and its rendered system prompt (reused on
/// resume so the provider's prompt cache stays warm). `profileFile` names a custom agent file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileBind {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// `model.set`: the session switched its model (`/model`, ACP `session/set_model`) or its
/// thinking effort (`/effort`). The newest one wins on resume; `alias` names a `[models]`
/// entry or the environment's model, `effort` one of off/on/low/medium/high/xhigh/max.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// `environment.bind`: the execution environment a session's tools act on and the working
/// directory there, journaled at creation so a resumed session reconnects to the same target.
/// What the executor reported at connect time is kept for the model's reminder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentBind {
    /// The declared id (`[environments.<id>]`).
    pub id: String,
    /// `ssh`, `docker` or `command`.
    pub kind: String,
    /// The working directory on the target.
    pub cwd: String,
    #[serde(default)]
    pub os: String,
    #[serde(default)]
    pub arch: String,
    #[serde(default)]
    pub shell: String,
}

/// A scheduled cron job as journaled in `cron.add` (surface.md §9.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJob {
    pub id: String,
    pub cron: String,
    pub prompt: String,
    /// Unix milliseconds.
    pub created_at: i64,
    #[serde(default = "default_true")]
    pub recurring: bool,
    /// The ideal time of the last delivered fire (Unix milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fired_at: Option<i64>,
}

fn default_true() -> bool {
    true
}

/// `cron.add`: a new job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CronAdd {
    pub task: CronJob,
}

/// `cron.delete`: jobs removed (by the model, after a one-shot fired, or when stale).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CronDelete {
    #[serde(default)]
    pub ids: Vec<String>,
}

/// `cron.cursor`: a recurring job delivered its fires up to `lastFiredAt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronCursor {
    pub id: String,
    pub last_fired_at: i64,
}

/// A todo item's state (surface.md §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Done,
}

impl TodoStatus {
    /// The wire spelling (`pending`, `in_progress`, `done`).
    pub fn label(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Done => "done",
        }
    }
}

/// One item of an agent's todo list (the `TodoList` tool's `todos`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    pub title: String,
    pub status: TodoStatus,
}

/// `todo.set`: the agent's whole todo list after a `TodoList` write (`[]` = cleared). The list
/// is undoable state: replay takes the last one on the active branch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoSet {
    #[serde(default)]
    pub todos: Vec<TodoItem>,
}
