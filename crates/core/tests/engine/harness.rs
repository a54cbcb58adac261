//! The test harness: a temp home and workspace, a loopback `ScriptServer` speaking one wire
//! format, a session opened through `open_session`, and helpers that wait on engine events
//! (never on sleeps). Dropping a `Session` checks the tool-call pairing invariant over every
//! request the server captured, so a pairing bug fails every test.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kimi_core::engine::runtime::ApproveAll;
use kimi_core::session::{AgentChoice, OpenedSession, Resume, SessionSetup, open_session};
use kimi_llm::scripted::ScriptTurn;
use kimi_llm::{ModelParams, Provider, ProviderType, RetryPolicy, build_provider};
use kimi_protocol::ContentPart;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use kimi_store::FsyncPolicy;
use kimi_test_support::{RecordedRequest, ScriptServer};
use serde_json::Value;

/// How long any single wait may take before the test fails (generous: 2 shared cores).
pub const WAIT: Duration = Duration::from_secs(20);

/// A temp `KIMI_RS_HOME` and a temp working directory, kept across reopen/resume.
pub struct Dirs {
    pub home: tempfile::TempDir,
    pub work: tempfile::TempDir,
}

impl Dirs {
    pub fn new() -> Dirs {
        Dirs {
            home: tempfile::tempdir().expect("temp home"),
            work: tempfile::tempdir().expect("temp work dir"),
        }
    }

    /// The working directory, canonicalised (tools report absolute paths).
    pub fn cwd(&self) -> PathBuf {
        std::fs::canonicalize(self.work.path()).expect("canonical work dir")
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.cwd().join(name)
    }
}

/// Wraps the session's HTTP provider.
pub type WrapProvider = Box<dyn FnOnce(Arc<dyn Provider>) -> Arc<dyn Provider>>;

/// Knobs a test may turn before the session opens.
pub struct Options {
    pub format: ProviderType,
    pub resume: Resume,
    pub max_context_tokens: u64,
    pub retry: RetryPolicy,
    /// Wraps the HTTP provider (e.g. to route summary requests to a second server).
    pub wrap: Option<WrapProvider>,
    /// The main agent's profile.
    pub agent: AgentChoice,
    /// When set, the permission chain decides (mode, plan flag, rules) instead of ApproveAll.
    pub permission_chain: Option<kimi_core::permission::PermissionState>,
    /// Tools added beside the built-ins.
    pub extensions: kimi_core::session::SessionExtensions,
    /// The parsed config.toml (hooks, tool settings…); empty by default.
    pub config: Arc<kimi_config::Config>,
}

impl Options {
    pub fn new(format: ProviderType) -> Options {
        Options {
            format,
            resume: Resume::New,
            max_context_tokens: 0,
            retry: RetryPolicy {
                max_attempts: 3,
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(50),
                jitter_ratio: 0.0,
                ..RetryPolicy::default()
            },
            wrap: None,
            agent: AgentChoice::Default,
            permission_chain: None,
            extensions: Default::default(),
            config: Default::default(),
        }
    }
}

pub fn provider_for(server: &ScriptServer, format: ProviderType) -> Arc<dyn Provider> {
    build_provider(&server.model(format, "scripted-model")).expect("provider for the server")
}

pub struct Session {
    pub server: ScriptServer,
    pub opened: OpenedSession,
    /// Every event received so far, in order.
    pub events: Vec<Event>,
}

impl Session {
    pub async fn start(dirs: &Dirs, format: ProviderType, turns: Vec<ScriptTurn>) -> Session {
        Session::start_with(dirs, Options::new(format), turns).await
    }

    pub async fn start_with(dirs: &Dirs, options: Options, turns: Vec<ScriptTurn>) -> Session {
        let server = ScriptServer::start(turns).await.expect("script server");
        let mut provider = provider_for(&server, options.format);
        if let Some(wrap) = options.wrap {
            provider = wrap(provider);
        }
        let setup = SessionSetup {
            home: dirs.home.path().to_owned(),
            cwd: dirs.cwd(),
            resume: options.resume,
            provider,
            params: ModelParams::default(),
            max_context_tokens: options.max_context_tokens,
            max_steps_per_turn: None,
            retry: options.retry,
            permissions: Arc::new(ApproveAll),
            permission_chain: options.permission_chain,
            additional_dirs: Vec::new(),
            tool_env: std::env::vars().collect(),
            fsync: FsyncPolicy::Never,
            extensions: options.extensions,
            agent: options.agent,
            config: options.config,
            model_pool: Default::default(),
            model_alias: None,
            models: None,
        };
        let opened = open_session(setup).expect("open session");
        Session {
            server,
            opened,
            events: Vec::new(),
        }
    }

    pub fn send(&self, op: Op) {
        assert!(self.opened.agent.handle.send(op), "the agent has stopped");
    }

    pub fn submit(&self, prompt: &str) {
        self.send(Op::Submit {
            input: vec![ContentPart::text(prompt)],
            origin: None,
            prompt_id: None,
        });
    }

    /// The next event, failing the test after `WAIT`.
    pub async fn next_event(&mut self) -> Event {
        let event = tokio::time::timeout(WAIT, self.opened.agent.events.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no engine event within {WAIT:?}; last events: {:#?}",
                    self.events.iter().rev().take(8).collect::<Vec<_>>()
                )
            })
            .expect("the event channel closed");
        self.events.push(event.clone());
        event
    }

    /// Wait for the first event matching `pred` (events before it are kept in `events`).
    pub async fn wait_for(&mut self, pred: impl Fn(&Event) -> bool) -> Event {
        loop {
            let event = self.next_event().await;
            if pred(&event) {
                return event;
            }
        }
    }

    /// Wait for the current turn's end: `(reason, error)`.
    pub async fn turn_end(&mut self) -> (TurnEndReason, Option<String>) {
        match self
            .wait_for(|e| matches!(e, Event::TurnEnded { .. }))
            .await
        {
            Event::TurnEnded { reason, error, .. } => (reason, error),
            _ => unreachable!(),
        }
    }

    /// Submit `prompt` and wait for its turn to end.
    pub async fn run(&mut self, prompt: &str) -> (TurnEndReason, Option<String>) {
        self.submit(prompt);
        self.turn_end().await
    }

    /// Make sure every op sent so far has been handled by the dispatcher: ops are handled in
    /// order, and an answer to an unknown question comes back as a warning.
    pub async fn barrier(&mut self) {
        let marker = format!("barrier-{}", self.events.len());
        self.send(Op::Answer {
            request_id: marker.clone(),
            answers: kimi_protocol::question::Answers::Dismissed,
        });
        self.wait_for(|e| matches!(e, Event::Warning { message } if message.contains(&marker)))
            .await;
    }

    /// Shut the agent down and wait until its runner has stopped (journal complete).
    pub async fn close(&mut self) {
        let _ = self.opened.agent.handle.send(Op::Shutdown);
        tokio::time::timeout(WAIT, &mut self.opened.agent.join)
            .await
            .expect("the agent did not stop")
            .expect("the agent task panicked");
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    pub fn journal_path(&self) -> PathBuf {
        self.opened
            .agent
            .handle
            .runtime()
            .log()
            .journal_path()
            .to_owned()
    }

    pub fn journal(&self) -> Vec<Value> {
        read_journal(&self.journal_path())
    }

    pub fn session_id(&self) -> String {
        self.opened.session.state.id.clone()
    }

    pub fn count(&self, pred: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|e| pred(e)).count()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.opened.agent.handle.send(Op::Shutdown);
        if !std::thread::panicking() {
            assert_paired(&self.server);
        }
    }
}

/// The invariant over every captured request: each tool call answered, each result paired.
pub fn assert_paired(server: &ScriptServer) {
    let violations = server.pairing_violations();
    assert!(
        violations.is_empty(),
        "tool call/result pairing violated: {violations:#?}"
    );
}

pub fn read_journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("journal readable")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("journal line is JSON"))
        .collect()
}

/// The record's type, or for loop events `loop:<event type>`.
pub fn record_kind(record: &Value) -> String {
    let kind = record["type"].as_str().unwrap_or_default();
    if kind == "context.append_loop_event" {
        format!(
            "loop:{}",
            record["event"]["type"].as_str().unwrap_or_default()
        )
    } else {
        kind.to_owned()
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Texts of the user messages of a request (OpenAI Chat and Anthropic bodies), tool results
/// excluded.
pub fn user_texts(body: &Value) -> Vec<String> {
    let Some(messages) = body["messages"].as_array() else {
        return Vec::new();
    };
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| {
            let content = &m["content"];
            if let Value::Array(parts) = content
                && parts.iter().all(|p| p["type"] == "tool_result")
            {
                return None;
            }
            Some(text_of(content))
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// A tool result as the request carried it.
#[derive(Debug, Clone)]
pub struct WireResult {
    pub id: String,
    pub text: String,
    /// Anthropic's `is_error` (OpenAI Chat has no flag: `None`).
    pub is_error: Option<bool>,
}

impl WireResult {
    /// The model is told this call failed: the wire's error flag, or the error marker the
    /// projection puts at the start of an error result's text.
    pub fn reads_as_error(&self) -> bool {
        self.is_error == Some(true) || self.text.starts_with("<system>ERROR")
    }
}

/// Tool results of a request (OpenAI Chat `role: tool` messages and Anthropic `tool_result`
/// blocks).
pub fn tool_results(body: &Value) -> Vec<WireResult> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "tool" {
            out.push(WireResult {
                id: m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                text: text_of(&m["content"]),
                is_error: None,
            });
        }
        if let Value::Array(parts) = &m["content"] {
            for p in parts.iter().filter(|p| p["type"] == "tool_result") {
                out.push(WireResult {
                    id: p["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    text: text_of(&p["content"]),
                    is_error: Some(p["is_error"].as_bool().unwrap_or(false)),
                });
            }
        }
    }
    out
}

/// Make a named pipe (a tool blocked reading it runs until the test writes to it).
pub fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo failed");
}

/// Open `fifo` for writing (blocks until the reader has it open), write, close.
pub async fn release_fifo(fifo: PathBuf, text: &'static str) {
    tokio::time::timeout(
        WAIT,
        tokio::task::spawn_blocking(move || {
            std::fs::write(&fifo, text).expect("write to fifo");
        }),
    )
    .await
    .expect("nobody opened the fifo for reading")
    .expect("fifo writer panicked");
}

/// Copy `from` into `to` recursively (regular files and directories; fifos are skipped).
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target);
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
