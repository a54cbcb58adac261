//! A scripted editor for the `kimi-rs acp` tests: it speaks newline-delimited JSON-RPC to the
//! real binary, answers permission requests, and (when it says it has them) serves
//! `fs/read_text_file` and `fs/write_text_file` from its own buffers and runs `terminal/*`
//! commands as real processes.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};

use crate::common::{Fixture, WAIT};
use serde_json::{Value, json};

/// An editor: writes requests, answers permission requests with `permission`, and keeps every
/// notification it saw.
pub struct Editor {
    pub child: Child,
    /// Shared with the threads that answer `terminal/wait_for_exit` when a command ends.
    pub stdin: Arc<Mutex<ChildStdin>>,
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
    /// The editor's terminals by id, when it offers `terminal`.
    pub terminals: Option<HashMap<String, Arc<Term>>>,
    /// The `terminal/*` calls the agent made (`create <id> <command args…>`, `output <id>`,
    /// `wait_for_exit <id>`, `kill <id>`, `release <id>`), in order.
    pub terminal_calls: Vec<String>,
}

/// One editor terminal: a real process whose output is collected as it runs.
pub struct Term {
    pub pid: u32,
    pub output: Arc<Mutex<String>>,
    /// The exit (code, signal) once known, and the `wait_for_exit` requests still unanswered.
    state: Mutex<(Option<Exit>, Vec<Value>)>,
}

/// How a terminal's process ended: exit code, signal.
type Exit = (Option<i32>, Option<String>);

fn reply(stdin: &Mutex<ChildStdin>, id: &Value, answer: Value) {
    let mut message = json!({"jsonrpc": "2.0", "id": id});
    message
        .as_object_mut()
        .unwrap()
        .extend(answer.as_object().unwrap().clone());
    let mut stdin = stdin.lock().unwrap();
    // The agent may be gone at the end of a test: nothing to answer then.
    let _ = writeln!(stdin, "{message}").and_then(|()| stdin.flush());
}

fn exit_json(exit: &Exit) -> Value {
    json!({"exitCode": exit.0, "signal": exit.1})
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

    /// An editor that shows `notice` updates (`clientCapabilities.session.notices`).
    pub fn start_with_notices(fx: &Fixture) -> Editor {
        Editor::start_with(
            fx.command(&["acp"]),
            json!({"session": {"notices": {}}}),
            None,
        )
    }

    pub fn start_command(command: std::process::Command) -> Editor {
        Editor::start_with(command, json!({}), None)
    }

    /// An editor that offers `terminal/*`: commands run as real processes it collects the
    /// output of.
    pub fn start_with_terminal(fx: &Fixture) -> Editor {
        let mut editor = Editor::start_with(fx.command(&["acp"]), json!({"terminal": true}), None);
        editor.terminals = Some(HashMap::new());
        editor
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
        let stdin = Arc::new(Mutex::new(child.stdin.take().unwrap()));
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
            terminals: None,
            terminal_calls: Vec::new(),
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
        let mut stdin = self.stdin.lock().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Serve one `terminal/*` request.
    fn terminal(&mut self, method: &str, message: &Value) {
        let params = &message["params"];
        let id = params["terminalId"].as_str().unwrap_or_default().to_owned();
        let terminals = self
            .terminals
            .as_mut()
            .expect("terminal calls only to an editor that offers terminal");
        let answer = match method {
            "terminal/create" => {
                let command = params["command"].as_str().unwrap().to_owned();
                let args: Vec<String> = params["args"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default();
                let mut process = std::process::Command::new(&command);
                process
                    .args(&args)
                    // Lets a test tell the editor's terminal from a process the agent started.
                    .env("KIMI_TEST_EDITOR_TERMINAL", "yes")
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                if let Some(cwd) = params["cwd"].as_str() {
                    process.current_dir(cwd);
                }
                for var in params["env"].as_array().into_iter().flatten() {
                    process.env(
                        var["name"].as_str().unwrap(),
                        var["value"].as_str().unwrap(),
                    );
                }
                let mut child = process.spawn().unwrap();
                let id = format!("term-{}", terminals.len() + 1);
                self.terminal_calls
                    .push(format!("create {id} {command} {}", args.join(" ")));
                let output = Arc::new(Mutex::new(String::new()));
                let readers: Vec<_> = [
                    Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
                    Box::new(child.stderr.take().unwrap()),
                ]
                .into_iter()
                .map(|mut pipe| {
                    let output = output.clone();
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = pipe.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            output
                                .lock()
                                .unwrap()
                                .push_str(&String::from_utf8_lossy(&buf[..n]));
                        }
                    })
                })
                .collect();
                let term = Arc::new(Term {
                    pid: child.id(),
                    output,
                    state: Mutex::new((None, Vec::new())),
                });
                let (waiting, stdin) = (term.clone(), self.stdin.clone());
                std::thread::spawn(move || {
                    let status = child.wait().unwrap();
                    for reader in readers {
                        reader.join().unwrap();
                    }
                    use std::os::unix::process::ExitStatusExt;
                    let exit = (
                        status.code(),
                        status.signal().map(|s| format!("signal {s}")),
                    );
                    let mut state = waiting.state.lock().unwrap();
                    for request in state.1.drain(..) {
                        reply(&stdin, &request, json!({"result": exit_json(&exit)}));
                    }
                    state.0 = Some(exit);
                });
                terminals.insert(id.clone(), term);
                json!({"result": {"terminalId": id}})
            }
            "terminal/output" => {
                self.terminal_calls.push(format!("output {id}"));
                let term = &terminals[&id];
                let state = term.state.lock().unwrap();
                let output = term.output.lock().unwrap().clone();
                let exit = state.0.as_ref().map(exit_json);
                json!({"result": {"output": output, "truncated": false, "exitStatus": exit}})
            }
            "terminal/wait_for_exit" => {
                self.terminal_calls.push(format!("wait_for_exit {id}"));
                let term = &terminals[&id];
                let mut state = term.state.lock().unwrap();
                match &state.0 {
                    Some(exit) => json!({"result": exit_json(exit)}),
                    None => {
                        // Answered by the process's waiter thread when it ends.
                        state.1.push(message["id"].clone());
                        return;
                    }
                }
            }
            "terminal/kill" => {
                self.terminal_calls.push(format!("kill {id}"));
                let pid = rustix::process::Pid::from_raw(terminals[&id].pid as i32).unwrap();
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                json!({"result": null})
            }
            _ => {
                self.terminal_calls.push(format!("release {id}"));
                json!({"result": null})
            }
        };
        reply(&self.stdin, &message["id"], answer);
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
        if method.starts_with("terminal/") {
            self.terminal(method, &message);
            return None;
        }
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

    /// Handle incoming messages until `done` holds (`false` after [`WAIT`] without it).
    pub fn wait_until(&mut self, done: impl Fn(&Editor) -> bool) -> bool {
        let deadline = std::time::Instant::now() + WAIT;
        while !done(self) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok(message) = self.lines.recv_timeout(left) else {
                return false;
            };
            self.handle(message, 0);
        }
        true
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
