//! Conformance adapter for the `compaction_trigger` area: the trigger/block rules and the
//! runtime derivation of per-model compaction settings.

use kimi_context::compaction::trigger::{
    CompactionConfig, Limit, ModelLoopControl, runtime_compaction,
};
use serde_json::{Value, json};

fn limit_to_value(limit: Limit) -> Value {
    match limit {
        Limit::Finite(n) => Value::from(n),
        Limit::Unlimited => Value::from("Infinity"),
    }
}

fn runtime(input: &Value) -> Result<Value, String> {
    let model = input.get("model").unwrap_or(&Value::Null);
    let control = ModelLoopControl {
        compaction_trigger_ratio: model
            .get("compaction_trigger_ratio")
            .and_then(Value::as_f64),
        reserved_context_size: model.get("reserved_context_size").and_then(Value::as_u64),
    };
    let runtime = runtime_compaction(&control);
    Ok(json!({
        "trigger_ratio": runtime.config.trigger_ratio,
        "block_ratio": runtime.config.block_ratio,
        "reserved_context_size": runtime.config.reserved_context_size,
        "check_after_step": runtime.check_after_step,
        "max_compaction_per_turn": limit_to_value(runtime.config.max_compaction_per_turn),
        "max_overflow_compaction_attempts": runtime.config.max_overflow_compaction_attempts,
    }))
}

pub fn run(input: &Value) -> Result<Value, String> {
    if input.get("fn").and_then(Value::as_str) == Some("runtimeConfig") {
        return runtime(input);
    }
    let max_tokens = input
        .get("max_tokens")
        .and_then(Value::as_i64)
        .ok_or("compaction_trigger case has no integer max_tokens")?;
    let used_tokens = input
        .get("used_tokens")
        .and_then(Value::as_u64)
        .ok_or("compaction_trigger case has no non-negative used_tokens")?;
    let mut config = CompactionConfig::default();
    if let Some(overrides) = input.get("config") {
        if let Some(r) = overrides.get("trigger_ratio").and_then(Value::as_f64) {
            config.trigger_ratio = r;
        }
        if let Some(r) = overrides.get("block_ratio").and_then(Value::as_f64) {
            config.block_ratio = r;
        }
        if let Some(r) = overrides
            .get("reserved_context_size")
            .and_then(Value::as_u64)
        {
            config.reserved_context_size = r;
        }
    }
    Ok(json!({
        "should_compact": config.should_compact(max_tokens, used_tokens),
        "should_block": config.should_block(max_tokens, used_tokens),
    }))
}
