//! History and wire messages (core.md §a.1–§a.2): content parts, tool calls and the message
//! record shared by the journal, the fold, the projector and the providers.

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::origin::Origin;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A media reference (`imageUrl` / `audioUrl` / `videoUrl`): a URL (often a data URL) and an
/// optional id that providers use to refer back to an upload.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MediaUrl {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// Reasoning text; `encrypted` is the provider's signature (Anthropic) and must round-trip.
    Think {
        think: String,
        encrypted: Option<String>,
    },
    Image(MediaUrl),
    Audio(MediaUrl),
    Video(MediaUrl),
}

impl ContentPart {
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentPart::Text { text } => Some(text),
            ContentPart::Think { .. }
            | ContentPart::Image(_)
            | ContentPart::Audio(_)
            | ContentPart::Video(_) => None,
        }
    }

    pub fn is_media(&self) -> bool {
        matches!(
            self,
            ContentPart::Image(_) | ContentPart::Audio(_) | ContentPart::Video(_)
        )
    }

    /// The `type` tag of the part as it appears on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            ContentPart::Text { .. } => "text",
            ContentPart::Think { .. } => "think",
            ContentPart::Image(_) => "image_url",
            ContentPart::Audio(_) => "audio_url",
            ContentPart::Video(_) => "video_url",
        }
    }

    /// Vacuous parts carry nothing the model needs (core.md §a.5 rule 8): blank text, blank
    /// unsigned thinking. Media is never vacuous.
    pub fn is_vacuous(&self) -> bool {
        match self {
            ContentPart::Text { text } => text.trim().is_empty(),
            ContentPart::Think { think, encrypted } => {
                think.trim().is_empty() && encrypted.is_none()
            }
            ContentPart::Image(_) | ContentPart::Audio(_) | ContentPart::Video(_) => false,
        }
    }
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.type_name())?;
        match self {
            ContentPart::Text { text } => map.serialize_entry("text", text)?,
            ContentPart::Think { think, encrypted } => {
                map.serialize_entry("think", think)?;
                if let Some(sig) = encrypted {
                    map.serialize_entry("encrypted", sig)?;
                }
            }
            ContentPart::Image(m) => map.serialize_entry("imageUrl", m)?,
            ContentPart::Audio(m) => map.serialize_entry("audioUrl", m)?,
            ContentPart::Video(m) => map.serialize_entry("videoUrl", m)?,
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        content_part_from_map(map).map_err(de::Error::custom)
    }
}

fn str_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Media may be written nested (`imageUrl: {url, id}` or `image_url: {...}`) or flat
/// (`url`, `id` next to `type`); all three spellings appear in the wild.
fn media_from_map(map: &Map<String, Value>, camel: &str, snake: &str) -> Result<MediaUrl, String> {
    let nested = map.get(camel).or_else(|| map.get(snake));
    match nested {
        Some(Value::Object(inner)) => {
            let url = str_field(inner, "url").ok_or_else(|| format!("{camel} has no url"))?;
            Ok(MediaUrl {
                url,
                id: str_field(inner, "id"),
            })
        }
        Some(Value::String(url)) => Ok(MediaUrl {
            url: url.clone(),
            id: str_field(map, "id"),
        }),
        _ => {
            let url = str_field(map, "url").ok_or_else(|| format!("{snake} part has no url"))?;
            Ok(MediaUrl {
                url,
                id: str_field(map, "id"),
            })
        }
    }
}

fn content_part_from_map(map: Map<String, Value>) -> Result<ContentPart, String> {
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .ok_or("content part has no type")?;
    match kind {
        "text" => Ok(ContentPart::Text {
            text: str_field(&map, "text").unwrap_or_default(),
        }),
        "think" | "thinking" => Ok(ContentPart::Think {
            think: str_field(&map, "think")
                .or_else(|| str_field(&map, "thinking"))
                .unwrap_or_default(),
            encrypted: str_field(&map, "encrypted").or_else(|| str_field(&map, "signature")),
        }),
        "image_url" => media_from_map(&map, "imageUrl", "image_url").map(ContentPart::Image),
        "audio_url" => media_from_map(&map, "audioUrl", "audio_url").map(ContentPart::Audio),
        "video_url" => media_from_map(&map, "videoUrl", "video_url").map(ContentPart::Video),
        other => Err(format!("unknown content part type {other:?}")),
    }
}

/// Content is a list of parts; a bare string is shorthand for one text part.
pub(crate) fn deserialize_content<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ContentPart>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Parts(Vec<ContentPart>),
        Null(()),
    }
    Ok(match Repr::deserialize(deserializer)? {
        Repr::Text(text) => vec![ContentPart::Text { text }],
        Repr::Parts(parts) => parts,
        Repr::Null(()) => Vec::new(),
    })
}

/// A tool call as the model made it. `arguments` is the raw JSON text (or null); `extras`
/// carries provider data (e.g. Gemini thought signatures) that must be sent back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extras: Option<Value>,
}

fn function_type() -> String {
    "function".to_owned()
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Option<String>) -> Self {
        ToolCall {
            kind: function_type(),
            id: id.into(),
            name: name.into(),
            arguments,
            extras: None,
        }
    }
}

/// A tool declaration (name, description, JSON schema of its parameters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub parameters: Value,
}

/// One message of an agent's history. Provider-facing ("wire") messages are the same type with
/// `origin`, `is_error`, `note` and `id` left empty by the projector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "deserialize_content")]
    pub content: Vec<ContentPart>,
    #[serde(default, alias = "tool_calls", deserialize_with = "null_as_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(
        default,
        alias = "tool_call_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub partial: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolSchema>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(
        default,
        alias = "provider_message_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    #[serde(default, alias = "is_error", skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

impl Message {
    pub fn new(role: Role, content: Vec<ContentPart>) -> Self {
        Message {
            role,
            name: None,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            partial: false,
            tools: None,
            id: None,
            provider_message_id: None,
            origin: None,
            is_error: None,
            note: None,
        }
    }

    pub fn user_text(text: impl Into<String>) -> Self {
        let mut msg = Message::new(Role::User, vec![ContentPart::text(text)]);
        msg.origin = Some(Origin::user());
        msg
    }

    pub fn assistant(content: Vec<ContentPart>, tool_calls: Vec<ToolCall>) -> Self {
        let mut msg = Message::new(Role::Assistant, content);
        msg.tool_calls = tool_calls;
        msg
    }

    pub fn tool_result(
        tool_call_id: impl Into<String>,
        content: Vec<ContentPart>,
        is_error: Option<bool>,
    ) -> Self {
        let mut msg = Message::new(Role::Tool, content);
        msg.tool_call_id = Some(tool_call_id.into());
        msg.is_error = is_error;
        msg
    }

    /// True for a message that only declares extra tools ("dynamic tool schema").
    pub fn is_tool_declaration_only(&self) -> bool {
        self.tools.as_ref().is_some_and(|t| !t.is_empty())
            && self.content.is_empty()
            && self.tool_calls.is_empty()
    }

    /// Concatenation of the text parts (no separator).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentPart::as_text)
            .collect()
    }

    pub fn is_vacuous(&self) -> bool {
        self.content.iter().all(ContentPart::is_vacuous)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn string_content_is_one_text_part_and_snake_aliases_are_read() {
        let msg: Message = serde_json::from_value(json!({
            "role": "tool", "content": "x", "tool_call_id": "c1", "is_error": true
        }))
        .unwrap();
        assert_eq!(msg.content, vec![ContentPart::text("x")]);
        assert_eq!(msg.tool_call_id.as_deref(), Some("c1"));
        assert_eq!(msg.is_error, Some(true));
    }

    #[test]
    fn media_spellings_all_read_and_write_camel_case() {
        for v in [
            json!({"type": "image_url", "imageUrl": {"url": "u", "id": "i"}}),
            json!({"type": "image_url", "image_url": {"url": "u", "id": "i"}}),
            json!({"type": "image_url", "url": "u", "id": "i"}),
        ] {
            let part: ContentPart = serde_json::from_value(v).unwrap();
            assert_eq!(
                serde_json::to_value(&part).unwrap(),
                json!({"type": "image_url", "imageUrl": {"url": "u", "id": "i"}})
            );
        }
    }

    #[test]
    fn message_round_trips_with_tool_call_extras() {
        let v = json!({
            "role": "assistant",
            "content": [{"type": "think", "think": "t", "encrypted": "sig"}, {"type": "text", "text": "a"}],
            "toolCalls": [{"type": "function", "id": "c", "name": "Bash", "arguments": "{}", "extras": {"thought_signature": "xyz"}}],
            "partial": true
        });
        let msg: Message = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&msg).unwrap(), v);
    }

    #[test]
    fn unknown_part_type_is_an_error_not_a_panic() {
        let err = serde_json::from_value::<ContentPart>(json!({"type": "hologram"})).unwrap_err();
        assert!(err.to_string().contains("hologram"));
    }
}
