//! Durable journal records of `wire.jsonl` (core.md §g.2–§g.3 plus the 2.1 additions): one JSON
//! object per line, `{"type": <name>, ...camelCase fields, "time": <epoch ms>}` with `time` last.
//!
//! Only the records the engine folds are typed. Every other record (and every record written by a
//! newer version) is kept verbatim as [`RecordPayload::Other`] so that reading and re-writing a
//! journal never loses a line. Parsing never panics: a typed record whose fields do not fit its
//! schema yields a [`RecordError`], which the reader reports and skips.

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::loop_event::LoopEvent;
use crate::message::{ContentPart, Message, deserialize_content};
use crate::ops::TurnEndReason;
use crate::origin::Origin;
pub use crate::own_record::{
    CronAdd, CronCursor, CronDelete, CronJob, PlanModeRecord, ProfileBind, PromptQueued, TodoItem,
    TodoSet, TodoStatus,
};

/// The wire protocol version this build writes (`WIRE_PROTOCOL_VERSION`).
pub const WIRE_PROTOCOL_VERSION: &str = "1.5";

/// Epoch milliseconds. JavaScript writers may produce floats; they are read and truncated.
pub type EpochMs = u64;

/// Why a JSON value could not be read as a [`Record`].
#[derive(Debug, Clone, PartialEq)]
pub enum RecordError {
    /// Not a JSON object, or an object without a string `type`.
    NotARecord,
    /// A known record type whose fields do not match its schema.
    Invalid { record_type: String, reason: String },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::NotARecord => {
                write!(f, "not a journal record (no object with a string `type`)")
            }
            RecordError::Invalid {
                record_type,
                reason,
            } => {
                write!(
                    f,
                    "`{record_type}` record does not match its schema: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for RecordError {}

fn lenient_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
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

fn lenient_u64_required<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    use serde::de::Error;
    lenient_u64(deserializer)?.ok_or_else(|| D::Error::custom("missing number"))
}

/// A record line: its payload and its `time`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub payload: RecordPayload,
    /// Absent only on the metadata line and in hand-written inputs.
    pub time: Option<EpochMs>,
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

/// The typed records. The serde tag is the record's `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum RecordPayload {
    #[serde(rename = "metadata")]
    Metadata(Metadata),
    #[serde(rename = "context.append_message")]
    AppendMessage(AppendMessage),
    #[serde(rename = "context.append_loop_event")]
    AppendLoopEvent(AppendLoopEvent),
    #[serde(rename = "context.apply_compaction")]
    ApplyCompaction(ApplyCompaction),
    #[serde(rename = "context.clear")]
    ContextClear(AgentOnly),
    #[serde(rename = "context.undo")]
    ContextUndo(ContextUndo),
    #[serde(rename = "context.undone")]
    ContextUndone(ContextUndone),
    #[serde(rename = "agent.switched")]
    AgentSwitched(AgentSwitched),
    #[serde(rename = "turn.prompt")]
    TurnPrompt(TurnPrompt),
    #[serde(rename = "turn.steer")]
    TurnSteer(TurnSteer),
    #[serde(rename = "turn.cancel")]
    TurnCancel(TurnCancel),
    #[serde(rename = "turn.ended")]
    TurnEnded(TurnEnded),
    #[serde(rename = "full_compaction.begin")]
    FullCompactionBegin(FullCompactionBegin),
    #[serde(rename = "full_compaction.complete")]
    FullCompactionComplete(AgentOnly),
    #[serde(rename = "full_compaction.cancel")]
    FullCompactionCancel(AgentOnly),
    #[serde(rename = "prompt.accepted")]
    PromptAccepted(PromptRecord),
    #[serde(rename = "prompt.completed")]
    PromptCompleted(PromptRecord),
    #[serde(rename = "prompt.aborted")]
    PromptAborted(PromptRecord),
    #[serde(rename = "prompt.steered")]
    PromptSteered(PromptRecord),
    #[serde(rename = "token_counting.measured")]
    TokenMeasured(TokenCount),
    #[serde(rename = "token_counting.truncated")]
    TokenTruncated(TokenCount),
    #[serde(rename = "token_counting.rebased")]
    TokenRebased(TokenCount),
    #[serde(rename = "token_counting.turn_recorded")]
    TokenTurnRecorded(TokenCount),
    #[serde(rename = "usage.record")]
    UsageRecord(UsageRecord),
    #[serde(rename = "permission.set_mode")]
    PermissionSetMode(PermissionSetMode),
    #[serde(rename = "permission.record_approval_result")]
    ApprovalResult(ApprovalResult),
    #[serde(rename = "interaction.request")]
    InteractionRequest(InteractionRequest),
    #[serde(rename = "interaction.resolved")]
    InteractionResolved(InteractionResolved),
    #[serde(rename = "task.started")]
    TaskStarted(TaskRecord),
    #[serde(rename = "task.terminated")]
    TaskTerminated(TaskRecord),
    #[serde(rename = "forked")]
    Forked(AgentOnly),
    // kimi-rs's own records (`own_record.rs`): no `agentId`, one journal per agent.
    #[serde(rename = "plan.mode")]
    PlanMode(PlanModeRecord),
    #[serde(rename = "prompt.queued")]
    PromptQueued(PromptQueued),
    #[serde(rename = "profile.bind")]
    ProfileBind(ProfileBind),
    #[serde(rename = "cron.add")]
    CronAdd(CronAdd),
    #[serde(rename = "cron.delete")]
    CronDelete(CronDelete),
    #[serde(rename = "cron.cursor")]
    CronCursor(CronCursor),
    #[serde(rename = "todo.set")]
    TodoSet(TodoSet),
    /// Any record this version does not type, kept verbatim (including its `type`, without `time`).
    #[serde(skip)]
    Other(Map<String, Value>),
}

/// True when records of this `type` have a typed payload.
pub(crate) fn is_typed(name: &str) -> bool {
    TYPED.contains(&name)
}

/// The `type` names that have a typed payload. Everything else becomes `Other`.
pub(crate) const TYPED: &[&str] = &[
    "metadata",
    "context.append_message",
    "context.append_loop_event",
    "context.apply_compaction",
    "context.clear",
    "context.undo",
    "context.undone",
    "agent.switched",
    "turn.prompt",
    "turn.steer",
    "turn.cancel",
    "turn.ended",
    "full_compaction.begin",
    "full_compaction.complete",
    "full_compaction.cancel",
    "prompt.accepted",
    "prompt.completed",
    "prompt.aborted",
    "prompt.steered",
    "token_counting.measured",
    "token_counting.truncated",
    "token_counting.rebased",
    "token_counting.turn_recorded",
    "usage.record",
    "permission.set_mode",
    "permission.record_approval_result",
    "interaction.request",
    "interaction.resolved",
    "task.started",
    "task.terminated",
    "forked",
    "plan.mode",
    "prompt.queued",
    "profile.bind",
    "cron.add",
    "cron.delete",
    "cron.cursor",
    "todo.set",
];

impl RecordPayload {
    /// The agent this record belongs to, for agent-domain records that name one.
    pub fn agent_id(&self) -> Option<&str> {
        self.agent_id_slot()
            .and_then(|slot| slot.as_deref())
            .or_else(|| match self {
                RecordPayload::Other(map) => map.get("agentId").and_then(Value::as_str),
                _ => None,
            })
    }

    /// Fill a missing `agentId` (core.md §g.6: missing → the current agent's id).
    pub fn fill_agent_id(&mut self, agent_id: &str) {
        if let Some(slot) = self.agent_id_slot_mut()
            && slot.is_none()
        {
            *slot = Some(agent_id.to_owned());
        }
    }

    fn agent_id_slot(&self) -> Option<&Option<String>> {
        Some(match self {
            RecordPayload::Metadata(_)
            | RecordPayload::Other(_)
            | RecordPayload::PlanMode(_)
            | RecordPayload::PromptQueued(_)
            | RecordPayload::ProfileBind(_)
            | RecordPayload::CronAdd(_)
            | RecordPayload::CronDelete(_)
            | RecordPayload::CronCursor(_)
            | RecordPayload::TodoSet(_)
            => return None,
            RecordPayload::AppendMessage(r) => &r.agent_id,
            RecordPayload::AppendLoopEvent(r) => &r.agent_id,
            RecordPayload::ApplyCompaction(r) => &r.agent_id,
            RecordPayload::ContextClear(r)
            | RecordPayload::FullCompactionComplete(r)
            | RecordPayload::FullCompactionCancel(r)
            | RecordPayload::Forked(r) => &r.agent_id,
            RecordPayload::ContextUndo(r) => &r.agent_id,
            RecordPayload::ContextUndone(r) => &r.agent_id,
            RecordPayload::AgentSwitched(r) => &r.agent_id,
            RecordPayload::TurnPrompt(r) => &r.agent_id,
            RecordPayload::TurnSteer(r) => &r.agent_id,
            RecordPayload::TurnCancel(r) => &r.agent_id,
            RecordPayload::TurnEnded(r) => &r.agent_id,
            RecordPayload::FullCompactionBegin(r) => &r.agent_id,
            RecordPayload::PromptAccepted(r)
            | RecordPayload::PromptCompleted(r)
            | RecordPayload::PromptAborted(r)
            | RecordPayload::PromptSteered(r) => &r.agent_id,
            RecordPayload::TokenMeasured(r)
            | RecordPayload::TokenTruncated(r)
            | RecordPayload::TokenRebased(r)
            | RecordPayload::TokenTurnRecorded(r) => &r.agent_id,
            RecordPayload::UsageRecord(r) => &r.agent_id,
            RecordPayload::PermissionSetMode(r) => &r.agent_id,
            RecordPayload::ApprovalResult(r) => &r.agent_id,
            RecordPayload::InteractionRequest(r) => &r.agent_id,
            RecordPayload::InteractionResolved(r) => &r.agent_id,
            RecordPayload::TaskStarted(r) | RecordPayload::TaskTerminated(r) => &r.agent_id,
        })
    }

    fn agent_id_slot_mut(&mut self) -> Option<&mut Option<String>> {
        Some(match self {
            RecordPayload::Metadata(_)
            | RecordPayload::Other(_)
            | RecordPayload::PlanMode(_)
            | RecordPayload::PromptQueued(_)
            | RecordPayload::ProfileBind(_)
            | RecordPayload::CronAdd(_)
            | RecordPayload::CronDelete(_)
            | RecordPayload::CronCursor(_)
            | RecordPayload::TodoSet(_)
            => return None,
            RecordPayload::AppendMessage(r) => &mut r.agent_id,
            RecordPayload::AppendLoopEvent(r) => &mut r.agent_id,
            RecordPayload::ApplyCompaction(r) => &mut r.agent_id,
            RecordPayload::ContextClear(r)
            | RecordPayload::FullCompactionComplete(r)
            | RecordPayload::FullCompactionCancel(r)
            | RecordPayload::Forked(r) => &mut r.agent_id,
            RecordPayload::ContextUndo(r) => &mut r.agent_id,
            RecordPayload::ContextUndone(r) => &mut r.agent_id,
            RecordPayload::AgentSwitched(r) => &mut r.agent_id,
            RecordPayload::TurnPrompt(r) => &mut r.agent_id,
            RecordPayload::TurnSteer(r) => &mut r.agent_id,
            RecordPayload::TurnCancel(r) => &mut r.agent_id,
            RecordPayload::TurnEnded(r) => &mut r.agent_id,
            RecordPayload::FullCompactionBegin(r) => &mut r.agent_id,
            RecordPayload::PromptAccepted(r)
            | RecordPayload::PromptCompleted(r)
            | RecordPayload::PromptAborted(r)
            | RecordPayload::PromptSteered(r) => &mut r.agent_id,
            RecordPayload::TokenMeasured(r)
            | RecordPayload::TokenTruncated(r)
            | RecordPayload::TokenRebased(r)
            | RecordPayload::TokenTurnRecorded(r) => &mut r.agent_id,
            RecordPayload::UsageRecord(r) => &mut r.agent_id,
            RecordPayload::PermissionSetMode(r) => &mut r.agent_id,
            RecordPayload::ApprovalResult(r) => &mut r.agent_id,
            RecordPayload::InteractionRequest(r) => &mut r.agent_id,
            RecordPayload::InteractionResolved(r) => &mut r.agent_id,
            RecordPayload::TaskStarted(r) | RecordPayload::TaskTerminated(r) => &mut r.agent_id,
        })
    }
}

impl Record {
    pub fn new(payload: RecordPayload, time: EpochMs) -> Self {
        Record {
            payload,
            time: Some(time),
        }
    }

    /// The record's `type` string as it appears on the wire.
    pub fn type_name(&self) -> &str {
        match &self.payload {
            RecordPayload::Other(map) => {
                map.get("type").and_then(Value::as_str).unwrap_or_default()
            }
            RecordPayload::Metadata(_) => "metadata",
            RecordPayload::AppendMessage(_) => "context.append_message",
            RecordPayload::AppendLoopEvent(_) => "context.append_loop_event",
            RecordPayload::ApplyCompaction(_) => "context.apply_compaction",
            RecordPayload::ContextClear(_) => "context.clear",
            RecordPayload::ContextUndo(_) => "context.undo",
            RecordPayload::ContextUndone(_) => "context.undone",
            RecordPayload::AgentSwitched(_) => "agent.switched",
            RecordPayload::TurnPrompt(_) => "turn.prompt",
            RecordPayload::TurnSteer(_) => "turn.steer",
            RecordPayload::TurnCancel(_) => "turn.cancel",
            RecordPayload::TurnEnded(_) => "turn.ended",
            RecordPayload::FullCompactionBegin(_) => "full_compaction.begin",
            RecordPayload::FullCompactionComplete(_) => "full_compaction.complete",
            RecordPayload::FullCompactionCancel(_) => "full_compaction.cancel",
            RecordPayload::PromptAccepted(_) => "prompt.accepted",
            RecordPayload::PromptCompleted(_) => "prompt.completed",
            RecordPayload::PromptAborted(_) => "prompt.aborted",
            RecordPayload::PromptSteered(_) => "prompt.steered",
            RecordPayload::TokenMeasured(_) => "token_counting.measured",
            RecordPayload::TokenTruncated(_) => "token_counting.truncated",
            RecordPayload::TokenRebased(_) => "token_counting.rebased",
            RecordPayload::TokenTurnRecorded(_) => "token_counting.turn_recorded",
            RecordPayload::UsageRecord(_) => "usage.record",
            RecordPayload::PermissionSetMode(_) => "permission.set_mode",
            RecordPayload::ApprovalResult(_) => "permission.record_approval_result",
            RecordPayload::InteractionRequest(_) => "interaction.request",
            RecordPayload::InteractionResolved(_) => "interaction.resolved",
            RecordPayload::TaskStarted(_) => "task.started",
            RecordPayload::TaskTerminated(_) => "task.terminated",
            RecordPayload::Forked(_) => "forked",
            RecordPayload::PlanMode(_) => "plan.mode",
            RecordPayload::PromptQueued(_) => "prompt.queued",
            RecordPayload::ProfileBind(_) => "profile.bind",
            RecordPayload::CronAdd(_) => "cron.add",
            RecordPayload::CronDelete(_) => "cron.delete",
            RecordPayload::CronCursor(_) => "cron.cursor",
            RecordPayload::TodoSet(_) => "todo.set",
        }
    }

    /// Read one journal value. Unknown types become `Other`; known types must fit their schema.
    pub fn from_value(value: Value) -> Result<Record, RecordError> {
        let Value::Object(mut map) = value else {
            return Err(RecordError::NotARecord);
        };
        let record_type = match map.get("type") {
            Some(Value::String(t)) => t.clone(),
            _ => return Err(RecordError::NotARecord),
        };
        let time = match map.get("time") {
            Some(Value::Number(n)) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            _ => None,
        };
        if !TYPED.contains(&record_type.as_str()) {
            return Ok(Record {
                payload: RecordPayload::Other(map),
                time,
            });
        }
        if time.is_some() {
            // Keep the order of the remaining keys (kept verbatim in `extra` maps).
            map.shift_remove("time");
        }
        let payload = decode_payload(&record_type, map).map_err(|err| RecordError::Invalid {
            record_type,
            reason: err.to_string(),
        })?;
        Ok(Record { payload, time })
    }

    /// The record as written to the journal: `type` first, `time` last.
    pub fn to_value(&self) -> Value {
        let mut map = match &self.payload {
            // Other is written as read (its `time`, if any, stays where it was); one built in
            // code without a `time` gets `self.time` appended.
            RecordPayload::Other(map) if map.contains_key("time") => {
                return Value::Object(map.clone());
            }
            RecordPayload::Other(map) => map.clone(),
            typed => match serde_json::to_value(typed) {
                Ok(Value::Object(map)) => map,
                // Every typed payload serialises to an object; nothing else can reach here.
                Ok(_) | Err(_) => Map::new(),
            },
        };
        if let Some(time) = self.time {
            map.insert("time".to_owned(), Value::from(time));
        }
        Value::Object(map)
    }
}

/// Decode a typed payload from its record object. The variant is picked from `record_type`
/// and its struct is decoded straight from the map (without `type`), which is what the serde
/// tag does but without buffering the whole record first. `type` is removed keeping the order
/// of the other keys, as the tag does. Unlisted names take the tagged path.
fn decode_payload(
    record_type: &str,
    mut map: Map<String, Value>,
) -> Result<RecordPayload, serde_json::Error> {
    macro_rules! direct {
        ($variant:ident) => {{
            map.shift_remove("type");
            serde_json::from_value(Value::Object(map)).map(RecordPayload::$variant)
        }};
    }
    match record_type {
        "metadata" => direct!(Metadata),
        "context.append_message" => direct!(AppendMessage),
        "context.append_loop_event" => direct!(AppendLoopEvent),
        "context.apply_compaction" => direct!(ApplyCompaction),
        "context.clear" => direct!(ContextClear),
        "context.undo" => direct!(ContextUndo),
        "context.undone" => direct!(ContextUndone),
        "agent.switched" => direct!(AgentSwitched),
        "turn.prompt" => direct!(TurnPrompt),
        "turn.steer" => direct!(TurnSteer),
        "turn.cancel" => direct!(TurnCancel),
        "turn.ended" => direct!(TurnEnded),
        "full_compaction.begin" => direct!(FullCompactionBegin),
        "full_compaction.complete" => direct!(FullCompactionComplete),
        "full_compaction.cancel" => direct!(FullCompactionCancel),
        "prompt.accepted" => direct!(PromptAccepted),
        "prompt.completed" => direct!(PromptCompleted),
        "prompt.aborted" => direct!(PromptAborted),
        "prompt.steered" => direct!(PromptSteered),
        "token_counting.measured" => direct!(TokenMeasured),
        "token_counting.truncated" => direct!(TokenTruncated),
        "token_counting.rebased" => direct!(TokenRebased),
        "token_counting.turn_recorded" => direct!(TokenTurnRecorded),
        "usage.record" => direct!(UsageRecord),
        "permission.set_mode" => direct!(PermissionSetMode),
        "permission.record_approval_result" => direct!(ApprovalResult),
        "interaction.request" => direct!(InteractionRequest),
        "interaction.resolved" => direct!(InteractionResolved),
        "task.started" => direct!(TaskStarted),
        "task.terminated" => direct!(TaskTerminated),
        "forked" => direct!(Forked),
        "plan.mode" => direct!(PlanMode),
        "prompt.queued" => direct!(PromptQueued),
        "profile.bind" => direct!(ProfileBind),
        "cron.add" => direct!(CronAdd),
        "cron.delete" => direct!(CronDelete),
        "cron.cursor" => direct!(CronCursor),
        "todo.set" => direct!(TodoSet),
        _ => serde_json::from_value(Value::Object(map)),
    }
}

impl Serialize for Record {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Record {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Record::from_value(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
