//! Payloads of the reference's journal records (core.md §g.3 plus the 2.1 additions), each
//! read leniently: numbers written as strings or floats by other writers are accepted, and
//! fields whose shape varies between versions are kept as written.

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::loop_event::LoopEvent;
use crate::message::{ContentPart, Message, deserialize_content};
use crate::ops::TurnEndReason;
use crate::origin::Origin;
use crate::record::{RecordPayload, WIRE_PROTOCOL_VERSION};

/// Epoch milliseconds. JavaScript writers may produce floats; they are read and truncated.
pub type EpochMs = u64;

pub(crate) fn lenient_u64<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    use serde::de::Error;
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(u), _) => Some(u),
            (None, Some(f)) if f >= 0.0 && f.is_finite() => Some(f as u64),
            _ => {
                return Err(D::Error::custom(format!(
                    "{n} is not a non-negative number"
                )));
            }
        },
        // Loop events write turn ids as strings; other records as numbers.
        Some(Value::String(s)) => Some(
            s.parse::<u64>()
                .map_err(|_| D::Error::custom(format!("{s:?} is not a number")))?,
        ),
        Some(other) => return Err(D::Error::custom(format!("{other} is not a number"))),
    })
}

pub(crate) fn lenient_u64_required<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<u64, D::Error> {
    use serde::de::Error;
    lenient_u64(deserializer)?.ok_or_else(|| D::Error::custom("missing number"))
}

/// `{"type":"metadata","protocol_version":"1.5","created_at":<ms>}`: the first line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    pub protocol_version: String,
    #[serde(deserialize_with = "lenient_u64_required")]
    pub created_at: EpochMs,
}

impl Metadata {
    pub fn current(created_at: EpochMs) -> Self {
        Metadata {
            protocol_version: WIRE_PROTOCOL_VERSION.to_owned(),
            created_at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOnly {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppendMessage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub message: Message,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppendLoopEvent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub event: LoopEvent,
}

/// The `summary` field of a compaction: a string, or (legacy shape) a whole message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CompactionSummary {
    Text(String),
    Message(Box<Message>),
}

/// `context.apply_compaction` in any of its three accepted shapes (core.md §g.3):
/// `{summary: string, compactedCount}`, `{contextSummary: string, compactedCount, summary?}` and
/// the legacy `{summary: <message>, count, compactedCount?}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyCompaction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<CompactionSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_summary: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub compacted_count: Option<u64>,
    /// Legacy shape's count of compacted messages.
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub count: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub tokens_before: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub tokens_after: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub summary_output_tokens: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub kept_user_message_count: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub kept_head_user_message_count: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub dropped_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legacy_tail: Option<Value>,
    /// 2.1: the journal line range the compaction replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_lines: Option<Value>,
}

impl ApplyCompaction {
    /// The summary text the history should carry, whichever shape was written.
    pub fn summary_text(&self) -> Option<String> {
        if let Some(text) = &self.context_summary {
            return Some(text.clone());
        }
        match &self.summary {
            Some(CompactionSummary::Text(text)) => Some(text.clone()),
            Some(CompactionSummary::Message(message)) => Some(message.text()),
            None => None,
        }
    }

    /// How many leading history messages the compaction replaced.
    pub fn replaced_count(&self) -> Option<u64> {
        self.compacted_count.or(self.count)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUndo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Kept as written: invalid counts (0, fractions, huge) are ignored by replay, not rejected.
    pub count: Value,
}

impl ContextUndo {
    /// The count if it is a positive safe integer (core.md §g.7), else `None` (record ignored).
    pub fn valid_count(&self) -> Option<u64> {
        const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;
        self.count
            .as_u64()
            .filter(|count| (1..=MAX_SAFE_INTEGER).contains(count))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUndone {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub turns: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub from_turn_id: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchBase {
    pub branch: String,
    /// 1-based journal line (metadata is line 1) up to which the base branch is inherited.
    pub line: u64,
}

/// `agent.switched` (core-2.1 §4): an edge of the undo branch tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSwitched {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub base: BranchBase,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub turns: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub legacy_undo_line: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnPrompt {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, deserialize_with = "deserialize_content")]
    pub input: Vec<ContentPart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_id: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, deserialize_with = "deserialize_content")]
    pub input: Vec<ContentPart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_ids: Option<Vec<String>>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_id: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCancel {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_id: Option<u64>,
    /// `active` | `queued`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `user_cancelled` | `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `turn.ended`. The bus-only `interruptReason` is not a field, so it is never written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnded {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(deserialize_with = "lenient_u64_required")]
    pub turn_id: u64,
    pub reason: TurnEndReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FullCompactionBegin {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// `manual` | `auto`.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
}

impl TurnEndReason {
    /// The wire spelling (`completed`, `cancelled`, `failed`, `blocked`).
    pub fn as_str(self) -> &'static str {
        match self {
            TurnEndReason::Completed => "completed",
            TurnEndReason::Cancelled => "cancelled",
            TurnEndReason::Failed => "failed",
            TurnEndReason::Blocked => "blocked",
        }
    }
}

/// Which of the `prompt.*` lifecycle records a [`PromptRecord`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PromptKind {
    Accepted,
    Completed,
    Aborted,
    Steered,
}

impl PromptKind {
    /// The record of this kind carrying `record`.
    pub fn payload(self, record: PromptRecord) -> RecordPayload {
        match self {
            PromptKind::Accepted => RecordPayload::PromptAccepted(record),
            PromptKind::Completed => RecordPayload::PromptCompleted(record),
            PromptKind::Aborted => RecordPayload::PromptAborted(record),
            PromptKind::Steered => RecordPayload::PromptSteered(record),
        }
    }
}

/// `prompt.accepted|completed|aborted|steered`. Fields beyond the prompt id vary between
/// versions, so they are kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// `prompt.completed`: `completed` | `failed` | `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenCount {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(deserialize_with = "lenient_u64_required")]
    pub length: u64,
    #[serde(deserialize_with = "lenient_u64_required")]
    pub tokens: u64,
    /// `token_counting.rebased` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Value>,
    /// `token_counting.turn_recorded` only.
    #[serde(
        default,
        deserialize_with = "lenient_u64",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_id: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[serde(default)]
    pub input_other: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub input_cache_read: u64,
    #[serde(default)]
    pub input_cache_creation: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub model: String,
    pub usage: Usage,
    /// `session` | `turn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_scope: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionSetMode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// `manual` | `yolo` | `auto`.
    pub mode: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<Value>,
    pub tool_call_id: String,
    pub tool_name: String,
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_approval_rule: Option<String>,
    /// kimi-rs: the execution environment a path-based session approval holds on (it matches
    /// nowhere else). Absent for other rules; a path rule recorded without it is `local`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    pub result: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InteractionRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub id: String,
    /// `approval` | `question` | `user_tool`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    pub request: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InteractionResolved {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub id: String,
    pub response: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub info: Value,
    /// `task.terminated` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
}
