//! Snapshots of what the model sees: the request body a real session sends (OpenAI Chat wire
//! format, loopback scripted server) after compaction, after resume, after undo, in plan
//! mode and with todos, rendered as readable text with the machine-specific parts (temp paths, ids, dates)
//! replaced by placeholders. A reviewed `.snap` file is the expected request; a change to what
//! the model sees shows up as a snapshot diff.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "engine/harness.rs"]
mod harness;

use std::fmt::Write as _;

use kimi_core::permission::PermissionState;
use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, Op, PermissionMode, TurnEndReason};
use kimi_test_support::RecordedRequest;
use regex::Regex;
use serde_json::{Value, json};

use harness::{Dirs, Options, Session};

/// The system prompt of a fresh session, snapshotted once (`fresh_session`); the other
/// snapshots say "same as the fresh session" when theirs is identical, and show it otherwise.
fn fresh_system_prompt(dirs: &Dirs, body: &Value) -> String {
    normalise(dirs, &system_prompt(body))
}

fn system_prompt(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .map(|m| text_of(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n---\n")
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p["type"].as_str() {
                Some("text") => p["text"].as_str().unwrap_or_default().to_owned(),
                _ => format!("[{p}]"),
            })
            .collect::<Vec<_>>()
            .join("\n[part]\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Replaces what differs between machines and runs: the temp work dir and home (and the
/// session directory key derived from it), uuids, dates, plan file names and the user's shell. Everything else is kept byte for byte.
fn normalise(dirs: &Dirs, text: &str) -> String {
    let mut out = text.to_owned();
    let cwd = dirs.cwd().display().to_string();
    let home = std::fs::canonicalize(dirs.home.path())
        .unwrap()
        .display()
        .to_string();
    for (from, to) in [
        (cwd.as_str(), "<CWD>"),
        (home.as_str(), "<HOME>"),
        (&dirs.work.path().display().to_string(), "<CWD>"),
        (&dirs.home.path().display().to_string(), "<HOME>"),
    ] {
        out = out.replace(from, to);
    }
    let uuid = Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    out = uuid.replace_all(&out, "<UUID>").into_owned();
    // Session directories are keyed by the (random) work dir name; plan files get random names.
    let workdir_key = Regex::new(r"<HOME>/sessions/[^/]+/").unwrap();
    out = workdir_key
        .replace_all(&out, "<HOME>/sessions/<WORKDIR_KEY>/")
        .into_owned();
    let plan = Regex::new(r"plans/[a-z]+(-[a-z]+)*-[0-9a-f]+\.md").unwrap();
    out = plan.replace_all(&out, "plans/<PLAN_NAME>.md").into_owned();
    // The shell comes from `$SHELL` of whoever runs the tests.
    let shell = Regex::new(r"(?m)^- Shell: .*$").unwrap();
    out = shell.replace_all(&out, "- Shell: <SHELL>").into_owned();
    let datetime =
        Regex::new(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?)?")
            .unwrap();
    datetime.replace_all(&out, "<DATE>").into_owned()
}

/// One request as the model sees it: the system prompt (or a note that it is the fresh
/// session's), the tool names, every other top-level field, then each message.
fn render(dirs: &Dirs, request: &RecordedRequest, fresh_system: Option<&str>) -> String {
    let body = &request.body;
    let mut out = String::new();
    writeln!(out, "POST {}", request.path).unwrap();
    let mut rest = body.as_object().cloned().unwrap_or_default();
    rest.remove("messages");
    rest.remove("tools");
    writeln!(out, "fields: {}", Value::Object(rest)).unwrap();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    writeln!(out, "tools: {}", tools.join(", ")).unwrap();
    let system = normalise(dirs, &system_prompt(body));
    match fresh_system {
        Some(fresh) if fresh == system => {
            writeln!(out, "\n=== system: same as the fresh session's").unwrap();
        }
        _ => writeln!(out, "\n=== system\n{system}").unwrap(),
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("?");
        if role == "system" {
            continue;
        }
        let mut head = format!("=== {role}");
        if let Some(id) = message["tool_call_id"].as_str() {
            write!(head, " (result of {id})").unwrap();
        }
        writeln!(out, "\n{head}").unwrap();
        let text = text_of(&message["content"]);
        if !text.is_empty() {
            writeln!(out, "{}", normalise(dirs, &text)).unwrap();
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            writeln!(
                out,
                "-> call {} {} {}",
                call["id"].as_str().unwrap_or_default(),
                call["function"]["name"].as_str().unwrap_or_default(),
                normalise(
                    dirs,
                    call["function"]["arguments"].as_str().unwrap_or_default()
                )
            )
            .unwrap();
        }
        let mut extra = message.as_object().cloned().unwrap_or_default();
        for key in ["role", "content", "tool_calls", "tool_call_id"] {
            extra.remove(key);
        }
        if !extra.is_empty() {
            writeln!(
                out,
                "fields: {}",
                normalise(dirs, &Value::Object(extra).to_string())
            )
            .unwrap();
        }
    }
    out
}

fn chat_requests(s: &Session) -> Vec<RecordedRequest> {
    s.requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect()
}

fn call(id: &str, name: &str, args: Value) -> ScriptTurn {
    ScriptTurn::tool_calls(&[(id, name, &args.to_string())])
}

async fn run_ok(s: &mut Session, prompt: &str) {
    let (reason, error) = s.run(prompt).await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
}

/// A fresh session's first request, with the system prompt in full: the base the other
/// snapshots compare their system prompt with.
async fn fresh(dirs: &Dirs) -> String {
    let mut s = Session::start(dirs, ProviderType::OpenAi, vec![ScriptTurn::text("hi")]).await;
    run_ok(&mut s, "hello").await;
    let request = chat_requests(&s).remove(0);
    s.close().await;
    fresh_system_prompt(dirs, &request.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_session() {
    let dirs = Dirs::new();
    let mut s = Session::start(&dirs, ProviderType::OpenAi, vec![ScriptTurn::text("hi")]).await;
    run_ok(&mut s, "hello").await;
    let request = chat_requests(&s).remove(0);
    insta::assert_snapshot!(render(&dirs, &request, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_compaction() {
    let dirs = Dirs::new();
    std::fs::write(dirs.file("notes.txt"), "alpha\nbeta\n").unwrap();
    let system = fresh(&dirs).await;
    let mut s = Session::start(&dirs, ProviderType::OpenAi, Vec::new()).await;
    s.server
        .push(call("r1", "Read", json!({"path": "notes.txt"})));
    s.server
        .push(ScriptTurn::text("The notes say alpha and beta."));
    run_ok(&mut s, "Read notes.txt").await;
    // The summary request is answered by the next scripted turn.
    s.server.push(ScriptTurn::text(
        "SUMMARY: the user had notes.txt read; it says alpha, beta.",
    ));
    s.send(Op::Compact { instruction: None });
    s.wait_for(|e| matches!(e, Event::CompactionCompleted { .. }))
        .await;
    s.server.push(ScriptTurn::text("Still alpha and beta."));
    run_ok(&mut s, "What did the notes say?").await;
    let requests = chat_requests(&s);
    assert_eq!(requests.len(), 4, "two steps, the summary, one step");
    insta::assert_snapshot!(
        "compaction_request",
        render(&dirs, &requests[2], Some(&system))
    );
    insta::assert_snapshot!(
        "after_compaction",
        render(&dirs, &requests[3], Some(&system))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_resume() {
    let dirs = Dirs::new();
    let system = fresh(&dirs).await;
    let mut s = Session::start(&dirs, ProviderType::OpenAi, Vec::new()).await;
    s.server.push(call(
        "w1",
        "Write",
        json!({"path": "a.txt", "content": "one\n"}),
    ));
    s.server.push(ScriptTurn::text("Wrote a.txt."));
    run_ok(&mut s, "Write a.txt").await;
    let id = s.session_id();
    s.close().await;
    drop(s);

    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = Resume::Id(id);
    let mut s = Session::start_with(&dirs, options, vec![ScriptTurn::text("It says one.")]).await;
    run_ok(&mut s, "What is in a.txt?").await;
    let request = chat_requests(&s).remove(0);
    insta::assert_snapshot!(render(&dirs, &request, Some(&system)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_undo() {
    let dirs = Dirs::new();
    let system = fresh(&dirs).await;
    let mut s = Session::start(&dirs, ProviderType::OpenAi, Vec::new()).await;
    s.server.push(ScriptTurn::text("First answer."));
    run_ok(&mut s, "First question").await;
    s.server.push(call(
        "w1",
        "Write",
        json!({"path": "b.txt", "content": "two\n"}),
    ));
    s.server.push(ScriptTurn::text("Wrote b.txt."));
    run_ok(&mut s, "Second question: write b.txt").await;
    s.send(Op::Undo { count: 1 });
    s.wait_for(|e| matches!(e, Event::ContextUndone { .. }))
        .await;
    s.server.push(ScriptTurn::text("Third answer."));
    run_ok(&mut s, "Third question").await;
    let request = chat_requests(&s).pop().unwrap();
    insta::assert_snapshot!(render(&dirs, &request, Some(&system)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_plan_mode() {
    let dirs = Dirs::new();
    let system = fresh(&dirs).await;
    let mut options = Options::new(ProviderType::OpenAi);
    let mut state = PermissionState::default();
    state.mode.mode = PermissionMode::Manual;
    state.mode.plan = true;
    options.permission_chain = Some(state);
    let mut s = Session::start_with(&dirs, options, Vec::new()).await;
    s.server.push(call(
        "w1",
        "Write",
        json!({"path": "c.txt", "content": "x"}),
    ));
    s.server.push(ScriptTurn::text("Planning instead."));
    run_ok(&mut s, "Plan a change to c.txt").await;
    let requests = chat_requests(&s);
    insta::assert_snapshot!(
        "plan_mode_first",
        render(&dirs, &requests[0], Some(&system))
    );
    insta::assert_snapshot!(
        "plan_mode_after_denied_write",
        render(&dirs, &requests[1], Some(&system))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_todos_after_compaction_and_resume() {
    let dirs = Dirs::new();
    let system = fresh(&dirs).await;
    let mut s = Session::start(&dirs, ProviderType::OpenAi, Vec::new()).await;
    s.server.push(call(
        "t1",
        "TodoList",
        json!({"todos": [
            {"title": "Read the notes", "status": "done"},
            {"title": "Summarise them", "status": "in_progress"},
            {"title": "Write the report", "status": "pending"}
        ]}),
    ));
    s.server.push(ScriptTurn::text("Planned."));
    run_ok(&mut s, "Plan the work as todos").await;
    s.server.push(ScriptTurn::text(
        "SUMMARY: the user asked for a todo plan; it is set.",
    ));
    s.send(Op::Compact { instruction: None });
    s.wait_for(|e| matches!(e, Event::CompactionCompleted { .. }))
        .await;
    s.server.push(ScriptTurn::text("Continuing."));
    run_ok(&mut s, "Go on").await;
    let requests = chat_requests(&s);
    insta::assert_snapshot!(
        "todos_after_compaction",
        render(&dirs, requests.last().unwrap(), Some(&system))
    );
    let id = s.session_id();
    s.close().await;
    drop(s);

    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = Resume::Id(id);
    let mut s = Session::start_with(&dirs, options, Vec::new()).await;
    s.server
        .push(ScriptTurn::text("SUMMARY-2: todos still set."));
    s.send(Op::Compact { instruction: None });
    s.wait_for(|e| matches!(e, Event::CompactionCompleted { .. }))
        .await;
    s.server.push(ScriptTurn::text("Resumed."));
    run_ok(&mut s, "After resume").await;
    let requests = chat_requests(&s);
    insta::assert_snapshot!(
        "todos_after_resume_and_compaction",
        render(&dirs, requests.last().unwrap(), Some(&system))
    );
}
