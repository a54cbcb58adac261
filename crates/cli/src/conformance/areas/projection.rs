//! Conformance adapter for the `projection` area: the projector (`project`, `project_strict`,
//! media policies) and the fork seed, on the neutral message schema.

use kimi_context::open_exchange::close_trailing_open_tool_exchange;
use kimi_context::projector::{
    Anomaly, MediaPolicy, ProjectionPolicy, StructurePolicy, media_snapshot, project_with,
};
use serde_json::{Map, Value, json};

use crate::conformance::neutral::{messages_from_neutral, messages_to_neutral};

fn anomaly_to_neutral(anomaly: &Anomaly) -> Value {
    let mut obj = Map::new();
    obj.insert("kind".into(), Value::from(anomaly.kind()));
    if let Some(id) = anomaly.tool_call_id() {
        obj.insert("tool_call_id".into(), Value::from(id));
    }
    if let Anomaly::ToolResultSynthesized { trailing, .. } = anomaly {
        obj.insert("trailing".into(), Value::Bool(*trailing));
    }
    if let Some(role) = anomaly.role() {
        obj.insert("role".into(), Value::from(role.as_str()));
    }
    Value::Object(obj)
}

pub fn run(input: &Value) -> Result<Value, String> {
    let function = input
        .get("fn")
        .and_then(Value::as_str)
        .ok_or("projection case has no \"fn\"")?;
    let history = messages_from_neutral(input.get("history").unwrap_or(&Value::Null))?;
    let policy = match function {
        "closeTrailingOpenToolExchange" => {
            let seed = close_trailing_open_tool_exchange(&history);
            return Ok(json!({"messages": messages_to_neutral(&seed)}));
        }
        "project" => ProjectionPolicy::default(),
        "projectStrict" => ProjectionPolicy::strict(),
        "projectMediaDegraded" => ProjectionPolicy {
            structure: StructurePolicy::Normal,
            media: MediaPolicy::Degraded,
        },
        "projectMediaStripped" => {
            let snapshot_history =
                messages_from_neutral(input.get("snapshot_history").unwrap_or(&Value::Null))?;
            ProjectionPolicy {
                structure: StructurePolicy::Normal,
                media: MediaPolicy::Strip(media_snapshot(&snapshot_history)),
            }
        }
        other => return Err(format!("unknown projection fn {other:?}")),
    };
    let projection = project_with(&history, &policy);
    let anomalies: Vec<Value> = projection
        .anomalies
        .iter()
        .map(anomaly_to_neutral)
        .collect();
    Ok(json!({
        "messages": messages_to_neutral(&projection.messages),
        "anomalies": anomalies,
    }))
}
