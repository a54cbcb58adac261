//! Journal migrations 1.0 → 1.5 (core.md §g.5). They operate on raw JSON records so that a
//! record this version does not type still passes through unchanged.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::error::WireError;

/// Numeric comparison per dot-separated component; missing components count as 0 and a
/// component that is not a number counts as 0.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let parts = |v: &str| -> Vec<u64> {
        v.split('.')
            .map(|p| p.trim().parse().unwrap_or(0))
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    let len = a.len().max(b.len());
    (0..len)
        .map(|i| {
            a.get(i)
                .copied()
                .unwrap_or(0)
                .cmp(&b.get(i).copied().unwrap_or(0))
        })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

type Step = fn(Value) -> Value;

/// `(from, to, step)`: the registered migrations, in chain order.
const STEPS: &[(&str, &str, Step)] = &[
    ("1.0", "1.1", v1_0_to_1_1),
    ("1.1", "1.2", v1_1_to_1_2),
    ("1.2", "1.3", |record| record),
    ("1.3", "1.4", v1_3_to_1_4),
    ("1.4", "1.5", v1_4_to_1_5),
];

/// Apply the single migration registered for `from` to every record (metadata included; the
/// steps leave it alone). Returns the version migrated to.
pub fn migrate_step(
    from: &str,
    records: Vec<Value>,
) -> Result<(&'static str, Vec<Value>), WireError> {
    let (_, to, step) = STEPS
        .iter()
        .find(|(v, _, _)| compare_versions(v, from).is_eq())
        .ok_or_else(|| WireError::MigrationMissing {
            version: from.to_owned(),
        })?;
    Ok((to, records.into_iter().map(step).collect()))
}

/// Migrate records from `from` up to the current version, step by step.
pub fn migrate_chain(from: &str, mut records: Vec<Value>) -> Result<Vec<Value>, WireError> {
    let mut version = from.to_owned();
    while compare_versions(&version, kimi_protocol::WIRE_PROTOCOL_VERSION).is_lt() {
        let (next, migrated) = migrate_step(&version, records)?;
        records = migrated;
        version = next.to_owned();
    }
    Ok(records)
}

fn record_type(record: &Value) -> Option<&str> {
    record.get("type").and_then(Value::as_str)
}

/// 1.0 → 1.1: tool calls in `context.append_message` lose their nested `function` object.
fn v1_0_to_1_1(mut record: Value) -> Value {
    if record_type(&record) != Some("context.append_message") {
        return record;
    }
    let Some(message) = record.get_mut("message").and_then(Value::as_object_mut) else {
        return record;
    };
    for key in ["toolCalls", "tool_calls"] {
        if let Some(Value::Array(calls)) = message.get_mut(key) {
            for call in calls.iter_mut() {
                if let Value::Object(map) = call
                    && map.get("function").is_some_and(Value::is_object)
                {
                    *map = flatten_function(std::mem::take(map));
                }
            }
        }
    }
    record
}

/// Replace `function: {name, arguments}` by `name, arguments` at the same position.
fn flatten_function(call: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in call {
        match (key.as_str(), value) {
            ("function", Value::Object(function)) => {
                for (k, v) in function {
                    out.insert(k, v);
                }
            }
            (_, value) => {
                out.insert(key, value);
            }
        }
    }
    out
}

/// 1.1 → 1.2: approve-for-session results get the rule they implied.
fn v1_1_to_1_2(mut record: Value) -> Value {
    if record_type(&record) != Some("permission.record_approval_result") {
        return record;
    }
    let Some(map) = record.as_object_mut() else {
        return record;
    };
    let result = map.get("result");
    let approved_for_session = result
        .and_then(|r| r.get("decision"))
        .and_then(Value::as_str)
        == Some("approved")
        && result.and_then(|r| r.get("scope")).and_then(Value::as_str) == Some("session");
    if !approved_for_session || map.contains_key("sessionApprovalRule") {
        return record;
    }
    let action = map
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let rule = match action {
        "run command" => Some("Bash".to_owned()),
        "stop background task" => Some("TaskStop".to_owned()),
        "edit file" | "edit file outside of working directory" | "write file" => {
            Some("Write".to_owned())
        }
        "run command in plan mode" | "run background command" => None,
        _ => map
            .get("toolName")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    if let Some(rule) = rule {
        map.insert("sessionApprovalRule".to_owned(), Value::String(rule));
    }
    record
}

fn keep_only(record: &Map<String, Value>, new_type: &str, keys: &[&str]) -> Value {
    let mut out = Map::new();
    out.insert("type".to_owned(), Value::String(new_type.to_owned()));
    for key in keys {
        if let Some(v) = record.get(*key) {
            out.insert((*key).to_owned(), v.clone());
        }
    }
    Value::Object(out)
}

/// 1.3 → 1.4: goal audit records are reduced to the fields the goal fold reads.
fn v1_3_to_1_4(record: Value) -> Value {
    let Value::Object(map) = &record else {
        return record;
    };
    match record_type(&record) {
        Some("goal.create") => keep_only(
            map,
            "goal.create",
            &["goalId", "objective", "completionCriterion", "time"],
        ),
        Some("goal.update") => keep_only(
            map,
            "goal.update",
            &[
                "status",
                "reason",
                "turnsUsed",
                "tokensUsed",
                "wallClockMs",
                "actor",
                "time",
            ],
        ),
        Some("goal.account_usage") => {
            keep_only(map, "goal.update", &["tokensUsed", "wallClockMs", "time"])
        }
        Some("goal.continuation") => keep_only(map, "goal.update", &["turnsUsed", "time"]),
        Some("goal.clear") => keep_only(map, "goal.clear", &["time"]),
        _ => record,
    }
}

/// 1.4 → 1.5: goals running at write time get `wallClockResumedAt = time`.
fn v1_4_to_1_5(mut record: Value) -> Value {
    let applies = match record_type(&record) {
        Some("goal.create") => true,
        Some("goal.update") => match record.get("status") {
            Some(status) => status.as_str() == Some("active"),
            None => record.get("wallClockMs").is_some_and(Value::is_number),
        },
        _ => false,
    };
    if !applies {
        return record;
    }
    if let Some(map) = record.as_object_mut()
        && !map.contains_key("wallClockResumedAt")
        && let Some(time) = map.get("time").filter(|t| t.is_number()).cloned()
    {
        map.insert("wallClockResumedAt".to_owned(), time);
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn versions_compare_numerically() {
        assert_eq!(compare_versions("1.10", "1.5"), Ordering::Greater);
        assert_eq!(compare_versions("1.5", "1.5.0"), Ordering::Equal);
        assert_eq!(compare_versions("0.9", "1.5"), Ordering::Less);
        assert_eq!(compare_versions("9.9", "1.5"), Ordering::Greater);
    }

    #[test]
    fn missing_step_is_reported_with_the_reference_message() {
        let err = migrate_chain("0.9", vec![]).unwrap_err();
        assert_eq!(err.code(), "wire.migration_missing");
        assert_eq!(err.to_string(), "Missing wire migration for version 0.9");
    }

    #[test]
    fn goal_records_are_rewritten_by_1_3() {
        let (to, out) = migrate_step(
            "1.3",
            vec![
                json!({"type": "goal.create", "goalId": "g", "objective": "o", "junk": 1, "time": 1}),
                json!({"type": "goal.update", "goalId": "g", "status": "paused", "time": 2}),
                json!({"type": "goal.account_usage", "goalId": "g", "tokensUsed": 5, "wallClockMs": 6, "time": 3}),
                json!({"type": "goal.continuation", "goalId": "g", "turnsUsed": 2, "time": 4}),
                json!({"type": "goal.clear", "goalId": "g", "time": 5}),
            ],
        )
        .unwrap();
        assert_eq!(to, "1.4");
        assert_eq!(
            out,
            vec![
                json!({"type": "goal.create", "goalId": "g", "objective": "o", "time": 1}),
                json!({"type": "goal.update", "status": "paused", "time": 2}),
                json!({"type": "goal.update", "tokensUsed": 5, "wallClockMs": 6, "time": 3}),
                json!({"type": "goal.update", "turnsUsed": 2, "time": 4}),
                json!({"type": "goal.clear", "time": 5}),
            ]
        );
    }

    #[test]
    fn full_chain_from_1_0() {
        let out = migrate_chain(
            "1.0",
            vec![json!({"type": "goal.update", "wallClockMs": 3, "time": 9, "goalId": "x"})],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                json!({"type": "goal.update", "wallClockMs": 3, "time": 9, "wallClockResumedAt": 9})
            ]
        );
    }
}
