//! Conformance adapter for the `tool_args` area: decoding raw tool-call arguments and the
//! preflight outcome of a call (unknown tool, schema validation).

use kimi_tools::args::{
    ArgsValidator, Preflight, RawArgs, ToolLookup, parse_tool_call_arguments, preflight,
};
use serde_json::{Value, json};

fn raw_args<'a>(raw: Option<&'a Value>, value_kind: bool) -> RawArgs<'a> {
    match raw {
        None | Some(Value::Null) => RawArgs::Missing,
        Some(Value::String(s)) if !value_kind => RawArgs::Text(s),
        Some(v) => RawArgs::Value(v),
    }
}

pub fn run(input: &Value) -> Result<Value, String> {
    match input.get("fn").and_then(Value::as_str) {
        Some("parseToolCallArguments") => {
            let value_kind = input.get("raw_kind").and_then(Value::as_str) == Some("value");
            let parsed = parse_tool_call_arguments(raw_args(input.get("raw"), value_kind));
            let mut out = json!({"data": parsed.data, "parse_failed": parsed.parse_failed});
            if parsed.error.is_some() {
                out["has_error_message"] = Value::Bool(true);
            }
            Ok(out)
        }
        Some("preflight") => {
            let call = input.get("call").ok_or("preflight needs call")?;
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
            let tools = input
                .get("registered_tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let found = tools
                .iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some(name));
            let empty = json!({});
            let lookup = match found {
                None => ToolLookup::Missing,
                Some(tool) => ToolLookup::Found {
                    parameters: tool.get("parameters").unwrap_or(&empty),
                },
            };
            let validator = ArgsValidator::new();
            Ok(
                match preflight(
                    &validator,
                    name,
                    lookup,
                    raw_args(call.get("arguments"), false),
                ) {
                    Preflight::Runnable { args } => json!({"outcome": "runnable", "args": args}),
                    Preflight::Rejected { output, args } => json!({
                        "outcome": "preflight-rejected",
                        "output": output,
                        "is_error": true,
                        "args": args,
                    }),
                },
            )
        }
        other => Err(format!("unknown tool_args fn {other:?}")),
    }
}
