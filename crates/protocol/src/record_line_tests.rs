use super::*;
use crate::record::TYPED;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Map, json};

/// The line as this version writes it: `type` first, the body's keys, then `time`.
fn line(name: &str, body: &Map<String, Value>, time: Option<Value>) -> Vec<u8> {
    let mut map = Map::new();
    map.insert("type".to_owned(), Value::from(name));
    for (k, v) in body {
        map.insert(k.clone(), v.clone());
    }
    if let Some(time) = time {
        map.insert("time".to_owned(), time);
    }
    serde_json::to_vec(&Value::Object(map)).unwrap()
}

/// The general path's answer for the same bytes.
fn general(bytes: &[u8]) -> Option<Record> {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| Record::from_value(v).ok())
}

fn bodies() -> Vec<Value> {
    vec![
        json!({}),
        json!({"agentId": "a", "x": 1}),
        json!({"agentId": 5}),
        json!({"protocol_version": "1.5", "created_at": 1}),
        json!({"message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}),
        json!({"message": {"role": "user", "content": "hi", "origin": {"kind": "user"}}}),
        json!({"message": {"role": "assistant", "content": [{"type": "think", "think": "h\"m\\n"}], "toolCalls": [{"id": "c", "name": "Read", "arguments": "{}"}]}}),
        json!({"event": {"type": "step.begin", "uuid": "u", "turnId": 1, "step": 1}}),
        json!({"event": {"type": "tool.result", "toolCallId": "c", "result": {"output": "x\ny", "isError": false}}}),
        json!({"event": {"type": "step.end", "uuid": "u", "finishReason": "tool_use", "llmMs": 3}}),
        json!({"count": 1}),
        json!({"promptId": "p", "promptIds": ["q"], "status": "completed", "z": 1, "a": 2}),
        json!({"turnId": 1, "reason": "completed"}),
        json!({"turnId": "7", "reason": "failed", "error": {"code": "x"}}),
        json!({"branch": "b", "base": {"branch": "main", "line": 2}, "legacyUndoLine": 3}),
        json!({"length": 3, "tokens": 40}),
        json!({"summary": "s", "compactedCount": 2}),
        json!({"id": "i", "kind": "question", "request": {}, "response": 1}),
        json!({"info": {"id": "t"}, "outputTail": "done"}),
        json!({"mode": "yolo"}),
        json!({"active": true, "planId": "p-1"}),
        json!({"promptId": "m", "input": [{"type": "text", "text": "q"}]}),
        json!({"profile": "agent", "systemPrompt": "s"}),
        json!({"task": {"id": "a", "cron": "* * * * *", "prompt": "p", "createdAt": 1}}),
        json!({"ids": ["a"], "id": "a", "lastFiredAt": 3}),
        json!({"todos": [{"title": "t", "status": "in_progress"}]}),
        json!({"escaped\u{1}key": "v", "agentId": "a\"b"}),
    ]
}

fn times() -> Vec<Option<Value>> {
    vec![
        Some(json!(5)),
        Some(json!(5.7)),
        None,
        Some(json!(-1)),
        Some(json!("5")),
        Some(Value::Null),
    ]
}

/// Wherever the fast path answers, it answers what the general path does; and it answers for
/// every valid record in the shape this version writes.
#[test]
fn agrees_with_the_general_path_or_declines() {
    let mut taken = 0;
    for name in TYPED.iter().copied().chain(["llm.request", "x.y"]) {
        for body in bodies() {
            let Value::Object(body) = body else { continue };
            for time in times() {
                let bytes = line(name, &body, time.clone());
                let fast = Record::from_line(&bytes);
                let slow = general(&bytes);
                if fast.is_some() {
                    taken += 1;
                    assert_eq!(fast, slow, "{}", String::from_utf8_lossy(&bytes));
                } else if matches!(time, Some(Value::Number(ref n)) if n.as_u64().is_some()) {
                    assert!(
                        slow.is_none(),
                        "declined a valid line: {}",
                        String::from_utf8_lossy(&bytes)
                    );
                }
            }
        }
    }
    assert!(taken > 100, "fast path taken only {taken} times");
}

#[test]
fn declines_lines_not_in_this_versions_shape() {
    for bytes in [
        br#"{"time":1,"type":"context.clear"}"#.as_slice(),
        br#"{"type":"context\u002eclear","time":1}"#,
        br#"{"type":"context.clear","type":"context.clear","time":1}"#,
        br#"{"type":"context.clear","time":"1"}"#,
        br#"{"type":"context.clear","time":1} x"#,
        br#"{"type":"context.clear","time":1"#,
        br#"{"type":"turn.ended","turnId":"x","reason":"completed","time":1}"#,
        br#"{"type":"context.clear","agentId":"a","agentId":"b","time":1}"#,
        b"[1]",
        b"",
    ] {
        assert_eq!(
            Record::from_line(bytes),
            None,
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn keys_after_time_and_escaped_keys_are_kept() {
    let bytes = br#"{"type":"prompt.completed","promptId":"p","time":3,"late":1,"k\"q":2}"#;
    let fast = Record::from_line(bytes).unwrap();
    assert_eq!(Some(fast), general(bytes));
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        (0.0f64..1e6).prop_map(Value::from),
        "[a-z\"\\\\\n é]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::vec(("[a-zA-Z]{1,6}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Random bodies built from the fields the typed records use, with random values.
    #[test]
    fn random_records_agree(
        name in prop::sample::select(TYPED.to_vec()),
        fields in prop::collection::vec(
            (prop::sample::select(vec![
                "agentId", "message", "event", "turnId", "promptId", "promptIds", "reason",
                "branch", "base", "count", "length", "tokens", "summary", "id", "kind", "info",
                "request", "response", "mode", "input", "origin", "other",
            ]), any_json()),
            0..5,
        ),
        time in prop_oneof![Just(None), (0u64..1_000_000).prop_map(|t| Some(json!(t)))],
    ) {
        let body: Map<String, Value> = fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let bytes = line(name, &body, time);
        if let Some(fast) = Record::from_line(&bytes) {
            prop_assert_eq!(Some(fast), general(&bytes));
        }
    }
}

#[test]
fn lines_with_values_only_a_full_parse_checks_take_the_general_path() {
    for bytes in [
        b"{\"type\":\"context.clear\",\"x\":\"\xff\",\"time\":1}".as_slice(),
        br#"{"type":"context.clear","x":"\ud800","time":1}"#,
        br#"{"type":"context.clear","x":1e999,"time":1}"#,
        br#"{"type":"context.clear","x":2E+400,"time":1}"#,
    ] {
        assert_eq!(
            Record::from_line(bytes),
            None,
            "{}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(general(bytes), None, "the general path rejects it too");
    }
    // Ordinary numbers and escapes are still decoded directly.
    assert!(
        Record::from_line(br#"{"type":"context.clear","x":1.5e10,"y":"a\nb","time":1}"#).is_some()
    );
}
