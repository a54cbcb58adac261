//! The 20 hook events, their payloads (sent as one JSON object on stdin, snake_case keys) and
//! the value each event's `matcher` regex is tested against (surface.md §6.3).

use kimi_protocol::ContentPart;
use serde::Serialize;
use serde_json::{Map, Value};

/// Hook event names, exactly as written in `config.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PermissionRequest,
    PermissionResult,
    UserPromptSubmit,
    UserPromptQueued,
    TurnStarted,
    Stop,
    StopFailure,
    Interrupt,
    SessionStart,
    SessionEnd,
    SessionHeartbeat,
    SubagentStart,
    SubagentStop,
    TaskStarted,
    PreCompact,
    PostCompact,
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 20] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PermissionRequest,
        HookEvent::PermissionResult,
        HookEvent::UserPromptSubmit,
        HookEvent::UserPromptQueued,
        HookEvent::TurnStarted,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::Interrupt,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::SessionHeartbeat,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::TaskStarted,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Notification,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PermissionResult => "PermissionResult",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::UserPromptQueued => "UserPromptQueued",
            HookEvent::TurnStarted => "TurnStarted",
            HookEvent::Stop => "Stop",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::Interrupt => "Interrupt",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::SessionHeartbeat => "SessionHeartbeat",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::TaskStarted => "TaskStarted",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::Notification => "Notification",
        }
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Blocking (exit 2 or a JSON deny) is honoured only for these; other events are
    /// fire-and-forget observers.
    pub fn honours_block(self) -> bool {
        match self {
            HookEvent::PreToolUse | HookEvent::UserPromptSubmit | HookEvent::Stop => true,
            HookEvent::PostToolUse
            | HookEvent::PostToolUseFailure
            | HookEvent::PermissionRequest
            | HookEvent::PermissionResult
            | HookEvent::UserPromptQueued
            | HookEvent::TurnStarted
            | HookEvent::StopFailure
            | HookEvent::Interrupt
            | HookEvent::SessionStart
            | HookEvent::SessionEnd
            | HookEvent::SessionHeartbeat
            | HookEvent::SubagentStart
            | HookEvent::SubagentStop
            | HookEvent::TaskStarted
            | HookEvent::PreCompact
            | HookEvent::PostCompact
            | HookEvent::Notification => false,
        }
    }
}

/// The approval request as hooks see it (PermissionRequest / PermissionResult).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PermissionRequestInfo {
    pub id: String,
    pub agent_id: String,
    pub turn_id: Value,
    pub tool_call_id: String,
    pub tool_name: String,
    pub action: String,
    pub display: Value,
    pub tool_input: Value,
}

/// The first 2,000 characters of a tool's output, as PostToolUse sends it.
pub fn clip_tool_output(output: &str) -> String {
    output.chars().take(2000).collect()
}

/// One event occurrence with its event-specific payload fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "hook_event_name")]
pub enum HookEventData {
    PreToolUse {
        tool_name: String,
        tool_input: Value,
        tool_call_id: String,
    },
    PostToolUse {
        tool_name: String,
        tool_input: Value,
        tool_call_id: String,
        /// Use [`clip_tool_output`].
        tool_output: String,
    },
    PostToolUseFailure {
        tool_name: String,
        tool_input: Value,
        tool_call_id: String,
        /// `{name, message, …}`.
        error: Value,
    },
    PermissionRequest {
        #[serde(flatten)]
        request: PermissionRequestInfo,
    },
    PermissionResult {
        #[serde(flatten)]
        request: PermissionRequestInfo,
        /// approved / rejected / cancelled / error.
        decision: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        scope: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        selected_label: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    UserPromptSubmit {
        prompt: Vec<ContentPart>,
        is_steer: bool,
    },
    UserPromptQueued {
        prompt_id: String,
        prompt: Vec<ContentPart>,
        queue_length: u64,
    },
    TurnStarted {
        turn_id: Value,
        origin_kind: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        origin_name: Option<String>,
        prompt: Vec<ContentPart>,
    },
    Stop {
        stop_hook_active: bool,
    },
    StopFailure {
        error_type: String,
        error_message: String,
    },
    Interrupt {
        turn_id: Value,
        reason: String,
    },
    SessionStart {
        /// `startup` | `resume`.
        source: String,
        model: String,
        profile: String,
    },
    SessionEnd {
        /// `exit` | `archive`.
        reason: String,
    },
    SessionHeartbeat {
        uptime_ms: u64,
    },
    SubagentStart {
        agent_name: String,
        prompt: String,
    },
    SubagentStop {
        agent_name: String,
        response: String,
    },
    TaskStarted {
        task_id: String,
        kind: String,
        description: String,
        status: String,
        detached: bool,
        started_at: Value,
    },
    PreCompact {
        /// `manual` | `auto`.
        trigger: String,
        token_count: u64,
    },
    PostCompact {
        trigger: String,
        estimated_token_count: u64,
    },
    Notification {
        sink: String,
        agent_id: String,
        notification_type: String,
        title: String,
        body: String,
        severity: String,
        source_kind: String,
        source_id: String,
    },
}

/// Fields every payload carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommonPayload {
    pub session_id: String,
    pub cwd: String,
    /// Host platform id, e.g. `kimi_code_cli`.
    pub client_type: String,
    pub session_title: Option<String>,
}

fn prompt_text(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(ContentPart::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

impl HookEventData {
    pub fn event(&self) -> HookEvent {
        match self {
            HookEventData::PreToolUse { .. } => HookEvent::PreToolUse,
            HookEventData::PostToolUse { .. } => HookEvent::PostToolUse,
            HookEventData::PostToolUseFailure { .. } => HookEvent::PostToolUseFailure,
            HookEventData::PermissionRequest { .. } => HookEvent::PermissionRequest,
            HookEventData::PermissionResult { .. } => HookEvent::PermissionResult,
            HookEventData::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            HookEventData::UserPromptQueued { .. } => HookEvent::UserPromptQueued,
            HookEventData::TurnStarted { .. } => HookEvent::TurnStarted,
            HookEventData::Stop { .. } => HookEvent::Stop,
            HookEventData::StopFailure { .. } => HookEvent::StopFailure,
            HookEventData::Interrupt { .. } => HookEvent::Interrupt,
            HookEventData::SessionStart { .. } => HookEvent::SessionStart,
            HookEventData::SessionEnd { .. } => HookEvent::SessionEnd,
            HookEventData::SessionHeartbeat { .. } => HookEvent::SessionHeartbeat,
            HookEventData::SubagentStart { .. } => HookEvent::SubagentStart,
            HookEventData::SubagentStop { .. } => HookEvent::SubagentStop,
            HookEventData::TaskStarted { .. } => HookEvent::TaskStarted,
            HookEventData::PreCompact { .. } => HookEvent::PreCompact,
            HookEventData::PostCompact { .. } => HookEvent::PostCompact,
            HookEventData::Notification { .. } => HookEvent::Notification,
        }
    }

    /// The value a hook's `matcher` regex is tested against.
    pub fn matcher_value(&self) -> String {
        match self {
            HookEventData::PreToolUse { tool_name, .. }
            | HookEventData::PostToolUse { tool_name, .. }
            | HookEventData::PostToolUseFailure { tool_name, .. } => tool_name.clone(),
            HookEventData::PermissionRequest { request }
            | HookEventData::PermissionResult { request, .. } => request.tool_name.clone(),
            HookEventData::UserPromptSubmit { prompt, .. }
            | HookEventData::UserPromptQueued { prompt, .. } => prompt_text(prompt),
            HookEventData::TurnStarted { origin_kind, .. } => origin_kind.clone(),
            HookEventData::Stop { .. }
            | HookEventData::Interrupt { .. }
            | HookEventData::SessionHeartbeat { .. } => String::new(),
            HookEventData::StopFailure { error_type, .. } => error_type.clone(),
            HookEventData::SessionStart { source, .. } => source.clone(),
            HookEventData::SessionEnd { reason } => reason.clone(),
            HookEventData::SubagentStart { agent_name, .. }
            | HookEventData::SubagentStop { agent_name, .. } => agent_name.clone(),
            HookEventData::TaskStarted { kind, .. } => kind.clone(),
            HookEventData::PreCompact { trigger, .. }
            | HookEventData::PostCompact { trigger, .. } => trigger.clone(),
            HookEventData::Notification {
                notification_type, ..
            } => notification_type.clone(),
        }
    }

    /// The JSON object written to the hook's stdin.
    pub fn payload(&self, common: &CommonPayload) -> Value {
        let mut map = match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            // A struct-variant enum always serialises to an object; keep the name regardless.
            Ok(_) | Err(_) => {
                let mut m = Map::new();
                m.insert(
                    "hook_event_name".into(),
                    Value::String(self.event().as_str().into()),
                );
                m
            }
        };
        map.insert(
            "session_id".into(),
            Value::String(common.session_id.clone()),
        );
        map.insert("cwd".into(), Value::String(common.cwd.clone()));
        map.insert(
            "client_type".into(),
            Value::String(common.client_type.clone()),
        );
        if let Some(title) = &common.session_title {
            map.insert("session_title".into(), Value::String(title.clone()));
        }
        Value::Object(map)
    }
}
