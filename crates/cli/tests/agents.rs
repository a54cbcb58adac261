//! Agent profiles and subagents through the real binary in print mode: `--agent` binds the
//! main agent (its request shows the profile's tools) and survives `-S <id>`; an unknown name
//! exits 1 with a clear message; an `Agent` call's result appears in the output like any tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{FORMATS, Fixture, json_lines};
use kimi_llm::scripted::ScriptTurn;
use pretty_assertions::assert_eq;
use serde_json::Value;

/// Tool names of an OpenAI Chat request body.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

const EXPLORE_TOOLS: [&str; 6] = ["Read", "Glob", "Grep", "Bash", "FetchURL", "ReadMediaFile"];

#[test]
fn agent_flag_binds_the_profile_and_a_resume_keeps_it() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![ScriptTurn::text("First."), ScriptTurn::text("Second.")],
    );
    let run = fx.run(&["--agent", "explore", "-p", "Look around."]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let first = &fx.requests()[0].body;
    assert_eq!(tool_names(first), EXPLORE_TOOLS);
    let id = fx.session_ids().remove(0);
    let bind = fx
        .journal(&id)
        .into_iter()
        .find(|r| r["type"] == "profile.bind")
        .unwrap();
    assert_eq!(bind["profile"], "explore");

    let run = fx.run(&["-S", &id, "-p", "And again."]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let second = &fx.requests()[1].body;
    assert_eq!(tool_names(second), EXPLORE_TOOLS);
    assert_eq!(
        second["messages"][0], first["messages"][0],
        "same system prompt"
    );
}

#[test]
fn an_unknown_agent_exits_1_and_says_which_profiles_exist() {
    let fx = Fixture::new(FORMATS[0], Vec::new());
    let run = fx.run(&["--agent", "nosuch", "-p", "hi"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains(
            "no agent profile named `nosuch`; available profiles: agent, coder, explore, plan"
        ),
        "{run:?}"
    );
    assert!(fx.requests().is_empty());
    assert!(fx.session_ids().is_empty(), "no session was created");
}

#[test]
fn an_agent_call_shows_in_print_output_like_any_tool() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_agent",
                "Agent",
                r#"{"prompt":"Summarise the repo.","description":"summarise repo","subagent_type":"plan"}"#,
            )]),
            ScriptTurn::text(
                "The repository is empty apart from its session files; there is nothing to plan yet. Suggested first step: create the project skeleton, then add a build script and one test so later steps can be verified.",
            ),
            ScriptTurn::text("Nothing to do yet."),
        ],
    );
    let run = fx.run(&["-p", "Plan it.", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = json_lines(&run);
    let tool = lines
        .iter()
        .find(|l| l["role"] == "tool" && l["tool_call_id"] == "call_agent")
        .unwrap_or_else(|| panic!("no Agent result line: {run:?}"));
    let content = tool["content"].as_str().unwrap();
    assert!(
        content.contains("actual_subagent_type: plan") && content.contains("nothing to plan yet"),
        "{content}"
    );
    assert_eq!(fx.requests().len(), 3);
    let sub = &fx.requests()[1].body;
    assert_eq!(
        tool_names(sub),
        ["Read", "Glob", "Grep", "FetchURL", "ReadMediaFile"]
    );
}
