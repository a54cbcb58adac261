//! Conformance adapter for `wire_restore` cases with fn=replayContext: context records folded
//! into history by the real replay code.

use serde_json::Value;

pub fn replay_context(_input: &Value) -> Result<Value, String> {
    Err("replayContext is not built yet".to_owned())
}
