//! `kimi-rs acp` against the official ACP TypeScript SDK (`@agentclientprotocol/sdk`) acting as
//! the editor (`tests/acp_sdk/client.mjs`): the SDK checks every message the agent sends
//! against its schemas, so this catches shapes our own JSON tests would accept. Covers
//! initialize, session/new, a prompt whose Read runs and whose Edit is allowed through session/request_permission
//! (with its locations and diff), both through the editor's `fs` buffers, session/set_mode,
//! session/set_config_option, session/list, session/close, session/resume, session/delete
//! and logout. Needs Node and the SDK
//! (`.ci/run` installs it into ~/.cache/kimi-rs-ci/acp-sdk); fails saying what to install
//! unless `KIMI_RS_SKIP_ACP_SDK_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{BIN, CORE_FORMATS, Fixture};
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};

fn sdk_modules() -> PathBuf {
    match std::env::var_os("KIMI_RS_ACP_SDK_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::home_dir()
            .unwrap_or_default()
            .join(".cache/kimi-rs-ci/acp-sdk"),
    }
    .join("node_modules")
}

#[test]
fn the_official_typescript_sdk_accepts_every_message_of_a_session() {
    if std::env::var("KIMI_RS_SKIP_ACP_SDK_TESTS").as_deref() == Ok("1") {
        println!("skipped: KIMI_RS_SKIP_ACP_SDK_TESTS=1");
        return;
    }
    let modules = sdk_modules();
    if !Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        panic!(
            "the ACP SDK test needs node on PATH (apt-get install -y nodejs npm), or set KIMI_RS_SKIP_ACP_SDK_TESTS=1"
        );
    }
    assert!(
        modules
            .join("@agentclientprotocol/sdk/package.json")
            .is_file(),
        "the ACP SDK test needs @agentclientprotocol/sdk in {}: npm install --prefix {} @agentclientprotocol/sdk (or run .ci/run, or set KIMI_RS_ACP_SDK_DIR), or set KIMI_RS_SKIP_ACP_SDK_TESTS=1",
        modules.display(),
        modules.parent().unwrap().display()
    );
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_r", "Read", r#"{"path":"a.txt"}"#)]),
            ScriptTurn::tool_calls(&[(
                "call_e",
                "Edit",
                r#"{"path":"a.txt","old_string":"one","new_string":"two"}"#,
            )]),
            ScriptTurn::text("Edited **a.txt**."),
        ],
    );
    // On disk the file differs from the editor's buffer ("one\n", in client.mjs).
    std::fs::write(fx.cwd().join("a.txt"), "DISKTEXT\n").unwrap();
    // The agent gets the fixture's environment (home, scripted model) through node.
    let agent = fx.command(&["acp"]);
    let mut node = Command::new("node");
    node.arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/acp_sdk/client.mjs"))
        .arg(&modules)
        .arg(BIN)
        .arg(fx.cwd())
        .current_dir(fx.cwd());
    for (key, value) in agent.get_envs() {
        if let Some(value) = value {
            node.env(key, value);
        }
    }
    let output = node.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the SDK client failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    let seen: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(seen["initialize"]["agentInfo"]["name"], "kimi-rs", "{seen}");
    assert_eq!(seen["prompt"]["stopReason"], "end_turn", "{seen}");
    assert_eq!(seen["close"], json!({}), "{seen}");
    // The editor offered fs: Read and Edit went through its buffer, the disk kept its text.
    let file = fx.cwd().join("a.txt").display().to_string();
    assert_eq!(
        seen["fsCalls"],
        json!([
            format!("read {file}"),
            format!("read {file}"),
            format!("read {file}"),
            format!("write {file}")
        ]),
        "{seen}"
    );
    assert_eq!(seen["buffers"][&file], "two\n", "{seen}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "DISKTEXT\n");
    let thinking = seen["thinking"]["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "thinking")
        .cloned()
        .unwrap();
    assert_eq!(thinking["currentValue"], "high", "{seen}");
    let session = seen["session"]["sessionId"].as_str().unwrap();
    assert_eq!(seen["list"]["sessions"][0]["sessionId"], session, "{seen}");
    assert!(
        seen["resume"]["modes"]["currentModeId"].is_string(),
        "{seen}"
    );
    assert_eq!(seen["delete"], json!({}), "{seen}");
    assert_eq!(seen["listAfter"]["sessions"], json!([]), "{seen}");
    assert_eq!(seen["logout"], json!({}), "{seen}");
    assert_eq!(seen["exit"], 0, "{seen}");
    assert_eq!(
        seen["asked"][0]["toolCall"]["toolCallId"], "call_e",
        "{seen}"
    );
    let updates = seen["updates"].as_array().unwrap();
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_e")
        .unwrap();
    assert_eq!(call["locations"][0]["path"], file.as_str(), "{call}");
    assert_eq!(
        call["content"][0],
        json!({"type": "diff", "path": file, "oldText": "one", "newText": "two"})
    );
    let statuses: Vec<&str> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .filter_map(|u| u["status"].as_str())
        .collect();
    assert_eq!(
        statuses,
        ["in_progress", "completed", "in_progress", "completed"],
        "{seen}"
    );
    let text: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "Edited **a.txt**.");
}
