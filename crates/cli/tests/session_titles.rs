//! Model-written session titles (the experimental `auto_session_title` flag): after the first
//! turn one short tool-less request to the scripted model names the session; `kimi-rs
//! sessions` shows the name and `state.json` records it as generated. A failed request keeps
//! the first prompt line and is logged. Without the flag no request is made.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{CORE_FORMATS, Fixture, find_file};
use kimi_llm::scripted::ScriptTurn;
use serde_json::Value;

const PROMPT: &str = "please plan the rewrite of our parser\nwith all the details";

fn state(fx: &Fixture, id: &str) -> Value {
    let path = find_file(&fx.home.path().join("sessions"), id, "state.json").unwrap();
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_model_titles_a_session_after_its_first_turn() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("Here is the plan."),
            ScriptTurn::text("\"Parser Rewrite Plan.\""),
        ],
    );
    let mut cmd = fx.command(&["-p", PROMPT]);
    cmd.env("KIMI_CODE_EXPERIMENTAL_AUTO_SESSION_TITLE", "1");
    let run = common::wait_child(
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Here is the plan."), "{run:?}");
    let requests = fx.requests();
    assert_eq!(requests.len(), 2, "the turn and the title request");
    let title_request = &requests[1].body;
    assert!(
        title_request["tools"]
            .as_array()
            .is_none_or(std::vec::Vec::is_empty),
        "tool-less: {title_request}"
    );
    let sent = title_request.to_string();
    assert!(
        sent.contains("please plan the rewrite of our parser")
            && sent.contains("Here is the plan."),
        "{sent}"
    );
    let id = fx.session_ids()[0].clone();
    let state = state(&fx, &id);
    assert_eq!(state["title"], "Parser Rewrite Plan", "{state}");
    assert_eq!(state["titleKind"], "generated", "{state}");
    let listed = fx.run(&["sessions"]);
    assert!(listed.stdout.contains("Parser Rewrite Plan"), "{listed:?}");
}

#[test]
fn a_failed_title_request_keeps_the_first_line_and_is_logged() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("Here is the plan."),
            ScriptTurn::error(400, r#"{"error":{"message":"no titles today"}}"#),
        ],
    );
    let mut cmd = fx.command(&["-p", PROMPT]);
    cmd.env("KIMI_CODE_EXPERIMENTAL_FLAG", "1");
    let run = common::wait_child(
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(fx.requests().len(), 2);
    let id = fx.session_ids()[0].clone();
    let state = state(&fx, &id);
    assert_eq!(
        state["title"], "please plan the rewrite of our parser",
        "{state}"
    );
    let log = std::fs::read_to_string(fx.home.path().join("logs/kimi-rs.log")).unwrap();
    assert!(
        log.contains("could not generate the session title"),
        "{log}"
    );
}

#[test]
fn without_the_flag_no_title_request_is_made() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("Here is the plan.")]);
    let run = fx.run(&["-p", PROMPT]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(fx.requests().len(), 1);
    let id = fx.session_ids()[0].clone();
    assert_eq!(state(&fx, &id)["titleKind"], "replaceable");
}
