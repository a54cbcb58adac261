//! OpenAI Chat Completions (`openai`) and Kimi (`kimi`, the same protocol plus `thinking`,
//! `max_completion_tokens` and `prompt_cache_key`): request bodies and the SSE decoder.

use std::borrow::Cow;
use std::collections::HashMap;

use kimi_protocol::{ContentPart, Message, Role};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::config::{ProviderType, ResolvedModel};
use crate::delta::{FinishReason, StreamDelta, Usage};
use crate::error::{LlmError, classify_stream_error};
use crate::http::{Decoder, HttpProvider, WireFormat, parse_json};
use crate::request::{ChatRequest, ThinkingEffort};
use crate::sse::SseEvent;
use crate::wire_util::{all_tools, join_url, joined_text, u64_at, wire_messages};

/// The OpenAI Chat Completions wire format (also Kimi's).
pub(crate) struct OpenAiChat;

pub(crate) type OpenAiChatProvider = HttpProvider<OpenAiChat>;

impl WireFormat for OpenAiChat {
    fn body(model: &ResolvedModel, request: &ChatRequest) -> Value {
        build_body(model, request)
    }

    fn auth(model: &ResolvedModel, _request: &ChatRequest) -> Vec<(&'static str, String)> {
        vec![("authorization", format!("Bearer {}", model.api_key))]
    }

    fn url(model: &ResolvedModel) -> String {
        join_url(&model.base_url, "chat/completions")
    }

    fn decoder(model: &ResolvedModel) -> Box<dyn Decoder> {
        Box::new(ChatDecoder::new(model))
    }
}

fn reasoning_key(model: &ResolvedModel) -> &str {
    model
        .reasoning_key
        .as_deref()
        .unwrap_or("reasoning_content")
}

fn media_part(kind: &str, url: &str) -> Value {
    json!({"type": kind, kind: {"url": url}})
}

/// User content: a plain string when it is only text (what every compatible server accepts),
/// otherwise the typed-part array.
fn user_content(parts: &[ContentPart]) -> Value {
    if parts.iter().all(|p| matches!(p, ContentPart::Text { .. })) {
        return Value::String(joined_text(parts));
    }
    let items = parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ContentPart::Think { .. } => None,
            ContentPart::Image(m) => Some(media_part("image_url", &m.url)),
            ContentPart::Audio(m) => Some(media_part("audio_url", &m.url)),
            ContentPart::Video(m) => Some(media_part("video_url", &m.url)),
        })
        .collect();
    Value::Array(items)
}

fn convert_messages(model: &ResolvedModel, request: &ChatRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    // Chat Completions tool messages carry text only; media from tool results goes into one
    // user message after the run of tool messages so call/result adjacency stays intact.
    let mut held_media: Vec<ContentPart> = Vec::new();
    for message in wire_messages(request) {
        if message.role != Role::Tool && !held_media.is_empty() {
            out.push(
                json!({"role": "user", "content": user_content(&std::mem::take(&mut held_media))}),
            );
        }
        out.push(convert_message(model, message, &mut held_media));
    }
    if !held_media.is_empty() {
        out.push(json!({"role": "user", "content": user_content(&held_media)}));
    }
    out
}

fn convert_message(
    model: &ResolvedModel,
    message: &Message,
    held_media: &mut Vec<ContentPart>,
) -> Value {
    match message.role {
        Role::System => json!({"role": "system", "content": joined_text(&message.content)}),
        Role::User => json!({"role": "user", "content": user_content(&message.content)}),
        Role::Assistant => {
            let mut obj = Map::new();
            obj.insert("role".into(), json!("assistant"));
            let text = joined_text(&message.content);
            if !text.is_empty() || message.tool_calls.is_empty() {
                obj.insert("content".into(), Value::String(text));
            }
            let thinking: String = message
                .content
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Think { think, .. } => Some(think.as_str()),
                    ContentPart::Text { .. }
                    | ContentPart::Image(_)
                    | ContentPart::Audio(_)
                    | ContentPart::Video(_) => None,
                })
                .collect();
            if !thinking.is_empty() {
                obj.insert(reasoning_key(model).to_owned(), Value::String(thinking));
            }
            if !message.tool_calls.is_empty() {
                let calls = message
                    .tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": call.arguments.as_deref().filter(|a| !a.is_empty()).unwrap_or("{}"),
                            }
                        })
                    })
                    .collect();
                obj.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(obj)
        }
        Role::Tool => {
            held_media.extend(message.content.iter().filter(|p| p.is_media()).cloned());
            json!({
                "role": "tool",
                "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
                "content": joined_text(&message.content),
            })
        }
    }
}

fn uses_max_completion_tokens(model: &ResolvedModel) -> bool {
    let name = model.model.to_ascii_lowercase();
    model.provider_type == ProviderType::Kimi
        || ["o1", "o3", "o4", "gpt-5"]
            .iter()
            .any(|p| name.starts_with(p))
}

/// The request body. Public (through `kimi_llm::wire`) for the benchmark and tests.
pub fn build_body(model: &ResolvedModel, request: &ChatRequest) -> Value {
    let kimi = model.provider_type == ProviderType::Kimi;
    let mut body = Map::new();
    body.insert("model".into(), json!(model.model));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, request)),
    );
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    let declared = all_tools(request);
    if !declared.is_empty() {
        let tools = declared
            .iter()
            .map(|tool| {
                if kimi && tool.name.starts_with('$') {
                    // Kimi's server-side tools are declared by name only.
                    json!({"type": "builtin_function", "function": {"name": tool.name}})
                } else {
                    json!({"type": "function", "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }})
                }
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    let mut params = request.params.clone();
    if kimi {
        let tuning = model.kimi_tuning;
        params.max_tokens = tuning.max_completion_tokens.or(params.max_tokens);
        params.temperature = tuning.temperature.or(params.temperature);
        params.top_p = tuning.top_p.or(params.top_p);
    }
    if let Some(max) = params.max_tokens {
        let key = if uses_max_completion_tokens(model) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), json!(max));
    }
    if let Some(t) = params.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = params.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(effort) = params.thinking {
        if kimi {
            let mut thinking = Map::new();
            let enabled = effort != ThinkingEffort::Off;
            thinking.insert(
                "type".into(),
                json!(if enabled { "enabled" } else { "disabled" }),
            );
            // Models with `support_efforts` reject unlisted values (surface.md §5.3).
            if enabled && model.support_efforts.iter().any(|e| e == effort.as_str()) {
                thinking.insert("effort".into(), json!(effort.as_str()));
            }
            body.insert("thinking".into(), Value::Object(thinking));
        } else {
            let value = match effort {
                ThinkingEffort::Off => None,
                ThinkingEffort::On | ThinkingEffort::Medium => Some("medium"),
                ThinkingEffort::Low => Some("low"),
                ThinkingEffort::High | ThinkingEffort::Xhigh | ThinkingEffort::Max => Some("high"),
            };
            if let Some(value) = value {
                body.insert("reasoning_effort".into(), json!(value));
            }
        }
    }
    if kimi && let Some(key) = &request.cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    Value::Object(body)
}

pub(crate) struct ChatDecoder {
    provider: String,
    /// A configured `reasoning_key` other than the two read by default.
    custom_reasoning_key: Option<String>,
    /// Raw stream index → (index reported in deltas, id of the call started there).
    started: HashMap<u32, (u32, String)>,
    /// Indexes invented for calls without a usable index start far above real ones.
    next_anonymous_index: u32,
    saw_id: bool,
    finished: bool,
    done: bool,
}

impl ChatDecoder {
    pub(crate) fn new(model: &ResolvedModel) -> Self {
        let custom_reasoning_key = model
            .reasoning_key
            .clone()
            .filter(|k| k != "reasoning_content" && k != "reasoning");
        ChatDecoder {
            provider: model.provider_id.clone(),
            custom_reasoning_key,
            started: HashMap::new(),
            next_anonymous_index: 10_000,
            saw_id: false,
            finished: false,
            done: false,
        }
    }

    fn usage(value: &Value) -> Usage {
        let prompt = u64_at(value, "/prompt_tokens");
        let cached = value
            .pointer("/prompt_tokens_details/cached_tokens")
            .or_else(|| value.get("cached_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Usage {
            input_other: prompt.saturating_sub(cached),
            output: u64_at(value, "/completion_tokens"),
            input_cache_read: cached,
            input_cache_creation: 0,
        }
    }

    fn tool_calls(&mut self, calls: &[Value], out: &mut Vec<StreamDelta>) {
        for call in calls {
            let raw_index = match call.get("index").and_then(Value::as_u64) {
                Some(i) => u32::try_from(i).unwrap_or(u32::MAX),
                None => {
                    self.next_anonymous_index += 1;
                    self.next_anonymous_index
                }
            };
            let name = call.pointer("/function/name").and_then(Value::as_str);
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty());
            // Some compatible servers put every parallel call at index 0 and tell them apart
            // only by id: a new id on a started index is a new call.
            let index = match (self.started.get(&raw_index), id) {
                (Some((_, started_id)), Some(id)) if !started_id.is_empty() && started_id != id => {
                    self.next_anonymous_index += 1;
                    self.next_anonymous_index
                }
                (Some((effective, _)), _) => *effective,
                (None, _) => raw_index,
            };
            let is_new = self
                .started
                .get(&raw_index)
                .is_none_or(|(e, _)| *e != index);
            if is_new && (name.is_some() || id.is_some()) {
                self.started
                    .insert(raw_index, (index, id.unwrap_or_default().to_owned()));
                out.push(StreamDelta::ToolCallStart {
                    index,
                    id: id.unwrap_or_default().to_owned(),
                    name: name.unwrap_or_default().to_owned(),
                    extras: None,
                });
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str)
                && !args.is_empty()
            {
                out.push(StreamDelta::ToolCallArgs {
                    index,
                    fragment: args.to_owned(),
                });
            }
        }
    }
}

fn finish_reason(text: &str) -> FinishReason {
    match text {
        "stop" | "end_turn" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::Filtered,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The shape of one chunk, deserialised with borrowed strings: this is the hot path of every
/// Kimi/OpenAI answer, and a typed parse is several times faster than a `Value` tree.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<ChunkDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    /// Some gateways send `reasoning` as an object; only a string is reasoning text.
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    reasoning_details: Option<Vec<Value>>,
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
}

impl Decoder for ChatDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<StreamDelta>) -> Result<(), LlmError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk<'_> =
            serde_json::from_str(data).map_err(|err| LlmError::MalformedStream {
                provider: self.provider.clone(),
                detail: format!(
                    "{err} in data `{}`",
                    data.chars().take(200).collect::<String>()
                ),
            })?;
        if let Some(error) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            let code = error
                .get("code")
                .or_else(|| error.get("type"))
                .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
                .unwrap_or_default();
            return Err(classify_stream_error(&self.provider, &code, &message));
        }
        if !self.saw_id
            && let Some(id) = chunk.id.as_deref()
            && !id.is_empty()
        {
            self.saw_id = true;
            out.push(StreamDelta::MessageId(id.to_owned()));
        }
        let choice = chunk.choices.into_iter().next();
        let (delta, finish, choice_usage) = match choice {
            Some(c) => (c.delta, c.finish_reason, c.usage),
            None => (None, None, None),
        };
        if let Some(delta) = delta {
            let custom = match &self.custom_reasoning_key {
                Some(key) => parse_json(&self.provider, data)?
                    .pointer(&format!("/choices/0/delta/{key}"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                None => None,
            };
            let thinking = custom
                .or_else(|| delta.reasoning_content.map(Cow::into_owned))
                .or_else(|| {
                    delta
                        .reasoning
                        .as_ref()
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
            if let Some(text) = thinking.filter(|t| !t.is_empty()) {
                out.push(StreamDelta::Thinking(text));
            }
            for text in delta
                .reasoning_details
                .iter()
                .flatten()
                .filter_map(|d| d.get("text").and_then(Value::as_str))
            {
                out.push(StreamDelta::Thinking(text.to_owned()));
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                out.push(StreamDelta::Text(text.into_owned()));
            }
            if let Some(calls) = &delta.tool_calls {
                self.tool_calls(calls, out);
            }
        }
        // Kimi reports usage inside the choice; OpenAI in a final choice-less chunk.
        if let Some(usage) = chunk
            .usage
            .as_ref()
            .filter(|u| u.is_object())
            .or_else(|| choice_usage.as_ref().filter(|u| u.is_object()))
        {
            out.push(StreamDelta::Usage(Self::usage(usage)));
        }
        if let Some(reason) = finish {
            self.finished = true;
            out.push(StreamDelta::Finish(finish_reason(&reason)));
        }
        Ok(())
    }

    fn terminal(&self) -> bool {
        self.done
    }

    fn complete(&self) -> bool {
        // Some compatible servers omit `[DONE]`; a finish reason is then the end marker.
        self.done || self.finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accumulate::Accumulator;
    use kimi_protocol::ToolCall;
    use pretty_assertions::assert_eq;

    #[test]
    fn parallel_calls_reusing_index_zero_stay_separate() {
        let model = crate::config::tests::test_model(ProviderType::OpenAi, "http://x/v1", "m");
        let mut decoder = ChatDecoder::new(&model);
        let mut out = Vec::new();
        for data in [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"Read","arguments":"{\"p\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"Bash","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
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
        assert_eq!(
            acc.finish().message.tool_calls,
            vec![
                ToolCall::new("a", "Read", Some(r#"{"p":1}"#.into())),
                ToolCall::new("b", "Bash", Some("{}".into())),
            ]
        );
    }

    #[test]
    fn reasoning_comes_from_any_known_or_configured_key() {
        let mut model = crate::config::tests::test_model(ProviderType::OpenAi, "http://x/v1", "m");
        model.reasoning_key = Some("thoughts".into());
        let mut decoder = ChatDecoder::new(&model);
        let mut out = Vec::new();
        for data in [
            r#"{"choices":[{"index":0,"delta":{"thoughts":"a"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"b"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":"c"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":{"effort":"high"},"content":"d"}}]}"#,
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
        assert_eq!(
            out,
            vec![
                StreamDelta::Thinking("a".into()),
                StreamDelta::Thinking("b".into()),
                StreamDelta::Thinking("c".into()),
                StreamDelta::Text("d".into()),
            ]
        );
    }
}
