//! Event frames as the WebSocket sends them (`{type, seq, epoch, volatile?, offset?,
//! session_id, timestamp, payload}`), the engine events under the reference's names, and the
//! per-session buffer of durable frames that subscribers replay from a cursor.

use std::collections::VecDeque;
use std::sync::Arc;

use kimi_protocol::ContentPart;
use kimi_protocol::ops::Event;
use serde::Serialize;
use serde_json::{Value, json};

/// Durable frames kept per session for replay (the reference's `max_event_buffer_size`).
pub const MAX_EVENT_BUFFER: usize = 1000;

/// One event frame.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frame {
    #[serde(rename = "type")]
    pub kind: String,
    pub seq: u64,
    pub epoch: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub volatile: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    pub session_id: String,
    pub timestamp: String,
    pub payload: Value,
}

/// The current time as ISO 8601 with milliseconds.
pub fn timestamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Why a cursor cannot be served from the buffer: the client must refetch and resubscribe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resync {
    pub reason: String,
}

/// Sequence numbers and the bounded buffer of durable frames of one session.
#[derive(Debug)]
pub struct EventBuffer {
    last_seq: u64,
    frames: VecDeque<Arc<Frame>>,
    capacity: usize,
}

impl EventBuffer {
    pub fn new(capacity: usize) -> Self {
        EventBuffer {
            last_seq: 0,
            frames: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Stamp a frame: durable frames get the next `seq` and are kept; volatile ones carry the
    /// last durable `seq` and are not.
    pub fn stamp(&mut self, mut frame: Frame) -> Arc<Frame> {
        if frame.volatile {
            frame.seq = self.last_seq;
            return Arc::new(frame);
        }
        self.last_seq += 1;
        frame.seq = self.last_seq;
        let frame = Arc::new(frame);
        if self.frames.len() == self.capacity {
            self.frames.pop_front();
        }
        self.frames.push_back(frame.clone());
        frame
    }

    /// The durable frames after `seq`, or why they cannot be replayed.
    pub fn replay_after(&self, seq: u64) -> Result<Vec<Arc<Frame>>, Resync> {
        if seq > self.last_seq {
            return Err(Resync {
                reason: format!(
                    "cursor seq {seq} is ahead of the session's last seq {}",
                    self.last_seq
                ),
            });
        }
        let oldest = self.frames.front().map_or(self.last_seq + 1, |f| f.seq);
        if seq + 1 < oldest {
            return Err(Resync {
                reason: format!(
                    "more than {} events were missed since seq {seq}",
                    self.capacity
                ),
            });
        }
        Ok(self
            .frames
            .iter()
            .filter(|f| f.seq > seq)
            .cloned()
            .collect())
    }
}

/// Text of content parts (tool output), joined.
pub fn text_of(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(ContentPart::as_text)
        .collect::<Vec<_>>()
        .join("")
}

/// Tool-call arguments as JSON when they parse, else the raw string.
pub fn arguments(raw: Option<&str>) -> Value {
    match raw {
        None => json!({}),
        Some(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::from(text)),
    }
}

/// The frame type, payload and volatility of an engine event; `None` for events handled
/// elsewhere (approvals carry server state and are built by the session).
pub fn convert(event: &Event) -> Option<(&'static str, Value, bool)> {
    let durable = |kind, payload| Some((kind, payload, false));
    let volatile = |kind, payload| Some((kind, payload, true));
    match event {
        Event::TurnStarted { turn_id } => durable("turn.started", json!({"turn_id": turn_id})),
        Event::TurnEnded {
            turn_id,
            reason,
            error,
        } => durable(
            "turn.ended",
            json!({"turn_id": turn_id, "reason": reason, "error": error}),
        ),
        Event::StepStarted { turn_id, step } => durable(
            "turn.step.started",
            json!({"turn_id": turn_id, "step": step}),
        ),
        Event::StepCompleted {
            turn_id,
            step,
            finish_reason,
        } => durable(
            "turn.step.completed",
            json!({"turn_id": turn_id, "step": step, "finish_reason": finish_reason}),
        ),
        Event::StepRetrying { .. } => durable("turn.step.retrying", payload_of(event)),
        Event::AssistantDelta { text } => volatile("assistant.delta", json!({"text": text})),
        Event::ThinkingDelta { text } => volatile("thinking.delta", json!({"text": text})),
        Event::AssistantMessage { message } => durable(
            "assistant.message",
            json!({
                "text": text_of(&message.content),
                "tool_calls": message.tool_calls.iter().map(|c| json!({
                    "tool_call_id": c.id, "tool_name": c.name,
                    "arguments": arguments(c.arguments.as_deref()),
                })).collect::<Vec<_>>(),
            }),
        ),
        Event::ToolStarted { call } => durable(
            "tool.call.started",
            json!({
                "tool_call_id": call.id,
                "tool_name": call.name,
                "arguments": arguments(call.arguments.as_deref()),
            }),
        ),
        Event::ToolDiff { .. } => durable("tool.diff", payload_of(event)),
        Event::ToolProgress { tool_call_id, text } => volatile(
            "tool.progress",
            json!({"tool_call_id": tool_call_id, "text": text}),
        ),
        Event::ToolResult {
            tool_call_id,
            output,
            is_error,
        } => durable(
            "tool.result",
            json!({"tool_call_id": tool_call_id, "output": text_of(output), "is_error": is_error}),
        ),
        Event::ApprovalRequested(_) => None,
        Event::QuestionRequested { .. } => durable("event.question.requested", payload_of(event)),
        Event::CompactionStarted { .. } => durable("compaction.started", payload_of(event)),
        Event::CompactionCompleted { .. } => durable("compaction.completed", payload_of(event)),
        Event::CompactionCancelled { .. } => durable("compaction.cancelled", payload_of(event)),
        Event::PromptQueued { .. } => durable("prompt.queued", payload_of(event)),
        Event::PromptSteered { .. } => durable("prompt.steered", payload_of(event)),
        Event::SteerAccepted { .. } => durable("prompt.steer_accepted", payload_of(event)),
        // Confirms a REST answer (see `Live::resolve`); the answer's own frame says the rest.
        Event::AnswerRecorded { .. } | Event::PromptRecorded { .. } => None,
        Event::ContextUndone { .. } => durable("context.undone", payload_of(event)),
        Event::Rewound { .. } => durable("rewind.done", payload_of(event)),
        Event::Usage { .. } => volatile("usage", payload_of(event)),
        Event::Status { status } => volatile("agent.status.updated", json!({"status": status})),
        Event::Warning { message } => durable("warning", json!({"message": message})),
        Event::Error { message } => durable("error", json!({"message": message})),
        Event::SwarmMode { .. } => volatile("swarm_mode.updated", payload_of(event)),
        Event::SessionForked { .. } => durable("session.forked", payload_of(event)),
        Event::ModelChanged { .. } => durable("model.changed", payload_of(event)),
        Event::BtwAnswered { .. } => volatile("btw.answered", payload_of(event)),
        Event::GoalUpdated { .. } => durable("goal.updated", payload_of(event)),
        Event::FlowUpdated { update } => durable(
            "flow.updated",
            json!({"update": update, "text": update.describe()}),
        ),
        Event::GoalQueue { .. } => volatile("goal.queue", payload_of(event)),
        Event::TodosUpdated { .. } => durable("todo.updated", payload_of(event)),
        // Answers to host ops, which this server's clients do not send (sessions are listed
        // over REST).
        Event::SessionList { .. }
        | Event::TaskList { .. }
        | Event::TaskStopped { .. }
        | Event::TaskOutput { .. }
        | Event::ShellOutput { .. }
        | Event::ShellStarted { .. }
        | Event::ShellBackgrounded { .. }
        | Event::McpStatus { .. }
        | Event::McpSignIn { .. }
        | Event::McpServerDone { .. }
        | Event::SessionTitle { .. } => None,
    }
}

/// The event's own JSON without its `type` tag.
fn payload_of(event: &Event) -> Value {
    let mut value = serde_json::to_value(event).unwrap_or(Value::Null);
    if let Some(map) = value.as_object_mut() {
        map.remove("type");
    }
    value
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use kimi_protocol::ops::TurnEndReason;
    use pretty_assertions::assert_eq;

    fn frame(kind: &str, volatile: bool) -> Frame {
        Frame {
            kind: kind.to_owned(),
            seq: 0,
            epoch: "e1".to_owned(),
            volatile,
            offset: None,
            session_id: "s".to_owned(),
            timestamp: timestamp(),
            payload: Value::Null,
        }
    }

    #[test]
    fn durable_frames_get_increasing_seq_and_volatile_ones_are_not_kept() {
        let mut buffer = EventBuffer::new(10);
        assert_eq!(buffer.stamp(frame("turn.started", false)).seq, 1);
        assert_eq!(buffer.stamp(frame("assistant.delta", true)).seq, 1);
        assert_eq!(buffer.stamp(frame("turn.ended", false)).seq, 2);
        let all = buffer.replay_after(0).unwrap();
        let kinds: Vec<&str> = all.iter().map(|f| f.kind.as_str()).collect();
        assert_eq!(kinds, ["turn.started", "turn.ended"]);
        let tail = buffer.replay_after(1).unwrap();
        assert_eq!(tail.len(), 1);
        assert_eq!(tail[0].seq, 2);
        assert!(buffer.replay_after(2).unwrap().is_empty());
        assert!(buffer.replay_after(3).is_err(), "a cursor from the future");
    }

    #[test]
    fn falling_behind_the_bounded_buffer_requires_a_resync() {
        let mut buffer = EventBuffer::new(MAX_EVENT_BUFFER);
        for _ in 0..MAX_EVENT_BUFFER + 5 {
            buffer.stamp(frame("tool.result", false));
        }
        assert_eq!(buffer.last_seq(), 1005);
        // Seq 6..=1005 are kept: a cursor at 5 still replays everything after it.
        assert_eq!(buffer.replay_after(5).unwrap().len(), MAX_EVENT_BUFFER);
        let err = buffer.replay_after(4).unwrap_err();
        assert!(err.reason.contains("more than 1000"), "{err:?}");
    }

    #[test]
    fn engine_events_take_the_reference_names() {
        let (kind, payload, volatile) = convert(&Event::TurnEnded {
            turn_id: 2,
            reason: TurnEndReason::Completed,
            error: None,
        })
        .unwrap();
        assert_eq!((kind, volatile), ("turn.ended", false));
        assert_eq!(payload["reason"], "completed");
        let (kind, _, volatile) = convert(&Event::AssistantDelta { text: "hi".into() }).unwrap();
        assert_eq!((kind, volatile), ("assistant.delta", true));
        let (kind, payload, _) = convert(&Event::ToolStarted {
            call: kimi_protocol::ToolCall {
                kind: "function".into(),
                id: "c1".into(),
                name: "Bash".into(),
                arguments: Some(r#"{"command":"ls"}"#.into()),
                extras: None,
            },
        })
        .unwrap();
        assert_eq!(kind, "tool.call.started");
        assert_eq!(payload["arguments"]["command"], "ls");
        let (kind, payload, _) = convert(&Event::ContextUndone { turns: 1 }).unwrap();
        assert_eq!(kind, "context.undone");
        assert_eq!(payload, json!({"turns": 1}));
    }
}
