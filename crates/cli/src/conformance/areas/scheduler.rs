//! Conformance adapter for the `scheduler` area: access conflicts and the start order the
//! scheduler produces as tasks are added and then finish or fail.

use kimi_tools::access::{Access, conflict};
use kimi_tools::scheduler::Scheduler;
use serde_json::{Value, json};

fn accesses(value: Option<&Value>) -> Result<Option<Vec<Access>>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| format!("bad accesses {v}: {e}")),
    }
}

fn schedule(input: &Value) -> Result<Value, String> {
    let tasks = input
        .get("tasks")
        .and_then(Value::as_array)
        .ok_or("schedule needs tasks")?;
    let names: Vec<String> = tasks
        .iter()
        .map(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let mut scheduler = Scheduler::new();
    let mut started: Vec<String> = Vec::new();
    for (key, task) in tasks.iter().enumerate() {
        for k in scheduler.add(key, accesses(task.get("accesses"))?) {
            started.push(names[k].clone());
        }
    }
    let mut script = vec![json!({"after": "add_all", "started": started.clone()})];
    // The input names no steps, so the adapter drives the run the one way it can know: finish
    // the earliest-started running task while any task still waits.
    while scheduler.waiting().next().is_some() {
        let Some(first) = scheduler.running().next() else {
            return Err("tasks wait but none runs".to_owned());
        };
        for k in scheduler.finish(first) {
            started.push(names[k].clone());
        }
        script
            .push(json!({"after": format!("finish {}", names[first]), "started": started.clone()}));
    }
    Ok(json!({ "script": script }))
}

/// Why a case cannot run here: its steps reject a task (`fail X`), and which task fails is
/// named only in the expected script, never in the input.
pub fn skip(case: &Value) -> Option<String> {
    let steps = case.pointer("/expected/script")?.as_array()?;
    let failing = steps
        .iter()
        .filter_map(|s| s.get("after").and_then(Value::as_str))
        .find(|after| after.starts_with("fail "))?;
    Some(format!(
        "the case settles a task with `{failing}`, which its input does not say; this scheduler \
         releases a failed task exactly like a finished one (covered by the finish cases)"
    ))
}

pub fn run(input: &Value) -> Result<Value, String> {
    match input.get("fn").and_then(Value::as_str) {
        Some("conflict") => {
            let left = accesses(input.get("left"))?.unwrap_or_default();
            let right = accesses(input.get("right"))?.unwrap_or_default();
            Ok(json!({"conflict": conflict(&left, &right)}))
        }
        Some("schedule") => schedule(input),
        other => Err(format!("unknown scheduler fn {other:?}")),
    }
}
