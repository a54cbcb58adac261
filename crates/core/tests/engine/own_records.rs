//! Plan mode, cron and subagents reach the journal and the front ends without any attach step:
//! their tools return records the engine commits with the call's result, op handlers commit
//! what plan mode returns, and the subagent host relays approvals through the caller's
//! front-end link, which it holds from construction. A resumed session reads the typed
//! records back.

use kimi_core::permission::PermissionState;
use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{ApprovalDecision, Event, Op, PermissionMode, TurnEndReason};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::harness::{Dirs, Options, Session, read_journal, record_kind};

/// The kind of the record right after the first one of type `kind`.
fn next_after(journal: &[Value], kind: &str) -> Option<String> {
    let at = journal.iter().position(|r| r["type"] == kind)?;
    journal.get(at + 1).map(record_kind)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_and_cron_changes_are_journaled_with_their_tool_results() {
    let dirs = Dirs::new();
    let mut s = Session::start(
        &dirs,
        ProviderType::OpenAi,
        vec![
            ScriptTurn::tool_calls(&[(
                "call_cron",
                "CronCreate",
                r#"{"cron":"*/5 * * * *","prompt":"check the build"}"#,
            )]),
            ScriptTurn::tool_calls(&[("call_plan", "EnterPlanMode", "{}")]),
            ScriptTurn::text("Planning."),
        ],
    )
    .await;
    let (reason, error) = s.run("Watch the build and plan the fix.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    // Each state change sits right before the result of the call that made it.
    let journal = s.journal();
    assert_eq!(
        next_after(&journal, "cron.add").as_deref(),
        Some("loop:tool.result")
    );
    let plan_on = journal
        .iter()
        .find(|r| r["type"] == "plan.mode")
        .expect("plan.mode journaled");
    assert_eq!(plan_on["active"], true);
    assert_eq!(
        next_after(&journal, "plan.mode").as_deref(),
        Some("loop:tool.result")
    );

    // An op handler commits what plan mode returns.
    s.send(Op::SetPlanMode { enabled: false });
    s.barrier().await;
    let journal = s.journal();
    let last_plan = journal.iter().rfind(|r| r["type"] == "plan.mode").unwrap();
    assert_eq!(last_plan["active"], false);
    let job_id = journal.iter().find(|r| r["type"] == "cron.add").unwrap()["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let id = s.session_id();
    s.close().await;
    drop(s);

    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = Resume::Id(id);
    let s = Session::start_with(&dirs, options, vec![]).await;
    let restored = &s.opened.restored;
    assert!(restored.skipped.is_empty(), "{:?}", restored.skipped);
    assert_eq!(restored.cron.len(), 1);
    assert_eq!(restored.cron[0].id, job_id);
    let plan = restored.plan.clone().expect("plan state restored");
    assert!(!plan.active);
    assert!(plan.id.is_some(), "the plan id is kept after exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_approval_reaches_the_callers_front_end_and_its_answer_comes_back() {
    let dirs = Dirs::new();
    let mut options = Options::new(ProviderType::OpenAi);
    let mut state = PermissionState::default();
    state.mode.mode = PermissionMode::Manual;
    options.permission_chain = Some(state);
    let summary = "Wrote notes.txt with the single line `hello`. I created the file with Write, checked nothing else, and left every other file alone. Nothing is left open for this task, and no follow-up is needed from the caller.";
    assert!(summary.len() > 200, "long enough to need no continuation");
    let mut s = Session::start_with(
        &dirs,
        options,
        vec![
            ScriptTurn::tool_calls(&[(
                "call_agent",
                "Agent",
                r#"{"prompt":"Create notes.txt containing hello.","description":"write notes"}"#,
            )]),
            ScriptTurn::tool_calls(&[(
                "sub_write",
                "Write",
                r#"{"path":"notes.txt","content":"hello\n"}"#,
            )]),
            ScriptTurn::text(summary),
            ScriptTurn::text("The subagent wrote the notes."),
        ],
    )
    .await;
    s.submit("Write the notes through a subagent.");
    let Event::ApprovalRequested(request) = s
        .wait_for(|e| matches!(e, Event::ApprovalRequested(_)))
        .await
    else {
        unreachable!()
    };
    assert_eq!(request.tool_name, "Write");
    assert!(
        !dirs.file("notes.txt").exists(),
        "nothing ran before the answer"
    );
    s.send(Op::Approve {
        request_id: request.request_id.clone(),
        decision: ApprovalDecision::ApproveOnce,
    });
    let (reason, error) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert_eq!(
        std::fs::read_to_string(dirs.file("notes.txt")).unwrap(),
        "hello\n"
    );
    // The subagent journaled the answer it was relayed.
    let sub = read_journal(&s.opened.session.journal_path("agent-0"));
    let approval = sub
        .iter()
        .find(|r| r["type"] == "permission.record_approval_result")
        .expect("the subagent journaled the approval");
    assert_eq!(approval["toolName"], "Write");
    assert_eq!(approval["result"]["decision"], "approved");
}
