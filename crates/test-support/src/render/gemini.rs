//! Gemini `streamGenerateContent?alt=sse`: one GenerateContentResponse per `data:` line, CRLF
//! line ends (as Google's servers send), function calls whole in the final chunk.

use kimi_llm::scripted::ScriptEvent;
use kimi_llm::{FinishReason, Usage};
use serde_json::{Value, json};

use super::{Frame, common_frame, message_id, sse};

pub(super) fn render(events: &[ScriptEvent]) -> Vec<Frame> {
    let response_id = message_id(events, "gemini-scripted");
    let chunk = |parts: Vec<Value>| {
        sse(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "responseId": response_id}),
            "\r\n",
        )
    };
    let mut frames = Vec::new();
    // Function calls arrive whole in Gemini, so fragments are collected until the finish.
    let mut calls: Vec<(u32, String, String, Option<Value>)> = Vec::new();
    let mut usage = Usage::default();
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
            ScriptEvent::Text { text } => frames.push(chunk(vec![json!({"text": text})])),
            ScriptEvent::Thinking { text } => {
                frames.push(chunk(vec![json!({"text": text, "thought": true})]))
            }
            ScriptEvent::ThinkingSignature { signature } => {
                frames.push(chunk(vec![
                    json!({"text": "", "thought": true, "thoughtSignature": signature}),
                ]));
            }
            ScriptEvent::ToolCallStart {
                index,
                name,
                extras,
                ..
            } => {
                calls.push((*index, name.clone(), String::new(), extras.clone()));
            }
            ScriptEvent::ToolCallArgs { index, fragment } => {
                if let Some(call) = calls.iter_mut().find(|c| c.0 == *index) {
                    call.2.push_str(fragment);
                }
            }
            ScriptEvent::Usage { usage: u } => usage = *u,
            ScriptEvent::Finish { reason } => {
                let parts: Vec<Value> = calls
                    .drain(..)
                    .map(|(_, name, args, extras)| {
                        let args: Value = serde_json::from_str(&args).unwrap_or_else(|_| json!({}));
                        let mut part = json!({"functionCall": {"name": name, "args": args}});
                        if let Some(sig) = extras.as_ref().and_then(|e| e.get("thought_signature"))
                        {
                            part["thoughtSignature"] = sig.clone();
                        }
                        part
                    })
                    .collect();
                let finish = match reason {
                    FinishReason::Stop | FinishReason::ToolCalls => "STOP".to_owned(),
                    FinishReason::Length => "MAX_TOKENS".to_owned(),
                    FinishReason::Filtered => "SAFETY".to_owned(),
                    FinishReason::Other(other) => other.clone(),
                };
                let mut candidate = json!({"finishReason": finish, "index": 0});
                if !parts.is_empty() {
                    candidate["content"] = json!({"role": "model", "parts": parts});
                }
                frames.push(sse(
                    None,
                    &json!({
                        "candidates": [candidate],
                        "usageMetadata": {
                            "promptTokenCount": usage.input_other + usage.input_cache_read,
                            "cachedContentTokenCount": usage.input_cache_read,
                            "candidatesTokenCount": usage.output,
                            "totalTokenCount": usage.input_other + usage.input_cache_read + usage.output,
                        },
                        "responseId": response_id,
                    }),
                    "\r\n",
                ));
            }
            ScriptEvent::StreamError { code, message } => frames.push(sse(
                None,
                &json!({"error": {"code": 500, "message": message, "status": code}}),
                "\r\n",
            )),
            ScriptEvent::MessageId { .. } => {}
            ScriptEvent::Delay { .. } | ScriptEvent::Disconnect | ScriptEvent::Malformed { .. } => {
            }
        }
    }
    frames
}
