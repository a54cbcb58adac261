//! Conformance adapter for the `tool_call_ids` area: a script of seed / begin / stream /
//! finalize / remapped / rollback operations against one agent's normalizer.

use std::collections::HashMap;

use kimi_context::tool_call_ids::{ResponseIds, StreamKey, ToolCallIdNormalizer};
use serde_json::{Value, json};

use crate::conformance::neutral::messages_from_neutral;

fn response<'a>(
    responses: &'a mut HashMap<String, ResponseIds>,
    name: &Value,
) -> Result<&'a mut ResponseIds, String> {
    let name = name
        .as_str()
        .ok_or_else(|| format!("response name must be a string, got {name}"))?;
    responses
        .get_mut(name)
        .ok_or_else(|| format!("response {name:?} was never begun"))
}

fn stream_key(value: Option<&Value>) -> Result<Option<StreamKey>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(key)) => Ok(Some(StreamKey::Key(key.clone()))),
        Some(other) => other
            .as_u64()
            .map(|i| Some(StreamKey::Index(i)))
            .ok_or_else(|| format!("stream index must be a number or string, got {other}")),
    }
}

pub fn run(input: &Value) -> Result<Value, String> {
    let ops = input
        .get("ops")
        .and_then(Value::as_array)
        .ok_or("tool_call_ids case has no ops list")?;
    let mut ids = ToolCallIdNormalizer::new();
    let mut responses: HashMap<String, ResponseIds> = HashMap::new();
    let mut results = Vec::new();
    for op in ops {
        let Some((name, arg)) = op.as_object().and_then(|o| o.iter().next()) else {
            return Err(format!("bad op {op}"));
        };
        match name.as_str() {
            "seed" => ids.seed_from(&messages_from_neutral(arg)?),
            "begin" => {
                let resp = arg.as_str().ok_or("begin needs a response name")?;
                responses.insert(resp.to_owned(), ids.begin_response());
            }
            "stream" => {
                let raw = arg
                    .get(1)
                    .and_then(Value::as_str)
                    .ok_or("stream needs a raw id")?;
                let key = stream_key(arg.get(2))?;
                let r = response(&mut responses, arg.get(0).unwrap_or(&Value::Null))?;
                results.push(json!(r.remap_streamed(&mut ids, raw, key)));
            }
            "finalize" => {
                let raws: Vec<&str> = arg
                    .get(1)
                    .and_then(Value::as_array)
                    .ok_or("finalize needs a list of raw ids")?
                    .iter()
                    .map(|v| v.as_str().ok_or("raw ids must be strings"))
                    .collect::<Result<_, _>>()?;
                let r = response(&mut responses, arg.get(0).unwrap_or(&Value::Null))?;
                results.push(json!(r.remap_finalized(&mut ids, &raws)));
            }
            "remapped" => {
                let r = response(&mut responses, arg)?;
                let list: Vec<Value> = r
                    .remapped()
                    .iter()
                    .map(|m| json!({"raw": m.raw, "assigned": m.assigned}))
                    .collect();
                results.push(Value::Array(list));
            }
            "rollback" => {
                response(&mut responses, arg)?.rollback(&mut ids);
            }
            other => return Err(format!("unknown op {other:?}")),
        }
    }
    Ok(json!({"results": results}))
}
