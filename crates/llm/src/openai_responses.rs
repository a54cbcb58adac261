//! OpenAI Responses (`openai_responses`): input items (messages, reasoning, function_call,
//! function_call_output) and the typed SSE event decoder.

use std::collections::{HashMap, HashSet};

use kimi_protocol::{ContentPart, Message, Role};
use serde_json::{Map, Value, json};

use crate::config::ResolvedModel;
use crate::delta::{FinishReason, StreamDelta, Usage};
use crate::error::{LlmError, classify_stream_error};
use crate::http::{Decoder, HttpProvider, WireFormat, parse_json};
use crate::request::{ChatRequest, ThinkingEffort};
use crate::sse::SseEvent;
use crate::wire_util::{all_tools, join_url, joined_text, u64_at, wire_messages};

/// The OpenAI Responses wire format.
pub(crate) struct OpenAiResponses;

pub(crate) type ResponsesProvider = HttpProvider<OpenAiResponses>;

impl WireFormat for OpenAiResponses {
    fn body(model: &ResolvedModel, request: &ChatRequest) -> Value {
        build_body(model, request)
    }

    fn auth(model: &ResolvedModel, _request: &ChatRequest) -> Vec<(&'static str, String)> {
        vec![("authorization", format!("Bearer {}", model.api_key))]
    }

    fn url(model: &ResolvedModel) -> String {
        join_url(&model.base_url, "responses")
    }

    fn decoder(model: &ResolvedModel) -> Box<dyn Decoder> {
        Box::new(ResponsesDecoder::new(model.provider_id.clone()))
    }
}

fn input_content(parts: &[ContentPart]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(json!({"type": "input_text", "text": text})),
            ContentPart::Image(m) => Some(json!({"type": "input_image", "image_url": m.url})),
            ContentPart::Think { .. } | ContentPart::Audio(_) | ContentPart::Video(_) => None,
        })
        .collect()
}

fn push_message(out: &mut Vec<Value>, message: &Message) {
    match message.role {
        Role::System | Role::User => {
            let role = if message.role == Role::System {
                "system"
            } else {
                "user"
            };
            let content = input_content(&message.content);
            if !content.is_empty() {
                out.push(json!({"role": role, "content": content}));
            }
        }
        Role::Assistant => {
            for part in &message.content {
                match part {
                    ContentPart::Think { think, encrypted } => {
                        // Reasoning can only be replayed with its encrypted content.
                        if let Some(enc) = encrypted {
                            let summary: Vec<Value> = if think.is_empty() {
                                Vec::new()
                            } else {
                                vec![json!({"type": "summary_text", "text": think})]
                            };
                            out.push(json!({"type": "reasoning", "summary": summary, "encrypted_content": enc}));
                        }
                    }
                    ContentPart::Text { text } if !text.is_empty() => out.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    })),
                    ContentPart::Text { .. }
                    | ContentPart::Image(_)
                    | ContentPart::Audio(_)
                    | ContentPart::Video(_) => {}
                }
            }
            for call in &message.tool_calls {
                out.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments.as_deref().filter(|a| !a.is_empty()).unwrap_or("{}"),
                }));
            }
        }
        Role::Tool => {
            let call_id = message.tool_call_id.as_deref().unwrap_or_default();
            let has_media = message.content.iter().any(ContentPart::is_media);
            let output = if has_media {
                Value::Array(input_content(&message.content))
            } else {
                Value::String(joined_text(&message.content))
            };
            out.push(json!({"type": "function_call_output", "call_id": call_id, "output": output}));
        }
    }
}

/// The request body. Public (through `kimi_llm::wire`) for the benchmark and tests.
pub fn build_body(model: &ResolvedModel, request: &ChatRequest) -> Value {
    let mut input = Vec::with_capacity(request.messages.len());
    for message in wire_messages(request) {
        push_message(&mut input, message);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model.model));
    if !request.system.is_empty() {
        body.insert("instructions".into(), json!(request.system));
    }
    body.insert("input".into(), Value::Array(input));
    body.insert("stream".into(), json!(true));
    // Stateless: history is sent every time, so nothing needs to be stored server-side, and
    // encrypted reasoning is requested so it can be replayed.
    body.insert("store".into(), json!(false));
    let declared = all_tools(request);
    if !declared.is_empty() {
        let tools = declared
            .iter()
            .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    let params = &request.params;
    if let Some(max) = params.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(t) = params.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = params.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(effort) = params.thinking.filter(|e| *e != ThinkingEffort::Off) {
        let level = match effort {
            ThinkingEffort::Low => "low",
            ThinkingEffort::On | ThinkingEffort::Medium | ThinkingEffort::Off => "medium",
            ThinkingEffort::High | ThinkingEffort::Xhigh | ThinkingEffort::Max => "high",
        };
        body.insert(
            "reasoning".into(),
            json!({"effort": level, "summary": "auto"}),
        );
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    Value::Object(body)
}

pub(crate) struct ResponsesDecoder {
    provider: String,
    /// Function-call item id → stream index (the item's `output_index`).
    calls: HashMap<String, u32>,
    /// Calls whose arguments arrived (as deltas or with the added item); a call that only
    /// gets its arguments in `output_item.done` takes them from there.
    with_args: HashSet<u32>,
    saw_call: bool,
    completed: bool,
}

impl ResponsesDecoder {
    pub(crate) fn new(provider: String) -> Self {
        ResponsesDecoder {
            provider,
            calls: HashMap::new(),
            with_args: HashSet::new(),
            saw_call: false,
            completed: false,
        }
    }

    fn index_of(&self, value: &Value) -> u32 {
        if let Some(index) = value
            .get("item_id")
            .and_then(Value::as_str)
            .and_then(|id| self.calls.get(id))
        {
            return *index;
        }
        u32::try_from(u64_at(value, "/output_index")).unwrap_or(u32::MAX)
    }

    fn usage(response: &Value) -> Option<Usage> {
        let usage = response.get("usage").filter(|u| u.is_object())?;
        let input = u64_at(usage, "/input_tokens");
        let cached = u64_at(usage, "/input_tokens_details/cached_tokens");
        Some(Usage {
            input_other: input.saturating_sub(cached),
            output: u64_at(usage, "/output_tokens"),
            input_cache_read: cached,
            input_cache_creation: 0,
        })
    }
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<StreamDelta>) -> Result<(), LlmError> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let value = parse_json(&self.provider, &event.data)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match kind {
            "response.created" => {
                if let Some(id) = value.pointer("/response/id").and_then(Value::as_str) {
                    out.push(StreamDelta::MessageId(id.to_owned()));
                }
            }
            "response.output_item.added" => {
                let item = value.get("item").cloned().unwrap_or(Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let index = u32::try_from(u64_at(&value, "/output_index")).unwrap_or(u32::MAX);
                    if let Some(id) = item.get("id").and_then(Value::as_str) {
                        self.calls.insert(id.to_owned(), index);
                    }
                    self.saw_call = true;
                    out.push(StreamDelta::ToolCallStart {
                        index,
                        id: item
                            .get("call_id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        name: item
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        extras: None,
                    });
                    if let Some(args) = item
                        .get("arguments")
                        .and_then(Value::as_str)
                        .filter(|a| !a.is_empty())
                    {
                        self.with_args.insert(index);
                        out.push(StreamDelta::ToolCallArgs {
                            index,
                            fragment: args.to_owned(),
                        });
                    }
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                out.push(StreamDelta::Text(text("delta")))
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.push(StreamDelta::Thinking(text("delta")));
            }
            "response.function_call_arguments.delta" => {
                let index = self.index_of(&value);
                self.with_args.insert(index);
                out.push(StreamDelta::ToolCallArgs {
                    index,
                    fragment: text("delta"),
                });
            }
            "response.output_item.done" => {
                let item = value.get("item").cloned().unwrap_or(Value::Null);
                match item.get("type").and_then(Value::as_str) {
                    Some("reasoning") => {
                        if let Some(enc) = item.get("encrypted_content").and_then(Value::as_str) {
                            out.push(StreamDelta::ThinkingSignature(enc.to_owned()));
                        }
                    }
                    Some("function_call") => {
                        let index =
                            u32::try_from(u64_at(&value, "/output_index")).unwrap_or(u32::MAX);
                        if !self.with_args.contains(&index)
                            && let Some(args) = item
                                .get("arguments")
                                .and_then(Value::as_str)
                                .filter(|a| !a.is_empty())
                        {
                            self.with_args.insert(index);
                            out.push(StreamDelta::ToolCallArgs {
                                index,
                                fragment: args.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = value.get("response").cloned().unwrap_or(Value::Null);
                if let Some(usage) = Self::usage(&response) {
                    out.push(StreamDelta::Usage(usage));
                }
                let reason = if kind == "response.incomplete" {
                    match response
                        .pointer("/incomplete_details/reason")
                        .and_then(Value::as_str)
                    {
                        Some("content_filter") => FinishReason::Filtered,
                        Some("max_output_tokens") | None => FinishReason::Length,
                        Some(other) => FinishReason::Other(other.to_owned()),
                    }
                } else if self.saw_call {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                out.push(StreamDelta::Finish(reason));
                self.completed = true;
            }
            "response.failed" | "error" => {
                let error = value
                    .pointer("/response/error")
                    .or_else(|| value.get("error"))
                    .cloned()
                    .unwrap_or_else(|| value.clone());
                let code = error.get("code").and_then(Value::as_str).unwrap_or(kind);
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                return Err(classify_stream_error(&self.provider, code, message));
            }
            _ => {}
        }
        Ok(())
    }

    fn terminal(&self) -> bool {
        self.completed
    }

    fn complete(&self) -> bool {
        self.completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accumulate::Accumulator;
    use kimi_protocol::ToolCall;
    use pretty_assertions::assert_eq;

    #[test]
    fn arguments_only_in_the_done_item_are_kept() {
        let mut decoder = ResponsesDecoder::new("p".into());
        let mut out = Vec::new();
        for data in [
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_0","call_id":"c1","name":"Read","arguments":""}}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_0","call_id":"c1","name":"Read","arguments":"{\"p\":1}"}}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"c2","name":"Bash","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{}"}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"c2","name":"Bash","arguments":"{}"}}"#,
            r#"{"type":"response.completed","response":{"id":"r"}}"#,
        ] {
            decoder
                .event(
                    SseEvent {
                        event: None,
                        data: data.into(),
                    },
                    &mut out,
                )
                .unwrap();
        }
        let mut acc = Accumulator::new();
        out.into_iter().for_each(|d| acc.push(d));
        let done = acc.finish();
        assert_eq!(
            done.message.tool_calls,
            vec![
                ToolCall::new("c1", "Read", Some(r#"{"p":1}"#.into())),
                ToolCall::new("c2", "Bash", Some("{}".into())),
            ]
        );
        assert_eq!(done.finish_reason, Some(FinishReason::ToolCalls));
    }
}
