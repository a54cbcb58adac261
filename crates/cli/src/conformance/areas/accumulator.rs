//! Conformance adapter for the `accumulator` area: the tool-side output builder, the 10M-char
//! accumulator and the 50,000-char model budget with spill-to-disk.

use kimi_protocol::ContentPart;
use kimi_tools::result::{
    ToolOutput, ToolOutputAccumulator, ToolResult, ToolResultBuilder, truncate_for_model, utf16_len,
};
use serde_json::{Value, json};

/// Expand `{repeat, times, prefix?, suffix?}` (or a plain string, or a one-part list of either).
fn expand(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => parts.iter().map(expand).collect(),
        Value::Object(obj) => {
            if let Some(text) = obj.get("text").and_then(Value::as_str) {
                return Ok(text.to_owned());
            }
            let repeat = obj
                .get("repeat")
                .and_then(Value::as_str)
                .ok_or("bad text")?;
            let times = obj
                .get("times")
                .and_then(Value::as_u64)
                .ok_or("bad times")?;
            let prefix = obj
                .get("prefix")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let suffix = obj
                .get("suffix")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let count = usize::try_from(times).map_err(|e| e.to_string())?;
            Ok(format!("{prefix}{}{suffix}", repeat.repeat(count)))
        }
        other => Err(format!("bad text {other}")),
    }
}

fn builder_case(input: &Value) -> Result<Value, String> {
    let options = input.get("options").cloned().unwrap_or(json!({}));
    let max_chars = options
        .get("maxChars")
        .and_then(Value::as_u64)
        .map_or(50_000, |v| usize::try_from(v).unwrap_or(usize::MAX));
    let max_line = match options.get("maxLineLength") {
        None => Some(2_000),
        Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|v| usize::try_from(v).ok())
                .ok_or("bad maxLineLength")?,
        ),
    };
    let mut builder = match ToolResultBuilder::new(max_chars, max_line) {
        Ok(b) => b,
        Err(err) => return Ok(json!({"throws": err.to_string()})),
    };
    let writes = input
        .get("writes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut as_parts = false;
    let mut returns = Vec::new();
    for w in &writes {
        as_parts |= w.is_array();
        returns.push(builder.write(&expand(w)?));
    }
    let n_chars = builder.n_chars();
    let finish = input.get("finish").cloned().unwrap_or(json!({}));
    let result = if let Some(msg) = finish.get("error").and_then(Value::as_str) {
        builder.error(msg)
    } else {
        builder.ok(finish.get("ok").and_then(Value::as_str).unwrap_or_default())
    };
    let text = result.text().unwrap_or_default();
    let output = if as_parts {
        json!([{"type": "text", "text": text}])
    } else {
        Value::String(text)
    };
    Ok(json!({
        "write_returns": returns,
        "n_chars": n_chars,
        "output": output,
        "truncated": result.truncated,
        "is_error": result.is_error,
    }))
}

/// Long runs of one character are written back in the case's `{repeat, times}` form.
fn line_to_case(line: &str) -> Value {
    let mut chars = line.chars();
    if let Some(first) = chars.next()
        && line.len() > 100
        && chars.all(|c| c == first)
    {
        return json!({"repeat": first.to_string(), "times": line.chars().count()});
    }
    Value::String(line.to_owned())
}

fn truncate_case(input: &Value) -> Result<Value, String> {
    let tool = input
        .get("tool_name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let call = input
        .get("tool_call_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let output = input
        .pointer("/result/output")
        .ok_or("result.output missing")?;
    let parts: Vec<ContentPart> = match output {
        Value::String(s) => vec![ContentPart::text(s.as_str())],
        Value::Array(items) => items
            .iter()
            .map(|item| {
                if item.get("type").and_then(Value::as_str) == Some("text") {
                    expand(item).map(ContentPart::text)
                } else {
                    serde_json::from_value(item.clone()).map_err(|e| e.to_string())
                }
            })
            .collect::<Result<_, _>>()?,
        other => return Err(format!("bad output {other}")),
    };
    // The flags travel with the output: a result a tool (or an earlier pass) already marked
    // truncated must not be spilled a second time (core.md §e.8 step 3).
    let mut result = ToolResult::parts(parts);
    result.truncated = input
        .pointer("/result/truncated")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    result.is_error = input
        .pointer("/result/isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let home = std::env::temp_dir().join(format!("kimi-conformance-{}", std::process::id()));
    let dir = home.join("agent").join("tool-results");
    let outcome = truncate_for_model(result.clone(), tool, call, &dir, None);
    let Some(path) = outcome.spilled_to else {
        return Ok(json!({"unchanged": outcome.result == result}));
    };
    let saved = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&home);
    let text = match &outcome.result.output {
        ToolOutput::Text(t) => t.clone(),
        ToolOutput::Parts(_) => return Err("preview must be text".to_owned()),
    };
    Ok(json!({
        "unchanged": false,
        "truncated": outcome.result.truncated,
        "output_lines": text.split('\n').map(line_to_case).collect::<Vec<_>>(),
        "spilled_text_chars": utf16_len(&saved),
    }))
}

/// Why a case cannot run here: a `note` case states an ordering rule with nothing to execute.
pub fn skip(input: &Value) -> Option<String> {
    (input.get("fn").and_then(Value::as_str) == Some("note"))
        .then(|| "a stated ordering rule, not an executable case".to_owned())
}

pub fn run(input: &Value) -> Result<Value, String> {
    match input.get("fn").and_then(Value::as_str) {
        Some("ToolResultBuilder") => builder_case(input),
        Some("truncateForModel") => truncate_case(input),
        Some("seedAccumulator") => {
            let limit = input
                .get("limit_chars")
                .and_then(Value::as_u64)
                .ok_or("limit_chars")?;
            let fed = input
                .get("fed_chars")
                .and_then(Value::as_u64)
                .ok_or("fed_chars")?;
            let mut acc =
                ToolOutputAccumulator::new(usize::try_from(limit).map_err(|e| e.to_string())?);
            // Feed in chunks, as a streaming tool would.
            let chunk = "x".repeat(65_536);
            let mut left = usize::try_from(fed).map_err(|e| e.to_string())?;
            while left > 0 {
                let n = left.min(chunk.len());
                acc.write(&chunk[..n]);
                left -= n;
            }
            Ok(json!({"kept_chars": acc.n_chars(), "total_chars": acc.total_chars()}))
        }
        other => Err(format!("unknown accumulator fn {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_already_marked_truncated_is_not_spilled_again() {
        let long = "x".repeat(60_000);
        let case = |truncated: bool| {
            json!({"fn": "truncateForModel", "tool_name": "Bash", "tool_call_id": "c1",
                   "result": {"output": long, "truncated": truncated}})
        };
        assert_eq!(
            truncate_case(&case(true)).unwrap(),
            json!({"unchanged": true})
        );
        assert_eq!(truncate_case(&case(false)).unwrap()["unchanged"], false);
    }
}
