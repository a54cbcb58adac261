//! Conformance adapter for the `compaction_handoff` area: `buildContextCompactionShape` and
//! `buildCompactionSummaryText`.
//!
//! The cases pin Kimi Code's behaviour, so the shape is built with
//! [`KeptUserPolicy::Reference`]; kimi-rs's own default (the latest instruction is never cut) is
//! covered by the unit tests in `kimi_context::compaction::handoff`.

use kimi_context::compaction::handoff::{
    HeuristicEstimate, KeptUserPolicy, ShapeInput, TokenEstimate, build_compaction_shape,
    build_compaction_summary_text,
};
use kimi_protocol::Message;
use serde_json::{Value, json};

use crate::conformance::neutral::{
    message_from_neutral, messages_from_neutral, messages_to_neutral,
};

/// Marks a message whose weight the case fixed with `est_tokens`. The provider message id is
/// never shown to the model or written by the adapter, and it survives truncated copies, just
/// as the field does in the reference harness.
const EST_MARK: &str = "conformance-est-tokens:";

/// The case's estimator: `"zero"` weighs everything 0; otherwise the heuristic, except for
/// messages with `est_tokens`.
struct CaseEstimate {
    zero: bool,
}

impl TokenEstimate for CaseEstimate {
    fn text(&self, text: &str) -> u64 {
        if self.zero {
            0
        } else {
            HeuristicEstimate.text(text)
        }
    }

    fn message(&self, message: &Message) -> u64 {
        let fixed = message
            .provider_message_id
            .as_deref()
            .and_then(|id| id.strip_prefix(EST_MARK))
            .and_then(|n| n.parse().ok());
        match fixed {
            Some(n) => n,
            None if self.zero => 0,
            None => HeuristicEstimate.message(message),
        }
    }
}

fn read_history(value: &Value) -> Result<Vec<Message>, String> {
    let mut messages = messages_from_neutral(value)?;
    if let Some(items) = value.as_array() {
        for (message, raw) in messages.iter_mut().zip(items) {
            if let Some(n) = raw.get("est_tokens").and_then(Value::as_u64) {
                message.provider_message_id = Some(format!("{EST_MARK}{n}"));
            }
        }
    }
    Ok(messages)
}

fn opt_u64(input: &Value, key: &str) -> Option<u64> {
    input.get(key).and_then(Value::as_u64)
}

fn opt_usize(input: &Value, key: &str) -> Option<usize> {
    opt_u64(input, key).and_then(|n| usize::try_from(n).ok())
}

fn shape(input: &Value) -> Result<Value, String> {
    let history = read_history(input.get("history").unwrap_or(&Value::Null))?;
    let si = input.get("shape_input").ok_or("case has no shape_input")?;
    let shape_input = ShapeInput {
        summary: si
            .get("summary")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        legacy_summary_message: si
            .get("legacySummaryMessage")
            .filter(|v| !v.is_null())
            .map(message_from_neutral)
            .transpose()?,
        context_summary: si
            .get("contextSummary")
            .and_then(Value::as_str)
            .map(str::to_owned),
        compacted_count: opt_usize(si, "compactedCount").unwrap_or(0),
        tokens_before: opt_u64(si, "tokensBefore").unwrap_or(0),
        tokens_after: opt_u64(si, "tokensAfter"),
        summary_output_tokens: opt_u64(si, "summaryOutputTokens"),
        request_overhead_tokens: opt_u64(si, "requestOverheadTokens"),
        kept_user_message_count: opt_usize(si, "keptUserMessageCount"),
        kept_head_user_message_count: opt_usize(si, "keptHeadUserMessageCount"),
        dropped_count: opt_u64(si, "droppedCount"),
        has_continuation: si
            .get("hasContinuation")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        legacy_tail: si
            .get("legacyTail")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        recovery_footer: si
            .get("recoveryFooter")
            .or_else(|| si.get("footer"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let estimate = CaseEstimate {
        zero: si.get("estimator").and_then(Value::as_str) == Some("zero"),
    };
    let result =
        build_compaction_shape(&history, &shape_input, &estimate, KeptUserPolicy::Reference);
    Ok(json!({
        "messages": messages_to_neutral(&result.messages),
        "tokensAfter": result.tokens_after,
        "keptUserMessageCount": result.kept_user_message_count,
        "keptHeadUserMessageCount": result.kept_head_user_message_count,
        "compactedCount": result.compacted_count,
    }))
}

pub fn run(input: &Value) -> Result<Value, String> {
    match input.get("fn").and_then(Value::as_str) {
        Some("buildContextCompactionShape") => shape(input),
        Some("buildCompactionSummaryText") => {
            let summary = input
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let footer = input
                .get("recoveryFooter")
                .or_else(|| input.get("footer"))
                .and_then(Value::as_str);
            Ok(json!({"text": build_compaction_summary_text(summary, footer)}))
        }
        other => Err(format!("compaction_handoff: unknown fn {other:?}")),
    }
}
