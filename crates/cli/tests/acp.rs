//! `kimi-rs acp` end to end: the real binary speaks newline-delimited JSON-RPC on its stdio, as
//! an editor drives it, against the loopback scripted model. Covers initialize, session/new,
//! prompts with tool calls streamed as updates, approvals asked through
//! `session/request_permission` (allowed and rejected), modes, cancel and session/load replay.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp_editor;
mod common;

use acp_editor::Editor;
use common::{CORE_FORMATS, Fixture, find_file, mcp_fixture};
use kimi_llm::scripted::ScriptTurn;
use serde_json::json;

#[test]
fn a_prompt_streams_tool_calls_and_the_answer_then_ends_the_turn() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![
                ScriptTurn::tool_calls(&[("call_1", "Read", r#"{"path":"notes.txt"}"#)]),
                ScriptTurn::text("The notes say hello."),
            ],
        );
        std::fs::write(fx.cwd().join("notes.txt"), "hello\n").unwrap();
        let mut editor = Editor::start(&fx);
        let session = editor.new_session(&fx);
        let response = editor.prompt(&session, "what do the notes say?");
        assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
        let call = editor
            .updates
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call")
            .expect("the tool call was announced");
        assert_eq!(call["toolCallId"], "call_1");
        assert_eq!(call["kind"], "read");
        assert_eq!(call["title"], "Read notes.txt");
        let done = editor
            .updates
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] != "in_progress")
            .expect("the result was sent");
        assert_eq!(done["status"], "completed");
        assert!(
            done["content"][0]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("hello")
        );
        assert_eq!(editor.agent_text(), "The notes say hello.");
        assert!(editor.asked.is_empty(), "Read needs no approval");
        // The model got the prompt the editor sent.
        let first = &fx.requests()[0];
        assert!(first.body.to_string().contains("what do the notes say?"));
        editor.close();
    }
}

#[test]
fn approvals_are_asked_through_the_editor_and_its_answer_is_followed() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_a",
                "Bash",
                r#"{"command":"echo yes > allowed.txt"}"#,
            )]),
            ScriptTurn::text("Ran it."),
            ScriptTurn::tool_calls(&[(
                "call_b",
                "Bash",
                r#"{"command":"echo no > rejected.txt"}"#,
            )]),
            ScriptTurn::text("It was rejected."),
        ],
    );
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    let response = editor.prompt(&session, "write the file");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(editor.asked.len(), 1);
    assert_eq!(editor.asked[0]["toolCall"]["toolCallId"], "call_a");
    let options: Vec<&str> = editor.asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    assert_eq!(
        std::fs::read_to_string(fx.cwd().join("allowed.txt")).unwrap(),
        "yes\n"
    );

    editor.permission = "reject";
    let response = editor.prompt(&session, "write the other file");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(editor.asked.len(), 2);
    assert!(
        !fx.cwd().join("rejected.txt").exists(),
        "a rejected call does not run"
    );
    let failed = editor
        .updates
        .iter()
        .rfind(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(failed["toolCallId"], "call_b");
    assert_eq!(failed["status"], "failed");
    editor.close();
}

#[test]
fn yolo_mode_runs_without_asking_and_cancel_ends_the_prompt_as_cancelled() {
    let fifo = tempfile::tempdir().unwrap();
    let pipe = fifo.path().join("started");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&pipe)
            .status()
            .unwrap()
            .success()
    );
    let command = format!("echo started > {} && sleep 30", pipe.display());
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_slow",
                "Bash",
                &json!({"command": command}).to_string(),
            )]),
            ScriptTurn::text("unused"),
        ],
    );
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    let mode = editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "yolo"}),
    );
    assert!(mode.get("error").is_none(), "{mode}");
    let bad = editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "nosuch"}),
    );
    assert!(
        bad["error"]["data"]
            .as_str()
            .unwrap()
            .contains("default, auto, yolo or plan"),
        "{bad}"
    );
    let id = editor.send(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "run the slow thing"}]}),
    );
    // Reading the FIFO returns once the command runs: the turn is inside the tool now.
    let reader = std::thread::spawn(move || std::fs::read_to_string(pipe).unwrap());
    assert_eq!(reader.join().unwrap(), "started\n");
    editor.write(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let response = editor.wait_for(id);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    assert!(editor.asked.is_empty(), "yolo asks nothing");
    editor.close();
}

#[test]
fn load_replays_the_stored_conversation_and_continues_it() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_1", "Glob", r#"{"pattern":"*.md"}"#)]),
            ScriptTurn::text("There is one markdown file."),
            ScriptTurn::text("Still one."),
        ],
    );
    std::fs::write(fx.cwd().join("README.md"), "# x\n").unwrap();
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    editor.prompt(&session, "count markdown files");
    editor.close();

    let mut editor = Editor::start(&fx);
    let response = editor.call(
        "session/load",
        json!({"sessionId": session, "cwd": fx.cwd(), "mcpServers": []}),
    );
    assert!(response.get("error").is_none(), "{response}");
    assert_eq!(
        editor.kinds(),
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(editor.updates[0]["content"]["text"], "count markdown files");
    assert_eq!(editor.agent_text(), "There is one markdown file.");
    editor.updates.clear();
    let response = editor.prompt(&session, "and now?");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(editor.agent_text(), "Still one.");
    // The continued conversation carries the first exchange.
    let last = fx.requests().last().unwrap().body.to_string();
    assert!(last.contains("count markdown files") && last.contains("and now?"));
    let unknown = editor.prompt("no-such-session", "hi");
    assert!(
        unknown["error"]["data"]
            .as_str()
            .unwrap()
            .contains("session/new"),
        "{unknown}"
    );
    editor.close();
}

#[test]
fn editor_mcp_servers_and_skill_commands_reach_the_session() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_e",
                "mcp__editor__echo",
                r#"{"text":"from the editor's server"}"#,
            )]),
            ScriptTurn::text("Echoed."),
            ScriptTurn::text("Hi Zoe."),
        ],
    );
    let skill = fx.home.path().join("skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets someone\n---\nGreet $ARGUMENTS warmly.\n",
    )
    .unwrap();
    let mut editor = Editor::start(&fx);
    let response = editor.call(
        "session/new",
        json!({"cwd": fx.cwd(), "mcpServers": [{"name": "editor", "command": mcp_fixture(), "args": [], "env": []}]}),
    );
    let session = response["result"]["sessionId"].as_str().unwrap().to_owned();
    let response = editor.prompt(&session, "echo via the editor's server");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let commands = editor
        .updates
        .iter()
        .find(|u| u["sessionUpdate"] == "available_commands_update")
        .expect("skills are advertised as commands");
    let names: Vec<&str> = commands["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(names.contains(&"skill:greet"), "{names:?}");
    assert!(
        names.contains(&"skill:mcp-config"),
        "built-in skills too: {names:?}"
    );
    let result = editor
        .updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] != "in_progress")
        .unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    assert!(
        result["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("from the editor's server")
    );
    assert_eq!(editor.asked.len(), 1, "MCP tools ask in default mode");
    let first = fx.requests()[0].body.to_string();
    assert!(first.contains("mcp__editor__echo"));

    let response = editor.prompt(&session, "/skill:greet Zoe");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let last = fx.requests().last().unwrap().body.to_string();
    assert!(last.contains("Greet Zoe warmly."), "{last}");
    editor.close();
}

#[test]
fn file_tool_calls_carry_locations_and_diffs_and_stay_pending_until_allowed() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_r", "Read", r#"{"path":"a.txt"}"#)]),
            ScriptTurn::tool_calls(&[(
                "call_e",
                "Edit",
                r#"{"path":"a.txt","old_string":"one","new_string":"two"}"#,
            )]),
            ScriptTurn::text("Edited."),
        ],
    );
    std::fs::write(fx.cwd().join("a.txt"), "one\n").unwrap();
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    let response = editor.prompt(&session, "edit a.txt");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(
        std::fs::read_to_string(fx.cwd().join("a.txt")).unwrap(),
        "two\n"
    );
    let file = fx.cwd().join("a.txt").display().to_string();
    let announced = |id: &str| {
        editor
            .updates
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == id)
            .cloned()
            .unwrap()
    };
    let read = announced("call_r");
    assert_eq!(read["locations"], json!([{"path": file}]), "{read}");
    let edit = announced("call_e");
    assert_eq!(edit["locations"], json!([{"path": file}]), "{edit}");
    assert_eq!(
        edit["content"],
        json!([{"type": "diff", "path": file, "oldText": "one", "newText": "two"}])
    );
    // Read runs without asking; Edit waits `pending` until the editor allows it.
    assert_eq!(
        editor.order,
        [
            "tool_call pending call_r",
            "tool_call_update in_progress call_r",
            "tool_call_update completed call_r",
            "tool_call pending call_e",
            "permission call_e",
            "tool_call_update in_progress call_e",
            "tool_call_update completed call_e",
        ],
        "{:#?}",
        editor.updates
    );
    editor.close();
}

#[test]
fn a_closed_session_stops_and_can_be_loaded_again() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![ScriptTurn::text("First."), ScriptTurn::text("Second.")],
    );
    let mut editor = Editor::start(&fx);
    let capabilities = &editor.init["result"]["agentCapabilities"];
    assert_eq!(
        capabilities["sessionCapabilities"]["close"],
        json!({}),
        "{capabilities}"
    );
    let session = editor.new_session(&fx);
    editor.prompt(&session, "one");
    let closed = editor.call("session/close", json!({"sessionId": session}));
    assert_eq!(closed["result"], json!({}), "{closed}");
    let gone = editor.prompt(&session, "two");
    assert!(gone.get("error").is_some(), "{gone}");
    let again = editor.call("session/close", json!({"sessionId": session}));
    assert!(again.get("error").is_some(), "{again}");
    // Its journal is complete: the same connection loads it again and continues it.
    editor.updates.clear();
    let loaded = editor.call(
        "session/load",
        json!({"sessionId": session, "cwd": fx.cwd(), "mcpServers": []}),
    );
    assert!(loaded.get("error").is_none(), "{loaded}");
    assert_eq!(editor.agent_text(), "First.");
    let response = editor.prompt(&session, "two");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let last = fx.requests().last().unwrap().body.to_string();
    assert!(last.contains("one") && last.contains("two"), "{last}");
    editor.close();
}

#[test]
fn plan_mode_guards_writes_and_the_plan_is_reviewed_in_the_editor() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("Planning mode noted."),
            ScriptTurn::tool_calls(&[("call_w", "Write", r#"{"path":"src.txt","content":"x"}"#)]),
            ScriptTurn::tool_calls(&[(
                "call_exit",
                "ExitPlanMode",
                r#"{"options":[{"label":"Small patch"},{"label":"Rewrite"}]}"#,
            )]),
            ScriptTurn::text("Going with the rewrite."),
        ],
    );
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    let response = editor.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert!(response.get("error").is_none(), "{response}");
    // The engine handles operations in order: once a prompt sent after the mode change has
    // ended, plan mode (and its plan id) is in the journal. The plan file lives next to it.
    let response = editor.prompt(&session, "we are planning");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let journal = find_file(&fx.home.path().join("sessions"), &session, "wire.jsonl").unwrap();
    let plan_id = fx
        .journal(&session)
        .iter()
        .rfind(|r| r["type"] == "plan.mode" && r["active"] == true)
        .and_then(|r| r["planId"].as_str().map(str::to_owned));
    let plan = journal
        .with_file_name("plans")
        .join(format!("{}.md", plan_id.unwrap()));
    std::fs::write(&plan, "1. Rewrite the parser.\n2. Add tests.\n").unwrap();

    editor.permission = "approach:Rewrite";
    let response = editor.prompt(&session, "plan the parser work");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(
        !fx.cwd().join("src.txt").exists(),
        "plan mode refuses other writes"
    );
    let denied = editor
        .updates
        .iter()
        .find(|u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == "call_w"
                && u["status"] != "in_progress"
        })
        .unwrap();
    assert_eq!(denied["status"], "failed");
    let review = editor
        .asked
        .last()
        .expect("the plan was reviewed in the editor");
    let names: Vec<&str> = review["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Approve: Small patch",
            "Approve: Rewrite",
            "Reject (stay in plan mode)"
        ]
    );
    assert!(
        review["toolCall"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("Rewrite the parser")
    );
    let result = tool_result_text(&fx, "call_exit");
    assert!(
        result.contains("Rewrite") && result.contains("Add tests"),
        "{result}"
    );
    let mode = editor
        .updates
        .iter()
        .rfind(|u| u["sessionUpdate"] == "current_mode_update")
        .expect("leaving plan mode is shown");
    assert_eq!(mode["currentModeId"], "default");
    editor.close();
}

/// The text of a tool result as the model received it (OpenAI Chat body).
fn tool_result_text(fx: &Fixture, call_id: &str) -> String {
    let last = fx.requests().last().unwrap().body.clone();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[test]
fn ask_user_question_is_asked_as_a_permission_request_per_question() {
    let args = r#"{"questions":[{"question":"Which database?","options":[{"label":"SQLite","description":"one file"},{"label":"Postgres"}]}]}"#;
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_q", "AskUserQuestion", args)]),
            ScriptTurn::text("Postgres it is."),
            ScriptTurn::tool_calls(&[("call_q2", "AskUserQuestion", args)]),
            ScriptTurn::text("I will decide myself."),
        ],
    );
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    editor.permission = "q0_opt_1";
    let response = editor.prompt(&session, "set up the database");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(editor.asked.len(), 1, "{:#?}", editor.asked);
    let asked = &editor.asked[0];
    assert_eq!(asked["toolCall"]["toolCallId"], "call_q");
    assert_eq!(asked["toolCall"]["title"], "Which database?");
    let options: Vec<(&str, &str, &str)> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["optionId"].as_str().unwrap(),
                o["name"].as_str().unwrap(),
                o["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        options,
        [
            ("q0_opt_0", "SQLite", "allow_once"),
            ("q0_opt_1", "Postgres", "allow_once"),
            ("q0_skip", "Skip", "reject_once"),
        ]
    );
    let result = tool_result_text(&fx, "call_q");
    assert!(result.contains("A: Postgres"), "{result}");

    // Skip dismisses the question.
    editor.permission = "q0_skip";
    let response = editor.prompt(&session, "and the cache?");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(editor.asked.len(), 2);
    let result = tool_result_text(&fx, "call_q2");
    assert!(result.contains("dismissed"), "{result}");
    editor.close();
}

#[test]
fn terminal_login_is_advertised_and_authenticate_reports_the_login() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    let mut editor = Editor::start(&fx);
    let init = editor.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let methods = &init["result"]["authMethods"];
    assert_eq!(methods[0]["type"], "terminal", "{init}");
    assert_eq!(methods[0]["id"], "login", "{init}");
    assert_eq!(methods[0]["args"], json!(["--login"]), "{init}");

    // No stored login: auth required (-32000), saying what to run.
    let refused = editor.call("authenticate", json!({"methodId": "login"}));
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["data"]
            .as_str()
            .unwrap()
            .contains("kimi-rs login"),
        "{refused}"
    );

    // Once `kimi-rs acp --login` has stored a token, authenticate succeeds.
    let dir = fx.home.path().join("credentials");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kimi-code.json"),
        json!({"access_token": "a", "refresh_token": "r", "expires_at": 4_000_000_000_i64,
               "expires_in": 3600})
        .to_string(),
    )
    .unwrap();
    let accepted = editor.call("authenticate", json!({"methodId": "login"}));
    assert!(accepted.get("error").is_none(), "{accepted}");
    let unknown = editor.call("authenticate", json!({"methodId": "other"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    editor.close();
}

#[test]
fn session_new_without_the_kimi_login_is_auth_required() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    std::fs::write(
        fx.home.path().join("config.toml"),
        format!(
            "default_model = \"kimi-code/k\"\n\n[providers.\"managed:kimi-code\"]\ntype = \"kimi\"\nbase_url = \"{}/coding/v1\"\noauth = {{ storage = \"file\", key = \"oauth/kimi-code\" }}\n\n[models.\"kimi-code/k\"]\nprovider = \"managed:kimi-code\"\nmodel = \"k\"\nmax_context_size = 262144\n",
            fx.server.base_url()
        ),
    )
    .unwrap();
    let mut command = fx.command(&["acp"]);
    for var in [
        "KIMI_MODEL_NAME",
        "KIMI_MODEL_API_KEY",
        "KIMI_MODEL_PROVIDER_TYPE",
        "KIMI_MODEL_BASE_URL",
    ] {
        command.env_remove(var);
    }
    let mut editor = Editor::start_command(command);
    let refused = editor.call("session/new", json!({"cwd": fx.cwd(), "mcpServers": []}));
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["data"]
            .as_str()
            .unwrap()
            .contains("kimi-rs login"),
        "{refused}"
    );

    // Logged in (as `kimi-rs acp --login` leaves it): the session opens.
    let dir = fx.home.path().join("credentials");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kimi-code.json"),
        json!({"access_token": "a", "refresh_token": "r", "expires_at": 4_000_000_000_i64,
               "expires_in": 3600})
        .to_string(),
    )
    .unwrap();
    let opened = editor.call("session/new", json!({"cwd": fx.cwd(), "mcpServers": []}));
    assert!(opened["result"]["sessionId"].is_string(), "{opened}");
    editor.close();
}
