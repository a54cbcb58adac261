//! Sessions bound to an execution environment from the editor and browser front ends, on the
//! real binary: ACP's `session/new` with `_meta.environment` and the web's `POST /sessions`
//! with `metadata.environment` bind the new session to a declared `command` environment (a
//! real `kimi-rs exec-server` with a marker in its own environment and its own `defaultCwd`);
//! the approval the editor is asked names the target; an undeclared id fails the creation.
//! Only the model is scripted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc::channel;

use common::web_client::WebServer;
use common::{BIN, FORMATS, Fixture, WAIT, tool_results, wait_until};
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};

/// Prints `KIMI_TARGET=<id> in <cwd>`: the marker of the process that spawned the shell.
const WHERE: &str = r#"printf '%s in %s\n' "$(tr '\0' '\n' < /proc/$PPID/environ | grep '^KIMI_TARGET=')" "$(pwd)""#;

fn declare(fx: &Fixture, targets: &[(&str, &Path)]) {
    let config: String = targets
        .iter()
        .map(|(id, cwd)| {
            format!(
                "[environments.{id}]\ncommand = \"{BIN}\"\nargs = [\"exec-server\"]\nenv = {{ KIMI_TARGET = \"{id}\" }}\ndefaultCwd = \"{}\"\n",
                cwd.display()
            )
        })
        .collect();
    std::fs::write(fx.home.path().join("config.toml"), config).unwrap();
}

fn result(fx: &Fixture, id: &str) -> String {
    fx.requests()
        .iter()
        .find_map(|r| tool_results(&r.body).into_iter().find(|(i, _)| i == id))
        .map(|(_, text)| text)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

#[test]
fn acp_session_new_binds_the_environment_in_meta_and_approvals_name_it() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "c_where",
                "Bash",
                &json!({ "command": WHERE }).to_string(),
            )]),
            ScriptTurn::text("Ran it there."),
        ],
    );
    let target = tempfile::tempdir().unwrap();
    let target_cwd = std::fs::canonicalize(target.path()).unwrap();
    declare(&fx, &[("pod-0", &target_cwd)]);

    let mut child = fx
        .command(&["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let mut asked = Vec::new();
    // Sends a request and answers permission requests (approve once) until its response.
    let mut call = |id: u64, method: &str, params: Value| -> Value {
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        loop {
            let message = lines
                .recv_timeout(WAIT)
                .expect("the agent answered in time");
            if message["method"] == "session/request_permission" {
                asked.push(message["params"].clone());
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "selected", "optionId": "approve_once"}}});
                writeln!(stdin, "{answer}").unwrap();
            } else if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
        }
    };
    call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let unknown = call(
        2,
        "session/new",
        json!({"cwd": fx.cwd(), "mcpServers": [], "_meta": {"environment": "pod-9"}}),
    );
    let message = unknown["error"]["data"].as_str().unwrap_or_default();
    assert!(
        message.contains("unknown environment `pod-9`") && message.contains("pod-0"),
        "{unknown}"
    );
    let created = call(
        3,
        "session/new",
        json!({"cwd": fx.cwd(), "mcpServers": [], "_meta": {"environment": "pod-0"}}),
    );
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let done = call(
        4,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "where are you?"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");

    assert_eq!(
        result(&fx, "c_where").trim_end(),
        format!("KIMI_TARGET=pod-0 in {}", target_cwd.display())
    );
    assert_eq!(asked.len(), 1, "{asked:#?}");
    let title = asked[0]["toolCall"]["title"].as_str().unwrap_or_default();
    assert!(
        title.starts_with("run command on command:pod-0: "),
        "{title}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn web_create_session_binds_the_environment_in_metadata() {
    let fx = Fixture::new(
        FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("c_read", "Read", r#"{"path":"only-there.txt"}"#)]),
            ScriptTurn::text("Read it there."),
        ],
    );
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(second.path().join("only-there.txt"), "ON-POD-1\n").unwrap();
    declare(&fx, &[("pod-0", first.path()), ("pod-1", second.path())]);
    let server = WebServer::start(fx.command(&["web", "--port", "0", "--no-open"]));
    let created = server.call(
        "POST",
        "/api/v1/sessions",
        json!({"metadata": {"cwd": fx.cwd(), "environment": "pod-1"}}),
    );
    assert_eq!(created["code"], 0, "{created}");
    let session = created["data"]["id"].as_str().unwrap().to_owned();
    server.prompt(&session, "read the file");
    wait_until("the Read result to reach the model", || {
        fx.requests().len() >= 2
    });
    let read = result(&fx, "c_read");
    assert!(read.contains("ON-POD-1"), "{read}");
}
