//! Plan mode end to end: a real session (`open_session`, journal, built-in tools) with the
//! permission chain, against the loopback scripted server — the guard, the reminders, the
//! ExitPlanMode review outcomes, EnterPlanMode, resume and undo.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "engine/harness.rs"]
mod harness;

use std::path::PathBuf;
use std::sync::Arc;

use kimi_core::permission::PermissionState;
use kimi_core::plan::PlanMode;
use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{ApprovalDecision, Event, Op, PermissionMode, TurnEndReason};
use pretty_assertions::assert_eq;
use serde_json::json;

use harness::{Dirs, Options, Session, tool_results, user_texts};

/// Marks the full reminder (entry / refresh).
const FULL_MARK: &str = "How to work:";
const SPARSE_MARK: &str = "Plan mode is still on";
const EXIT_MARK: &str = "Plan mode is off. You may now edit files";

fn options(plan: bool, resume: Resume) -> Options {
    let mut options = Options::new(ProviderType::OpenAi);
    let mut state = PermissionState::default();
    state.mode.mode = PermissionMode::Manual;
    state.mode.plan = plan;
    options.permission_chain = Some(state);
    options.resume = resume;
    options
}

async fn start(dirs: &Dirs, plan: bool) -> Session {
    Session::start_with(dirs, options(plan, Resume::New), Vec::new()).await
}

fn plan_mode(s: &Session) -> Arc<PlanMode> {
    s.opened
        .agent
        .handle
        .runtime()
        .config
        .plan
        .clone()
        .expect("the main agent has plan mode")
}

fn plan_path(s: &Session) -> PathBuf {
    plan_mode(s).plan_file().expect("a plan file")
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ScriptTurn {
    ScriptTurn::tool_calls(&[(id, name, &args.to_string())])
}

fn users(s: &Session, request: usize) -> String {
    user_texts(&s.requests()[request].body).join("\n---\n")
}

fn result_text(s: &Session, request: usize, id: &str) -> (String, bool) {
    let results = tool_results(&s.requests()[request].body);
    let r = results
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no result {id}: {results:#?}"));
    (r.text.clone(), r.reads_as_error())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_flag_denies_other_writes_and_allows_the_plan_file_without_asking() {
    let dirs = Dirs::new();
    let mut s = start(&dirs, true).await;
    assert!(plan_mode(&s).is_active());
    let plan = plan_path(&s);
    let outside = dirs.file("src.txt");
    s.server.push(ScriptTurn::tool_calls(&[
        (
            "w_out",
            "Write",
            &json!({"path": outside, "content": "changed"}).to_string(),
        ),
        (
            "w_plan",
            "Write",
            &json!({"path": plan, "content": "# Plan\n1. Change src.txt\n"}).to_string(),
        ),
    ]));
    s.server.push(ScriptTurn::text("Plan written."));
    let (reason, error) = s.run("Plan a change to src.txt").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert_eq!(s.count(|e| matches!(e, Event::ApprovalRequested(_))), 0);
    assert!(!outside.exists(), "the write outside the plan file ran");
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "# Plan\n1. Change src.txt\n"
    );
    let (denied, is_error) = result_text(&s, 1, "w_out");
    assert!(is_error, "{denied}");
    assert!(denied.contains("Plan mode is active"), "{denied}");
    assert!(denied.contains(&plan.display().to_string()), "{denied}");
    let (_, is_error) = result_text(&s, 1, "w_plan");
    assert!(!is_error);
    let first = users(&s, 0);
    assert!(first.contains(FULL_MARK), "{first}");
    assert!(
        first.contains(&format!("Plan file: {}", plan.display())),
        "{first}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_full_reminder_returns_after_five_assistant_turns_with_sparse_ones_between() {
    let dirs = Dirs::new();
    let mut s = start(&dirs, true).await;
    for i in 0..6 {
        s.server.push(call(
            &format!("g{i}"),
            "Glob",
            json!({"pattern": format!("*.ext{i}")}),
        ));
    }
    s.server.push(ScriptTurn::text("Explored."));
    let (reason, error) = s.run("Explore, then plan").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let count = |request: usize, mark: &str| users(&s, request).matches(mark).count();
    assert_eq!(count(0, FULL_MARK), 1);
    assert_eq!(count(1, SPARSE_MARK), 0);
    assert_eq!(count(2, SPARSE_MARK), 1);
    assert_eq!(count(4, SPARSE_MARK), 2);
    assert_eq!(count(4, FULL_MARK), 1);
    assert_eq!(count(5, FULL_MARK), 2, "{}", users(&s, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_plan_ends_plan_mode_and_the_next_request_has_the_exit_reminder() {
    let dirs = Dirs::new();
    let mut s = start(&dirs, true).await;
    let plan = plan_path(&s);
    std::fs::write(&plan, "# Plan\nStep one.\n").unwrap();
    s.server.push(call(
        "exit",
        "ExitPlanMode",
        json!({"options": [{"label": "Small patch", "description": "minimal"}, {"label": "Rewrite"}]}),
    ));
    s.server.push(ScriptTurn::text("Implementing."));
    s.submit("Plan it");
    let Event::ApprovalRequested(request) = s
        .wait_for(|e| matches!(e, Event::ApprovalRequested(_)))
        .await
    else {
        unreachable!()
    };
    assert_eq!(request.tool_name, "ExitPlanMode");
    assert_eq!(request.detail.as_deref(), Some("# Plan\nStep one.\n"));
    assert_eq!(request.policy, kimi_core::plan::REVIEW_POLICY);
    let labels: Vec<_> = request.options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(labels, ["Small patch", "Rewrite"]);
    s.send(Op::Approve {
        request_id: request.request_id,
        decision: ApprovalDecision::ApproveOption {
            label: "Small patch".into(),
        },
    });
    let (reason, error) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert!(!plan_mode(&s).is_active());
    let (text, is_error) = result_text(&s, 1, "exit");
    assert!(!is_error, "{text}");
    assert!(text.contains("Approved plan\n# Plan\nStep one."), "{text}");
    assert!(text.contains("\"Small patch\""), "{text}");
    assert!(users(&s, 1).contains(EXIT_MARK), "{}", users(&s, 1));
    // Said once: a later turn has no new exit reminder.
    s.server.push(ScriptTurn::text("ok"));
    s.run("thanks").await;
    assert_eq!(users(&s, 2).matches(EXIT_MARK).count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_keeps_plan_mode_and_a_plain_rejection_also_stops_the_turn() {
    let dirs = Dirs::new();
    let mut s = start(&dirs, true).await;
    std::fs::write(plan_path(&s), "# Plan\nv1\n").unwrap();
    s.server.push(call("x1", "ExitPlanMode", json!({})));
    s.server.push(ScriptTurn::text("Revising."));
    s.submit("Plan it");
    let Event::ApprovalRequested(request) = s
        .wait_for(|e| matches!(e, Event::ApprovalRequested(_)))
        .await
    else {
        unreachable!()
    };
    s.send(Op::Approve {
        request_id: request.request_id,
        decision: ApprovalDecision::RejectWithFeedback {
            feedback: "Add a rollback step".into(),
        },
    });
    let (reason, _) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Completed);
    assert!(plan_mode(&s).is_active());
    let (text, is_error) = result_text(&s, 1, "x1");
    assert!(!is_error, "{text}");
    assert!(text.contains("Add a rollback step"), "{text}");

    s.server.push(call("x2", "ExitPlanMode", json!({})));
    s.server.push(ScriptTurn::text("never sent"));
    s.submit("Try again");
    let Event::ApprovalRequested(request) = s
        .wait_for(|e| matches!(e, Event::ApprovalRequested(_)))
        .await
    else {
        unreachable!()
    };
    s.send(Op::Approve {
        request_id: request.request_id,
        decision: ApprovalDecision::Reject,
    });
    s.turn_end().await;
    assert!(plan_mode(&s).is_active());
    assert_eq!(s.requests().len(), 3, "the rejection stopped the turn");
    assert_eq!(s.server.remaining_turns(), 1);
    s.server.push(ScriptTurn::text("ok"));
    s.run("next").await;
    let (text, is_error) = result_text(&s, 3, "x2");
    assert!(is_error && text.contains("rejected the plan"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_plan_mode_without_a_plan_tells_the_model_to_write_it_first() {
    let dirs = Dirs::new();
    let mut s = start(&dirs, true).await;
    s.server.push(call("x", "ExitPlanMode", json!({})));
    s.server.push(ScriptTurn::text("ok"));
    s.run("go").await;
    assert_eq!(s.count(|e| matches!(e, Event::ApprovalRequested(_))), 0);
    let (text, is_error) = result_text(&s, 1, "x");
    assert!(is_error, "{text}");
    assert!(text.contains("Write the plan to"), "{text}");
    assert!(plan_mode(&s).is_active());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enter_plan_mode_from_the_model_activates_the_guard_and_undo_takes_it_back() {
    let dirs = Dirs::new();
    let mut s = start(&dirs, false).await;
    assert!(!plan_mode(&s).is_active());
    s.server.push(ScriptTurn::text("hello"));
    s.run("first").await;
    let outside = dirs.file("a.txt");
    s.server.push(call("enter", "EnterPlanMode", json!({})));
    s.server
        .push(call("w", "Write", json!({"path": outside, "content": "x"})));
    s.server.push(ScriptTurn::text("planning"));
    let (reason, error) = s.run("second").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert!(plan_mode(&s).is_active());
    let path = plan_path(&s);
    let (text, is_error) = result_text(&s, 2, "enter");
    assert!(
        !is_error && text.contains(&path.display().to_string()),
        "{text}"
    );
    assert!(users(&s, 2).contains(FULL_MARK));
    let (denied, is_error) = result_text(&s, 3, "w");
    assert!(
        is_error && denied.contains("Plan mode is active"),
        "{denied}"
    );
    assert!(!outside.exists());

    s.send(Op::Undo { count: 1 });
    s.wait_for(|e| matches!(e, Event::ContextUndone { .. }))
        .await;
    assert!(!plan_mode(&s).is_active(), "undo restores plan mode too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_keeps_plan_mode_and_set_plan_mode_is_journaled() {
    let dirs = Dirs::new();
    let mut s = start(&dirs, true).await;
    let path = plan_path(&s);
    s.server.push(ScriptTurn::text("ok"));
    s.run("plan").await;
    let id = s.session_id();
    s.close().await;
    drop(s);

    let mut s = Session::start_with(&dirs, options(false, Resume::Id(id.clone())), vec![]).await;
    assert!(plan_mode(&s).is_active(), "resume keeps plan mode");
    assert_eq!(plan_path(&s), path);
    s.send(Op::SetPlanMode { enabled: false });
    s.barrier().await;
    assert!(!plan_mode(&s).is_active());
    s.close().await;
    drop(s);

    let s = Session::start_with(&dirs, options(false, Resume::Id(id)), vec![]).await;
    assert!(!plan_mode(&s).is_active(), "leaving plan mode is kept too");
}
