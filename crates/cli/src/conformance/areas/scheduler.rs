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
    // The script replays the expected steps: each finishes or fails the named running task,
    // picking running tasks in start order when the case gives no explicit script.
    let steps: Vec<(String, String)> = match input.get("script").and_then(Value::as_array) {
        Some(steps) => steps
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|s| s.split_once(' ').map(|(a, b)| (a.to_owned(), b.to_owned())))
            .collect(),
        None => Vec::new(),
    };
    let mut pending_steps = steps.into_iter();
    loop {
        let step = match pending_steps.next() {
            Some(step) => step,
            None => {
                if input.get("script").is_some() {
                    break;
                }
                // Default script: finish the earliest running task until nothing runs.
                let Some(first) = scheduler.running().next() else {
                    break;
                };
                if scheduler.waiting().next().is_none() {
                    break;
                }
                ("finish".to_owned(), names[first].clone())
            }
        };
        let (verb, name) = step;
        let key = names
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| format!("unknown task {name}"))?;
        for k in scheduler.finish(key) {
            started.push(names[k].clone());
        }
        script.push(json!({"after": format!("{verb} {name}"), "started": started.clone()}));
    }
    Ok(json!({ "script": script }))
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
