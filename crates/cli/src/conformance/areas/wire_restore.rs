//! Conformance adapter for the `wire_restore` area. Journal reading, line parsing, migration
//! steps, serialisation and the turn clock run through `kimi_store::wire_cases`; `replayContext`
//! cases go to `wire_restore_replay`.

use serde_json::Value;

pub fn run(input: &Value) -> Result<Value, String> {
    match input.get("fn").and_then(Value::as_str) {
        Some("replayContext") => super::wire_restore_replay::replay_context(input),
        _ => kimi_store::wire_cases::run(input),
    }
}
