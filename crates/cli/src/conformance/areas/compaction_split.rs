//! Conformance adapter for the `compaction_split` area: `computeCompactCount`,
//! `reduceCompactOnOverflow` and `canSplitAfter`, with per-message `est_tokens` overrides and
//! the `"zero"` estimator.

use kimi_context::compaction::split::{
    CompactSource, SplitConfig, can_split_after, compute_compact_count_with,
    reduce_compact_on_overflow_with,
};
use kimi_context::compaction::trigger::Limit;
use kimi_context::tokens::estimate_message;
use serde_json::{Value, json};

use crate::conformance::neutral::messages_from_neutral;

fn limit(value: Option<&Value>, default: Limit) -> Result<Limit, String> {
    match value {
        None | Some(Value::Null) => Ok(default),
        Some(Value::String(s)) if s == "Infinity" => Ok(Limit::Unlimited),
        Some(v) => v
            .as_f64()
            .map(|n| {
                if n.is_infinite() {
                    Limit::Unlimited
                } else {
                    Limit::Finite(n.max(0.0) as u64)
                }
            })
            .ok_or_else(|| format!("bad limit {v}")),
    }
}

fn number(value: Option<&Value>, default: f64) -> f64 {
    match value {
        Some(Value::String(s)) if s == "Infinity" => f64::INFINITY,
        Some(v) => v.as_f64().unwrap_or(default),
        None => default,
    }
}

fn split_config(config: &Value) -> Result<SplitConfig, String> {
    let max = number(config.get("max_tokens"), 0.0);
    Ok(SplitConfig {
        max_tokens: if max.is_infinite() {
            i64::MAX
        } else {
            max as i64
        },
        max_recent_messages: limit(config.get("max_recent_messages"), Limit::Finite(4))?,
        max_recent_user_messages: limit(config.get("max_recent_user_messages"), Limit::Unlimited)?,
        max_recent_size_ratio: number(config.get("max_recent_size_ratio"), 0.2),
        min_overflow_reduction_ratio: number(config.get("min_overflow_reduction_ratio"), 0.05),
    })
}

pub fn run(input: &Value) -> Result<Value, String> {
    let raw = input.get("messages").unwrap_or(&Value::Null);
    let messages = messages_from_neutral(raw)?;
    let config_value = input.get("config").cloned().unwrap_or(Value::Null);
    let zero = config_value.get("estimator").and_then(Value::as_str) == Some("zero");
    let overrides: Vec<Option<u64>> = raw
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|m| m.get("est_tokens").and_then(Value::as_u64))
                .collect()
        })
        .unwrap_or_default();
    let size = |i: usize| -> u64 {
        if let Some(Some(tokens)) = overrides.get(i) {
            return *tokens;
        }
        if zero {
            return 0;
        }
        messages.get(i).map_or(0, estimate_message)
    };
    match input.get("fn").and_then(Value::as_str) {
        Some("canSplitAfter") => {
            let index = input
                .get("index")
                .and_then(Value::as_u64)
                .ok_or("canSplitAfter case has no index")?;
            let index = usize::try_from(index).map_err(|e| e.to_string())?;
            Ok(json!({"can_split": can_split_after(&messages, index)}))
        }
        Some("computeCompactCount") => {
            let source = match input.get("source").and_then(Value::as_str) {
                Some("manual") => CompactSource::Manual,
                Some("auto") => CompactSource::Auto,
                other => return Err(format!("unknown compaction source {other:?}")),
            };
            let config = split_config(&config_value)?;
            let count = compute_compact_count_with(&messages, source, &config, size);
            Ok(json!({"compact_count": count}))
        }
        Some("reduceCompactOnOverflow") => {
            let config = split_config(&config_value)?;
            let count = reduce_compact_on_overflow_with(&messages, &config, size);
            Ok(json!({"compact_count": count}))
        }
        other => Err(format!("unknown compaction_split fn {other:?}")),
    }
}
