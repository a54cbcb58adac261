//! Durable journal records of `wire.jsonl` (core.md §g.2–§g.3 plus the 2.1 additions): one JSON
//! object per line, `{"type": <name>, ...camelCase fields, "time": <epoch ms>}` with `time` last.
//!
//! Only the records the engine folds are typed: the reference's (payloads in `ref_record.rs`)
//! and kimi-rs's own (`own_record.rs`). Every other record (and every record written by a
//! newer version) is kept verbatim as [`RecordPayload::Other`] so that reading and re-writing a
//! journal never loses a line. Parsing never panics: a typed record whose fields do not fit its
//! schema yields a [`RecordError`], which the reader reports and skips.

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::checkpoint::{CheckpointRewind, CheckpointStep};
pub use crate::flow::FlowUpdate;
pub use crate::goal_record::{GoalClear, GoalCreate, GoalUpdate};
pub use crate::own_record::{
    CronAdd, CronCursor, CronDelete, CronJob, EnvironmentBind, ModelSet, PlanModeRecord,
    ProfileBind, PromptQueued, PromptSteer, TodoItem, TodoSet, TodoStatus,
};
pub use crate::ref_record::*;

/// The wire protocol version this build writes (`WIRE_PROTOCOL_VERSION`).
pub const WIRE_PROTOCOL_VERSION: &str = "1.5";

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

/// A record line: its payload and its `time`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub payload: RecordPayload,
    /// Absent only on the metadata line and in hand-written inputs.
    pub time: Option<EpochMs>,
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
    #[serde(rename = "goal.create")]
    GoalCreate(GoalCreate),
    #[serde(rename = "goal.update")]
    GoalUpdate(GoalUpdate),
    #[serde(rename = "goal.clear")]
    GoalClear(GoalClear),
    // kimi-rs's own records (`own_record.rs`): no `agentId`, one journal per agent.
    #[serde(rename = "plan.mode")]
    PlanMode(PlanModeRecord),
    #[serde(rename = "prompt.queued")]
    PromptQueued(PromptQueued),
    #[serde(rename = "prompt.steer")]
    PromptSteer(PromptSteer),
    #[serde(rename = "profile.bind")]
    ProfileBind(ProfileBind),
    #[serde(rename = "environment.bind")]
    EnvironmentBind(EnvironmentBind),
    #[serde(rename = "cron.add")]
    CronAdd(CronAdd),
    #[serde(rename = "cron.delete")]
    CronDelete(CronDelete),
    #[serde(rename = "cron.cursor")]
    CronCursor(CronCursor),
    #[serde(rename = "todo.set")]
    TodoSet(TodoSet),
    #[serde(rename = "checkpoint.step")]
    CheckpointStep(CheckpointStep),
    #[serde(rename = "checkpoint.rewind")]
    CheckpointRewind(CheckpointRewind),
    #[serde(rename = "model.set")]
    ModelSet(ModelSet),
    #[serde(rename = "flow.update")]
    FlowUpdate(FlowUpdate),
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
    "goal.create",
    "goal.update",
    "goal.clear",
    "plan.mode",
    "prompt.queued",
    "prompt.steer",
    "profile.bind",
    "environment.bind",
    "cron.add",
    "cron.delete",
    "cron.cursor",
    "todo.set",
    "checkpoint.step",
    "checkpoint.rewind",
    "model.set",
    "flow.update",
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
            | RecordPayload::PromptSteer(_)
            | RecordPayload::ProfileBind(_)
            | RecordPayload::EnvironmentBind(_)
            | RecordPayload::CronAdd(_)
            | RecordPayload::CronDelete(_)
            | RecordPayload::CronCursor(_)
            | RecordPayload::TodoSet(_)
            | RecordPayload::CheckpointStep(_)
            | RecordPayload::CheckpointRewind(_)
            | RecordPayload::ModelSet(_)
            | RecordPayload::FlowUpdate(_) => return None,
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
            RecordPayload::GoalCreate(r) => &r.agent_id,
            RecordPayload::GoalUpdate(r) => &r.agent_id,
            RecordPayload::GoalClear(r) => &r.agent_id,
        })
    }

    fn agent_id_slot_mut(&mut self) -> Option<&mut Option<String>> {
        Some(match self {
            RecordPayload::Metadata(_)
            | RecordPayload::Other(_)
            | RecordPayload::PlanMode(_)
            | RecordPayload::PromptQueued(_)
            | RecordPayload::PromptSteer(_)
            | RecordPayload::ProfileBind(_)
            | RecordPayload::EnvironmentBind(_)
            | RecordPayload::CronAdd(_)
            | RecordPayload::CronDelete(_)
            | RecordPayload::CronCursor(_)
            | RecordPayload::TodoSet(_)
            | RecordPayload::CheckpointStep(_)
            | RecordPayload::CheckpointRewind(_)
            | RecordPayload::ModelSet(_)
            | RecordPayload::FlowUpdate(_) => return None,
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
            RecordPayload::GoalCreate(r) => &mut r.agent_id,
            RecordPayload::GoalUpdate(r) => &mut r.agent_id,
            RecordPayload::GoalClear(r) => &mut r.agent_id,
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
            RecordPayload::GoalCreate(_) => "goal.create",
            RecordPayload::GoalUpdate(_) => "goal.update",
            RecordPayload::GoalClear(_) => "goal.clear",
            RecordPayload::PlanMode(_) => "plan.mode",
            RecordPayload::PromptQueued(_) => "prompt.queued",
            RecordPayload::PromptSteer(_) => "prompt.steer",
            RecordPayload::ProfileBind(_) => "profile.bind",
            RecordPayload::EnvironmentBind(_) => "environment.bind",
            RecordPayload::CronAdd(_) => "cron.add",
            RecordPayload::CronDelete(_) => "cron.delete",
            RecordPayload::CronCursor(_) => "cron.cursor",
            RecordPayload::TodoSet(_) => "todo.set",
            RecordPayload::CheckpointStep(_) => "checkpoint.step",
            RecordPayload::CheckpointRewind(_) => "checkpoint.rewind",
            RecordPayload::ModelSet(_) => "model.set",
            RecordPayload::FlowUpdate(_) => "flow.update",
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
        "goal.create" => direct!(GoalCreate),
        "goal.update" => direct!(GoalUpdate),
        "goal.clear" => direct!(GoalClear),
        "plan.mode" => direct!(PlanMode),
        "prompt.queued" => direct!(PromptQueued),
        "prompt.steer" => direct!(PromptSteer),
        "profile.bind" => direct!(ProfileBind),
        "environment.bind" => direct!(EnvironmentBind),
        "cron.add" => direct!(CronAdd),
        "cron.delete" => direct!(CronDelete),
        "cron.cursor" => direct!(CronCursor),
        "todo.set" => direct!(TodoSet),
        "checkpoint.step" => direct!(CheckpointStep),
        "checkpoint.rewind" => direct!(CheckpointRewind),
        "model.set" => direct!(ModelSet),
        "flow.update" => direct!(FlowUpdate),
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
