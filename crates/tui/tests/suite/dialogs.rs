//! Dialogs: approval panel, AskUserQuestion, session picker, undo selector, model and
//! permission pickers, task browser, help, and `@` file completion.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use kimi_protocol::host::SessionSummary;
use kimi_protocol::message::Message;
use kimi_protocol::ops::{ApprovalDecision, ApprovalRequest, Event, Op, PermissionMode};
use kimi_tui::{HostRequest, HostUpdate, TaskEntry, UiAction};
use serde_json::json;

use super::support::Harness;

fn request(id: &str) -> ApprovalRequest {
    ApprovalRequest {
        request_id: id.into(),
        tool_call_id: "c1".into(),
        tool_name: "Bash".into(),
        action: "run command".into(),
        summary: "rm -rf build/ && make".into(),
        detail: None,
        diff: None,
        danger: Some("recursive delete".into()),
        policy: "manual-mode".into(),
        options: Vec::new(),
    }
}

fn edit_request() -> ApprovalRequest {
    ApprovalRequest {
        request_id: "r2".into(),
        tool_call_id: "c2".into(),
        tool_name: "Edit".into(),
        action: "edit file".into(),
        summary: "src/config.rs".into(),
        detail: None,
        diff: Some("--- a/src/config.rs\n+++ b/src/config.rs\n@@ -1,3 +1,3 @@\n use std::path::Path;\n-const LIMIT: usize = 10;\n+const LIMIT: usize = 20;\n".into()),
        danger: None,
        policy: "manual-mode".into(),
        options: Vec::new(),
    }
}

#[test]
fn approval_panel_with_danger_label_and_digit_choice() {
    let mut h = Harness::new();
    h.event(Event::ApprovalRequested(request("r1")));
    assert_snapshot!("approval_danger", h.screen(60, 14));
    h.key(KeyCode::Char('2'));
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Approve {
            request_id: "r1".into(),
            decision: ApprovalDecision::ApproveForSession
        })]
    );
}

#[test]
fn approval_panel_shows_the_diff_and_esc_rejects() {
    let mut h = Harness::new();
    h.event(Event::ApprovalRequested(edit_request()));
    h.key(KeyCode::Down);
    assert_snapshot!("approval_diff", h.screen(60, 16));
    h.key(KeyCode::Esc);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Approve {
            request_id: "r2".into(),
            decision: ApprovalDecision::Reject
        })]
    );
}

#[test]
fn reject_with_feedback_and_queued_approvals() {
    let mut h = Harness::new();
    h.event(Event::ApprovalRequested(request("r1")));
    h.event(Event::ApprovalRequested(edit_request()));
    h.key(KeyCode::Char('4'));
    h.type_str("use cargo clean");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Approve {
            request_id: "r1".into(),
            decision: ApprovalDecision::RejectWithFeedback {
                feedback: "use cargo clean".into()
            }
        })]
    );
    // The second request is shown next.
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Approve {
            request_id: "r2".into(),
            decision: ApprovalDecision::ApproveOnce
        })]
    );
}

#[test]
fn ask_user_question_dialog_answers() {
    let mut h = Harness::new();
    h.event(Event::QuestionRequested {
        request_id: "q1".into(),
        questions: serde_json::from_value(json!({"questions": [{"question": "Which database?", "options": [{"label": "SQLite"}, {"label": "Postgres"}]}]})).unwrap(),
    });
    assert_snapshot!("question", h.screen(50, 9));
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Answer {
            request_id: "q1".into(),
            answers: kimi_protocol::question::Answers::from_json(
                &json!({"answers": {"Which database?": "Postgres"}})
            )
            .unwrap()
        })]
    );
}

/// The dialog's answers in the engine's format: the questions exactly as the engine's
/// question broker announces them, and the answer read back with the engine's parser.
#[test]
fn question_dialog_answers_parse_in_the_engine_format() {
    use kimi_tools::builtin::ask::{Answer, Question, QuestionOutcome, parse_answers};
    let questions: Vec<Question> = serde_json::from_value(json!([
        {"question": "Which database?", "header": "DB", "options": [{"label": "SQLite", "description": "a file"}, {"label": "Postgres", "description": ""}], "multi_select": false},
        {"question": "Which extras?", "header": "", "options": [{"label": "Cache", "description": ""}, {"label": "Search", "description": ""}], "multi_select": true}
    ]))
    .unwrap();
    let asked = kimi_protocol::question::QuestionSet {
        questions: questions.clone(),
    };
    let answer_of = |h: &mut Harness| match h.actions().pop() {
        Some(UiAction::Op(Op::Answer {
            request_id,
            answers,
        })) => {
            assert_eq!(request_id, "q7");
            answers
        }
        other => panic!("expected an answer, got {other:?}"),
    };

    let mut h = Harness::new();
    h.event(Event::QuestionRequested {
        request_id: "q7".into(),
        questions: asked.clone(),
    });
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    // Multi-select: toggle Cache and Search, submit.
    h.key(KeyCode::Char(' '));
    h.key(KeyCode::Down);
    h.key(KeyCode::Char(' '));
    h.key(KeyCode::Enter);
    let answers = answer_of(&mut h);
    assert_eq!(
        parse_answers(&questions, &answers).unwrap(),
        QuestionOutcome::Answered(vec![
            Answer {
                question: "Which database?".into(),
                selected: vec!["Postgres".into()],
                other: None
            },
            Answer {
                question: "Which extras?".into(),
                selected: vec!["Cache".into(), "Search".into()],
                other: None
            },
        ])
    );

    // "Other" (the row after the options) takes free text.
    let mut h = Harness::new();
    h.event(Event::QuestionRequested {
        request_id: "q7".into(),
        questions: asked.clone(),
    });
    h.key(KeyCode::Down);
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    h.type_str("MySQL");
    h.key(KeyCode::Enter);
    h.key(KeyCode::Enter);
    let answers = answer_of(&mut h);
    let QuestionOutcome::Answered(got) = parse_answers(&questions, &answers).unwrap() else {
        panic!("answered expected: {answers:?}")
    };
    assert_eq!(got[0].other.as_deref(), Some("MySQL"));
    assert!(got[0].selected.is_empty());

    // Esc dismisses the whole dialog.
    let mut h = Harness::new();
    h.event(Event::QuestionRequested {
        request_id: "q7".into(),
        questions: asked.clone(),
    });
    h.key(KeyCode::Esc);
    let answers = answer_of(&mut h);
    assert_eq!(
        parse_answers(&questions, &answers).unwrap(),
        QuestionOutcome::Dismissed
    );

    // A turn that ends (cancelled) closes a question still on screen.
    let mut h = Harness::new();
    h.event(Event::QuestionRequested {
        request_id: "q7".into(),
        questions: asked,
    });
    h.event(Event::TurnEnded {
        turn_id: 1,
        reason: kimi_protocol::ops::TurnEndReason::Cancelled,
        error: None,
    });
    h.key(KeyCode::Enter);
    assert!(
        !h.actions()
            .iter()
            .any(|a| matches!(a, UiAction::Op(Op::Answer { .. }))),
        "the dialog closed with the turn"
    );
}

fn sessions() -> Vec<SessionSummary> {
    // Updated two hours (and a few seconds) ago: the picker says "2h ago".
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let two_hours_ago = now - 7_205_000;
    let s = |id: &str, title: &str, this_dir: bool| SessionSummary {
        id: id.into(),
        title: Some(title.into()),
        cwd: Some(if this_dir { "~/proj" } else { "~/other" }.into()),
        workspace_id: if this_dir { "proj" } else { "other" }.into(),
        created_at: two_hours_ago,
        updated_at: two_hours_ago,
        archived: false,
        this_dir,
    };
    vec![
        s("s1", "Fix the flaky test", true),
        s("s2", "Add the TUI", true),
        s("s3", "Write docs", false),
    ]
}

#[test]
fn session_picker_searches_and_toggles_scope() {
    let mut h = Harness::new();
    h.type_str("/sessions");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::ListSessions { all: false })]
    );
    h.event(Event::SessionList {
        sessions: sessions(),
    });
    assert_snapshot!("session_picker", h.screen(60, 9));
    h.ctrl('a');
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::ListSessions { all: true })]
    );
    h.type_str("docs");
    assert_snapshot!("session_picker_search_all", h.screen(60, 9));
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Host(HostRequest::ResumeSession {
            id: "s3".into()
        })]
    );
}

#[test]
fn undo_selector_from_esc_esc() {
    let transcript = vec![
        Message::user_text("add a test"),
        Message::assistant(super::support::text("done"), vec![]),
        Message::user_text("now run it"),
    ];
    let mut h = Harness::with_transcript(&transcript);
    h.key(KeyCode::Esc);
    h.advance(300);
    h.key(KeyCode::Esc);
    assert_snapshot!("undo_selector", h.screen(50, 14));
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    // Then what to put back: the first row is conversation and files.
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Rewind {
            turns: 2,
            scope: kimi_protocol::checkpoint::RewindScope::Both,
            force: false
        })]
    );
}

#[test]
fn model_and_permission_pickers() {
    let mut h = Harness::new();
    h.type_str("/model");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_snapshot!("model_picker", h.screen(50, 8));
    h.type_str("turbo");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::SetModel {
            alias: "k2-turbo".into()
        })]
    );
    h.type_str("/permission");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::SetPermissionMode {
            mode: PermissionMode::Auto
        })]
    );
    assert!(h.screen(60, 6).contains("auto"));
}

#[test]
fn task_browser_lists_host_data_and_stops_tasks() {
    let mut h = Harness::new();
    h.type_str("/tasks");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(h.actions(), vec![UiAction::Op(Op::ListTasks)]);
    h.event(Event::TaskList {
        tasks: vec![TaskEntry {
            id: "t1".into(),
            kind: "bash".into(),
            description: "npm run dev".into(),
            status: "running".into(),
            output_tail: "listening on :3000".into(),
        }],
    });
    h.ctrl('x');
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::StopTask {
            task_id: "t1".into()
        })]
    );
    h.key(KeyCode::Enter);
    assert!(h.screen(60, 8).contains("listening on :3000"));
}

#[test]
fn at_file_completion_is_ignore_aware() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/HEAD"), "ref: x\n").unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/render.rs"), "").unwrap();
    std::fs::write(dir.path().join("README.md"), "").unwrap();
    let mut h = Harness::new();
    h.app
        .handle_host(HostUpdate::Files(kimi_tui::files::index_files(dir.path())));
    h.type_str("look at @ren");
    assert_snapshot!("at_completion", h.screen(50, 6));
    h.key(KeyCode::Tab);
    assert_eq!(h.app.input_text(), "look at @src/render.rs ");
}

#[test]
fn help_panel_lists_keys_and_commands() {
    let mut h = Harness::new();
    h.type_str("/help");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    let screen = h.screen(70, 70);
    assert!(screen.contains("ctrl-s"), "{screen}");
    assert!(screen.contains("/export-md"), "{screen}");
    h.key(KeyCode::Char('x'));
    assert!(!h.screen(70, 70).contains("ctrl-s"));
}

#[test]
fn large_paste_collapses_to_a_placeholder_and_is_sent_in_full() {
    let mut h = Harness::new();
    let big: String = (0..40).map(|i| format!("log line {i}\n")).collect();
    h.app.handle_paste(&big);
    assert!(h.screen(50, 4).contains("[Pasted text #1 +40 lines]"));
    h.key(KeyCode::Enter);
    let acts = h.actions();
    assert!(
        matches!(&acts[0], UiAction::Op(Op::Submit { input, .. }) if input[0].as_text() == Some(big.as_str())),
        "{acts:?}"
    );
}

#[test]
fn ctrl_c_closes_a_picker_and_shell_history_reopens_shell_mode() {
    let mut h = Harness::new();
    h.type_str("/model");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    h.ctrl('c');
    assert!(h.actions().is_empty());
    assert!(!h.screen(50, 8).contains("Switch model"));
    h.type_str("!ls -la");
    h.key(KeyCode::Enter);
    h.actions();
    h.key(KeyCode::Backspace);
    h.key(KeyCode::Up);
    assert_eq!(h.app.input_text(), "ls -la");
    assert!(h.screen(50, 4).contains("! ls -la"));
}

fn plan_review(options: Vec<kimi_protocol::ops::ApprovalOption>) -> ApprovalRequest {
    ApprovalRequest {
        request_id: "plan1".into(),
        tool_call_id: "c9".into(),
        tool_name: "ExitPlanMode".into(),
        action: "review plan".into(),
        summary: "/sessions/s1/agents/main/plans/swift-lantern-comet-3f.md".into(),
        detail: Some(
            "# Plan: faster config loading\n\n1. Cache the parsed file in `Config::load`.\n2. Invalidate on mtime change.\n3. Add a test for the reload path."
                .into(),
        ),
        diff: None,
        danger: None,
        policy: "exit-plan-mode-review-ask".into(),
        options,
    }
}

#[test]
fn plan_review_shows_the_plan_and_its_approaches() {
    use kimi_protocol::ops::ApprovalOption;
    let mut h = Harness::new();
    h.event(Event::ApprovalRequested(plan_review(vec![
        ApprovalOption {
            label: "Cache in memory".into(),
            description: "smallest change".into(),
        },
        ApprovalOption {
            label: "Cache on disk".into(),
            description: String::new(),
        },
    ])));
    assert_snapshot!("plan_review", h.screen(72, 18));
    h.key(KeyCode::Char('2'));
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Approve {
            request_id: "plan1".into(),
            decision: ApprovalDecision::ApproveOption {
                label: "Cache on disk".into()
            }
        })]
    );
}

#[test]
fn plan_review_without_options_approves_once_and_revise_sends_feedback() {
    let mut h = Harness::new();
    h.event(Event::ApprovalRequested(plan_review(Vec::new())));
    h.key(KeyCode::Char('1'));
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Approve {
            request_id: "plan1".into(),
            decision: ApprovalDecision::ApproveOnce
        })]
    );
    h.event(Event::ApprovalRequested(plan_review(Vec::new())));
    h.key(KeyCode::Char('3'));
    h.type_str("add a rollback step");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![UiAction::Op(Op::Approve {
            request_id: "plan1".into(),
            decision: ApprovalDecision::RejectWithFeedback {
                feedback: "add a rollback step".into()
            }
        })]
    );
}

#[test]
fn plan_tools_move_the_footer_and_plan_clear_sends_its_op() {
    use kimi_protocol::message::ToolCall;
    let mut h = Harness::new();
    let call = |id: &str, name: &str| -> ToolCall {
        serde_json::from_value(json!({"id": id, "name": name, "arguments": "{}"})).unwrap()
    };
    h.event(Event::ToolStarted {
        call: call("e1", "EnterPlanMode"),
    });
    h.event(Event::ToolResult {
        tool_call_id: "e1".into(),
        output: vec![kimi_protocol::ContentPart::text("Plan mode is on.")],
        is_error: false,
    });
    assert!(h.screen(80, 10).contains("· plan"), "{}", h.screen(80, 10));
    h.event(Event::ToolStarted {
        call: call("x1", "ExitPlanMode"),
    });
    h.event(Event::ToolResult {
        tool_call_id: "x1".into(),
        output: vec![kimi_protocol::ContentPart::text("Exited plan mode. …")],
        is_error: false,
    });
    assert!(!h.screen(80, 10).contains("· plan"), "{}", h.screen(80, 10));
    h.type_str("/plan clear");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    assert_eq!(h.actions(), vec![UiAction::Op(Op::ClearPlan)]);
}
