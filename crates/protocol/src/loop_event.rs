//! The five loop events the engine journals for each model step (core.md §a.5). History is a
//! fold over these plus appended messages; nothing else writes assistant or tool messages.

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{ContentPart, deserialize_content};

/// Turn ids are numbers in some records and strings in loop events; read both, write strings.
fn lenient_turn_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepBegin {
    pub uuid: String,
    #[serde(
        default,
        deserialize_with = "lenient_turn_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentPartEvent {
    pub step_uuid: String,
    pub part: ContentPart,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_turn_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
}

/// A present field is `Some`, even when it is `null`; only an absent field is `None`.
fn present_value<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallEvent {
    pub step_uuid: String,
    pub tool_call_id: String,
    pub name: String,
    /// Parsed arguments; absent means the call had none (history stores `null`), while an
    /// explicit `null` is a value (history stores the string `"null"`, as `JSON.stringify` does).
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extras: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient_turn_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// UI display hints (2.1); opaque here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<Value>,
}

/// The output of a tool: a string, or content parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolOutput {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl<'de> Deserialize<'de> for ToolOutput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value {
            Value::String(s) => Ok(ToolOutput::Text(s)),
            other => deserialize_content(other)
                .map(ToolOutput::Parts)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl ToolOutput {
    pub fn into_parts(self) -> Vec<ContentPart> {
        match self {
            ToolOutput::Text(text) => vec![ContentPart::Text { text }],
            ToolOutput::Parts(parts) => parts,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultPayload {
    pub output: ToolOutput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultEvent {
    pub tool_call_id: String,
    pub result: ToolResultPayload,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_uuid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepEnd {
    pub uuid: String,
    /// `interrupted` and `error` leave the step open (core.md §a.5 rule 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Timings, provider finish reasons and anything newer: kept as written.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StepEnd {
    pub fn leaves_step_open(&self) -> bool {
        matches!(self.finish_reason.as_deref(), Some("interrupted" | "error"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum LoopEvent {
    #[serde(rename = "step.begin")]
    StepBegin(StepBegin),
    #[serde(rename = "content.part")]
    ContentPart(ContentPartEvent),
    #[serde(rename = "tool.call")]
    ToolCall(ToolCallEvent),
    #[serde(rename = "tool.result")]
    ToolResult(ToolResultEvent),
    #[serde(rename = "step.end")]
    StepEnd(StepEnd),
}

impl LoopEvent {
    /// The turn id the event names, if any.
    pub fn turn_id(&self) -> Option<&str> {
        match self {
            LoopEvent::StepBegin(e) => e.turn_id.as_deref(),
            LoopEvent::ContentPart(e) => e.turn_id.as_deref(),
            LoopEvent::ToolCall(e) => e.turn_id.as_deref(),
            LoopEvent::ToolResult(_) | LoopEvent::StepEnd(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn events_round_trip_including_unknown_step_end_fields() {
        for v in [
            json!({"type": "step.begin", "uuid": "s1", "turnId": "0", "step": 1}),
            json!({"type": "content.part", "stepUuid": "s1", "part": {"type": "text", "text": "hi"}}),
            json!({"type": "tool.call", "stepUuid": "s1", "toolCallId": "c1", "name": "Read", "args": {"path": "a"}}),
            json!({"type": "tool.result", "toolCallId": "c1", "result": {"output": "data", "isError": false}}),
            json!({"type": "step.end", "uuid": "s1", "finishReason": "tool_use", "llmMs": 12}),
        ] {
            let e: LoopEvent = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&e).unwrap(), v);
        }
    }

    #[test]
    fn numeric_turn_ids_are_read() {
        let e: LoopEvent =
            serde_json::from_value(json!({"type": "step.begin", "uuid": "s", "turnId": 4}))
                .unwrap();
        assert_eq!(e.turn_id(), Some("4"));
    }
}
