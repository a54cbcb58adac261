//! Skills and MCP servers through the real `kimi-rs` binary in print mode, against the
//! loopback scripted model: the skill listing reaches the system prompt, `/skill:name args`
//! sends the expanded skill, the model's `Skill` call delivers the skill text, and the tools of
//! an MCP server from `mcp.json` (a real stdio server process) are offered and called.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{CORE_FORMATS, Fixture, mcp_fixture};
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};

fn write_skill(fx: &Fixture) {
    let dir = fx.home.path().join("skills/greet");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets someone by name\n---\nSay a warm hello to $ARGUMENTS and nothing else.\n",
    )
    .unwrap();
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_skill_command_sends_the_expanded_skill_and_the_listing_reaches_the_prompt() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(format, vec![ScriptTurn::text("Hello, Bob!")]);
        write_skill(&fx);
        let run = fx.run(&["-p", "/skill:greet Bob", "--output-format", "stream-json"]);
        assert_eq!(run.code, Some(0), "{run:?}");
        let body = fx.requests()[0].body.to_string();
        assert!(
            body.contains("Say a warm hello to Bob and nothing else."),
            "{}: the expanded skill was sent: {body}",
            format.1
        );
        assert!(
            body.contains("Greets someone by name"),
            "the listing is in the prompt"
        );
        // The journal marks the message as a skill activation.
        let id = fx.session_ids().pop().unwrap();
        let origin = fx
            .journal(&id)
            .into_iter()
            .find(|r| r["type"] == "context.append_message" && r["message"]["role"] == "user")
            .map(|r| r["message"]["origin"].clone())
            .unwrap();
        assert_eq!(origin["kind"], "skill_activation", "{origin}");
    }
}

/// Skills mentioned inside a prompt (`/greet`, `/skill:shout`) load together with it in one
/// message: each skill's text once, then the prompt as typed; the journal's `user` origin
/// lists both activations.
#[test]
fn inline_skill_mentions_load_every_skill_with_the_prompt() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("Done.")]);
    write_skill(&fx);
    let dir = fx.home.path().join("skills/shout");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: shout\ndescription: Answers in capitals\n---\nAnswer in CAPITAL LETTERS only.\n",
    )
    .unwrap();
    let prompt = "please /greet the team, /skill:shout it and /greet again";
    let run = fx.run(&["-p", prompt, "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let body = &fx.requests()[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .to_string();
    assert_eq!(user.matches("Say a warm hello to").count(), 1, "{user}");
    assert_eq!(
        user.matches("Answer in CAPITAL LETTERS only.").count(),
        1,
        "{user}"
    );
    assert!(user.contains(prompt), "the prompt is kept as typed: {user}");
    let id = fx.session_ids().pop().unwrap();
    let origin = fx
        .journal(&id)
        .into_iter()
        .find(|r| r["type"] == "context.append_message" && r["message"]["role"] == "user")
        .map(|r| r["message"]["origin"].clone())
        .unwrap();
    assert_eq!(origin["kind"], "user", "{origin}");
    let names: Vec<&str> = origin["skillActivations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["skillName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["greet", "shout"], "{origin}");
}

#[test]
fn the_model_loads_a_skill_with_the_skill_tool() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_s", "Skill", r#"{"skill":"greet","args":"Ann"}"#)]),
            ScriptTurn::text("Hello, Ann!"),
        ],
    );
    write_skill(&fx);
    let run = fx.run(&["-p", "greet Ann please", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let first = fx.requests()[0].body.to_string();
    assert!(first.contains("\"Skill\""), "the Skill tool is offered");
    let second = fx.requests()[1].body.to_string();
    assert!(
        second.contains("Say a warm hello to Ann and nothing else."),
        "the skill text reached the model: {second}"
    );
    let unknown = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_x", "Skill", r#"{"skill":"nosuch"}"#)]),
            ScriptTurn::text("No such skill."),
        ],
    );
    write_skill(&unknown);
    let run = unknown.run(&["-p", "use nosuch", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let tool = json_lines(&run.stdout)
        .into_iter()
        .find(|l| l["role"] == "tool")
        .unwrap();
    assert!(tool["content"].to_string().contains("not found"), "{tool}");
}

#[test]
fn mcp_server_tools_are_offered_and_called() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_m",
                "mcp__fixture__echo",
                r#"{"text":"ping from the model"}"#,
            )]),
            ScriptTurn::text("The server echoed it."),
        ],
    );
    let config =
        json!({"mcpServers": {"fixture": {"command": mcp_fixture(), "args": ["--stderr-noise"]}}});
    std::fs::write(fx.home.path().join("mcp.json"), config.to_string()).unwrap();
    let run = fx.run(&["-p", "echo something", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        !run.stderr.contains("fixture noise"),
        "the server's stderr never reaches ours: {}",
        run.stderr
    );
    let first = fx.requests()[0].body.to_string();
    assert!(first.contains("mcp__fixture__echo") && first.contains("Echo the text back."));
    let tool = json_lines(&run.stdout)
        .into_iter()
        .find(|l| l["role"] == "tool")
        .unwrap();
    assert_eq!(tool["tool_call_id"], "call_m");
    assert!(
        tool["content"].to_string().contains("ping from the model"),
        "{tool}"
    );

    // A server that cannot start is a warning; the session still runs.
    let broken = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("fine")]);
    let config = json!({"mcpServers": {"gone": {"command": "/nonexistent/mcp-server"}}});
    std::fs::write(broken.home.path().join("mcp.json"), config.to_string()).unwrap();
    let run = broken.run(&["-p", "hi"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("gone"),
        "the failed server is named: {}",
        run.stderr
    );
}

/// The names of the tools a request offers (OpenAI Chat or Anthropic body).
fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().or(t["name"].as_str()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn with_tool_select_mcp_schemas_are_announced_loaded_on_demand_and_kept_on_resume() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![
                // A misspelt name, and the real tool called before it is loaded.
                ScriptTurn::tool_calls(&[
                    (
                        "call_typo",
                        "select_tools",
                        r#"{"names":["mcp__fixture__ecko"]}"#,
                    ),
                    ("call_early", "mcp__fixture__echo", r#"{"text":"too soon"}"#),
                ]),
                ScriptTurn::tool_calls(&[(
                    "call_load",
                    "select_tools",
                    r#"{"names":["mcp__fixture__echo"]}"#,
                )]),
                ScriptTurn::tool_calls(&[(
                    "call_echo",
                    "mcp__fixture__echo",
                    r#"{"text":"ping from the model"}"#,
                )]),
                ScriptTurn::text("The server echoed it."),
                ScriptTurn::text("Still loaded."),
            ],
        );
        let config = json!({"mcpServers": {"fixture": {"command": mcp_fixture()}}});
        std::fs::write(fx.home.path().join("mcp.json"), config.to_string()).unwrap();
        std::fs::write(
            fx.home.path().join("config.toml"),
            "[experimental]\ntool-select = true\n",
        )
        .unwrap();
        let run = fx.run(&["-p", "echo something", "--output-format", "stream-json"]);
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            !run.stderr.contains("not supported"),
            "the flag is acted on: {}",
            run.stderr
        );
        let requests = fx.requests();
        let first = &requests[0].body;
        let tools = offered_tools(first);
        assert!(tools.contains(&"select_tools".to_owned()), "{tools:?}");
        assert!(!tools.iter().any(|t| t.starts_with("mcp__")), "{tools:?}");
        assert!(
            !first.to_string().contains("Echo the text back."),
            "the schema is deferred"
        );
        let announced: Vec<String> = common::user_texts(first)
            .into_iter()
            .filter(|t| t.contains("<tools_added>"))
            .collect();
        assert_eq!(announced.len(), 1, "{:?}", common::user_texts(first));
        assert!(
            announced[0].contains("<tools_added>\nmcp__fixture__add\n")
                && announced[0].contains("\nmcp__fixture__echo\n")
                && announced[0].contains("</tools_added>\n\nUse the select_tools tool"),
            "{}",
            announced[0]
        );

        let second = &requests[1].body;
        let results = common::tool_results(second);
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[0].0, "call_typo");
        assert!(
            results[0]
                .1
                .contains("Unknown tool: mcp__fixture__ecko. Did you mean: mcp__fixture__echo"),
            "{results:?}"
        );
        assert!(
            results[1]
                .1
                .contains("is available but not loaded. Call select_tools"),
            "{results:?}"
        );
        assert!(!offered_tools(second).iter().any(|t| t.starts_with("mcp__")));

        let third = &requests[2].body;
        assert!(
            offered_tools(third).contains(&"mcp__fixture__echo".to_owned()),
            "the loaded schema is sent: {:?}",
            offered_tools(third)
        );
        assert!(third.to_string().contains("Echo the text back."));
        let results = common::tool_results(third);
        assert!(
            results
                .iter()
                .any(|(id, text)| id == "call_load" && text == "Loaded: mcp__fixture__echo"),
            "{results:?}"
        );
        let fourth = &requests[3].body;
        let results = common::tool_results(fourth);
        assert!(
            results
                .iter()
                .any(|(id, text)| id == "call_echo" && text.contains("ping from the model")),
            "the tool's result reached the model: {results:?}"
        );

        // Resumed, the tool is still loaded and nothing is announced again.
        let id = fx.session_ids().pop().unwrap();
        let run = fx.run(&["-S", &id, "-p", "again", "--output-format", "stream-json"]);
        assert_eq!(run.code, Some(0), "{run:?}");
        let resumed = &fx.requests()[4].body;
        assert!(
            offered_tools(resumed).contains(&"mcp__fixture__echo".to_owned()),
            "{:?}",
            offered_tools(resumed)
        );
        let announcements = common::user_texts(resumed)
            .iter()
            .filter(|t| t.contains("<tools_added>"))
            .count();
        assert_eq!(announcements, 1, "{:?}", common::user_texts(resumed));
    }
}
