//! Conformance adapter for the `tool_call_ids` area: runs one case input through the real code.

use serde_json::Value;

pub fn run(_input: &Value) -> Result<Value, String> {
    Err("area tool_call_ids is not built yet".to_owned())
}
