//! What an ACP editor is told besides the answer: the todo list as its `plan`, the context
//! usage (`usage_update`), the session title (`session_info_update`), and everything the TUI
//! shows as a notice — warnings, retries, flow progress — as `notice` updates when the editor
//! takes them, or as agent text when it does not (never only in the log).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp_editor;
mod common;

use acp_editor::Editor;
use common::{CORE_FORMATS, Fixture};
use kimi_llm::scripted::ScriptTurn;
use serde_json::Value;

fn script() -> Vec<ScriptTurn> {
    vec![
        ScriptTurn::tool_calls(&[(
            "call_t",
            "TodoList",
            r#"{"todos":[{"title":"read the notes","status":"done"},{"title":"write the summary","status":"in_progress"}]}"#,
        )]),
        // One failed attempt (retried), then the answer.
        ScriptTurn::error(503, r#"{"error":{"message":"overloaded, try again"}}"#),
        ScriptTurn::text("Summary written."),
        // The session-title request.
        ScriptTurn::text("Notes summary"),
    ]
}

fn updates<'a>(editor: &'a Editor, kind: &str) -> Vec<&'a Value> {
    editor
        .updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

#[test]
fn todos_usage_title_and_notices_reach_an_editor_that_takes_notices() {
    let fx = Fixture::new(CORE_FORMATS[0], script());
    std::fs::write(
        fx.home.path().join("config.toml"),
        "[experimental]\nauto_session_title = true\n",
    )
    .unwrap();
    let mut editor = Editor::start_with_notices(&fx);
    let session = editor.new_session(&fx);
    let response = editor.prompt(&session, "summarise the notes");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");

    let plan = updates(&editor, "plan");
    let entries = &plan.last().expect("the todo list is the plan")["entries"];
    assert_eq!(entries[0]["content"], "read the notes", "{entries}");
    assert_eq!(entries[0]["status"], "completed");
    assert_eq!(entries[1]["content"], "write the summary");
    assert_eq!(entries[1]["status"], "in_progress");
    assert_eq!(entries[1]["priority"], "medium");

    let usage = updates(&editor, "usage_update");
    let last = usage.last().expect("context usage is reported");
    assert_eq!(last["size"], 262_144, "{last}");
    assert!(last["used"].as_u64().unwrap() > 0, "{last}");

    let notices = updates(&editor, "notice");
    assert!(
        notices.iter().any(|n| n["severity"] == "info"
            && n["title"]
                .as_str()
                .unwrap()
                .contains("The model request failed (")
            && n["title"].as_str().unwrap().contains("retrying in")),
        "the retry is told: {notices:?}"
    );
    assert!(
        !editor.agent_text().contains("retrying"),
        "notices stay out of the answer: {}",
        editor.agent_text()
    );

    // The title is generated after the turn; the editor hears of it when it lands.
    let titled = editor.wait_until(|e| !updates(e, "session_info_update").is_empty());
    assert!(titled, "no session_info_update: {:?}", editor.updates);
    let info = updates(&editor, "session_info_update");
    assert_eq!(info[0]["title"], "Notes summary", "{info:?}");
    editor.close();
}

#[test]
fn an_editor_without_notices_gets_them_as_agent_text() {
    let fx = Fixture::new(CORE_FORMATS[0], script());
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    let response = editor.prompt(&session, "summarise the notes");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(updates(&editor, "notice").is_empty());
    let text = editor.agent_text();
    assert!(
        text.contains("The model request failed (") && text.contains("Summary written."),
        "{text}"
    );
    editor.close();
}
