//! A scripted editor for the `kimi-rs acp` tests: it speaks newline-delimited JSON-RPC to the
//! real binary, answers permission requests, and (when it says it has them) serves
//! `fs/read_text_file` and `fs/write_text_file` from its own buffers.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};

use crate::common::{Fixture, WAIT};
use serde_json::{Value, json};

/// An editor: writes requests, answers permission requests with `permission`, and keeps every
/// notification it saw.
pub struct Editor {
    pub child: Child,
    pub stdin: ChildStdin,
    pub lines: Receiver<Value>,
    pub next_id: u64,
    pub updates: Vec<Value>,
    /// Option id to pick when asked for permission.
    pub permission: &'static str,
    pub asked: Vec<Value>,
    /// Tool-call updates (`kind status id`) and permission requests (`permission id`) in the
    /// order they arrived.
    pub order: Vec<String>,
    /// The answer to `initialize`.
    pub init: Value,
    /// The editor's buffers by absolute path, when it offers `fs` (unsaved text included).
    pub files: Option<HashMap<String, String>>,
    /// The `fs/*` calls the agent made (`read <path>`, `write <path>`), in order.
    pub fs_calls: Vec<String>,
}

impl Editor {
    pub fn start(fx: &Fixture) -> Editor {
        Editor::start_command(fx.command(&["acp"]))
    }

    /// An editor that offers `fs/read_text_file` and `fs/write_text_file`, serving `files`
    /// (absolute path → text); a path it has no buffer for is read from disk, as an editor does.
    pub fn start_with_files(fx: &Fixture, files: HashMap<String, String>) -> Editor {
        Editor::start_with(
            fx.command(&["acp"]),
            json!({"fs": {"readTextFile": true, "writeTextFile": true}}),
            Some(files),
        )
    }

    pub fn start_command(command: std::process::Command) -> Editor {
        Editor::start_with(command, json!({}), None)
    }

    fn start_with(
        mut command: std::process::Command,
        capabilities: Value,
        files: Option<HashMap<String, String>>,
    ) -> Editor {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC, got {line:?}: {e}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut editor = Editor {
            child,
            stdin,
            lines,
            next_id: 0,
            updates: Vec::new(),
            permission: "approve_once",
            asked: Vec::new(),
            order: Vec::new(),
            init: Value::Null,
            files,
            fs_calls: Vec::new(),
        };
        let init = editor.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
        );
        assert_eq!(
            init["result"]["agentCapabilities"]["loadSession"], true,
            "{init}"
        );
        assert_eq!(init["result"]["agentInfo"]["name"], "kimi-rs");
        editor.init = init;
        editor
    }

    pub fn write(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Handle one incoming message; returns it when it is the response to `id`.
    pub fn handle(&mut self, message: Value, id: u64) -> Option<Value> {
        if message.get("method").and_then(Value::as_str) == Some("session/update") {
            let update = &message["params"]["update"];
            // A `tool_call` without a status is `pending`, the protocol's default.
            let status = match update["sessionUpdate"].as_str() {
                Some("tool_call") => Some(update["status"].as_str().unwrap_or("pending")),
                _ => update["status"].as_str(),
            };
            if let Some(status) = status {
                self.order.push(format!(
                    "{} {status} {}",
                    update["sessionUpdate"].as_str().unwrap_or_default(),
                    update["toolCallId"].as_str().unwrap_or_default()
                ));
            }
            self.updates.push(update.clone());
            return None;
        }
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if method.starts_with("fs/") {
            let path = message["params"]["path"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let files = self
                .files
                .as_mut()
                .expect("fs calls only to an editor that offers fs");
            let answer = if method == "fs/read_text_file" {
                self.fs_calls.push(format!("read {path}"));
                match files
                    .get(&path)
                    .cloned()
                    .or_else(|| std::fs::read_to_string(&path).ok())
                {
                    Some(content) => json!({"result": {"content": content}}),
                    None => {
                        json!({"error": {"code": -32002, "message": format!("no such file {path}")}})
                    }
                }
            } else {
                self.fs_calls.push(format!("write {path}"));
                let content = message["params"]["content"].as_str().unwrap_or_default();
                files.insert(path, content.to_owned());
                json!({"result": null})
            };
            let mut reply = json!({"jsonrpc": "2.0", "id": message["id"]});
            reply
                .as_object_mut()
                .unwrap()
                .extend(answer.as_object().unwrap().clone());
            self.write(reply);
            return None;
        }
        if message.get("method").and_then(Value::as_str) == Some("session/request_permission") {
            self.order.push(format!(
                "permission {}",
                message["params"]["toolCall"]["toolCallId"]
                    .as_str()
                    .unwrap_or_default()
            ));
            self.asked.push(message["params"].clone());
            let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": {"outcome": "selected", "optionId": self.permission}}});
            self.write(answer);
            return None;
        }
        (message.get("id") == Some(&json!(id)) && message.get("method").is_none())
            .then_some(message)
    }

    pub fn wait_for(&mut self, id: u64) -> Value {
        loop {
            let message = self
                .lines
                .recv_timeout(WAIT)
                .expect("the agent answered in time");
            if let Some(response) = self.handle(message, id) {
                return response;
            }
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.wait_for(id)
    }

    pub fn new_session(&mut self, fx: &Fixture) -> String {
        let response = self.call("session/new", json!({"cwd": fx.cwd(), "mcpServers": []}));
        assert_eq!(
            response["result"]["modes"]["currentModeId"], "default",
            "{response}"
        );
        response["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    pub fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    pub fn kinds(&self) -> Vec<String> {
        self.updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    pub fn agent_text(&self) -> String {
        self.updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    pub fn close(mut self) {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "kimi-rs acp exits cleanly when stdin closes: {status}"
        );
    }
}
