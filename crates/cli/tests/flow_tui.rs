//! A flow skill in the interactive UI, through a real pseudo-terminal: `/flow` completion offers
//! it, `/flow:<name>` walks its chart with each step shown in the transcript, and Esc during a
//! node's turn stops the flow with that reason; a resumed session shows the flow's steps again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod pty;

use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use kimi_test_support::ScriptServer;
use pty::Session;

#[test]
fn exec_in_new_session() {
    pty::trampoline(env!("CARGO_BIN_EXE_kimi-rs"));
}

const FLOW: &str = r#"---
name: ship
description: Check, then ship
type: flow
---
```mermaid
flowchart TD
    S([BEGIN]) --> A[Run the checks]
    A --> B{Did every check pass?}
    B -->|yes| C[Write the release notes]
    B -->|no| A
    C --> E([END])
```
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_runs_in_the_tui_shows_its_steps_and_stops_on_esc() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let skill = home.path().join("skills/ship");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(skill.join("SKILL.md"), FLOW).unwrap();
    let server = ScriptServer::start(vec![
        ScriptTurn::text("All checks ran."),
        ScriptTurn::text("Everything passed. <choice>yes</choice>"),
        ScriptTurn::reply(vec![
            ScriptEvent::text("Drafting the notes"),
            ScriptEvent::stall(),
        ]),
    ])
    .await
    .unwrap();
    let url = server.base_url();
    let (work_path, home_path) = (work.path().to_owned(), home.path().to_owned());
    tokio::task::spawn_blocking(move || {
        let mut s = Session::spawn_sized(&work_path, &home_path, &url, &[], 40, 110);
        s.wait_for("the prompt", |t| t.contains("ask anything"));
        s.send(b"/flow");
        s.wait_for("the flow in the completion menu", |t| {
            t.contains("/flow:ship") && t.contains("Check, then ship")
        });
        s.send(b"\x15\x1b");
        s.send(b"/flow:ship\r");
        s.wait_for("the flow reaching its third node", |t| {
            t.contains("flow ship: A: Run the checks")
                && t.contains("All checks ran.")
                && t.contains("flow ship: chose yes → C: Write the release notes")
                && t.contains("Drafting the notes")
        });
        s.send(b"\x1b");
        s.wait_for("the flow stopped by Esc", |t| {
            t.contains("flow ship: stopped: the turn at C was cancelled")
        });
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs failed: {status}\n{text}");

        // Shown again on resume: each node's prompt as the step it was, with its answer.
        // `-c` finds it: starting the flow named the session.
        let mut s = Session::spawn_sized(&work_path, &home_path, &url, &["-c"], 40, 110);
        s.wait_for("the flow's steps in the resumed transcript", |t| {
            t.contains("flow step: Run the checks")
                && t.contains("All checks ran.")
                && t.contains("flow step: Write the release notes")
        });
        s.send(b"\x04");
        let (status, text) = s.wait_exit("Ctrl-D");
        assert!(status.success(), "kimi-rs -c failed: {status}\n{text}");
    })
    .await
    .unwrap();
    assert_eq!(server.requests().len(), 3);
}
