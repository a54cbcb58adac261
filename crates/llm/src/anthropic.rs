//! Anthropic Messages (`anthropic`): request bodies (thinking budget or adaptive, signatures,
//! `cache_control` on the last cacheable block, tool_use/tool_result blocks, merged user turns)
//! and the SSE decoder.

use kimi_protocol::{ContentPart, Message, Role};
use serde_json::{Map, Value, json};

use crate::config::ResolvedModel;
use crate::delta::{FinishReason, StreamDelta, Usage};
use crate::error::{LlmError, classify_stream_error};
use crate::http::{Decoder, HttpProvider, WireFormat, parse_json};
use crate::request::{ChatRequest, ThinkingEffort};
use crate::sse::SseEvent;
use crate::wire_util::{
    all_tools, arguments_object, join_url, split_data_url, u64_at, wire_messages,
};

const API_VERSION: &str = "2023-06-01";
const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";
/// Redacted thinking has no text, only opaque data; it is stored as a signature with this
/// prefix so it can be sent back as a `redacted_thinking` block.
const REDACTED_PREFIX: &str = "redacted_thinking:";

/// The Anthropic Messages wire format.
pub(crate) struct Anthropic;

pub(crate) type AnthropicProvider = HttpProvider<Anthropic>;

impl WireFormat for Anthropic {
    fn body(model: &ResolvedModel, request: &ChatRequest) -> Value {
        build_body(model, request)
    }

    fn auth(model: &ResolvedModel, request: &ChatRequest) -> Vec<(&'static str, String)> {
        let mut auth = vec![
            ("x-api-key", model.api_key.clone()),
            ("anthropic-version", API_VERSION.to_owned()),
        ];
        if thinking_enabled(request.params.thinking) {
            auth.push(("anthropic-beta", INTERLEAVED_THINKING_BETA.to_owned()));
        }
        auth
    }

    fn url(model: &ResolvedModel) -> String {
        join_url(&model.base_url, "v1/messages")
    }

    fn decoder(model: &ResolvedModel) -> Box<dyn Decoder> {
        Box::new(AnthropicDecoder::new(model.provider_id.clone()))
    }
}

fn thinking_enabled(effort: Option<ThinkingEffort>) -> bool {
    effort.is_some_and(|e| e != ThinkingEffort::Off)
}

/// Default `max_tokens` by model family when neither the request nor `max_output_size` sets it.
fn default_max_tokens(model: &str) -> u32 {
    let m = model.to_ascii_lowercase();
    if m.contains("opus-4") || m.contains("opus_4") {
        32_000
    } else if m.contains("sonnet-4") || m.contains("3-7-sonnet") || m.contains("haiku-4") {
        64_000
    } else if m.contains("3-5") || m.contains("haiku") {
        8_192
    } else {
        32_000
    }
}

/// Claude ≥ 4.6 (or `adaptive_thinking = true`) takes adaptive thinking with an effort.
fn adaptive(model: &ResolvedModel) -> bool {
    if let Some(flag) = model.adaptive_thinking {
        return flag;
    }
    let m = model.model.to_ascii_lowercase();
    [
        "opus-4-6",
        "sonnet-4-6",
        "opus-4-7",
        "sonnet-4-7",
        "opus-5",
        "sonnet-5",
    ]
    .iter()
    .any(|p| m.contains(p))
}

fn media_block(url: &str) -> Value {
    match split_data_url(url) {
        Some((mime, data)) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
        }
        None => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

fn user_blocks(parts: &[ContentPart]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|part| match part {
            // Empty text blocks are rejected ("text content blocks must be non-empty").
            ContentPart::Text { text } if text.is_empty() => None,
            ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentPart::Image(m) => Some(media_block(&m.url)),
            // Anthropic takes neither audio nor video nor user-side thinking.
            ContentPart::Think { .. } | ContentPart::Audio(_) | ContentPart::Video(_) => None,
        })
        .collect()
}

fn assistant_blocks(message: &Message) -> Vec<Value> {
    let mut blocks = Vec::new();
    for part in &message.content {
        match part {
            // Only signed thinking can be sent back; unsigned thinking (from another provider)
            // would be rejected, so it is dropped.
            ContentPart::Think {
                think,
                encrypted: Some(sig),
            } => match sig.strip_prefix(REDACTED_PREFIX) {
                Some(data) if think.is_empty() => {
                    blocks.push(json!({"type": "redacted_thinking", "data": data}))
                }
                _ => blocks.push(json!({"type": "thinking", "thinking": think, "signature": sig})),
            },
            ContentPart::Think {
                encrypted: None, ..
            } => {}
            ContentPart::Text { text } if text.is_empty() => {}
            ContentPart::Text { text } => blocks.push(json!({"type": "text", "text": text})),
            ContentPart::Image(_) | ContentPart::Audio(_) | ContentPart::Video(_) => {}
        }
    }
    for call in &message.tool_calls {
        blocks.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": arguments_object(call.arguments.as_deref()),
        }));
    }
    blocks
}

fn tool_result_block(message: &Message) -> Value {
    let mut content = user_blocks(&message.content);
    if content.is_empty() {
        content.push(json!({"type": "text", "text": "(empty)"}));
    }
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": message.tool_call_id.as_deref().unwrap_or_default(),
        "content": content,
    });
    if message.is_error == Some(true) {
        block["is_error"] = json!(true);
    }
    block
}

/// Messages with consecutive user-side turns (user text and tool results) merged, as the
/// API requires alternating roles.
fn convert_messages<'a>(messages: impl Iterator<Item = &'a Message>) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::User | Role::System => ("user", user_blocks(&message.content)),
            Role::Tool => ("user", vec![tool_result_block(message)]),
            Role::Assistant => ("assistant", assistant_blocks(message)),
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    // The last cacheable block of the conversation carries the cache breakpoint.
    if let Some((_, blocks)) = out.last_mut()
        && let Some(block) = blocks
            .iter_mut()
            .rev()
            .find(|b| !matches!(b.get("type").and_then(Value::as_str), Some("thinking")))
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    out.into_iter()
        .map(|(role, blocks)| json!({"role": role, "content": blocks}))
        .collect()
}

/// The request body. Public (through `kimi_llm::wire`) for the benchmark and tests.
pub fn build_body(model: &ResolvedModel, request: &ChatRequest) -> Value {
    let params = &request.params;
    let max_tokens = params
        .max_tokens
        .or(model.max_output_size)
        .unwrap_or_else(|| default_max_tokens(&model.model))
        .max(1);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.model));
    body.insert("max_tokens".into(), json!(max_tokens));
    if !request.system.is_empty() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]),
        );
    }
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(wire_messages(request))),
    );
    let declared = all_tools(request);
    if !declared.is_empty() {
        let tools = declared
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), json!(true));
    let thinking = params.thinking.filter(|e| *e != ThinkingEffort::Off);
    match thinking {
        Some(effort) if adaptive(model) => {
            body.insert("thinking".into(), json!({"type": "adaptive"}));
            let level = match effort {
                ThinkingEffort::Low => "low",
                ThinkingEffort::On | ThinkingEffort::Medium => "medium",
                ThinkingEffort::High | ThinkingEffort::Xhigh => "high",
                ThinkingEffort::Max | ThinkingEffort::Off => "max",
            };
            body.insert("output_config".into(), json!({"effort": level}));
        }
        Some(effort) => {
            // The budget must stay below max_tokens; 1024 is the API's minimum.
            let budget = params
                .thinking_budget
                .unwrap_or_else(|| effort.budget_tokens())
                .min(max_tokens.saturating_sub(1))
                .max(1024);
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        None => {
            if params.thinking == Some(ThinkingEffort::Off) {
                body.insert("thinking".into(), json!({"type": "disabled"}));
            }
            // Sampling parameters are only allowed without thinking.
            if let Some(t) = params.temperature {
                body.insert("temperature".into(), json!(t));
            }
            if let Some(p) = params.top_p {
                body.insert("top_p".into(), json!(p));
            }
        }
    }
    Value::Object(body)
}

pub(crate) struct AnthropicDecoder {
    provider: String,
    usage: Usage,
    stopped: bool,
}

impl AnthropicDecoder {
    pub(crate) fn new(provider: String) -> Self {
        AnthropicDecoder {
            provider,
            usage: Usage::default(),
            stopped: false,
        }
    }

    /// Usage fields arrive in `message_start` (input, cache) and `message_delta` (cumulative
    /// output, sometimes input again); present fields replace earlier values.
    fn merge_usage(&mut self, usage: &Value) {
        let field = |key: &str| usage.get(key).and_then(Value::as_u64);
        if let Some(v) = field("input_tokens") {
            self.usage.input_other = v;
        }
        if let Some(v) = field("output_tokens") {
            self.usage.output = v;
        }
        if let Some(v) = field("cache_read_input_tokens") {
            self.usage.input_cache_read = v;
        }
        if let Some(v) = field("cache_creation_input_tokens") {
            self.usage.input_cache_creation = v;
        }
    }
}

fn block_index(value: &Value) -> u32 {
    u32::try_from(u64_at(value, "/index")).unwrap_or(u32::MAX)
}

impl Decoder for AnthropicDecoder {
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
        match kind {
            "message_start" => {
                if let Some(id) = value.pointer("/message/id").and_then(Value::as_str) {
                    out.push(StreamDelta::MessageId(id.to_owned()));
                }
                if let Some(usage) = value.pointer("/message/usage") {
                    self.merge_usage(usage);
                }
            }
            "content_block_start" => {
                let block = value.get("content_block").cloned().unwrap_or(Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => out.push(StreamDelta::ToolCallStart {
                        index: block_index(&value),
                        id: block
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        name: block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        extras: None,
                    }),
                    Some("text") => {
                        if let Some(text) = block
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            out.push(StreamDelta::Text(text.to_owned()));
                        }
                    }
                    Some("thinking") => {
                        if let Some(text) = block
                            .get("thinking")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            out.push(StreamDelta::Thinking(text.to_owned()));
                        }
                    }
                    Some("redacted_thinking") => {
                        if let Some(data) = block.get("data").and_then(Value::as_str) {
                            out.push(StreamDelta::ThinkingSignature(format!(
                                "{REDACTED_PREFIX}{data}"
                            )));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = value.get("delta").cloned().unwrap_or(Value::Null);
                let text = |key: &str| {
                    delta
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => out.push(StreamDelta::Text(text("text"))),
                    Some("thinking_delta") => out.push(StreamDelta::Thinking(text("thinking"))),
                    Some("signature_delta") => {
                        out.push(StreamDelta::ThinkingSignature(text("signature")))
                    }
                    Some("input_json_delta") => out.push(StreamDelta::ToolCallArgs {
                        index: block_index(&value),
                        fragment: text("partial_json"),
                    }),
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(usage) = value.get("usage") {
                    self.merge_usage(usage);
                }
                out.push(StreamDelta::Usage(self.usage));
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    out.push(StreamDelta::Finish(match reason {
                        "end_turn" | "stop_sequence" | "pause_turn" => FinishReason::Stop,
                        "tool_use" => FinishReason::ToolCalls,
                        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
                        "refusal" => FinishReason::Filtered,
                        other => FinishReason::Other(other.to_owned()),
                    }));
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let code = value
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let message = value
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                return Err(classify_stream_error(&self.provider, code, message));
            }
            // ping, content_block_stop and future event types carry nothing we need.
            _ => {}
        }
        Ok(())
    }

    fn terminal(&self) -> bool {
        self.stopped
    }

    fn complete(&self) -> bool {
        self.stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accumulate::Accumulator;
    use pretty_assertions::assert_eq;

    #[test]
    fn redacted_thinking_round_trips() {
        let mut decoder = AnthropicDecoder::new("p".into());
        let mut out = Vec::new();
        for data in [
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"opaque"}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hi"}}"#,
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
        let message = acc.finish().message;
        assert_eq!(
            assistant_blocks(&message),
            vec![
                json!({"type": "redacted_thinking", "data": "opaque"}),
                json!({"type": "text", "text": "hi"}),
            ]
        );
    }
}
