//! The invariant every captured request must satisfy: each tool result answers an earlier,
//! not yet answered tool call, and each tool call is answered later in the same request.

use std::collections::HashSet;

use serde_json::Value;

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

#[derive(Default)]
struct Ledger {
    open: Vec<String>,
    seen: HashSet<String>,
    errors: Vec<String>,
}

impl Ledger {
    fn call(&mut self, id: &str) {
        if !self.seen.insert(id.to_owned()) {
            self.errors
                .push(format!("tool call id `{id}` appears twice"));
        }
        self.open.push(id.to_owned());
    }

    fn result(&mut self, id: &str) {
        match self.open.iter().position(|o| o == id) {
            Some(pos) => {
                self.open.remove(pos);
            }
            None => self
                .errors
                .push(format!("tool result `{id}` has no earlier unanswered call")),
        }
    }

    fn finish(mut self) -> Result<(), String> {
        for id in self.open.drain(..) {
            self.errors
                .push(format!("tool call `{id}` is never answered"));
        }
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(self.errors.join("; "))
        }
    }
}

/// Checks a request body of any supported wire format. Gemini has no call ids, so calls and
/// responses are matched by function name.
pub fn check_tool_pairing(body: &Value) -> Result<(), String> {
    let mut ledger = Ledger::default();
    if let Some(items) = body.get("input").and_then(Value::as_array) {
        for item in items {
            match str_at(item, "type") {
                "function_call" => ledger.call(str_at(item, "call_id")),
                "function_call_output" => ledger.result(str_at(item, "call_id")),
                _ => {}
            }
        }
    } else if let Some(contents) = body.get("contents").and_then(Value::as_array) {
        let mut n = 0;
        for content in contents {
            for part in content
                .get("parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(call) = part.get("functionCall") {
                    n += 1;
                    ledger.seen.clear();
                    ledger.call(&format!("{}#{n}", str_at(call, "name")));
                } else if let Some(resp) = part.get("functionResponse") {
                    let name = str_at(resp, "name");
                    let open = ledger
                        .open
                        .iter()
                        .find(|o| o.split('#').next() == Some(name))
                        .cloned();
                    ledger.result(&open.unwrap_or_else(|| name.to_owned()));
                }
            }
        }
    } else if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        for message in messages {
            for call in message
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                ledger.call(str_at(call, "id"));
            }
            if str_at(message, "role") == "tool" {
                ledger.result(str_at(message, "tool_call_id"));
            }
            for block in message
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match str_at(block, "type") {
                    "tool_use" => ledger.call(str_at(block, "id")),
                    "tool_result" => ledger.result(str_at(block, "tool_use_id")),
                    _ => {}
                }
            }
        }
    }
    ledger.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn detects_orphans_in_each_format() {
        assert!(
            check_tool_pairing(&json!({"messages": [
                {"role": "assistant", "tool_calls": [{"id": "a"}]},
                {"role": "tool", "tool_call_id": "a"}
            ]}))
            .is_ok()
        );
        let err = check_tool_pairing(&json!({"messages": [
            {"role": "tool", "tool_call_id": "x"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "b"}]}
        ]}))
        .unwrap_err();
        assert!(err.contains("`x`") && err.contains("`b`"), "{err}");
        assert!(
            check_tool_pairing(
                &json!({"input": [{"type": "function_call_output", "call_id": "z"}]})
            )
            .is_err()
        );
        assert!(
            check_tool_pairing(&json!({"contents": [
                {"role": "model", "parts": [{"functionCall": {"name": "f"}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f"}}]}
            ]}))
            .is_ok()
        );
    }
}
