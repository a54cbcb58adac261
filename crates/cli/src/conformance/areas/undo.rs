//! Conformance adapter for the `undo` area: `computeUndoCut` and `precheckUndo` over a history.

use kimi_context::undo::{compute_undo_cut, precheck_undo};
use serde_json::{Value, json};

use crate::conformance::neutral::messages_from_neutral;

pub fn run(input: &Value) -> Result<Value, String> {
    let history = messages_from_neutral(input.get("history").unwrap_or(&Value::Null))?;
    let count = input
        .get("count")
        .and_then(Value::as_u64)
        .ok_or("undo case needs a non-negative integer count")?;
    match input.get("fn").and_then(Value::as_str) {
        Some("computeUndoCut") => {
            let cut = compute_undo_cut(&history, count);
            Ok(json!({
                "cutIndex": cut.cut_index.map_or(json!(-1), |i| json!(i)),
                "removedCount": cut.removed_count,
                "stoppedAtCompaction": cut.stopped_at_compaction,
                "fullyUndoable": cut.is_fully_undoable(count),
            }))
        }
        Some("precheckUndo") => Ok(match precheck_undo(&history, count) {
            Ok(_) => json!({"ok": true}),
            Err(why) => json!({
                "ok": false,
                "reason": why.reason(),
                "requested": why.requested(),
                "undoable": why.undoable(),
                "message": why.to_string(),
            }),
        }),
        other => Err(format!("undo: unknown fn {other:?}")),
    }
}
