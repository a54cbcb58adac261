//! Conformance adapter for the `tool_result` area: model-facing rendering of a tool result, the
//! executor's output normalisation, and the executor's fixed texts.

use kimi_context::render::{executor_text, render_tool_result};
use kimi_core::engine::executor::normalize as normalize_result;
use kimi_protocol::ContentPart;
use kimi_tools::result::{ToolOutput, ToolResult};
use serde_json::{Map, Value, json};

use crate::conformance::neutral::parts_to_neutral;

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

/// Why a `normalizeToolResult` case cannot run here: the reference coerces whatever a
/// JavaScript tool returned, but a tool in this build returns a typed `ToolResult`, so a missing
/// result, a non-object or a malformed `output` field cannot reach the executor.
pub fn skip(input: &Value) -> Option<String> {
    if input.get("fn").and_then(Value::as_str) == Some("executorText") {
        let key = input.get("key").and_then(Value::as_str).unwrap_or_default();
        if key.starts_with("resolve_execution_threw") {
            return Some(
                "resolve cannot throw here: it returns a typed error, which reaches the model as \
                 it is"
                    .to_owned(),
            );
        }
        return None;
    }
    if input.get("fn").and_then(Value::as_str) != Some("normalizeToolResult") {
        return None;
    }
    let result = input.get("result")?;
    let Some(obj) = result.as_object() else {
        return Some(format!(
            "a tool returning {result} cannot exist: tools return a typed ToolResult"
        ));
    };
    if obj.contains_key("$undefined") || obj.contains_key("$value") {
        return Some(
            "a tool returning no value or a non-object cannot exist: tools return a typed \
             ToolResult"
                .to_owned(),
        );
    }
    match obj.get("output") {
        Some(Value::String(_) | Value::Array(_)) => None,
        other => Some(format!(
            "a ToolResult with output {} cannot exist: output is typed text or parts",
            other.map_or_else(|| "missing".to_owned(), Value::to_string)
        )),
    }
}

/// Feeds the whole result to the executor's normalisation and reads every field back.
fn normalize(input: &Value) -> Result<Value, String> {
    let result = input
        .get("result")
        .and_then(Value::as_object)
        .ok_or("normalizeToolResult case has no result object")?;
    let output = match result.get("output") {
        Some(Value::String(text)) => ToolOutput::Text(text.clone()),
        Some(parts @ Value::Array(_)) => ToolOutput::Parts(parts_from_value(parts)?),
        other => return Err(format!("output {other:?} is neither text nor parts")),
    };
    let flag = |key: &str| result.get(key).and_then(Value::as_bool).unwrap_or(false);
    let tool_result = ToolResult {
        output,
        is_error: flag("isError"),
        note: result
            .get("note")
            .and_then(Value::as_str)
            .map(str::to_owned),
        truncated: flag("truncated"),
        ..ToolResult::ok("")
    };
    let normalized = normalize_result(tool_result);
    let mut out = Map::new();
    out.insert(
        "output".into(),
        match &normalized.output {
            ToolOutput::Text(text) => Value::from(text.as_str()),
            ToolOutput::Parts(parts) => parts_to_neutral(parts.as_slice()),
        },
    );
    if normalized.is_error {
        out.insert("isError".into(), Value::Bool(true));
    }
    if normalized.truncated {
        out.insert("truncated".into(), Value::Bool(true));
    }
    if let Some(note) = normalized.note {
        out.insert("note".into(), Value::from(note));
    }
    Ok(Value::Object(out))
}

/// Keys look like `execute_threw(name=fail, message="tool blew up")`. The stop-batch skip and
/// the after-execute (`onDidExecuteTool`) failure texts are recognised by what their key names
/// (`skipped…`/`…stop_batch…`; `…hook…`/`…did_execute…`/`…after_execute…`, aborted or threw),
/// since held-back cases may spell the head differently.
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
    let lower = head.to_ascii_lowercase();
    if lower.contains("skip") || lower.contains("stop_batch") {
        return Ok(json!({"text": executor_text::skipped()}));
    }
    let name = arg("name").ok_or_else(|| format!("key {key:?} has no name"))?;
    if ["hook", "did_execute", "after_execute"]
        .iter()
        .any(|w| lower.contains(w))
    {
        let aborted = lower.contains("abort");
        let text = if aborted {
            executor_text::after_execute_aborted(&name)
        } else {
            executor_text::after_execute_failed(&name, &arg("message").unwrap_or_default())
        };
        return Ok(json!({"text": text}));
    }
    let text = match head {
        "execute_threw" => executor_text::failed(&name, &arg("message").unwrap_or_default()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn text(key: &str) -> String {
        let out = run(&json!({"fn": "executorText", "key": key})).unwrap();
        out["text"].as_str().unwrap().to_owned()
    }

    #[test]
    fn the_skip_and_after_execute_texts_are_the_references() {
        let skipped = "Tool skipped because a previous tool call stopped the turn.";
        assert_eq!(text("skipped(name=Write)"), skipped);
        assert_eq!(text("stop_batch_skip(name=Write)"), skipped);
        assert_eq!(
            text("after_execute_hook_threw(name=Read, message=\"boom\")"),
            "onDidExecuteTool hook failed for \"Read\": boom"
        );
        assert_eq!(
            text("did_execute_hook_aborted(name=Read)"),
            "Tool \"Read\" aborted during onDidExecuteTool hook."
        );
        assert_eq!(
            text("execute_threw(name=fail, message=\"tool blew up\")"),
            "Tool \"fail\" failed: tool blew up"
        );
    }
}
