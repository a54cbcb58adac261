//! The engine with its guards wired in: user hooks (UserPromptSubmit, PreToolUse, Stop) and the
//! permission chain (deny rules, asking the user, approve-for-session surviving a resume), run
//! in-process against the scripted model with real files, real processes and a real journal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kimi_core::engine::runtime::ApproveAll;
use kimi_core::permission::{PermissionState, load_rules_from_str};
use kimi_core::session::{OpenedSession, Resume, SessionSetup, open_session};
use kimi_llm::scripted::{ScriptTurn, ScriptedProvider};
use kimi_llm::{ModelParams, RetryPolicy};
use kimi_protocol::ContentPart;
use kimi_protocol::ops::{ApprovalDecision, Event, Op, PermissionMode, TurnEndReason};
use kimi_store::FsyncPolicy;

fn setup(
    home: &Path,
    cwd: &Path,
    resume: Resume,
    provider: Arc<ScriptedProvider>,
    chain: Option<PermissionState>,
) -> SessionSetup {
    SessionSetup {
        home: home.to_owned(),
        cwd: cwd.to_owned(),
        resume,
        provider,
        params: ModelParams::default(),
        max_context_tokens: 0,
        max_steps_per_turn: None,
        retry: RetryPolicy::default(),
        permissions: Arc::new(ApproveAll),
        permission_chain: chain,
        additional_dirs: Vec::new(),
        tool_env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
        fsync: FsyncPolicy::Never,
        extensions: Default::default(),
        agent: Default::default(),
        // What the front end does at start-up: the one parse of the home's config.toml.
        config: std::sync::Arc::new(kimi_config::Config::read(&home.join("config.toml"))),
        model_pool: Default::default(),
        model_alias: None,
        models: None,
    }
}

fn chain(mode: PermissionMode, config: &str) -> PermissionState {
    let mut state = PermissionState::default();
    state.mode.mode = mode;
    state.rules = load_rules_from_str(config).unwrap().rules;
    state
}

/// Submit `prompt` and collect events until the turn ends, answering approvals with `answer`.
async fn turn(
    opened: &mut OpenedSession,
    prompt: &str,
    answer: Option<ApprovalDecision>,
) -> Vec<Event> {
    opened.agent.handle.send(Op::Submit {
        input: vec![ContentPart::text(prompt)],
        origin: None,
        prompt_id: None,
    });
    let mut events = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), opened.agent.events.recv())
            .await
            .expect("turn finished in time")
            .expect("agent alive");
        if let (Event::ApprovalRequested(req), Some(decision)) = (&event, &answer) {
            opened.agent.handle.send(Op::Approve {
                request_id: req.request_id.clone(),
                decision: decision.clone(),
            });
        }
        let done = matches!(event, Event::TurnEnded { .. });
        events.push(event);
        if done {
            return events;
        }
    }
}

fn results(events: &[Event]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult {
                output, is_error, ..
            } => Some((
                output.iter().filter_map(ContentPart::as_text).collect(),
                *is_error,
            )),
            _ => None,
        })
        .collect()
}

fn ended(events: &[Event]) -> TurnEndReason {
    events
        .iter()
        .find_map(|e| match e {
            Event::TurnEnded { reason, .. } => Some(*reason),
            _ => None,
        })
        .unwrap()
}

async fn close(opened: OpenedSession) {
    opened.agent.handle.send(Op::Shutdown);
    opened.agent.join.await.unwrap();
}

#[tokio::test]
async fn pre_tool_use_hook_blocks_a_command_and_the_model_gets_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cwd) = (tmp.path().join("home"), tmp.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Bash\"\ncommand = \"grep -q touch && echo 'no touching' >&2 && exit 2; exit 0\"\n",
    )
    .unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptTurn::tool_calls(&[("c1", "Bash", r#"{"command":"touch made.txt"}"#)]),
        ScriptTurn::text("blocked, as expected"),
    ]));
    let mut opened = open_session(setup(&home, &cwd, Resume::New, provider.clone(), None)).unwrap();
    let events = turn(&mut opened, "make a file", None).await;
    assert_eq!(results(&events), vec![("no touching".to_owned(), true)]);
    assert!(
        !cwd.join("made.txt").exists(),
        "the vetoed command must not run"
    );
    assert_eq!(ended(&events), TurnEndReason::Completed);
    close(opened).await;
}

#[tokio::test]
async fn user_prompt_submit_hook_blocks_the_turn_before_the_model_is_called() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cwd) = (tmp.path().join("home"), tmp.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[[hooks]]\nevent = \"UserPromptSubmit\"\ncommand = \"echo 'secrets are off limits' >&2; exit 2\"\n",
    )
    .unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![ScriptTurn::text("never sent")]));
    let mut opened = open_session(setup(&home, &cwd, Resume::New, provider.clone(), None)).unwrap();
    let events = turn(&mut opened, "print the API key", None).await;
    assert_eq!(ended(&events), TurnEndReason::Blocked);
    assert!(
        provider.requests().is_empty(),
        "a blocked prompt never reaches the model"
    );
    close(opened).await;
}

#[tokio::test]
async fn stop_hook_asks_for_one_more_step_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cwd) = (tmp.path().join("home"), tmp.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[[hooks]]\nevent = \"Stop\"\ncommand = \"echo 'run the tests first' >&2; exit 2\"\n",
    )
    .unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptTurn::text("done"),
        ScriptTurn::text("tests pass"),
    ]));
    let mut opened = open_session(setup(&home, &cwd, Resume::New, provider.clone(), None)).unwrap();
    let events = turn(&mut opened, "finish", None).await;
    assert_eq!(ended(&events), TurnEndReason::Completed);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "exactly one extra step, not a loop");
    let last = requests[1].messages.last().unwrap().text();
    assert!(last.contains("run the tests first"), "{last}");
    close(opened).await;
}

#[tokio::test]
async fn deny_rules_refuse_and_session_approvals_survive_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cwd) = (tmp.path().join("home"), tmp.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let rules = "[[permission.rules]]\ndecision = \"deny\"\npattern = \"Bash(rm *)\"\nreason = \"no deleting\"\n";

    // Auto mode with a deny rule: the rule wins, the file survives.
    std::fs::write(cwd.join("keep.txt"), "x").unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptTurn::tool_calls(&[("c1", "Bash", r#"{"command":"rm keep.txt"}"#)]),
        ScriptTurn::text("could not delete"),
    ]));
    let mut opened = open_session(setup(
        &home,
        &cwd,
        Resume::New,
        provider,
        Some(chain(PermissionMode::Auto, rules)),
    ))
    .unwrap();
    let events = turn(&mut opened, "delete keep.txt", None).await;
    let (text, is_error) = results(&events).remove(0);
    assert!(is_error && text.contains("no deleting"), "{text}");
    assert!(cwd.join("keep.txt").exists());
    close(opened).await;

    // Manual mode: a command asks; approve it for the session.
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptTurn::tool_calls(&[("c2", "Bash", r#"{"command":"echo hi > note.txt"}"#)]),
        ScriptTurn::text("wrote it"),
    ]));
    let mut opened = open_session(setup(
        &home,
        &cwd,
        Resume::Latest,
        provider,
        Some(chain(PermissionMode::Manual, rules)),
    ))
    .unwrap();
    let events = turn(
        &mut opened,
        "write a note",
        Some(ApprovalDecision::ApproveForSession),
    )
    .await;
    let asked = events
        .iter()
        .filter(|e| matches!(e, Event::ApprovalRequested(_)))
        .count();
    assert_eq!(asked, 1);
    assert!(cwd.join("note.txt").exists());
    close(opened).await;

    // Resumed: the same command runs without asking, because the approval was journaled.
    std::fs::remove_file(cwd.join("note.txt")).unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptTurn::tool_calls(&[("c3", "Bash", r#"{"command":"echo hi > note.txt"}"#)]),
        ScriptTurn::text("wrote it again"),
    ]));
    let mut opened = open_session(setup(
        &home,
        &cwd,
        Resume::Latest,
        provider,
        Some(chain(PermissionMode::Manual, rules)),
    ))
    .unwrap();
    let events = turn(&mut opened, "again", None).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested(_))),
        "approve-for-session must survive a resume"
    );
    assert!(cwd.join("note.txt").exists());
    close(opened).await;
}

#[tokio::test]
async fn hooks_added_to_config_toml_apply_from_the_next_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cwd) = (tmp.path().join("home"), tmp.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptTurn::tool_calls(&[("c1", "Bash", r#"{"command":"touch first.txt"}"#)]),
        ScriptTurn::text("ok"),
        ScriptTurn::tool_calls(&[("c2", "Bash", r#"{"command":"touch second.txt"}"#)]),
        ScriptTurn::text("blocked"),
    ]));
    let mut opened = open_session(setup(&home, &cwd, Resume::New, provider, None)).unwrap();
    turn(&mut opened, "one", None).await;
    assert!(cwd.join("first.txt").exists());
    std::fs::write(
        home.join("config.toml"),
        "[[hooks]]\nevent = \"PreToolUse\"\ncommand = \"echo 'hooks reloaded' >&2; exit 2\"\n",
    )
    .unwrap();
    let events = turn(&mut opened, "two", None).await;
    assert_eq!(results(&events), vec![("hooks reloaded".to_owned(), true)]);
    assert!(!cwd.join("second.txt").exists());
    close(opened).await;
}

#[tokio::test]
async fn a_background_task_that_finishes_while_idle_starts_a_turn_that_reports_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cwd) = (tmp.path().join("home"), tmp.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptTurn::tool_calls(&[(
            "c1",
            "Bash",
            r#"{"command":"sleep 0.3; echo built","run_in_background":true,"description":"build"}"#,
        )]),
        ScriptTurn::text("started the build"),
        ScriptTurn::text("the build finished"),
    ]));
    let mut opened = open_session(setup(&home, &cwd, Resume::New, provider.clone(), None)).unwrap();
    let first = turn(&mut opened, "build in the background", None).await;
    assert_eq!(ended(&first), TurnEndReason::Completed);
    // No prompt from us: the task's completion starts the next turn by itself.
    let mut saw_second_turn = false;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), opened.agent.events.recv())
            .await
            .expect("a turn about the finished task")
            .expect("agent alive");
        match event {
            Event::TurnStarted { .. } => saw_second_turn = true,
            Event::TurnEnded { .. } if saw_second_turn => break,
            _ => {}
        }
    }
    let requests = provider.requests();
    let last = requests.last().unwrap().messages.last().unwrap().text();
    assert!(
        last.contains("Background task") && last.contains("completed"),
        "{last}"
    );
    close(opened).await;
}

/// A steer that arrives after the last step gate of a turn the engine started on its own (to
/// deliver background-task notices) must not wait for some later turn: it starts the next one.
/// A Stop hook holds the turn past its last gate (it runs after the turn's final steer check)
/// until the test has delivered the steer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_after_the_last_gate_of_a_task_notice_turn_reaches_the_model() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, cwd) = (tmp.path().join("home"), tmp.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let fifo = cwd.join("bg.fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (armed, entered, released) = (cwd.join("armed"), cwd.join("entered"), cwd.join("released"));
    let hook = format!(
        "if [ -f '{}' ]; then touch '{}'; while [ ! -f '{}' ]; do sleep 0.05; done; fi; exit 0",
        armed.display(),
        entered.display(),
        released.display()
    );
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[[hooks]]\nevent = \"Stop\"\ncommand = {}\ntimeout = 60\n",
            serde_json::Value::String(hook)
        ),
    )
    .unwrap();
    let background = serde_json::json!({
        "command": format!("cat '{}'", fifo.display()),
        "run_in_background": true,
        "description": "wait for the pipe",
    })
    .to_string();
    let provider = Arc::new(ScriptedProvider::new(vec![
        ScriptTurn::tool_calls(&[("c1", "Bash", &background)]),
        ScriptTurn::text("Started it."),
        ScriptTurn::text("Noted the finished task."),
        ScriptTurn::text("Handled the late steer."),
    ]));
    let mut opened = open_session(setup(&home, &cwd, Resume::New, provider.clone(), None)).unwrap();
    let events = turn(&mut opened, "Start the background job", None).await;
    assert_eq!(ended(&events), TurnEndReason::Completed, "{events:#?}");

    // The task ends while the agent is idle: the engine starts a turn to tell the model.
    std::fs::write(&armed, "").unwrap();
    let writer = fifo.clone();
    tokio::task::spawn_blocking(move || std::fs::write(writer, "done\n").unwrap());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    // The hook is another process whose only signal is the file it writes: a bounded poll of
    // that state, not a wait for time to pass.
    while !entered.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the task-notice turn never reached its Stop hook"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    opened.agent.handle.send(Op::Steer {
        input: vec![ContentPart::text("LATE STEER: and the docs")],
    });
    // Ops are handled in order: once this warning is back, the steer has been accepted.
    opened.agent.handle.send(Op::Answer {
        request_id: "barrier".to_owned(),
        answers: kimi_protocol::question::Answers::Dismissed,
    });
    let mut ends = 0;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), opened.agent.events.recv())
            .await
            .expect("the late steer reached the model (it did not wait for a later turn)")
            .expect("agent alive");
        match event {
            Event::Warning { message } if message.contains("barrier") => {
                std::fs::write(&released, "").unwrap();
            }
            Event::TurnEnded { .. } => {
                ends += 1;
                if ends == 2 {
                    break;
                }
            }
            _ => {}
        }
    }
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    let last_user = requests[3]
        .messages
        .iter()
        .rev()
        .find(|m| m.role == kimi_protocol::Role::User)
        .map(|m| m.text())
        .unwrap_or_default();
    assert!(last_user.contains("LATE STEER"), "{last_user}");
    close(opened).await;
}
