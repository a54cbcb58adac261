//! The conformance cases' neutral message schema (tests/conformance/README.md) and our
//! `Message`: reading case inputs, writing outputs in the same shape, and canonicalising
//! either side so that shorthands compare equal.

use kimi_protocol::{ContentPart, Message};
use serde_json::{Map, Value, json};

/// Expand `{"type":"text","repeat":"x","times":N,"prefix"?,"suffix"?}` into a plain text part.
fn expand_part(part: &Value) -> Value {
    let Some(obj) = part.as_object() else {
        return part.clone();
    };
    let Some(repeat) = obj.get("repeat").and_then(Value::as_str) else {
        return part.clone();
    };
    let times = obj.get("times").and_then(Value::as_u64).unwrap_or(0);
    let prefix = obj.get("prefix").and_then(Value::as_str).unwrap_or("");
    let suffix = obj.get("suffix").and_then(Value::as_str).unwrap_or("");
    let count = usize::try_from(times).unwrap_or(0);
    let text = format!("{prefix}{}{suffix}", repeat.repeat(count));
    json!({"type": "text", "text": text})
}

fn expand_content(message: &Value) -> Value {
    let mut message = message.clone();
    if let Some(Value::Array(parts)) = message.get_mut("content") {
        for part in parts.iter_mut() {
            *part = expand_part(part);
        }
    }
    message
}

pub fn message_from_neutral(value: &Value) -> Result<Message, String> {
    serde_json::from_value(expand_content(value)).map_err(|e| format!("bad case message: {e}"))
}

pub fn messages_from_neutral(value: &Value) -> Result<Vec<Message>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items.iter().map(message_from_neutral).collect(),
        other => Err(format!("expected a list of messages, got {other}")),
    }
}

pub fn part_to_neutral(part: &ContentPart) -> Value {
    let media = |kind: &str, url: &str, id: &Option<String>| {
        let mut obj = Map::new();
        obj.insert("type".into(), Value::from(kind));
        obj.insert("url".into(), Value::from(url));
        if let Some(id) = id {
            obj.insert("id".into(), Value::from(id.as_str()));
        }
        Value::Object(obj)
    };
    match part {
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        ContentPart::Think { think, encrypted } => match encrypted {
            Some(sig) => json!({"type": "think", "think": think, "encrypted": sig}),
            None => json!({"type": "think", "think": think}),
        },
        ContentPart::Image(m) => media("image_url", &m.url, &m.id),
        ContentPart::Audio(m) => media("audio_url", &m.url, &m.id),
        ContentPart::Video(m) => media("video_url", &m.url, &m.id),
    }
}

pub fn parts_to_neutral(parts: &[ContentPart]) -> Value {
    Value::Array(parts.iter().map(part_to_neutral).collect())
}

pub fn message_to_neutral(message: &Message) -> Value {
    let mut obj = Map::new();
    obj.insert("role".into(), Value::from(message.role.as_str()));
    if let Some(name) = &message.name {
        obj.insert("name".into(), Value::from(name.as_str()));
    }
    obj.insert("content".into(), parts_to_neutral(&message.content));
    let calls: Vec<Value> = message
        .tool_calls
        .iter()
        .map(|c| {
            let mut call = Map::new();
            call.insert("id".into(), Value::from(c.id.as_str()));
            call.insert("name".into(), Value::from(c.name.as_str()));
            call.insert(
                "arguments".into(),
                c.arguments.clone().map_or(Value::Null, Value::String),
            );
            if let Some(extras) = &c.extras {
                call.insert("extras".into(), extras.clone());
            }
            Value::Object(call)
        })
        .collect();
    obj.insert("tool_calls".into(), Value::Array(calls));
    if let Some(id) = &message.tool_call_id {
        obj.insert("tool_call_id".into(), Value::from(id.as_str()));
    }
    if message.partial {
        obj.insert("partial".into(), Value::Bool(true));
    }
    if let Some(origin) = &message.origin {
        obj.insert(
            "origin".into(),
            serde_json::to_value(origin).unwrap_or(Value::Null),
        );
    }
    if let Some(is_error) = message.is_error {
        obj.insert("is_error".into(), Value::Bool(is_error));
    }
    if let Some(note) = &message.note {
        obj.insert("note".into(), Value::from(note.as_str()));
    }
    if let Some(tools) = &message.tools {
        obj.insert(
            "tools".into(),
            serde_json::to_value(tools).unwrap_or(Value::Null),
        );
    }
    if let Some(id) = &message.id {
        obj.insert("id".into(), Value::from(id.as_str()));
    }
    Value::Object(obj)
}

pub fn messages_to_neutral(messages: &[Message]) -> Value {
    Value::Array(messages.iter().map(message_to_neutral).collect())
}

const ROLES: [&str; 4] = ["user", "assistant", "tool", "system"];

fn looks_like_message(obj: &Map<String, Value>) -> bool {
    obj.get("role")
        .and_then(Value::as_str)
        .is_some_and(|r| ROLES.contains(&r))
        && (obj.contains_key("content") || obj.contains_key("tool_calls"))
}

/// Canonical form used for comparison: null-valued keys dropped everywhere; messages get list
/// content, expanded repeat parts, a `tool_calls` list, snake-case field names and object
/// origins; camelCase spellings of message fields are folded to the neutral ones.
pub fn canonicalize(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(canonicalize).collect()),
        Value::Object(obj) => {
            let mut out = Map::new();
            for (key, val) in obj {
                if val.is_null() {
                    continue;
                }
                out.insert(key.clone(), canonicalize(val));
            }
            if looks_like_message(&out) {
                canonicalize_message(&mut out);
            } else if out.get("type").and_then(Value::as_str) == Some("text")
                && out.contains_key("repeat")
            {
                return expand_part(&Value::Object(out));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn canonicalize_message(msg: &mut Map<String, Value>) {
    for (camel, snake) in [
        ("toolCalls", "tool_calls"),
        ("toolCallId", "tool_call_id"),
        ("isError", "is_error"),
    ] {
        if let Some(v) = msg.remove(camel) {
            msg.entry(snake.to_owned()).or_insert(v);
        }
    }
    match msg.get("content").cloned() {
        Some(Value::String(text)) => {
            msg.insert("content".into(), json!([{"type": "text", "text": text}]));
        }
        None => {
            msg.insert("content".into(), json!([]));
        }
        Some(_) => {}
    }
    if let Some(Value::Array(parts)) = msg.get_mut("content") {
        for part in parts.iter_mut() {
            *part = canonical_part(part);
        }
    }
    if !msg.contains_key("tool_calls") {
        msg.insert("tool_calls".into(), json!([]));
    }
    if let Some(Value::Array(calls)) = msg.get_mut("tool_calls") {
        for call in calls.iter_mut() {
            if let Value::Object(c) = call {
                // `type: function` is implied by the neutral schema.
                if c.get("type").and_then(Value::as_str) == Some("function") {
                    c.remove("type");
                }
                c.entry("arguments".to_owned()).or_insert(Value::Null);
                if c.get("arguments").is_some_and(Value::is_null) {
                    c.remove("arguments");
                }
            }
        }
    }
    if let Some(Value::String(kind)) = msg.get("origin").cloned() {
        msg.insert("origin".into(), json!({"kind": kind}));
    }
    if msg.get("partial") == Some(&Value::Bool(false)) {
        msg.remove("partial");
    }
}

/// Media parts may be written flat (`url`) or nested (`imageUrl: {url}`); compare them flat.
fn canonical_part(part: &Value) -> Value {
    let part = expand_part(part);
    let Value::Object(mut obj) = part else {
        return part;
    };
    for nested in [
        "imageUrl",
        "image_url",
        "audioUrl",
        "audio_url",
        "videoUrl",
        "video_url",
    ] {
        if let Some(Value::Object(inner)) = obj.remove(nested) {
            for (k, v) in inner {
                obj.entry(k).or_insert(v);
            }
        }
    }
    Value::Object(obj)
}
