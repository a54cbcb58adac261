//! Small conversions shared by the wire formats: URLs, data URLs, tool arguments, usage math.

use kimi_protocol::ContentPart;
use serde_json::{Map, Value};

/// `base` + `path` without doubling or dropping the slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Splits `data:<mime>;base64,<payload>` into (mime, payload).
pub(crate) fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, payload) = rest.split_once(',')?;
    let mime = meta.strip_suffix(";base64")?;
    Some((mime, payload))
}

/// Tool-call arguments as a JSON object for formats that want structured input (Anthropic,
/// Gemini). Empty or unparsable arguments become `{}`: the model already produced them, and a
/// rejected request would be worse than an empty echo.
pub(crate) fn arguments_object(arguments: Option<&str>) -> Value {
    match arguments.map(str::trim).filter(|a| !a.is_empty()) {
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Value::Object(map),
            Ok(_) | Err(_) => Value::Object(Map::new()),
        },
        None => Value::Object(Map::new()),
    }
}

/// Concatenated text parts (tool results and system-like content).
pub(crate) fn joined_text(parts: &[ContentPart]) -> String {
    let mut out = String::new();
    for part in parts {
        if let ContentPart::Text { text } = part {
            out.push_str(text);
        }
    }
    out
}

pub(crate) fn u64_at(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// The tools of a request: the request's own plus those declared mid-conversation by
/// "dynamic tool schema" messages (core.md §a.1), first declaration of a name winning.
pub(crate) fn all_tools(request: &crate::request::ChatRequest) -> Vec<&kimi_protocol::ToolSchema> {
    let mut tools: Vec<&kimi_protocol::ToolSchema> = request.tools.iter().collect();
    for message in &request.messages {
        for tool in message.tools.iter().flatten() {
            if !tools.iter().any(|t| t.name == tool.name) {
                tools.push(tool);
            }
        }
    }
    tools
}

/// Messages that go on the wire: declaration-only messages become tools, not messages.
pub(crate) fn wire_messages(
    request: &crate::request::ChatRequest,
) -> impl Iterator<Item = &kimi_protocol::Message> {
    request
        .messages
        .iter()
        .map(|m| &**m)
        .filter(|m| !m.is_tool_declaration_only())
}
