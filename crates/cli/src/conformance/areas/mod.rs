//! One adapter per conformance area. Each takes a case's `input` and returns the actual output
//! in the shape of the case's `expected`; an `Err` fails the case with that message.

use serde_json::Value;

pub mod accumulator;
pub mod compaction_handoff;
pub mod compaction_split;
pub mod compaction_trigger;
pub mod fold;
pub mod projection;
pub mod scheduler;
pub mod token_estimate;
pub mod tool_args;
pub mod tool_call_ids;
pub mod tool_result;
pub mod undo;
pub mod wire_restore;
pub mod wire_restore_replay;

pub type Adapter = fn(&Value) -> Result<Value, String>;

/// Why a case cannot execute in this build (it is then reported as skipped, never passed), or
/// `None` when its adapter runs it. Looks at the whole case only to decide that.
pub fn skip_reason(area: &str, case: &Value) -> Option<String> {
    let input = case.get("input").unwrap_or(&Value::Null);
    match area {
        "accumulator" => accumulator::skip(input),
        "scheduler" => scheduler::skip(case),
        "tool_result" => tool_result::skip(input),
        _ => None,
    }
}

/// The adapter for an area, or `None` for an area this build does not know.
pub fn adapter(area: &str) -> Option<Adapter> {
    Some(match area {
        "accumulator" => accumulator::run,
        "compaction_handoff" => compaction_handoff::run,
        "compaction_split" => compaction_split::run,
        "compaction_trigger" => compaction_trigger::run,
        "fold" => fold::run,
        "projection" => projection::run,
        "scheduler" => scheduler::run,
        "token_estimate" => token_estimate::run,
        "tool_args" => tool_args::run,
        "tool_call_ids" => tool_call_ids::run,
        "tool_result" => tool_result::run,
        "undo" => undo::run,
        "wire_restore" => wire_restore::run,
        _ => return None,
    })
}
