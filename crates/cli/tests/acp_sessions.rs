//! `kimi-rs acp` beyond prompts: the editor's files through `fs/*`, stored sessions (list,
//! resume, fork, delete), `logout`, and the model and thinking effort as config options
//! (`session/set_config_option`, `session/set_model`). The real binary against the loopback
//! scripted model, driven by a scripted editor.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp_editor;
mod common;

use std::collections::HashMap;

use acp_editor::Editor;
use common::{CORE_FORMATS, Fixture};
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};

fn text_of(value: &Value) -> String {
    value.to_string()
}

#[test]
fn read_edit_and_write_go_through_the_editors_buffers_when_it_offers_fs() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("r1", "Read", r#"{"path":"notes.txt"}"#)]),
            ScriptTurn::tool_calls(&[(
                "e1",
                "Edit",
                r#"{"path":"notes.txt","old_string":"unsaved line","new_string":"edited line"}"#,
            )]),
            ScriptTurn::tool_calls(&[("w1", "Write", r#"{"path":"new.txt","content":"fresh\n"}"#)]),
            ScriptTurn::text("Done."),
        ],
    );
    std::fs::write(fx.cwd().join("notes.txt"), "DISKTEXT\n").unwrap();
    let notes = std::fs::canonicalize(fx.cwd().join("notes.txt"))
        .unwrap()
        .display()
        .to_string();
    let fresh = std::fs::canonicalize(fx.cwd())
        .unwrap()
        .join("new.txt")
        .display()
        .to_string();
    // The editor holds an unsaved change of notes.txt.
    let buffers = HashMap::from([(notes.clone(), "unsaved line\n".to_owned())]);
    let mut editor = Editor::start_with_files(&fx, buffers);
    let session = editor.new_session(&fx);
    let response = editor.prompt(&session, "edit the notes");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");

    // The model read the buffer, not the file on disk.
    let requests = fx.requests();
    let after_read = text_of(&requests[1].body);
    assert!(after_read.contains("unsaved line"), "{after_read}");
    assert!(!after_read.contains("DISKTEXT"), "{after_read}");
    // Edit changed the buffer and Write created one: the editor has them, the disk does not.
    let files = editor.files.clone().unwrap();
    assert_eq!(files[&notes], "edited line\n");
    assert_eq!(files[&fresh], "fresh\n");
    assert_eq!(
        std::fs::read_to_string(fx.cwd().join("notes.txt")).unwrap(),
        "DISKTEXT\n"
    );
    assert!(!fx.cwd().join("new.txt").exists());
    assert!(
        editor.fs_calls.contains(&format!("read {notes}"))
            && editor.fs_calls.contains(&format!("write {notes}"))
            && editor.fs_calls.contains(&format!("write {fresh}")),
        "{:?}",
        editor.fs_calls
    );
    editor.close();
}

#[test]
fn without_fs_the_files_on_disk_are_used() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("w1", "Write", r#"{"path":"new.txt","content":"disk\n"}"#)]),
            ScriptTurn::text("Done."),
        ],
    );
    let mut editor = Editor::start(&fx);
    let session = editor.new_session(&fx);
    editor.prompt(&session, "write it");
    assert_eq!(
        std::fs::read_to_string(fx.cwd().join("new.txt")).unwrap(),
        "disk\n"
    );
    editor.close();
}

fn session_ids(list: &Value) -> Vec<String> {
    list["result"]["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn stored_sessions_are_listed_resumed_forked_and_deleted() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("First."),
            ScriptTurn::text("From the fork."),
            ScriptTurn::text("Resumed."),
        ],
    );
    let mut editor = Editor::start(&fx);
    let caps = editor.init["result"]["agentCapabilities"].clone();
    for capability in ["list", "resume", "delete", "fork", "close"] {
        assert_eq!(caps["sessionCapabilities"][capability], json!({}), "{caps}");
    }
    assert_eq!(caps["auth"]["logout"], json!({}), "{caps}");
    let cwd = fx.cwd();
    let first = editor.new_session(&fx);
    editor.prompt(&first, "remember PLUM");

    let list = editor.call("session/list", json!({"cwd": cwd}));
    assert_eq!(session_ids(&list), vec![first.clone()], "{list}");
    let listed = &list["result"]["sessions"][0];
    assert!(
        listed["updatedAt"].as_str().unwrap().ends_with('Z'),
        "{list}"
    );
    let elsewhere = editor.call("session/list", json!({"cwd": "/nonexistent-dir"}));
    assert_eq!(session_ids(&elsewhere), Vec::<String>::new(), "{elsewhere}");

    // A fork is a new session with the conversation so far.
    let forked = editor.call(
        "session/fork",
        json!({"sessionId": first, "cwd": cwd, "mcpServers": []}),
    );
    let fork = forked["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{forked}"))
        .to_owned();
    assert_ne!(fork, first);
    let answer = editor.prompt(&fork, "what was the word?");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let last = text_of(&fx.requests().last().unwrap().body);
    assert!(last.contains("remember PLUM"), "{last}");

    // Resume opens a closed session without replaying it.
    editor.call("session/close", json!({"sessionId": first}));
    editor.updates.clear();
    let resumed = editor.call(
        "session/resume",
        json!({"sessionId": first, "cwd": cwd, "mcpServers": []}),
    );
    assert!(resumed.get("error").is_none(), "{resumed}");
    assert_eq!(editor.agent_text(), "", "resume does not replay");
    editor.prompt(&first, "still there?");
    let last = text_of(&fx.requests().last().unwrap().body);
    assert!(
        last.contains("remember PLUM") && !last.contains("what was the word"),
        "{last}"
    );

    // Delete closes the open fork first, then removes it from disk and the list.
    let deleted = editor.call("session/delete", json!({"sessionId": fork}));
    assert_eq!(deleted["result"], json!({}), "{deleted}");
    let list = editor.call("session/list", json!({}));
    assert_eq!(session_ids(&list), vec![first.clone()], "{list}");
    let gone = editor.prompt(&fork, "hello?");
    assert!(gone.get("error").is_some(), "{gone}");
    let again = editor.call("session/delete", json!({"sessionId": fork}));
    assert!(
        again["error"]["data"]
            .as_str()
            .unwrap_or_default()
            .contains("no stored session"),
        "{again}"
    );
    editor.close();
}

fn config_option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options
        .as_array()
        .unwrap_or_else(|| panic!("{options}"))
        .iter()
        .find(|o| o["id"] == id)
        .unwrap_or_else(|| panic!("no option {id}: {options}"))
}

#[test]
fn the_model_and_thinking_are_config_options_and_set_model_switches_the_next_request() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::text("Env model here."),
            ScriptTurn::text("Beta here."),
            ScriptTurn::text("Alpha here."),
        ],
    );
    let base_url = fx.server.base_url();
    std::fs::write(
        fx.home.path().join("config.toml"),
        format!(
            "[providers.script]\ntype = \"openai\"\napi_key = \"k\"\nbase_url = \"{base_url}/v1\"\n\n\
             [models.alpha]\nprovider = \"script\"\nmodel = \"model-a\"\nmax_context_size = 100000\n\n\
             [models.beta]\nprovider = \"script\"\nmodel = \"model-b\"\nmax_context_size = 100000\n"
        ),
    )
    .unwrap();
    let mut editor = Editor::start(&fx);
    let created = editor.call("session/new", json!({"cwd": fx.cwd(), "mcpServers": []}));
    let session = created["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let options = &created["result"]["configOptions"];
    let model = config_option(options, "model");
    assert_eq!(model["type"], "select", "{options}");
    // The environment's model is in use until the editor switches.
    assert_eq!(model["currentValue"], "scripted-model", "{options}");
    let values: Vec<&str> = model["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert!(
        values.contains(&"alpha") && values.contains(&"beta"),
        "{options}"
    );
    assert_eq!(
        config_option(options, "thinking")["category"],
        "thought_level"
    );

    editor.prompt(&session, "one");
    let set = editor.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "beta"}),
    );
    assert_eq!(
        config_option(&set["result"]["configOptions"], "model")["currentValue"],
        "beta",
        "{set}"
    );
    editor.prompt(&session, "two");
    assert_eq!(fx.requests().last().unwrap().body["model"], "model-b");
    // The editor was told about the change.
    assert!(
        editor
            .updates
            .iter()
            .any(|u| u["sessionUpdate"] == "config_option_update"
                && config_option(&u["configOptions"], "model")["currentValue"] == "beta"),
        "{:?}",
        editor.kinds()
    );

    let back = editor.call(
        "session/set_model",
        json!({"sessionId": session, "modelId": "alpha"}),
    );
    assert_eq!(back["result"], json!({}), "{back}");
    editor.prompt(&session, "three");
    assert_eq!(fx.requests().last().unwrap().body["model"], "model-a");

    let unknown = editor.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "gamma"}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["data"]
            .as_str()
            .unwrap()
            .contains("alpha, beta"),
        "{unknown}"
    );
    editor.close();
}

#[test]
fn logout_drops_the_stored_login() {
    let fx = Fixture::new(CORE_FORMATS[0], Vec::new());
    let dir = fx.home.path().join("credentials");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kimi-code.json"),
        json!({"access_token": "a", "refresh_token": "r", "expires_at": 4_000_000_000_i64,
               "expires_in": 3600})
        .to_string(),
    )
    .unwrap();
    let mut editor = Editor::start(&fx);
    let before = editor.call("authenticate", json!({"methodId": "login"}));
    assert!(before.get("error").is_none(), "{before}");
    let out = editor.call("logout", json!({}));
    assert_eq!(out["result"], json!({}), "{out}");
    assert!(!dir.join("kimi-code.json").exists());
    let after = editor.call("authenticate", json!({"methodId": "login"}));
    assert_eq!(after["error"]["code"], -32000, "{after}");
    editor.close();
}

/// An editor that offers `terminal` runs Bash: `terminal/create` with the shell command, its
/// output read back (the model gets it as the tool result), `terminal/wait_for_exit`, then
/// `terminal/release`; the tool call embeds the terminal while it runs and after.
#[test]
fn bash_runs_in_the_editors_terminal_when_it_offers_one() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "b1",
                "Bash",
                r#"{"command":"echo terminal=$KIMI_TEST_EDITOR_TERMINAL; echo second line >&2","description":"say"}"#,
            )]),
            ScriptTurn::text("Done."),
        ],
    );
    let mut editor = Editor::start_with_terminal(&fx);
    let session = editor.new_session(&fx);
    let response = editor.prompt(&session, "run it");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");

    // The command ran in the editor's terminal: only there is the marker variable set.
    let after = text_of(&fx.requests()[1].body);
    assert!(after.contains("terminal=yes"), "{after}");
    assert!(after.contains("second line"), "{after}");
    let calls = &editor.terminal_calls;
    assert!(
        calls[0].starts_with("create term-1 ") && calls[0].contains(" -c echo terminal="),
        "{calls:?}"
    );
    assert!(
        calls.contains(&"wait_for_exit term-1".to_owned()),
        "{calls:?}"
    );
    assert!(calls.contains(&"output term-1".to_owned()), "{calls:?}");
    // Released last, once the command has exited and its output was read.
    assert_eq!(
        calls.last().map(String::as_str),
        Some("release term-1"),
        "{calls:?}"
    );

    let terminal = json!({"type": "terminal", "terminalId": "term-1"});
    let b1: Vec<&Value> = editor
        .updates
        .iter()
        .filter(|u| u["toolCallId"] == "b1")
        .collect();
    assert!(
        b1.iter()
            .any(|u| u["status"].is_null() && u["content"] == json!([terminal])),
        "the running call shows the terminal: {b1:?}"
    );
    let last = b1.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["content"][0], terminal, "{last}");
    editor.close();
}

/// Cancelling a prompt while its Bash command runs in the editor's terminal kills it there
/// (`terminal/kill`), then releases the terminal; the prompt ends `cancelled` and the process
/// is gone.
#[test]
fn cancel_kills_the_command_in_the_editors_terminal() {
    let fifo = tempfile::tempdir().unwrap();
    let pipe = fifo.path().join("started");
    common::mkfifo(&pipe);
    let command = format!("echo $$ > {} && exec sleep 300", pipe.display());
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("slow", "Bash", &json!({"command": command}).to_string())]),
            ScriptTurn::text("unused"),
        ],
    );
    let mut editor = Editor::start_with_terminal(&fx);
    let session = editor.new_session(&fx);
    let id = editor.send(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "run the slow thing"}]}),
    );
    // The editor answers the approval and creates the terminal; the FIFO says the command
    // runs (and which process it is).
    let reader = std::thread::spawn(move || std::fs::read_to_string(pipe).unwrap());
    assert!(editor.wait_until(|e| {
        e.terminal_calls
            .iter()
            .any(|c| c.starts_with("create term-1"))
    }));
    let pid: i32 = reader.join().unwrap().trim().parse().unwrap();
    editor.write(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let response = editor.wait_for(id);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    assert!(
        editor
            .wait_until(|e| e.terminal_calls.last().map(String::as_str) == Some("release term-1")),
        "{:?}",
        editor.terminal_calls
    );
    assert!(
        editor.terminal_calls.contains(&"kill term-1".to_owned()),
        "{:?}",
        editor.terminal_calls
    );
    // The killed process is reaped by the editor's waiter thread: it no longer exists.
    common::wait_until("the killed command to be gone", || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    });
    editor.close();
}
