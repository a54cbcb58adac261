//! The fast path against the general one: wherever it answers, the replay input is identical;
//! on clean journals of this version (branches included) it does answer.

use super::*;
use crate::envelope::read_envelope;
use crate::lines::scan;
use crate::replay::replay_input_owned;
use crate::tree::TreeError;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

const META: &str = "{\"type\":\"metadata\",\"protocol_version\":\"1.5\",\"created_at\":1}";

/// The general path on the same bytes (what `Journal::open` + `replay_input_owned` do, minus
/// the file I/O and repairs).
fn general(bytes: &[u8], agent_id: &str) -> Result<OwnedReplayInput, String> {
    let scanned = scan(bytes);
    let corrupt: Vec<u64> = scanned.corrupt().map(|l| l.number).collect();
    let entries: Vec<Entry> = scanned
        .lines
        .into_iter()
        .filter_map(|l| {
            l.parsed.ok().map(|value| Entry {
                line: l.number,
                value,
            })
        })
        .collect();
    let read = read_envelope(entries, &corrupt, 1).map_err(|e| e.to_string())?;
    replay_input_owned(read.yielded, agent_id).map_err(|e: TreeError| e.to_string())
}

fn journal(lines: &[String]) -> Vec<u8> {
    let mut text = String::from(META);
    text.push('\n');
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text.into_bytes()
}

fn user(n: u32) -> String {
    json!({"type": "context.append_message", "agentId": "main", "message": {"role": "user", "content": [{"type": "text", "text": format!("prompt {n}")}], "toolCalls": [], "id": format!("msg_{n}"), "origin": {"kind": "user"}}, "time": n}).to_string()
}

fn injection(owner: u32) -> String {
    json!({"type": "context.append_message", "message": {"role": "user", "content": "reminder", "origin": {"kind": "injection", "variant": "todo", "ownerPromptId": format!("msg_{owner}")}}, "time": 1}).to_string()
}

fn switch(branch: &str, base: &str, line: u64, legacy: Option<u64>) -> String {
    let mut v = json!({"type": "agent.switched", "agentId": "main", "branch": branch, "reason": "undo", "base": {"branch": base, "line": line}, "turns": 1, "time": 5});
    if let Some(l) = legacy {
        v["legacyUndoLine"] = json!(l);
    }
    v.to_string()
}

/// Lines of every kind the fast path must either read exactly or decline.
fn pool() -> Vec<String> {
    vec![
        user(1),
        user(2),
        injection(1),
        injection(2),
        json!({"type": "context.append_loop_event", "event": {"type": "step.begin", "uuid": "s", "turnId": "0", "step": 1}, "time": 2}).to_string(),
        json!({"type": "context.append_loop_event", "event": {"type": "tool.result", "toolCallId": "c", "result": {"output": "x", "isError": false}}, "time": 2}).to_string(),
        json!({"type": "turn.prompt", "input": [{"type": "text", "text": "go"}], "promptId": "msg_2", "turnId": 2, "time": 3}).to_string(),
        json!({"type": "prompt.completed", "promptId": "msg_1", "reason": "completed", "extra": 1, "time": 3}).to_string(),
        json!({"type": "context.undo", "count": 1, "time": 4}).to_string(),
        json!({"type": "context.undone", "turns": 1, "time": 4}).to_string(),
        json!({"type": "context.clear", "agentId": "other", "time": 4}).to_string(),
        json!({"type": "profile.bind", "systemPrompt": "s", "time": 4}).to_string(),
        json!({"type": "metadata", "protocol_version": "1.5", "created_at": 9}).to_string(),
        // Declined: schema misfit, not a record, not JSON, other key order, string time.
        json!({"type": "turn.ended", "turnId": "x", "reason": "completed", "time": 1}).to_string(),
        "[1,2]".to_owned(),
        "{\"type\":\"context.clear\",\"ti".to_owned(),
        "{\"time\":1,\"type\":\"context.clear\"}".to_owned(),
        "{\"type\":\"context.clear\",\"time\":\"1\"}".to_owned(),
        "   ".to_owned(),
        format!("{}\r", user(3)),
    ]
}

#[test]
fn a_clean_journal_with_branches_takes_the_fast_path_and_agrees() {
    let lines = vec![
        user(1),
        injection(1),
        json!({"type": "turn.prompt", "input": [], "promptId": "msg_1", "turnId": 0, "time": 3})
            .to_string(),
        user(2),
        injection(2),
        // Undo of prompt 2: branch b1 keeps main up to line 4.
        switch("b1", "main", 4, Some(8)),
        json!({"type": "context.undo", "count": 1, "time": 4}).to_string(),
        json!({"type": "context.undone", "turns": 1, "time": 4}).to_string(),
        user(3),
        switch("b2", "b1", 10, None),
        user(4),
        json!({"type": "context.clear", "agentId": "sub", "time": 4}).to_string(),
    ];
    let bytes = journal(&lines);
    let fast = fast_replay(&bytes, "main").expect("fast path taken");
    assert_eq!(fast.line_count, lines.len() as u64 + 1);
    assert_eq!(Ok(fast.input.clone()), general(&bytes, "main"));
    let on_chain: Vec<u64> = fast
        .input
        .all
        .iter()
        .zip(&fast.input.undoable)
        .filter_map(|(r, on)| on.then_some(r.line))
        .collect();
    // Prompt 2 and its injection are undone; the paired context.undo and the undone marker are
    // not replayed; the other agent's record is skipped.
    assert_eq!(on_chain, vec![2, 3, 4, 10, 12]);
    assert_eq!(fast.input.skipped.len(), 1);
}

#[test]
fn declines_what_needs_the_general_path() {
    let clean = journal(&[user(1)]);
    assert!(fast_replay(&clean, "main").is_some());
    let cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        clean[..clean.len() - 1].to_vec(),
        format!("{}\n", user(1)).into_bytes(),
        format!(
            "{{\"type\":\"metadata\",\"protocol_version\":\"1.4\",\"created_at\":1}}\n{}\n",
            user(1)
        )
        .into_bytes(),
        format!(
            "{{\"type\":\"metadata\",\"protocol_version\":\"1.6\",\"created_at\":1}}\n{}\n",
            user(1)
        )
        .into_bytes(),
        format!("\n{META}\n{}\n", user(1)).into_bytes(),
        journal(&[user(1), "not json".to_owned()]),
        journal(&[user(1), switch("b1", "nowhere", 2, None)]),
        journal(&[
            user(1),
            switch("b1", "main", 2, None),
            switch("b1", "main", 2, None),
        ]),
        journal(&[
            user(1),
            "{\"type\":\"agent.switched\",\"branch\":\"b1\",\"time\":1}".to_owned(),
        ]),
    ];
    for bytes in cases {
        assert!(
            fast_replay(&bytes, "main").is_none(),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
    }
}

proptest! {
    /// Random journals from the pool, with random branch edges: where the fast path answers, it
    /// answers what the general path does; journals of clean lines only are always answered.
    #[test]
    fn random_journals_agree(
        picks in prop::collection::vec(0usize..64, 0..40),
        edges in prop::collection::vec((1u64..45, 0usize..3, prop::option::of(1u64..45)), 0..3),
    ) {
        let pool = pool();
        let mut lines: Vec<String> = picks.iter().map(|&i| pool[i % pool.len()].clone()).collect();
        for (k, (base_line, base, legacy)) in edges.iter().enumerate() {
            let at = (*base_line as usize).min(lines.len());
            let base_branch = if *base == 0 || k == 0 { "main".to_owned() } else { format!("b{base}") };
            lines.insert(at, switch(&format!("b{}", k + 1), &base_branch, *base_line, *legacy));
        }
        let bytes = journal(&lines);
        let clean = picks.iter().all(|&i| i % pool.len() < 13);
        match fast_replay(&bytes, "main") {
            Some(fast) => {
                prop_assert_eq!(Ok(fast.input), general(&bytes, "main"));
                prop_assert_eq!(fast.line_count, lines.len() as u64 + 1);
            }
            None => prop_assert!(!clean || general(&bytes, "main").is_err(), "declined a clean journal"),
        }
    }
}
