//! `/btw`, `/effort`, the model switch as the footer shows it, and tool cards around approvals.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use kimi_protocol::message::ToolCall;
use kimi_protocol::ops::{ApprovalRequest, Event, Op, TurnEndReason};
use kimi_tui::UiAction;

use super::support::Harness;

#[test]
fn btw_asks_the_engine_and_shows_the_answer_in_its_own_pane() {
    let mut h = Harness::new();
    h.type_str("/btw what is 2+2");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Btw {
            question: "what is 2+2".into()
        })]
    );
    assert_snapshot!("btw_pending", h.screen(50, 8));
    h.event(Event::BtwAnswered {
        question: "what is 2+2".into(),
        answer: "It is **4**.".into(),
        error: None,
    });
    assert_snapshot!("btw_answered", h.screen(50, 8));
    // The answer is no transcript cell: nothing of it reaches the scrollback.
    let committed: String = h
        .app
        .take_committable(50)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(!committed.contains("It is"), "{committed}");
    h.key(KeyCode::Esc);
    let closed = h.screen(50, 8);
    assert!(!closed.contains("It is"), "{closed}");
    assert!(h.actions().is_empty(), "esc only closed the pane");

    h.type_str("/btw");
    h.key(KeyCode::Enter);
    assert!(h.actions().is_empty());
    assert!(h.screen(80, 8).contains("Usage: /btw <question>"));
}

#[test]
fn btw_failure_is_shown_in_the_pane() {
    let mut h = Harness::new();
    h.type_str("/btw why");
    h.key(KeyCode::Enter);
    h.event(Event::BtwAnswered {
        question: "why".into(),
        answer: String::new(),
        error: Some("the side question could not be answered: HTTP 500".into()),
    });
    let screen = h.screen(70, 8);
    assert!(screen.contains("HTTP 500"), "{screen}");
}

#[test]
fn effort_picker_offers_the_model_levels_and_the_footer_follows_the_engine() {
    let mut h = Harness::new();
    h.type_str("/effort");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    // The current model (k2) lists low and high; off is always offered.
    assert_snapshot!("effort_picker", h.screen(50, 8));
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::SetEffort {
            effort: "low".into()
        })]
    );
    h.type_str("/thinking max");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::SetEffort {
            effort: "max".into()
        })]
    );
    h.type_str("/model k2-turbo");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::SetModel {
            alias: "k2-turbo".into()
        })]
    );
    h.event(Event::ModelChanged {
        alias: "k2-turbo".into(),
        model: "kimi-k2-turbo-preview".into(),
        effort: Some("high".into()),
        context_window: 128_000,
    });
    assert_snapshot!("model_changed", h.screen(70, 6));
}

fn write_call() -> ToolCall {
    ToolCall::new(
        "c1",
        "Write",
        Some(r#"{"path":"notes.txt","content":"same\n"}"#.into()),
    )
}

#[test]
fn a_call_awaiting_approval_says_so_and_its_time_leaves_out_the_wait() {
    let mut h = Harness::new();
    h.event(Event::TurnStarted { turn_id: 1 });
    h.event(Event::ToolStarted { call: write_call() });
    h.event(Event::ApprovalRequested(ApprovalRequest {
        request_id: "r1".into(),
        tool_call_id: "c1".into(),
        tool_name: "Write".into(),
        action: "write file".into(),
        summary: "notes.txt".into(),
        detail: None,
        // The file already holds this content: the engine's diff has no changed line.
        diff: Some("--- notes.txt\n+++ notes.txt\n".into()),
        danger: None,
        policy: "manual-mode".into(),
        options: Vec::new(),
    }));
    h.advance(30_000);
    let waiting = h.screen(70, 16);
    assert!(
        waiting.contains("◇ Write notes.txt · awaiting approval"),
        "{waiting}"
    );
    assert!(!waiting.contains("running"), "{waiting}");
    assert!(!waiting.contains("+same"), "identical content: {waiting}");
    assert!(waiting.contains("no changes"), "{waiting}");
    h.key(KeyCode::Char('1'));
    h.advance(2_000);
    let running = h.screen(70, 10);
    assert!(running.contains("running 2.0s"), "{running}");
    h.event(Event::ToolResult {
        tool_call_id: "c1".into(),
        output: vec![kimi_protocol::ContentPart::text("wrote notes.txt")],
        is_error: false,
    });
    h.event(Event::TurnEnded {
        turn_id: 1,
        reason: TurnEndReason::Completed,
        error: None,
    });
    let done = h.screen(70, 10);
    assert!(done.contains("✓ Write notes.txt · done 2.0s"), "{done}");
}

#[test]
fn a_rewrite_with_the_same_content_shows_no_changes_when_nobody_is_asked() {
    // Yolo/auto: no approval, so the card's diff comes from `tool.diff` alone.
    let mut h = Harness::new();
    h.event(Event::TurnStarted { turn_id: 1 });
    h.event(Event::ToolStarted { call: write_call() });
    h.event(Event::ToolDiff {
        tool_call_id: "c1".into(),
        diff: String::new(),
    });
    let shown = h.screen(70, 10);
    assert!(!shown.contains("+same"), "identical content: {shown}");
    assert!(shown.contains("no changes"), "{shown}");
    // A real change shows only its changed lines, not the whole content as added.
    h.event(Event::ToolStarted {
        call: ToolCall::new(
            "c2",
            "Write",
            Some(r#"{"path":"b.txt","content":"keep\nnew\n"}"#.into()),
        ),
    });
    h.event(Event::ToolDiff {
        tool_call_id: "c2".into(),
        diff: "--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n".into(),
    });
    let shown = h.screen(70, 14);
    assert!(shown.contains("-old"), "{shown}");
    assert!(shown.contains("+new"), "{shown}");
    assert!(!shown.contains("+keep"), "{shown}");
}

#[test]
fn the_status_line_command_replaces_the_footer_items_with_its_first_line() {
    // The command sees the session snapshot on stdin: its model goes into the line.
    let mut h =
        Harness::with_status_command("sed -n 's/.*\"model\":\"\\([^\"]*\\)\".*/custom: \\1/p'");
    let before = h.screen(70, 6);
    assert!(before.contains("manual · k2 · ~/proj"), "{before}");
    h.advance(80);
    assert!(
        h.app
            .wait_status_command(std::time::Duration::from_secs(10)),
        "the command never finished"
    );
    let screen = h.screen(70, 6);
    assert!(screen.contains("custom: k2 · /help"), "{screen}");
    assert!(!screen.contains("~/proj"), "{screen}");
}

#[test]
fn shell_mode_ends_after_its_command() {
    let mut h = Harness::new();
    h.type_str("!");
    h.type_str("ls");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Shell {
            command: "ls".into(),
            background: false
        })]
    );
    h.type_str("hello");
    h.key(KeyCode::Enter);
    let actions = h.actions();
    assert!(
        matches!(actions.as_slice(), [UiAction::Op(Op::Submit { .. })]),
        "{actions:?}"
    );
}
