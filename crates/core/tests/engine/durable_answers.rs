//! An answer is durable from the moment the engine accepts it: the user's answer to an
//! approval or to AskUserQuestion is journaled before the waiting call sees it, and a process
//! killed before the call's result was journaled gives the call, after resume, the result the
//! answer decided — exactly once.
//!
//! The crash is reproduced exactly: the disk as it was while the question waited (a copy of the
//! home), plus the one record the engine journals on receiving the answer. That is what a
//! `kill -9` between the answer and the tool's result leaves behind.

use std::path::Path;

use kimi_core::permission::PermissionState;
use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{ApprovalDecision, Event, Op, PermissionMode, TurnEndReason};
use kimi_protocol::question::Answers;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{Dirs, Options, Session, copy_tree, tool_results};

const QUESTION_ARGS: &str = r#"{"questions":[{"question":"Which database?","header":"DB","options":[{"label":"SQLite"},{"label":"Postgres"}]}]}"#;

fn manual() -> Options {
    let mut options = Options::new(ProviderType::OpenAi);
    let mut state = PermissionState::default();
    state.mode.mode = PermissionMode::Manual;
    options.permission_chain = Some(state);
    options
}

/// Run `script`, wait for `asked`, copy the home (the disk before the answer), send `answer`,
/// and return the copy with the journal line the answer added — the disk after a crash
/// right after the answer was accepted — plus the session id.
async fn crash_after_answer(
    dirs: &Dirs,
    script: Vec<ScriptTurn>,
    asked: impl Fn(&Event) -> Option<Op>,
) -> (Dirs, String) {
    let mut s = Session::start_with(dirs, manual(), script).await;
    s.submit("Go.");
    let mut answer = None;
    while answer.is_none() {
        let event = s.next_event().await;
        answer = asked(&event);
    }
    let crashed = Dirs::new();
    copy_tree(dirs.home.path(), crashed.home.path());
    let live_journal = s.journal_path();
    let before = std::fs::read_to_string(&live_journal).unwrap();
    s.send(answer.unwrap());
    s.turn_end().await;
    s.close().await;
    let after = std::fs::read_to_string(&live_journal).unwrap();
    let resolved: Vec<&str> = after[before.len()..]
        .lines()
        .filter(|l| l.contains("\"interaction.resolved\""))
        .collect();
    assert_eq!(resolved.len(), 1, "one record per answer: {after}");
    // The answer is journaled before anything acts on it: first of what the answer added.
    assert!(
        after[before.len()..].starts_with(resolved[0]),
        "the answer came first: {}",
        &after[before.len()..]
    );
    let relative = live_journal.strip_prefix(dirs.home.path()).unwrap();
    append_line(&crashed.home.path().join(relative), resolved[0]);
    let id = s.session_id();
    drop(s);
    (crashed, id)
}

fn append_line(path: &Path, line: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
}

/// Resume the crashed disk in `work`, run one prompt, and return the tool result texts the
/// model got for `call_id` (every request's count, so a duplicate shows).
async fn resume_and_continue(
    crashed: Dirs,
    work: tempfile::TempDir,
    id: &str,
    call_id: &str,
) -> (Vec<String>, usize) {
    let dirs = Dirs {
        home: crashed.home,
        work,
    };
    let mut options = manual();
    options.resume = Resume::Id(id.to_owned());
    let mut r = Session::start_with(&dirs, options, vec![ScriptTurn::text("Understood.")]).await;
    let (reason, error) = r.run("continue").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let requests = r.requests();
    assert_eq!(requests.len(), 1);
    let results: Vec<String> = tool_results(&requests[0].body)
        .into_iter()
        .filter(|res| res.id == call_id)
        .map(|res| res.text)
        .collect();
    r.close().await;
    // A third process finds the call answered: nothing is delivered twice.
    let journal = std::fs::read_to_string(r.journal_path()).unwrap();
    drop(r);
    let mut options = manual();
    options.resume = Resume::Id(id.to_owned());
    let mut again = Session::start_with(&dirs, options, vec![]).await;
    again.close().await;
    let journal_again = std::fs::read_to_string(again.journal_path()).unwrap();
    assert_eq!(journal, journal_again, "reopening added nothing");
    let results_journaled = journal_again
        .lines()
        .filter(|l| l.contains("\"tool_result\"") || l.contains("\"tool.result\""))
        .filter(|l| l.contains(call_id))
        .count();
    (results, results_journaled)
}

fn bash_script(command: &str) -> Vec<ScriptTurn> {
    let args = json!({"command": command}).to_string();
    vec![
        ScriptTurn::tool_calls(&[("call_bash", "Bash", &args)]),
        ScriptTurn::text("Done."),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_with_feedback_survives_a_crash_before_the_result_and_is_delivered_once() {
    let dirs = Dirs::new();
    let (crashed, id) = crash_after_answer(&dirs, bash_script("echo hi > out.txt"), |e| match e {
        Event::ApprovalRequested(request) => Some(Op::Approve {
            request_id: request.request_id.clone(),
            decision: ApprovalDecision::RejectWithFeedback {
                feedback: "write it with printf".to_owned(),
            },
        }),
        _ => None,
    })
    .await;
    let (results, journaled) = resume_and_continue(crashed, dirs.work, &id, "call_bash").await;
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].contains("The user rejected the \"Bash\" call and said: write it with printf"),
        "{results:#?}"
    );
    assert_eq!(journaled, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_of_a_call_that_never_started_says_it_did_not_run() {
    let dirs = Dirs::new();
    let (crashed, id) = crash_after_answer(&dirs, bash_script("echo hi >> out.txt"), |e| match e {
        Event::ApprovalRequested(request) => Some(Op::Approve {
            request_id: request.request_id.clone(),
            decision: ApprovalDecision::ApproveOnce,
        }),
        _ => None,
    })
    .await;
    let (results, journaled) = resume_and_continue(crashed, dirs.work, &id, "call_bash").await;
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].contains("The user approved this \"Bash\" call, but kimi-rs stopped before it ran: it did not run."),
        "{results:#?}"
    );
    assert_eq!(journaled, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answer_survives_a_crash_before_the_result_and_is_delivered_once() {
    let dirs = Dirs::new();
    let script = vec![
        ScriptTurn::tool_calls(&[("call_ask", "AskUserQuestion", QUESTION_ARGS)]),
        ScriptTurn::text("Thanks."),
    ];
    let (crashed, id) = crash_after_answer(&dirs, script, |e| match e {
        Event::QuestionRequested { request_id, .. } => Some(Op::Answer {
            request_id: request_id.clone(),
            answers: Answers::from_json(&json!({"answers": {"Which database?": "Postgres"}}))
                .unwrap(),
        }),
        _ => None,
    })
    .await;
    let (results, journaled) = resume_and_continue(crashed, dirs.work, &id, "call_ask").await;
    assert_eq!(
        results,
        vec!["The user answered:\nQ: Which database?\nA: Postgres".to_owned()]
    );
    assert_eq!(journaled, 1);
}
