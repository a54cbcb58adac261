//! Gemini (`google-genai`) and Vertex AI (`vertexai`) `streamGenerateContent`: contents with
//! function calls/responses, thought signatures carried in `ToolCall.extras`, thinking config,
//! and the SSE decoder (one `GenerateContentResponse` per event, no end marker besides
//! `finishReason`).

use std::collections::HashMap;

use kimi_protocol::{ContentPart, Message, Role};
use serde_json::{Map, Value, json};

use crate::config::{ProviderType, ResolvedModel};
use crate::delta::{FinishReason, StreamDelta, Usage};
use crate::error::{LlmError, classify_stream_error};
use crate::http::{Decoder, HttpProvider, WireFormat, parse_json};
use crate::request::{ChatRequest, ThinkingEffort};
use crate::sse::SseEvent;
use crate::wire_util::{
    all_tools, arguments_object, join_url, joined_text, split_data_url, u64_at, wire_messages,
};

/// Key under which a Gemini thought signature travels in `ToolCall.extras`.
pub const THOUGHT_SIGNATURE_KEY: &str = "thought_signature";

/// The Gemini / Vertex AI `streamGenerateContent` wire format.
pub(crate) struct Gemini;

pub(crate) type GeminiProvider = HttpProvider<Gemini>;

impl WireFormat for Gemini {
    fn body(model: &ResolvedModel, request: &ChatRequest) -> Value {
        build_body(model, request)
    }

    fn auth(model: &ResolvedModel, _request: &ChatRequest) -> Vec<(&'static str, String)> {
        vec![("x-goog-api-key", model.api_key.clone())]
    }

    fn url(m: &ResolvedModel) -> String {
        let path = match (m.provider_type, &m.vertex_project, &m.vertex_location) {
            (ProviderType::VertexAi, Some(project), Some(location)) => format!(
                "v1/projects/{project}/locations/{location}/publishers/google/models/{}:streamGenerateContent?alt=sse",
                m.model
            ),
            (ProviderType::VertexAi, _, _) => {
                format!(
                    "v1/publishers/google/models/{}:streamGenerateContent?alt=sse",
                    m.model
                )
            }
            _ => format!("v1beta/models/{}:streamGenerateContent?alt=sse", m.model),
        };
        join_url(&m.base_url, &path)
    }

    fn decoder(model: &ResolvedModel) -> Box<dyn Decoder> {
        Box::new(GeminiDecoder::new(model.provider_id.clone()))
    }
}

fn media_part(url: &str) -> Value {
    match split_data_url(url) {
        Some((mime, data)) => json!({"inlineData": {"mimeType": mime, "data": data}}),
        None => json!({"fileData": {"fileUri": url}}),
    }
}

fn user_parts(parts: &[ContentPart]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } if text.is_empty() => None,
            ContentPart::Text { text } => Some(json!({"text": text})),
            ContentPart::Image(m) | ContentPart::Audio(m) | ContentPart::Video(m) => {
                Some(media_part(&m.url))
            }
            ContentPart::Think { .. } => None,
        })
        .collect()
}

fn model_parts(message: &Message) -> Vec<Value> {
    let mut parts = Vec::new();
    for part in &message.content {
        match part {
            ContentPart::Think {
                think,
                encrypted: Some(sig),
            } => parts.push(json!({"text": think, "thought": true, "thoughtSignature": sig})),
            ContentPart::Text { text } if !text.is_empty() => parts.push(json!({"text": text})),
            ContentPart::Think {
                encrypted: None, ..
            }
            | ContentPart::Text { .. }
            | ContentPart::Image(_)
            | ContentPart::Audio(_)
            | ContentPart::Video(_) => {}
        }
    }
    for call in &message.tool_calls {
        let mut part = json!({"functionCall": {"name": call.name, "args": arguments_object(call.arguments.as_deref())}});
        if let Some(sig) = call
            .extras
            .as_ref()
            .and_then(|e| e.get(THOUGHT_SIGNATURE_KEY))
            .and_then(Value::as_str)
        {
            part["thoughtSignature"] = json!(sig);
        }
        parts.push(part);
    }
    parts
}

fn convert_contents(messages: &[&Message]) -> Vec<Value> {
    // functionResponse needs the function name, which tool messages do not carry.
    let names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, parts) = match message.role {
            Role::User | Role::System => ("user", user_parts(&message.content)),
            Role::Assistant => ("model", model_parts(message)),
            Role::Tool => {
                let id = message.tool_call_id.as_deref().unwrap_or_default();
                let text = joined_text(&message.content);
                let response = if message.is_error == Some(true) {
                    json!({"error": text})
                } else {
                    json!({"output": text})
                };
                let mut parts = vec![json!({"functionResponse": {
                    "name": names.get(id).copied().unwrap_or(id),
                    "response": response,
                }})];
                parts.extend(message.content.iter().filter_map(|p| match p {
                    ContentPart::Image(m) | ContentPart::Audio(m) | ContentPart::Video(m) => {
                        Some(media_part(&m.url))
                    }
                    ContentPart::Text { .. } | ContentPart::Think { .. } => None,
                }));
                ("user", parts)
            }
        };
        if parts.is_empty() {
            continue;
        }
        // All function responses of one turn must sit in one content; merging every run of
        // same-role contents also satisfies the alternation rule.
        match out.last_mut() {
            Some((last, last_parts)) if *last == role => last_parts.extend(parts),
            _ => out.push((role, parts)),
        }
    }
    out.into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect()
}

fn thinking_config(model: &str, effort: ThinkingEffort, budget: Option<u32>) -> Value {
    if model.to_ascii_lowercase().contains("gemini-3") {
        let level = match effort {
            ThinkingEffort::Off => "MINIMAL",
            ThinkingEffort::Low => "LOW",
            ThinkingEffort::On | ThinkingEffort::Medium => "MEDIUM",
            ThinkingEffort::High | ThinkingEffort::Xhigh | ThinkingEffort::Max => "HIGH",
        };
        json!({"thinkingLevel": level, "includeThoughts": effort != ThinkingEffort::Off})
    } else {
        let budget = budget.unwrap_or_else(|| effort.budget_tokens());
        json!({"thinkingBudget": budget, "includeThoughts": effort != ThinkingEffort::Off})
    }
}

/// The request body. Public (through `kimi_llm::wire`) for the benchmark and tests.
pub fn build_body(model: &ResolvedModel, request: &ChatRequest) -> Value {
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(convert_contents(
            &wire_messages(request).collect::<Vec<_>>(),
        )),
    );
    if !request.system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": request.system}]}),
        );
    }
    let declared = all_tools(request);
    if !declared.is_empty() {
        let decls: Vec<Value> = declared
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}))
            .collect();
        body.insert("tools".into(), json!([{"functionDeclarations": decls}]));
    }
    let params = &request.params;
    let mut generation = Map::new();
    if let Some(max) = params.max_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = params.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(p) = params.top_p {
        generation.insert("topP".into(), json!(p));
    }
    if let Some(effort) = params.thinking {
        generation.insert(
            "thinkingConfig".into(),
            thinking_config(&model.model, effort, params.thinking_budget),
        );
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

pub(crate) struct GeminiDecoder {
    provider: String,
    next_index: u32,
    saw_call: bool,
    saw_id: bool,
    finished: bool,
}

impl GeminiDecoder {
    pub(crate) fn new(provider: String) -> Self {
        GeminiDecoder {
            provider,
            next_index: 0,
            saw_call: false,
            saw_id: false,
            finished: false,
        }
    }

    fn part(&mut self, part: &Value, out: &mut Vec<StreamDelta>) {
        let signature = part.get("thoughtSignature").and_then(Value::as_str);
        if let Some(call) = part.get("functionCall") {
            let index = self.next_index;
            self.next_index += 1;
            self.saw_call = true;
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
            // Gemini often omits call ids; a name-and-position id is unique within the
            // response, and the engine makes it unique across the history (§h.1).
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{name}_{index}"), str::to_owned);
            let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
            out.push(StreamDelta::ToolCallStart {
                index,
                id,
                name: name.to_owned(),
                extras: signature.map(|s| json!({THOUGHT_SIGNATURE_KEY: s})),
            });
            out.push(StreamDelta::ToolCallArgs {
                index,
                fragment: args.to_string(),
            });
            return;
        }
        let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            if !text.is_empty() {
                out.push(StreamDelta::Thinking(text.to_owned()));
            }
        } else if !text.is_empty() {
            out.push(StreamDelta::Text(text.to_owned()));
        }
        if let Some(sig) = signature {
            out.push(StreamDelta::ThinkingSignature(sig.to_owned()));
        }
    }
}

impl Decoder for GeminiDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<StreamDelta>) -> Result<(), LlmError> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let value = parse_json(&self.provider, &event.data)?;
        if let Some(error) = value.get("error") {
            let code = error.get("status").and_then(Value::as_str).map_or_else(
                || error.get("code").map(Value::to_string).unwrap_or_default(),
                str::to_owned,
            );
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Err(classify_stream_error(&self.provider, &code, message));
        }
        if !self.saw_id
            && let Some(id) = value.get("responseId").and_then(Value::as_str)
        {
            self.saw_id = true;
            out.push(StreamDelta::MessageId(id.to_owned()));
        }
        let candidate = value.pointer("/candidates/0");
        if let Some(parts) = candidate
            .and_then(|c| c.pointer("/content/parts"))
            .and_then(Value::as_array)
        {
            for part in parts {
                self.part(part, out);
            }
        }
        if let Some(meta) = value.get("usageMetadata") {
            let prompt = u64_at(meta, "/promptTokenCount");
            let cached = u64_at(meta, "/cachedContentTokenCount");
            out.push(StreamDelta::Usage(Usage {
                input_other: prompt.saturating_sub(cached),
                output: u64_at(meta, "/candidatesTokenCount") + u64_at(meta, "/thoughtsTokenCount"),
                input_cache_read: cached,
                input_cache_creation: 0,
            }));
        }
        let reason = candidate
            .and_then(|c| c.get("finishReason"))
            .and_then(Value::as_str);
        let blocked = value.pointer("/promptFeedback/blockReason").is_some();
        if let Some(reason) = reason {
            self.finished = true;
            out.push(StreamDelta::Finish(match reason {
                "STOP" if self.saw_call => FinishReason::ToolCalls,
                "STOP" => FinishReason::Stop,
                "MAX_TOKENS" => FinishReason::Length,
                "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
                | "IMAGE_SAFETY" => FinishReason::Filtered,
                other => FinishReason::Other(other.to_owned()),
            }));
        } else if blocked {
            self.finished = true;
            out.push(StreamDelta::Finish(FinishReason::Filtered));
        }
        Ok(())
    }

    fn terminal(&self) -> bool {
        false
    }

    fn complete(&self) -> bool {
        self.finished
    }
}
