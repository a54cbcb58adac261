//! Anthropic Messages events: message_start, content blocks, message_delta, message_stop.

use std::collections::HashMap;

use kimi_llm::scripted::ScriptEvent;
use kimi_llm::{FinishReason, Usage};
use serde_json::{Value, json};

use super::{Frame, common_frame, message_id, sse};

#[derive(PartialEq)]
enum Open {
    None,
    Text,
    Thinking,
    Tool,
}

struct Renderer {
    frames: Vec<Frame>,
    open: Open,
    next_block: u32,
    tool_blocks: HashMap<u32, u32>,
}

impl Renderer {
    fn event(&mut self, name: &str, data: Value) {
        self.frames.push(sse(Some(name), &data, "\n"));
    }

    fn close(&mut self) {
        if self.open != Open::None {
            let index = self.next_block - 1;
            self.event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            );
            self.open = Open::None;
        }
    }

    fn ensure(&mut self, kind: Open, block: Value) -> u32 {
        if self.open != kind || kind == Open::Tool {
            self.close();
            let index = self.next_block;
            self.next_block += 1;
            self.event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": block}),
            );
            self.open = kind;
        }
        self.next_block - 1
    }

    fn delta(&mut self, index: u32, delta: Value) {
        self.event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
    }
}

pub(super) fn render(events: &[ScriptEvent]) -> Vec<Frame> {
    let usage = events
        .iter()
        .find_map(|e| match e {
            ScriptEvent::Usage { usage } => Some(*usage),
            _ => None,
        })
        .unwrap_or_default();
    let mut r = Renderer {
        frames: Vec::new(),
        open: Open::None,
        next_block: 0,
        tool_blocks: HashMap::new(),
    };
    r.event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": message_id(events, "msg_scripted"), "type": "message", "role": "assistant", "model": "scripted",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {
                "input_tokens": usage.input_other,
                "cache_read_input_tokens": usage.input_cache_read,
                "cache_creation_input_tokens": usage.input_cache_creation,
                "output_tokens": 1,
            },
        }}),
    );
    r.event("ping", json!({"type": "ping"}));
    let mut last_usage = Usage::default();
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
                let i = r.ensure(Open::Text, json!({"type": "text", "text": ""}));
                r.delta(i, json!({"type": "text_delta", "text": text}));
            }
            ScriptEvent::Thinking { text } => {
                let i = r.ensure(Open::Thinking, json!({"type": "thinking", "thinking": ""}));
                r.delta(i, json!({"type": "thinking_delta", "thinking": text}));
            }
            ScriptEvent::ThinkingSignature { signature } => {
                let i = r.ensure(Open::Thinking, json!({"type": "thinking", "thinking": ""}));
                r.delta(
                    i,
                    json!({"type": "signature_delta", "signature": signature}),
                );
                r.close();
            }
            ScriptEvent::ToolCallStart {
                index, id, name, ..
            } => {
                let block = r.ensure(
                    Open::Tool,
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                );
                r.tool_blocks.insert(*index, block);
            }
            ScriptEvent::ToolCallArgs { index, fragment } => {
                let block = r.tool_blocks.get(index).copied().unwrap_or(*index);
                r.delta(
                    block,
                    json!({"type": "input_json_delta", "partial_json": fragment}),
                );
            }
            ScriptEvent::Usage { usage } => last_usage = *usage,
            ScriptEvent::Finish { reason } => {
                r.close();
                let stop = match reason {
                    FinishReason::Stop => "end_turn".to_owned(),
                    FinishReason::ToolCalls => "tool_use".to_owned(),
                    FinishReason::Length => "max_tokens".to_owned(),
                    FinishReason::Filtered => "refusal".to_owned(),
                    FinishReason::Other(other) => other.clone(),
                };
                r.event(
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                           "usage": {"output_tokens": last_usage.output}}),
                );
                r.event("message_stop", json!({"type": "message_stop"}));
            }
            ScriptEvent::StreamError { code, message } => r.event(
                "error",
                json!({"type": "error", "error": {"type": code, "message": message}}),
            ),
            ScriptEvent::MessageId { .. } => {}
            ScriptEvent::Delay { .. } | ScriptEvent::Disconnect | ScriptEvent::Malformed { .. } => {
            }
        }
    }
    r.frames
}
