//! Round-trip tests for journal records: typed records keep their wire shape, unknown ones are
//! kept verbatim, bad input is an error and never a panic.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn round_trip(value: Value) {
    let record = Record::from_value(value.clone()).unwrap();
    let back = record.to_value();
    assert_eq!(back, value);
    // `time` is always written last.
    if let Some(Value::Object(map)) = Some(back)
        && map.contains_key("time")
    {
        assert_eq!(map.keys().next_back().map(String::as_str), Some("time"));
    }
}

#[test]
fn typed_records_round_trip() {
    for value in [
        json!({"type": "metadata", "protocol_version": "1.5", "created_at": 1}),
        json!({"type": "context.append_message", "agentId": "main", "message": {"role": "user", "content": [{"type": "text", "text": "hi ✓"}], "toolCalls": [], "origin": {"kind": "user"}}, "time": 5}),
        json!({"type": "context.append_loop_event", "agentId": "main", "event": {"type": "step.begin", "uuid": "s1", "turnId": "0", "step": 1}, "time": 6}),
        json!({"type": "context.apply_compaction", "agentId": "main", "summary": "short", "compactedCount": 4, "tokensBefore": 100, "tokensAfter": 10, "wireLines": [2, 9], "time": 7}),
        json!({"type": "context.apply_compaction", "contextSummary": "ctx", "compactedCount": 4, "summary": "s", "time": 7}),
        json!({"type": "context.clear", "agentId": "main", "time": 8}),
        json!({"type": "context.undo", "agentId": "main", "count": 1, "time": 9}),
        json!({"type": "context.undone", "agentId": "main", "turns": 1, "fromTurnId": 3, "time": 9}),
        json!({"type": "agent.switched", "agentId": "main", "branch": "b1", "reason": "undo", "base": {"branch": "main", "line": 4}, "turns": 1, "legacyUndoLine": 7, "time": 9}),
        json!({"type": "turn.prompt", "agentId": "main", "input": [{"type": "text", "text": "go"}], "origin": {"kind": "user"}, "promptId": "p1", "turnId": 2, "time": 10}),
        json!({"type": "turn.steer", "agentId": "main", "input": [], "origin": {"kind": "user", "inTurn": true}, "promptIds": ["p2"], "time": 11}),
        json!({"type": "turn.cancel", "agentId": "main", "turnId": 1, "target": "queued", "time": 12}),
        json!({"type": "turn.ended", "agentId": "main", "turnId": 1, "reason": "failed", "error": {"code": "x"}, "durationMs": 3, "time": 13}),
        json!({"type": "full_compaction.begin", "agentId": "main", "source": "auto", "time": 14}),
        json!({"type": "full_compaction.complete", "agentId": "main", "time": 15}),
        json!({"type": "prompt.completed", "agentId": "main", "promptId": "p1", "reason": "completed", "time": 16}),
        json!({"type": "prompt.steered", "agentId": "main", "promptId": "p1", "intoTurnId": 4, "time": 16}),
        json!({"type": "token_counting.rebased", "agentId": "main", "length": 3, "tokens": 40, "measured": true, "time": 17}),
        json!({"type": "usage.record", "agentId": "main", "model": "k2", "usage": {"inputOther": 1, "output": 2, "inputCacheRead": 3, "inputCacheCreation": 4}, "usageScope": "turn", "time": 18}),
        json!({"type": "permission.set_mode", "agentId": "main", "mode": "yolo", "time": 19}),
        json!({"type": "permission.record_approval_result", "agentId": "main", "turnId": 0, "toolCallId": "c", "toolName": "Bash", "action": "run command", "sessionApprovalRule": "Bash", "result": {"decision": "approved"}, "time": 20}),
        json!({"type": "interaction.request", "agentId": "main", "id": "i1", "kind": "question", "request": {"q": 1}, "time": 21}),
        json!({"type": "interaction.resolved", "agentId": "main", "id": "i1", "response": "yes", "time": 22}),
        json!({"type": "task.terminated", "agentId": "main", "info": {"id": "t"}, "outputTail": "done", "time": 23}),
        json!({"type": "forked", "agentId": "main", "time": 24}),
    ] {
        round_trip(value);
    }
}

#[test]
fn legacy_compaction_shape_reads_message_summary() {
    let value = json!({"type": "context.apply_compaction", "summary": {"role": "user", "content": [{"type": "text", "text": "old summary"}], "toolCalls": []}, "count": 6, "time": 1});
    let record = Record::from_value(value.clone()).unwrap();
    let RecordPayload::ApplyCompaction(compaction) = &record.payload else {
        panic!("not a compaction: {record:?}");
    };
    assert_eq!(compaction.summary_text().as_deref(), Some("old summary"));
    assert_eq!(compaction.replaced_count(), Some(6));
    assert_eq!(record.to_value(), value);
}

#[test]
fn unknown_records_are_kept_verbatim() {
    let value = json!({"type": "llm.request", "time": 3, "agentId": "main", "kind": "loop", "nested": {"a": [1, 2.5, null]}});
    let record = Record::from_value(value.clone()).unwrap();
    assert!(matches!(record.payload, RecordPayload::Other(_)));
    assert_eq!(record.time, Some(3));
    assert_eq!(record.type_name(), "llm.request");
    assert_eq!(record.payload.agent_id(), Some("main"));
    // Byte-equivalent: field order (time in the middle) is kept.
    assert_eq!(
        serde_json::to_string(&record).unwrap(),
        serde_json::to_string(&value).unwrap()
    );
}

#[test]
fn turn_ended_drops_bus_only_fields_and_absent_optionals() {
    let record = Record::from_value(json!({"type": "turn.ended", "agentId": "main", "turnId": 3, "reason": "cancelled", "durationMs": 12, "interruptReason": "user_cancelled", "time": 42})).unwrap();
    assert_eq!(
        record.to_value(),
        json!({"type": "turn.ended", "agentId": "main", "turnId": 3, "reason": "cancelled", "durationMs": 12, "time": 42})
    );
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    for value in [
        json!(42),
        json!("x"),
        json!([1]),
        json!({"no": "type"}),
        json!({"type": 5}),
    ] {
        assert_eq!(Record::from_value(value), Err(RecordError::NotARecord));
    }
    for value in [
        json!({"type": "context.append_message"}),
        json!({"type": "turn.ended", "turnId": "x", "reason": "completed"}),
        json!({"type": "agent.switched", "branch": "b1"}),
        json!({"type": "metadata", "protocol_version": 1.5, "created_at": 1}),
    ] {
        let err = Record::from_value(value).unwrap_err();
        assert!(matches!(err, RecordError::Invalid { .. }), "{err}");
    }
}

#[test]
fn missing_agent_id_is_filled_and_existing_one_kept() {
    let mut record = Record::from_value(json!({"type": "context.clear", "time": 1})).unwrap();
    assert_eq!(record.payload.agent_id(), None);
    record.payload.fill_agent_id("main");
    assert_eq!(record.payload.agent_id(), Some("main"));
    record.payload.fill_agent_id("other");
    assert_eq!(record.payload.agent_id(), Some("main"));
}

#[test]
fn undo_count_validity() {
    for (count, valid) in [
        (json!(2), Some(2)),
        (json!(0), None),
        (json!(1.5), None),
        (json!(9_007_199_254_740_992_u64), None),
        (json!("1"), None),
    ] {
        let undo = ContextUndo {
            agent_id: None,
            count,
        };
        assert_eq!(undo.valid_count(), valid);
    }
}

#[test]
fn numeric_turn_ids_accept_strings_and_floats() {
    let record =
        Record::from_value(json!({"type": "turn.cancel", "turnId": "4", "time": 1.0})).unwrap();
    let RecordPayload::TurnCancel(cancel) = record.payload else {
        panic!("not a cancel");
    };
    assert_eq!(cancel.turn_id, Some(4));
    assert_eq!(record.time, Some(1));
}

#[test]
fn other_record_built_in_code_gets_its_time_last() {
    let mut map = Map::new();
    map.insert("type".to_owned(), json!("llm.request"));
    map.insert("model".to_owned(), json!("k2"));
    let record = Record::new(RecordPayload::Other(map), 9);
    assert_eq!(
        serde_json::to_string(&record).unwrap(),
        r#"{"type":"llm.request","model":"k2","time":9}"#
    );
}

/// The direct decode agrees with the serde tag, in value and in error, for every type.
#[test]
fn direct_decode_matches_the_tagged_path() {
    let bodies = [
        json!({}),
        json!({"agentId": "a", "x": 1}),
        json!({"agentId": 5}),
        json!({"protocol_version": "1.5", "created_at": 1}),
        json!({"message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}),
        json!({"message": {"role": "user", "content": "hi", "origin": {"kind": "user"}}}),
        json!({"event": {"type": "step.begin", "uuid": "u", "turnId": 1, "step": 1}}),
        json!({"count": 1}),
        json!({"promptId": "p", "promptIds": ["q"], "status": "completed", "z": 1, "a": 2}),
        json!({"turnId": 1, "reason": "completed"}),
        json!({"branch": "b", "base": {"branch": "main", "line": 2}}),
    ];
    for name in TYPED {
        for body in &bodies {
            let Value::Object(mut map) = body.clone() else {
                continue;
            };
            map.insert("type".to_owned(), Value::from(*name));
            let tagged: Result<RecordPayload, String> =
                serde_json::from_value(Value::Object(map.clone())).map_err(|e| e.to_string());
            let direct = decode_payload(name, map).map_err(|e| e.to_string());
            assert_eq!(direct, tagged, "{name} {body}");
        }
    }
}

/// Journals written before kimi-rs's own records were typed hold these exact lines (built as
/// JSON maps in code): each still decodes, to the typed variant, and is written back byte for
/// byte on both the general and the fast path.
#[test]
fn own_records_in_their_old_shapes_decode_and_round_trip() {
    let lines = [
        r#"{"type":"plan.mode","active":true,"planId":"swift-lantern-comet-3f","time":1}"#,
        r#"{"type":"plan.mode","active":false,"time":2}"#,
        r#"{"type":"prompt.queued","promptId":"msg_1","input":[{"type":"text","text":"later"}],"time":3}"#,
        r#"{"type":"profile.bind","profile":"agent","systemPrompt":"You are Kimi.","time":4}"#,
        r#"{"type":"profile.bind","profile":"mine","profileFile":"/p/mine.md","systemPrompt":"S","time":4}"#,
        r#"{"type":"profile.bind","systemPrompt":"s","time":4}"#,
        r#"{"type":"cron.add","task":{"id":"ab12cd34","cron":"*/5 * * * *","prompt":"check","createdAt":1700000000000,"recurring":true},"time":5}"#,
        r#"{"type":"cron.add","task":{"id":"ab12cd35","cron":"0 9 * * 1","prompt":"p","createdAt":1,"recurring":false,"lastFiredAt":7},"time":5}"#,
        r#"{"type":"cron.delete","ids":["ab12cd34","ab12cd35"],"time":6}"#,
        r#"{"type":"cron.cursor","id":"ab12cd34","lastFiredAt":1700000300000,"time":7}"#,
        r#"{"type":"todo.set","todos":[{"title":"read","status":"done"},{"title":"fix","status":"in_progress"},{"title":"test","status":"pending"}],"time":8}"#,
    ];
    for line in lines {
        let general = Record::from_value(serde_json::from_str(line).unwrap()).unwrap();
        assert!(
            !matches!(general.payload, RecordPayload::Other(_)),
            "{line} was not typed"
        );
        assert_eq!(serde_json::to_string(&general).unwrap(), line);
        assert_eq!(Record::from_line(line.as_bytes()), Some(general.clone()));
        // Our records never get an `agentId` (one journal per agent), so commit does not
        // change their shape.
        let mut filled = general.clone();
        filled.payload.fill_agent_id("main");
        assert_eq!(serde_json::to_string(&filled).unwrap(), line);
    }
    let plan = Record::from_value(serde_json::from_str(lines[0]).unwrap()).unwrap();
    assert_eq!(
        plan.payload,
        RecordPayload::PlanMode(PlanModeRecord {
            active: true,
            plan_id: Some("swift-lantern-comet-3f".to_owned()),
        })
    );
    let queued = Record::from_value(serde_json::from_str(lines[2]).unwrap()).unwrap();
    assert_eq!(
        queued.payload,
        RecordPayload::PromptQueued(PromptQueued {
            prompt_id: "msg_1".to_owned(),
            input: vec![crate::ContentPart::text("later")],
        })
    );
    let cron = Record::from_value(serde_json::from_str(lines[7]).unwrap()).unwrap();
    assert_eq!(
        cron.payload,
        RecordPayload::CronAdd(CronAdd {
            task: CronJob {
                id: "ab12cd35".to_owned(),
                cron: "0 9 * * 1".to_owned(),
                prompt: "p".to_owned(),
                created_at: 1,
                recurring: false,
                last_fired_at: Some(7),
            }
        })
    );
    let todos = Record::from_value(serde_json::from_str(lines[10]).unwrap()).unwrap();
    let RecordPayload::TodoSet(set) = todos.payload else {
        panic!("not a todo.set");
    };
    assert_eq!(set.todos[1].status, TodoStatus::InProgress);
}

/// A `cron.add` without `recurring` (older writer) is a recurring job; an own record whose
/// fields do not fit is reported, not a panic, and unknown `kimi-rs` types stay `Other`.
#[test]
fn own_records_read_leniently() {
    let record = Record::from_value(json!({"type": "cron.add", "task": {"id": "a", "cron": "* * * * *", "prompt": "p", "createdAt": 1}, "time": 1})).unwrap();
    let RecordPayload::CronAdd(add) = record.payload else {
        panic!("not a cron.add");
    };
    assert!(add.task.recurring);
    for bad in [
        json!({"type": "cron.cursor", "id": "a", "lastFiredAt": "soon"}),
        json!({"type": "todo.set", "todos": [{"title": "x", "status": "later"}]}),
        json!({"type": "prompt.queued", "input": []}),
    ] {
        let err = Record::from_value(bad).unwrap_err();
        assert!(matches!(err, RecordError::Invalid { .. }), "{err}");
    }
    let newer = Record::from_value(json!({"type": "todo.archived", "n": 1, "time": 2})).unwrap();
    assert!(matches!(newer.payload, RecordPayload::Other(_)));
}

#[test]
fn prompt_kinds_pick_their_record() {
    let record = PromptRecord {
        agent_id: None,
        prompt_id: Some("p".to_owned()),
        reason: None,
        extra: Map::new(),
    };
    for (kind, name) in [
        (PromptKind::Accepted, "prompt.accepted"),
        (PromptKind::Completed, "prompt.completed"),
        (PromptKind::Aborted, "prompt.aborted"),
        (PromptKind::Steered, "prompt.steered"),
    ] {
        assert_eq!(
            Record::new(kind.payload(record.clone()), 1).type_name(),
            name
        );
    }
    assert_eq!(crate::ops::TurnEndReason::Blocked.as_str(), "blocked");
}
