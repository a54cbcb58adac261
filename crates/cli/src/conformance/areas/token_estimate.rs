//! Conformance adapter for the `token_estimate` area: the heuristic estimator on text, one
//! message, or a tool list.

use kimi_context::tokens::{estimate_message, estimate_text, estimate_tools};
use kimi_protocol::ToolSchema;
use serde_json::{Value, json};

use crate::conformance::neutral::message_from_neutral;

pub fn run(input: &Value) -> Result<Value, String> {
    let tokens = match input.get("fn").and_then(Value::as_str) {
        Some("estimateTokens") => estimate_text(
            input
                .get("text")
                .and_then(Value::as_str)
                .ok_or("estimateTokens needs a text string")?,
        ),
        Some("estimateTokensForMessage") => estimate_message(&message_from_neutral(
            input.get("message").unwrap_or(&Value::Null),
        )?),
        Some("estimateTokensForTools") => {
            let tools: Vec<ToolSchema> =
                serde_json::from_value(input.get("tools").cloned().unwrap_or(Value::Null))
                    .map_err(|e| format!("bad tools list: {e}"))?;
            estimate_tools(&tools)
        }
        other => return Err(format!("token_estimate: unknown fn {other:?}")),
    };
    Ok(json!({"tokens": tokens}))
}
