//! Small constructors for the journal records the engine writes, so the turn loop reads as a
//! sequence of facts rather than struct literals.

use kimi_protocol::loop_event::{
    ContentPartEvent, StepBegin, StepEnd, ToolCallEvent, ToolOutput, ToolResultEvent,
    ToolResultPayload,
};
use kimi_protocol::ops::TurnEndReason;
use kimi_protocol::record::{
    AppendLoopEvent, AppendMessage, ProfileBind, PromptKind, PromptQueued, PromptRecord,
    PromptSteer, TurnEnded, TurnPrompt,
};
use kimi_protocol::{ContentPart, LoopEvent, Message, Origin, RecordPayload, ToolCall};
use serde_json::{Map, Value};

pub fn message(message: Message) -> RecordPayload {
    RecordPayload::AppendMessage(AppendMessage {
        agent_id: None,
        message,
    })
}

fn event(event: LoopEvent) -> RecordPayload {
    RecordPayload::AppendLoopEvent(AppendLoopEvent {
        agent_id: None,
        event,
    })
}

pub fn step_begin(uuid: &str, turn_id: u64, step: u32) -> RecordPayload {
    event(LoopEvent::StepBegin(StepBegin {
        uuid: uuid.to_owned(),
        turn_id: Some(turn_id.to_string()),
        step: Some(u64::from(step)),
    }))
}

pub fn content_part(step_uuid: &str, turn_id: u64, step: u32, part: ContentPart) -> RecordPayload {
    event(LoopEvent::ContentPart(ContentPartEvent {
        step_uuid: step_uuid.to_owned(),
        part,
        uuid: None,
        turn_id: Some(turn_id.to_string()),
        step: Some(u64::from(step)),
    }))
}

pub fn tool_call(
    step_uuid: &str,
    turn_id: u64,
    step: u32,
    call: &ToolCall,
    args: &Value,
) -> RecordPayload {
    event(LoopEvent::ToolCall(ToolCallEvent {
        step_uuid: step_uuid.to_owned(),
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        args: Some(args.clone()),
        extras: call.extras.clone(),
        uuid: None,
        turn_id: Some(turn_id.to_string()),
        step: Some(u64::from(step)),
        display: None,
    }))
}

pub fn tool_result(
    tool_call_id: &str,
    output: ToolOutput,
    is_error: bool,
    note: Option<String>,
) -> RecordPayload {
    event(LoopEvent::ToolResult(ToolResultEvent {
        tool_call_id: tool_call_id.to_owned(),
        result: ToolResultPayload {
            output,
            is_error: Some(is_error),
            note,
            duration_ms: None,
        },
        parent_uuid: None,
    }))
}

pub fn step_end(uuid: &str, finish_reason: &str, usage: Option<Value>) -> RecordPayload {
    event(LoopEvent::StepEnd(StepEnd {
        uuid: uuid.to_owned(),
        finish_reason: Some(finish_reason.to_owned()),
        usage,
        message_id: None,
        extra: Map::new(),
    }))
}

pub fn turn_prompt(
    input: &[ContentPart],
    origin: &Origin,
    prompt_id: &str,
    turn_id: u64,
) -> RecordPayload {
    RecordPayload::TurnPrompt(TurnPrompt {
        agent_id: None,
        input: input.to_vec(),
        origin: Some(origin.clone()),
        prompt_id: Some(prompt_id.to_owned()),
        turn_id: Some(turn_id),
    })
}

pub fn turn_ended(
    turn_id: u64,
    reason: TurnEndReason,
    error: Option<&str>,
    duration_ms: u64,
) -> RecordPayload {
    RecordPayload::TurnEnded(TurnEnded {
        agent_id: None,
        turn_id,
        reason,
        error: error.map(|e| Value::String(e.to_owned())),
        duration_ms: Some(duration_ms),
        stop_reason: None,
        trace_id: None,
    })
}

/// A `prompt.*` lifecycle record; `reason` is the outcome a `prompt.completed` carries
/// (`completed`, `failed` or `blocked`).
pub fn prompt(kind: PromptKind, prompt_id: &str, reason: Option<TurnEndReason>) -> RecordPayload {
    kind.payload(PromptRecord {
        agent_id: None,
        prompt_id: Some(prompt_id.to_owned()),
        reason: reason.map(|r| r.as_str().to_owned()),
        extra: Map::new(),
    })
}

/// Our own record: a prompt waiting for its turn, so a restart does not lose what the user
/// typed.
pub fn prompt_queued(prompt_id: &str, input: &[ContentPart]) -> RecordPayload {
    RecordPayload::PromptQueued(PromptQueued {
        prompt_id: prompt_id.to_owned(),
        input: input.to_vec(),
    })
}

/// Our own record: a steer accepted into a running turn, durable before it is acknowledged.
pub fn prompt_steer(prompt_id: &str, input: &[ContentPart]) -> RecordPayload {
    RecordPayload::PromptSteer(PromptSteer {
        prompt_id: prompt_id.to_owned(),
        input: input.to_vec(),
    })
}

pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::new_v4().simple())
}

/// `profile.bind`: the profile an agent runs as and its rendered system prompt (reused on
/// resume so the provider's prompt cache stays warm). `file` names a custom agent file.
pub fn profile_bind(
    profile: &str,
    file: Option<&std::path::Path>,
    system_prompt: &str,
) -> RecordPayload {
    RecordPayload::ProfileBind(ProfileBind {
        profile: Some(profile.to_owned()),
        profile_file: file.map(|f| f.display().to_string()),
        system_prompt: Some(system_prompt.to_owned()),
    })
}

/// `interaction.resolved` for the user's answer to the approval of the agent's own call,
/// journaled before the answer reaches the waiting call (see `log::settled_results`).
pub fn approval_resolved(
    request_id: &str,
    tool_call_id: &str,
    tool_name: &str,
    approved: bool,
    feedback: Option<&str>,
) -> RecordPayload {
    let mut response = serde_json::json!({
        "kind": "approval",
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "decision": if approved { "approved" } else { "rejected" },
    });
    if let (Some(feedback), Some(obj)) = (feedback, response.as_object_mut()) {
        obj.insert("feedback".into(), Value::from(feedback));
    }
    RecordPayload::InteractionResolved(kimi_protocol::record::InteractionResolved {
        agent_id: None,
        id: request_id.to_owned(),
        response,
    })
}

/// `interaction.resolved` for the user's answer to AskUserQuestion, as the tool result it
/// becomes, journaled before the asking tool sees it.
pub fn question_resolved(
    request_id: &str,
    resolution: &super::questions::Resolution,
) -> RecordPayload {
    RecordPayload::InteractionResolved(kimi_protocol::record::InteractionResolved {
        agent_id: None,
        id: request_id.to_owned(),
        response: serde_json::json!({
            "kind": "question",
            "questions": resolution.questions,
            "result": resolution.text,
            "isError": resolution.is_error,
        }),
    })
}
