//! OpenAI Responses events: response.created, output items, deltas, response.completed.

use std::collections::HashMap;

use kimi_llm::FinishReason;
use kimi_llm::Usage;
use kimi_llm::scripted::ScriptEvent;
use serde_json::{Value, json};

use super::{Frame, common_frame, message_id, sse};

struct Renderer {
    frames: Vec<Frame>,
    next_output: u32,
    message: Option<(String, u32)>,
    reasoning: Option<(String, u32)>,
    calls: HashMap<u32, (String, u32)>,
}

impl Renderer {
    fn event(&mut self, data: Value) {
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned();
        self.frames.push(sse(Some(&name), &data, "\n"));
    }

    fn add_item(&mut self, prefix: &str, item: Value) -> (String, u32) {
        let index = self.next_output;
        self.next_output += 1;
        let id = format!("{prefix}_{index}");
        let mut item = item;
        item["id"] = json!(id);
        self.event(
            json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        );
        (id, index)
    }
}

pub(super) fn render(events: &[ScriptEvent]) -> Vec<Frame> {
    let response_id = message_id(events, "resp_scripted");
    let mut r = Renderer {
        frames: Vec::new(),
        next_output: 0,
        message: None,
        reasoning: None,
        calls: HashMap::new(),
    };
    r.event(json!({"type": "response.created", "response": {"id": response_id, "status": "in_progress"}}));
    let mut usage = Usage::default();
    for event in events {
        if let Some(frame) = common_frame(event) {
            let stop = frame == Frame::Disconnect;
            r.frames.push(frame);
            if stop {
                return r.frames;
            }
            continue;
        }
        match event {
            ScriptEvent::Text { text } => {
                let (id, index) = match r.message.clone() {
                    Some(open) => open,
                    None => {
                        let open = r.add_item(
                            "msg",
                            json!({"type": "message", "role": "assistant", "content": []}),
                        );
                        r.message = Some(open.clone());
                        open
                    }
                };
                r.event(json!({"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": 0, "delta": text}));
            }
            ScriptEvent::Thinking { text } => {
                let (id, index) = match r.reasoning.clone() {
                    Some(open) => open,
                    None => {
                        let open = r.add_item("rs", json!({"type": "reasoning", "summary": []}));
                        r.reasoning = Some(open.clone());
                        open
                    }
                };
                r.event(json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": index, "summary_index": 0, "delta": text}));
            }
            ScriptEvent::ThinkingSignature { signature } => {
                let (id, index) = match r.reasoning.take() {
                    Some(open) => open,
                    None => r.add_item("rs", json!({"type": "reasoning", "summary": []})),
                };
                r.event(json!({"type": "response.output_item.done", "output_index": index,
                               "item": {"type": "reasoning", "id": id, "summary": [], "encrypted_content": signature}}));
            }
            ScriptEvent::ToolCallStart {
                index, id, name, ..
            } => {
                let open = r.add_item(
                    "fc",
                    json!({"type": "function_call", "call_id": id, "name": name, "arguments": ""}),
                );
                r.calls.insert(*index, open);
            }
            ScriptEvent::ToolCallArgs { index, fragment } => {
                let (item_id, output_index) = r
                    .calls
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| (format!("fc_{index}"), *index));
                r.event(json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": output_index, "delta": fragment}));
            }
            ScriptEvent::Usage { usage: u } => usage = *u,
            ScriptEvent::Finish { reason } => {
                let usage_json = json!({
                    "input_tokens": usage.input_other + usage.input_cache_read,
                    "output_tokens": usage.output,
                    "input_tokens_details": {"cached_tokens": usage.input_cache_read},
                    "total_tokens": usage.input_other + usage.input_cache_read + usage.output,
                });
                let (kind, status, details) = match reason {
                    FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Other(_) => {
                        ("response.completed", "completed", Value::Null)
                    }
                    FinishReason::Length => (
                        "response.incomplete",
                        "incomplete",
                        json!({"reason": "max_output_tokens"}),
                    ),
                    FinishReason::Filtered => (
                        "response.incomplete",
                        "incomplete",
                        json!({"reason": "content_filter"}),
                    ),
                };
                r.event(json!({"type": kind, "response": {"id": response_id, "status": status, "incomplete_details": details, "usage": usage_json}}));
            }
            ScriptEvent::StreamError { code, message } => {
                r.event(json!({"type": "error", "code": code, "message": message}));
            }
            ScriptEvent::MessageId { .. } => {}
            ScriptEvent::Delay { .. } | ScriptEvent::Disconnect | ScriptEvent::Malformed { .. } => {
            }
        }
    }
    r.frames
}
