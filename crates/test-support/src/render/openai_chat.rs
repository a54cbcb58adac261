//! OpenAI Chat Completions / Kimi chunks: `data: {chat.completion.chunk}` … `data: [DONE]`.

use kimi_llm::scripted::ScriptEvent;
use serde_json::{Value, json};

use super::{Frame, common_frame, message_id, openai_finish, sse};

pub(super) fn render(events: &[ScriptEvent]) -> Vec<Frame> {
    let id = message_id(events, "chatcmpl-scripted");
    let chunk = |delta: Value, finish: Value| {
        sse(
            None,
            &json!({
                "id": id, "object": "chat.completion.chunk", "created": 0, "model": "scripted",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }),
            "\n",
        )
    };
    let mut frames = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut finished = false;
    for event in events {
        if let Some(frame) = common_frame(event) {
            let stop = frame == Frame::Disconnect;
            frames.push(frame);
            if stop {
                return frames;
            }
            continue;
        }
        match event {
            ScriptEvent::Text { text } => frames.push(chunk(json!({"content": text}), Value::Null)),
            ScriptEvent::Thinking { text } => frames.push(chunk(json!({"reasoning_content": text}), Value::Null)),
            ScriptEvent::ToolCallStart { index, id, name, .. } => frames.push(chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            )),
            ScriptEvent::ToolCallArgs { index, fragment } => frames.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                Value::Null,
            )),
            ScriptEvent::Usage { usage } => frames.push(sse(
                None,
                &json!({
                    "id": id, "object": "chat.completion.chunk", "created": 0, "model": "scripted", "choices": [],
                    "usage": {
                        "prompt_tokens": usage.input_other + usage.input_cache_read,
                        "completion_tokens": usage.output,
                        "total_tokens": usage.input_other + usage.input_cache_read + usage.output,
                        "prompt_tokens_details": {"cached_tokens": usage.input_cache_read},
                    },
                }),
                "\n",
            )),
            ScriptEvent::Finish { reason } => {
                finished = true;
                frames.push(chunk(json!({}), json!(openai_finish(reason))));
            }
            ScriptEvent::StreamError { code, message } => frames.push(sse(
                None,
                &json!({"error": {"message": message, "type": code, "code": code}}),
                "\n",
            )),
            // Chat Completions has no thinking signatures; ids are in every chunk.
            ScriptEvent::ThinkingSignature { .. } | ScriptEvent::MessageId { .. } => {}
            ScriptEvent::Delay { .. } | ScriptEvent::Disconnect | ScriptEvent::Malformed { .. } => {}
        }
    }
    if finished {
        frames.push(Frame::Bytes(b"data: [DONE]\n\n".to_vec()));
    }
    frames
}
