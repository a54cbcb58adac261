//! Conformance adapter for the `fold` area: replays `ops` (appended messages and loop events)
//! onto `initial` through the real history fold.

use kimi_context::history::{History, HistoryConfig};
use kimi_protocol::LoopEvent;
use serde_json::{Value, json};

use crate::conformance::neutral::{
    message_from_neutral, messages_from_neutral, messages_to_neutral,
};

pub fn run(input: &Value) -> Result<Value, String> {
    let initial = messages_from_neutral(input.get("initial").unwrap_or(&Value::Null))?;
    let mut history = History::from_messages(initial, HistoryConfig::default());
    let ops = input
        .get("ops")
        .and_then(Value::as_array)
        .ok_or("fold case has no ops list")?;
    for (i, op) in ops.iter().enumerate() {
        if let Some(message) = op.get("append_message") {
            history.append_message(message_from_neutral(message)?);
        } else if let Some(event) = op.get("loop_event") {
            let event: LoopEvent = serde_json::from_value(event.clone())
                .map_err(|e| format!("op {i}: bad loop event: {e}"))?;
            history.apply_loop_event(event);
        } else {
            return Err(format!(
                "op {i}: expected append_message or loop_event, got {op}"
            ));
        }
    }
    Ok(json!({"history": messages_to_neutral(history.messages())}))
}
