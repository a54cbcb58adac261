//! Conformance adapter for the `tool_result` area: model-facing rendering of a tool result, the
//! executor's output normalisation, and the executor's fixed texts.

use kimi_context::render::{
    NormalizedOutput, executor_text, normalize_tool_output, normalize_tool_text, render_tool_result,
};
use kimi_protocol::ContentPart;
use serde_json::{Map, Value, json};

use crate::conformance::neutral::parts_to_neutral;

/// The tool name the reference test uses for its coercion cases.
const CASE_TOOL_NAME: &str = "corrupt";

fn parts_from_value(value: &Value) -> Result<Vec<ContentPart>, String> {
    match value {
        Value::String(text) => Ok(vec![ContentPart::text(text.as_str())]),
        Value::Array(_) => {
            serde_json::from_value(value.clone()).map_err(|e| format!("bad output parts: {e}"))
        }
        other => Err(format!(
            "output must be a string or a part list, got {other}"
        )),
    }
}

/// A single text part is written back as a plain string (the neutral shorthand).
fn content_to_neutral(parts: &[ContentPart]) -> Value {
    match parts {
        [ContentPart::Text { text }] => Value::from(text.as_str()),
        parts => parts_to_neutral(parts),
    }
}

fn render(input: &Value) -> Result<Value, String> {
    let output = parts_from_value(input.get("output").unwrap_or(&Value::Null))?;
    let is_error = input
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let note = input.get("note").and_then(Value::as_str);
    let rendered = render_tool_result(&output, is_error, note);
    Ok(json!({"content": content_to_neutral(&rendered)}))
}

fn normalize(input: &Value) -> Result<Value, String> {
    let result = input
        .get("result")
        .ok_or("normalizeToolResult case has no result")?;
    let error = |text: String| json!({"output": text, "isError": true});
    let Some(obj) = result.as_object() else {
        return Ok(error(executor_text::not_a_result(CASE_TOOL_NAME, "value")));
    };
    if obj.get("$undefined").and_then(Value::as_bool) == Some(true) {
        return Ok(error(executor_text::no_result(CASE_TOOL_NAME)));
    }
    if let Some(raw) = obj.get("$value") {
        let kind = match raw {
            Value::Null => return Ok(error(executor_text::no_result(CASE_TOOL_NAME))),
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) | Value::Object(_) => "object",
        };
        return Ok(error(executor_text::not_a_result(CASE_TOOL_NAME, kind)));
    }
    let normalized = match obj.get("output") {
        Some(Value::String(text)) => normalize_tool_text(text.clone()),
        Some(parts @ Value::Array(_)) => normalize_tool_output(parts_from_value(parts)?),
        Some(_) | None => return Ok(error(executor_text::malformed_output(CASE_TOOL_NAME))),
    };
    let mut out = Map::new();
    out.insert(
        "output".into(),
        match normalized {
            NormalizedOutput::Text(text) => Value::from(text),
            NormalizedOutput::Parts(parts) => parts_to_neutral(&parts),
        },
    );
    if obj.get("isError").and_then(Value::as_bool) == Some(true) {
        out.insert("isError".into(), Value::Bool(true));
    }
    if obj.get("truncated").and_then(Value::as_bool) == Some(true) {
        out.insert("truncated".into(), Value::Bool(true));
    }
    if let Some(note) = obj
        .get("note")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        out.insert("note".into(), Value::from(note));
    }
    Ok(Value::Object(out))
}

/// Keys look like `execute_threw(name=fail, message="tool blew up")`.
fn executor(input: &Value) -> Result<Value, String> {
    let key = input
        .get("key")
        .and_then(Value::as_str)
        .ok_or("executorText case has no key")?;
    let (head, args) = key
        .split_once('(')
        .and_then(|(h, rest)| rest.strip_suffix(')').map(|a| (h, a)))
        .ok_or_else(|| format!("unreadable executor text key {key:?}"))?;
    let arg = |name: &str| -> Option<String> {
        let start = args.find(&format!("{name}="))? + name.len() + 1;
        let rest = args.get(start..)?;
        if let Some(quoted) = rest.strip_prefix('"') {
            quoted.split('"').next().map(str::to_owned)
        } else {
            rest.split(',').next().map(|s| s.trim().to_owned())
        }
    };
    let name = arg("name").ok_or_else(|| format!("key {key:?} has no name"))?;
    let text = match head {
        "execute_threw" => executor_text::failed(&name, &arg("message").unwrap_or_default()),
        "resolve_execution_threw" => {
            executor_text::resolve_failed(&name, &arg("message").unwrap_or_default())
        }
        "aborted" => {
            executor_text::aborted(&name, arg("reason").as_deref() == Some("user cancellation"))
        }
        other => return Err(format!("unknown executor text {other:?}")),
    };
    Ok(json!({"text": text}))
}

pub fn run(input: &Value) -> Result<Value, String> {
    match input.get("fn").and_then(Value::as_str) {
        Some("renderToolResultForModel") => render(input),
        Some("normalizeToolResult") => normalize(input),
        Some("executorText") => executor(input),
        other => Err(format!("unknown tool_result fn {other:?}")),
    }
}
