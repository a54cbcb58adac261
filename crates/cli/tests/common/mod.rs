//! Helpers shared by the real-binary print-mode suites: a fixture with a temp
//! `KIMI_RS_HOME`, a loopback `ScriptServer` and the model chosen through `KIMI_MODEL_*`
//! variables given to the child process only. Every request the server captured must pair
//! tool calls and results (checked when the fixture drops).
// Each test file uses its own subset.
#![allow(dead_code)]

pub mod browser;
pub mod terminal_client;
pub mod web_client;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_test_support::{RecordedRequest, ScriptServer};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_kimi-rs");
pub const WAIT: Duration = Duration::from_secs(30);

/// (provider type, the value of `KIMI_MODEL_PROVIDER_TYPE`)
pub const FORMATS: [(ProviderType, &str); 5] = [
    (ProviderType::OpenAi, "openai"),
    (ProviderType::Anthropic, "anthropic"),
    (ProviderType::Kimi, "kimi"),
    (ProviderType::OpenAiResponses, "openai_responses"),
    (ProviderType::GoogleGenAi, "google-genai"),
];

/// The formats every scenario runs in.
pub const CORE_FORMATS: [(ProviderType, &str); 2] = [FORMATS[0], FORMATS[1]];

pub struct Fixture {
    pub server: ScriptServer,
    pub home: tempfile::TempDir,
    pub work: tempfile::TempDir,
    pub format: (ProviderType, &'static str),
    // Declared last: the server's task must be aborted before its runtime goes away.
    _rt: tokio::runtime::Runtime,
}

impl Fixture {
    pub fn new(format: (ProviderType, &'static str), turns: Vec<ScriptTurn>) -> Fixture {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = rt.block_on(ScriptServer::start(turns)).unwrap();
        Fixture {
            server,
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
            format,
            _rt: rt,
        }
    }

    pub fn cwd(&self) -> PathBuf {
        std::fs::canonicalize(self.work.path()).unwrap()
    }

    /// The binary with a temp home and the model pointed at the server.
    pub fn command(&self, args: &[&str]) -> Command {
        let model = self.server.model(self.format.0, "scripted-model");
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(self.cwd())
            .env("KIMI_RS_HOME", self.home.path())
            .env("HOME", self.home.path())
            .env("KIMI_MODEL_NAME", "scripted-model")
            .env("KIMI_MODEL_API_KEY", "sk-test-key")
            .env("KIMI_MODEL_PROVIDER_TYPE", self.format.1)
            .env("KIMI_MODEL_BASE_URL", &model.base_url)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Run {
        wait_child(self.spawn(args))
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// Session ids of the home's index, oldest first.
    pub fn session_ids(&self) -> Vec<String> {
        let index = std::fs::read_to_string(self.home.path().join("session_index.jsonl"))
            .unwrap_or_default();
        let mut ids: Vec<String> = Vec::new();
        for line in index.lines().filter(|l| !l.trim().is_empty()) {
            let entry: Value = serde_json::from_str(line).unwrap();
            let id = entry["id"].as_str().unwrap().to_owned();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        ids
    }

    pub fn journal(&self, session_id: &str) -> Vec<Value> {
        let path = find_file(&self.home.path().join("sessions"), session_id, "wire.jsonl")
            .expect("the session's journal exists");
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let violations = self.server.pairing_violations();
            assert!(
                violations.is_empty(),
                "{}: tool call/result pairing violated: {violations:#?}",
                self.format.1
            );
        }
    }
}

/// `<root>/**/<session_id>/**/<name>`.
pub fn find_file(root: &Path, session_id: &str, name: &str) -> Option<PathBuf> {
    fn walk(dir: &Path, inside: bool, session_id: &str, name: &str) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let path = entry.path();
            let here = inside || entry.file_name().to_string_lossy() == session_id;
            if path.is_dir() {
                if let Some(found) = walk(&path, here, session_id, name) {
                    return Some(found);
                }
            } else if here && entry.file_name().to_string_lossy() == name {
                return Some(path);
            }
        }
        None
    }
    walk(root, false, session_id, name)
}

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Wait (bounded) until `cond` holds — for state another process produces.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(started.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Opens the write end of `fifo` once a reader has it open (i.e. the command is running).
pub fn open_fifo_writer(fifo: &Path) -> std::fs::File {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.to_owned();
    std::thread::spawn(move || {
        let file = std::fs::OpenOptions::new().write(true).open(path);
        let _ = tx.send(file);
    });
    rx.recv_timeout(WAIT)
        .expect("the command never opened the pipe")
        .unwrap()
}

pub fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

pub fn wait_child(child: Child) -> Run {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    Run::from(
        rx.recv_timeout(WAIT)
            .expect("the child did not exit")
            .unwrap(),
    )
}

pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Texts of the user messages of an OpenAI Chat or Anthropic request body.
pub fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .filter(|t| !t.is_empty())
        .collect()
}

/// (id, text) of the tool results of an OpenAI Chat or Anthropic request body.
pub fn tool_results(body: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "tool" {
            out.push((
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                text_of(&m["content"]),
            ));
        }
        for p in m["content"].as_array().into_iter().flatten() {
            if p["type"] == "tool_result" {
                out.push((
                    p["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    text_of(&p["content"]),
                ));
            }
        }
    }
    out
}

/// (id, text) of the tool results of a request body in any wire format: OpenAI Chat / Kimi
/// `role: tool` messages, Anthropic `tool_result` blocks, Responses `function_call_output`
/// items, and Gemini `functionResponse` parts (no ids there: the id is the function name and
/// the text is the JSON of `response`).
pub fn wire_tool_results(body: &Value) -> Vec<(String, String)> {
    if let Some(items) = body.get("input").and_then(Value::as_array) {
        return items
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| {
                (
                    i["call_id"].as_str().unwrap_or_default().to_owned(),
                    text_of(&i["output"]),
                )
            })
            .collect();
    }
    if let Some(contents) = body.get("contents").and_then(Value::as_array) {
        return contents
            .iter()
            .flat_map(|c| c["parts"].as_array().into_iter().flatten())
            .filter_map(|p| p.get("functionResponse"))
            .map(|r| {
                let response = &r["response"];
                let text = response
                    .get("output")
                    .or_else(|| response.get("error"))
                    .and_then(Value::as_str)
                    .map_or_else(|| response.to_string(), str::to_owned);
                (r["name"].as_str().unwrap_or_default().to_owned(), text)
            })
            .collect();
    }
    tool_results(body)
}

/// The stdout of a `--output-format stream-json` run, one JSON value per line.
pub fn json_lines(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{run:?}")))
        .collect()
}

/// The MCP test server (kimi-test-support's `kimi-mcp-fixture`), built on first use.
pub fn mcp_fixture() -> PathBuf {
    kimi_test_support::mcp_fixture::binary()
}

/// `(tool_call_id, content)` of the stream-json tool lines, in order.
pub fn tool_lines(lines: &[Value]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter(|l| l["role"] == "tool")
        .map(|l| {
            (
                l["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                l["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}
