//! `tool.diff`: every file-changing call tells the front ends its real change, computed
//! against the file as it is, also when nobody is asked (yolo/auto). A rewrite with the same
//! content has an empty diff instead of every line shown as added.

use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, TurnEndReason};
use pretty_assertions::assert_eq;

use crate::harness::{Dirs, Session, assert_paired};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_with_the_same_content_has_an_empty_diff_and_a_change_only_its_lines() {
    let dirs = Dirs::new();
    std::fs::write(dirs.file("notes.txt"), "one\ntwo\n").unwrap();
    let mut s = Session::start(
        &dirs,
        ProviderType::OpenAi,
        vec![
            ScriptTurn::tool_calls(&[("r1", "Read", r#"{"path":"notes.txt"}"#)]),
            ScriptTurn::tool_calls(&[(
                "w1",
                "Write",
                r#"{"path":"notes.txt","content":"one\ntwo\n"}"#,
            )]),
            ScriptTurn::tool_calls(&[(
                "w2",
                "Write",
                r#"{"path":"notes.txt","content":"one\nTWO\n"}"#,
            )]),
            ScriptTurn::text("done"),
        ],
    )
    .await;
    let (reason, error) = s.run("rewrite the notes").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let diffs: Vec<(String, String)> = s
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolDiff { tool_call_id, diff } => Some((tool_call_id.clone(), diff.clone())),
            _ => None,
        })
        .collect();
    let ids: Vec<&str> = diffs.iter().map(|(id, _)| id.as_str()).collect();
    // Read changes nothing, so it has no diff.
    assert_eq!(ids, ["w1", "w2"]);
    assert_eq!(diffs[0].1, "", "same content, no change");
    let changed: Vec<&str> = diffs[1]
        .1
        .lines()
        .filter(|l| {
            (l.starts_with('+') || l.starts_with('-'))
                && !l.starts_with("+++")
                && !l.starts_with("---")
        })
        .collect();
    assert_eq!(changed, ["-two", "+TWO"]);
    // The diff follows its call's announcement.
    let started = s
        .events
        .iter()
        .position(|e| matches!(e, Event::ToolStarted { call } if call.id == "w1"))
        .unwrap();
    assert!(
        matches!(&s.events[started + 1], Event::ToolDiff { tool_call_id, .. } if tool_call_id == "w1")
    );
    assert_eq!(
        std::fs::read_to_string(dirs.file("notes.txt")).unwrap(),
        "one\nTWO\n"
    );
    assert_paired(&s.server);
}
