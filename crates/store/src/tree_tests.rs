//! Branch tree reading and fork-line computation over record lists.

use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

fn entries(values: Vec<Value>) -> Vec<Entry> {
    let mut all = vec![json!({"type": "metadata", "protocol_version": "1.5", "created_at": 1})];
    all.extend(values);
    all.into_iter()
        .enumerate()
        .map(|(i, value)| Entry {
            line: i as u64 + 1,
            value,
        })
        .collect()
}

fn user(text: &str) -> Value {
    json!({"type": "context.append_message", "message": {"role": "user", "content": text, "origin": {"kind": "user"}}})
}

fn reply(text: &str) -> Value {
    json!({"type": "context.append_message", "message": {"role": "assistant", "content": text}})
}

fn injection(owner: Option<&str>) -> Value {
    let mut origin = json!({"kind": "injection", "variant": "reminder"});
    if let Some(owner) = owner {
        origin["ownerPromptId"] = json!(owner);
    }
    json!({"type": "context.append_message", "message": {"role": "user", "content": "note", "origin": origin}})
}

fn switched(branch: &str, base: &str, line: u64, legacy: u64) -> Value {
    json!({"type": "agent.switched", "branch": branch, "reason": "undo", "base": {"branch": base, "line": line}, "turns": 1, "legacyUndoLine": legacy})
}

fn lines(chain: &[&Entry]) -> Vec<u64> {
    chain.iter().map(|e| e.line).collect()
}

#[test]
fn no_edges_means_main_is_everything() {
    let e = entries(vec![user("a"), reply("b")]);
    let tree = parse_tree(&e);
    assert_eq!(tree.active, "main");
    assert_eq!(lines(&active_chain(&tree, &e).unwrap()), vec![2, 3]);
}

#[test]
fn nested_branches_follow_their_bases() {
    // 2 user a, 3 reply, 4 user b, 5 reply, 6 switch b1 (base main@3), 7 undo, 8 undone,
    // 9 user c, 10 reply, 11 switch b2 (base b1@9), 12 undo, 13 undone, 14 user d
    let e = entries(vec![
        user("a"),
        reply("ra"),
        user("b"),
        reply("rb"),
        switched("b1", "main", 3, 7),
        json!({"type": "context.undo", "count": 1}),
        json!({"type": "context.undone", "turns": 1}),
        user("c"),
        reply("rc"),
        switched("b2", "b1", 9, 12),
        json!({"type": "context.undo", "count": 1}),
        json!({"type": "context.undone", "turns": 1}),
        user("d"),
    ]);
    let tree = parse_tree(&e);
    assert_eq!(tree.active, "b2");
    assert_eq!(tree.owner_of(3), "main");
    assert_eq!(tree.owner_of(9), "b1");
    assert_eq!(
        lines(&active_chain(&tree, &e).unwrap()),
        vec![2, 3, 7, 8, 9, 12, 13, 14]
    );
    assert_eq!(
        lines(&restorable_chain(&tree, &e).unwrap()),
        vec![2, 3, 9, 14]
    );
}

#[test]
fn malformed_and_repeated_switches_are_reported_and_ignored() {
    let e = entries(vec![
        user("a"),
        json!({"type": "agent.switched", "branch": "bx"}),
        switched("main", "main", 1, 99),
        user("b"),
    ]);
    let tree = parse_tree(&e);
    assert_eq!(tree.edges, vec![]);
    assert_eq!(
        tree.reported.iter().map(|r| r.line).collect::<Vec<_>>(),
        vec![3, 4]
    );
    assert_eq!(lines(&active_chain(&tree, &e).unwrap()), vec![2, 5]);
}

#[test]
fn unknown_base_and_cycles_are_errors() {
    let e = entries(vec![user("a"), switched("b1", "nope", 2, 99)]);
    assert!(matches!(
        active_chain(&parse_tree(&e), &e),
        Err(TreeError::UnknownBase { .. })
    ));
    let e = entries(vec![
        user("a"),
        switched("b1", "b2", 2, 99),
        switched("b2", "b1", 3, 99),
    ]);
    assert!(matches!(
        active_chain(&parse_tree(&e), &e),
        Err(TreeError::Cycle { .. })
    ));
}

#[test]
fn orphaned_injections_survive_unless_their_prompt_was_undone() {
    let mut owned = user("b");
    owned["message"]["id"] = json!("p-b");
    // 2 user a, 3 user b (p-b), 4 injection owned by p-b, 5 injection without owner, 6 switch
    let e = entries(vec![
        user("a"),
        owned,
        injection(Some("p-b")),
        injection(None),
        switched("b1", "main", 2, 7),
        json!({"type": "context.undo", "count": 1}),
        json!({"type": "context.undone", "turns": 1}),
    ]);
    let tree = parse_tree(&e);
    assert_eq!(lines(&restorable_chain(&tree, &e).unwrap()), vec![2, 5]);
}

#[test]
fn fork_line_skips_injections_pulls_owned_ones_and_stops_at_compaction() {
    let mut prompt = user("b");
    prompt["message"]["id"] = json!("p-b");
    let e = entries(vec![
        user("a"),
        reply("ra"),
        injection(Some("p-b")),
        prompt,
        reply("rb"),
        injection(None),
    ]);
    let tree = parse_tree(&e);
    // The owned injection on line 4 goes with the prompt on line 5: fork after line 3.
    assert_eq!(compute_fork_line(&tree, &e, 1), Ok(3));
    assert_eq!(compute_fork_line(&tree, &e, 2), Ok(1));
    assert_eq!(
        compute_fork_line(&tree, &e, 3),
        Err(ForkLineError::Insufficient {
            available: 2,
            requested: 3
        })
    );
    let e = entries(vec![
        user("a"),
        json!({"type": "context.apply_compaction", "summary": "s", "compactedCount": 1}),
        user("b"),
    ]);
    let tree = parse_tree(&e);
    assert_eq!(compute_fork_line(&tree, &e, 1), Ok(3));
    assert_eq!(
        compute_fork_line(&tree, &e, 2),
        Err(ForkLineError::CompactionBoundary)
    );
}

#[test]
fn steered_messages_are_not_anchors() {
    assert!(is_undo_anchor(&json!({"role": "user", "content": "x"})));
    assert!(!is_undo_anchor(
        &json!({"role": "user", "content": "x", "origin": {"kind": "user", "inTurn": true}})
    ));
    assert!(!is_undo_anchor(
        &json!({"role": "user", "content": "x", "origin": {"kind": "injection", "variant": "v"}})
    ));
    assert!(!is_undo_anchor(
        &json!({"role": "assistant", "content": "x"})
    ));
}

#[test]
fn context_clear_bounds_the_fork_line_and_legacy_undo_is_applied() {
    let e = entries(vec![user("a"), json!({"type": "context.clear"}), user("b")]);
    let tree = parse_tree(&e);
    assert_eq!(
        compute_fork_line(&tree, &e, 2),
        Err(ForkLineError::Insufficient {
            available: 1,
            requested: 2
        })
    );
    // An unpaired legacy undo already removed "c": undoing one more turn removes "b".
    let e = entries(vec![
        user("b"),
        user("c"),
        json!({"type": "context.undo", "count": 1}),
    ]);
    assert_eq!(compute_fork_line(&parse_tree(&e), &e, 1), Ok(1));
}

#[test]
fn only_user_slash_skills_and_plugins_are_anchors() {
    let skill = |trigger: &str, in_turn: bool| json!({"role": "user", "content": "x", "origin": {"kind": "skill_activation", "activationId": "a", "skillName": "s", "trigger": trigger, "inTurn": in_turn}});
    assert!(is_undo_anchor(&skill("user-slash", false)));
    assert!(!is_undo_anchor(&skill("model", false)));
    // Kept verbatim (no skillName), judged by trigger.
    assert!(is_undo_anchor(
        &json!({"role": "user", "content": "x", "origin": {"kind": "plugin_command", "trigger": "user-slash"}})
    ));
}
