//! The client side of one executor connection: requests from any thread or task are written
//! as they come (many in flight), a reader thread matches answers to them by id and routes
//! process output to its process. [`RemoteEnvironment`] implements `kimi_tools::Environment`
//! over it, so tools and sessions share one connection per environment.
//!
//! The connection's I/O runs on threads of its own: a blocking call (from `Tool::resolve` or a
//! blocking task) and an async one (process waits) both just wait for their answer, and no
//! async runtime has to be polled for an answer to arrive.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kimi_tools::environment::{
    EnvError, Environment, EnvironmentInfo, FileStat, GlobRequest, GrepRequest, ProcessControl,
    ProcessEnd, ProcessOutput, ReadError, ShellSpec, SpawnedProcess,
};
use kimi_tools::result::ToolResult;
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use kimi_tools::terminal::{OpenedTerminal, TerminalInput, TerminalSize, TerminalSpec};

use crate::protocol::{
    Exit, FileBytes, Hello, PROTOCOL_VERSION, Request, RequestFrame, ServerFrame, Spawned,
    TERMINAL_PROTOCOL_VERSION, TextReply,
};

/// Why a request got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The executor answered with an error.
    Remote { code: String, message: String },
    /// The connection is gone (or went away while waiting).
    Lost(String),
}

type Answer = Result<serde_json::Value, CallError>;

/// Output chunks `(is_stderr, bytes)` of one process.
pub type OutputSender = mpsc::UnboundedSender<(bool, Vec<u8>)>;
pub type OutputReceiver = mpsc::UnboundedReceiver<(bool, Vec<u8>)>;

/// A started process: its id (the spawn request's), what the executor said, its output.
pub type Started = (u64, Spawned, OutputReceiver);

enum Waiter {
    Blocking(std::sync::mpsc::SyncSender<Answer>),
    Async(oneshot::Sender<Answer>),
}

impl Waiter {
    fn send(self, answer: Answer) {
        match self {
            Waiter::Blocking(tx) => {
                let _ = tx.send(answer);
            }
            Waiter::Async(tx) => {
                let _ = tx.send(answer);
            }
        }
    }
}

/// Describes how the transport ended (a launcher's exit code and stderr tail), for errors.
pub type EndReport = Box<dyn Fn() -> String + Send + Sync>;

struct Shared {
    writer: Mutex<Box<dyn Write + Send>>,
    pending: Mutex<HashMap<u64, Waiter>>,
    outputs: Mutex<HashMap<u64, OutputSender>>,
    next_id: AtomicU64,
    /// Requests written (round trips, for the benchmark and logs).
    sent: AtomicU64,
    dead: Mutex<Option<String>>,
    end_report: EndReport,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    fn dead(&self) -> Option<String> {
        lock(&self.dead).clone()
    }

    /// Marks the connection dead and fails everything waiting on it.
    fn fail_all(&self, reason: &str) {
        {
            let mut dead = lock(&self.dead);
            if dead.is_none() {
                *dead = Some(reason.to_owned());
            }
        }
        let waiters: Vec<Waiter> = lock(&self.pending).drain().map(|(_, w)| w).collect();
        for waiter in waiters {
            waiter.send(Err(CallError::Lost(reason.to_owned())));
        }
        // Dropping the senders ends every process's output stream.
        lock(&self.outputs).clear();
    }
}

/// One connection to an executor.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("sent", &self.round_trips())
            .field("dead", &self.shared.dead())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts the reader thread over an executor's output; requests go to `writer`.
    pub fn start(
        reader: Box<dyn Read + Send>,
        writer: Box<dyn Write + Send>,
        end_report: EndReport,
    ) -> Self {
        let shared = Arc::new(Shared {
            writer: Mutex::new(writer),
            pending: Mutex::new(HashMap::new()),
            outputs: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            sent: AtomicU64::new(0),
            dead: Mutex::new(None),
            end_report,
        });
        let reading = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("kimi-exec-reader".to_owned())
            .spawn(move || read_loop(reader, &reading));
        if let Err(e) = spawned {
            shared.fail_all(&format!("cannot start the connection's reader thread: {e}"));
        }
        Self { shared }
    }

    /// Requests written so far (each is one round trip).
    pub fn round_trips(&self) -> u64 {
        self.shared.sent.load(Ordering::Relaxed)
    }

    /// Why the connection is gone, if it is.
    pub fn dead(&self) -> Option<String> {
        self.shared.dead()
    }

    /// Ends the connection: the executor sees its input close and kills what it started.
    pub fn close(&self, reason: &str) {
        self.shared.fail_all(reason);
        // Replacing the writer closes the executor's input.
        *lock(&self.shared.writer) = Box::new(std::io::sink());
    }

    fn send(&self, request: &Request, waiter: Waiter, id: u64) -> Result<(), CallError> {
        if let Some(reason) = self.shared.dead() {
            return Err(CallError::Lost(reason));
        }
        let frame = RequestFrame {
            id,
            request: request.clone(),
        };
        let mut line = serde_json::to_vec(&frame).map_err(|e| CallError::Remote {
            code: "encode".to_owned(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        lock(&self.shared.pending).insert(id, waiter);
        let written = {
            let mut writer = lock(&self.shared.writer);
            writer.write_all(&line).and_then(|()| writer.flush())
        };
        self.shared.sent.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = written {
            let reason = format!(
                "cannot write to the executor: {e}; {}",
                (self.shared.end_report)()
            );
            self.shared.fail_all(&reason);
            return Err(CallError::Lost(reason));
        }
        Ok(())
    }

    fn next_id(&self) -> u64 {
        self.shared.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends `request` and blocks this thread until its answer (or `timeout`).
    pub fn call_blocking(
        &self,
        request: &Request,
        timeout: Option<Duration>,
    ) -> Result<serde_json::Value, CallError> {
        let id = self.next_id();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.send(request, Waiter::Blocking(tx), id)?;
        match timeout {
            Some(t) => rx.recv_timeout(t).map_err(|_| {
                lock(&self.shared.pending).remove(&id);
                CallError::Lost(format!(
                    "no answer to `{}` within {} s",
                    request.name(),
                    t.as_secs()
                ))
            })?,
            None => rx
                .recv()
                .map_err(|_| CallError::Lost("the connection ended".to_owned()))?,
        }
    }

    /// Sends `request`; the receiver yields its answer.
    pub fn call_async(&self, request: &Request) -> oneshot::Receiver<Answer> {
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        if let Err(e) = self.send(request, Waiter::Async(tx), id) {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(Err(e));
            return rx;
        }
        rx
    }

    /// Typed [`Connection::call_blocking`].
    pub fn call<T: DeserializeOwned>(&self, request: &Request) -> Result<T, CallError> {
        let value = self.call_blocking(request, None)?;
        decode(request, value)
    }

    /// Starts a process; its output arrives on the returned receiver.
    pub fn spawn(
        &self,
        command: &str,
        cwd: &Path,
        env: &[(String, String)],
        timeout: Option<Duration>,
    ) -> Result<Result<Started, String>, CallError> {
        self.start_with_output(&Request::Spawn {
            command: command.to_owned(),
            cwd: cwd.to_path_buf(),
            env: env.to_vec(),
            timeout_ms: timeout.and_then(|t| u64::try_from(t.as_millis()).ok()),
        })
    }

    /// Opens a terminal (a `terminal_open` request); its output arrives on the returned
    /// receiver, and `wait`/`kill` take its id like a process's.
    pub fn open_terminal(&self, spec: &TerminalSpec) -> Result<Result<Started, String>, CallError> {
        self.start_with_output(&Request::TerminalOpen {
            cwd: spec.cwd.clone(),
            env: spec.env.clone(),
            cols: spec.size.cols,
            rows: spec.size.rows,
            shell: spec.shell.clone(),
        })
    }

    /// Sends a request that starts something with output (`spawn`, `terminal_open`).
    fn start_with_output(&self, request: &Request) -> Result<Result<Started, String>, CallError> {
        let id = self.next_id();
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        // Registered before the request leaves, so no early output is missed.
        lock(&self.shared.outputs).insert(id, out_tx);
        let request = request.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let sent = self.send(&request, Waiter::Blocking(tx), id);
        let answer = sent.and_then(|()| {
            rx.recv()
                .map_err(|_| CallError::Lost("the connection ended".to_owned()))?
        });
        let spawned: Result<Spawned, String> = match answer.and_then(|v| decode(&request, v)) {
            Ok(s) => s,
            Err(e) => {
                lock(&self.shared.outputs).remove(&id);
                return Err(e);
            }
        };
        Ok(match spawned {
            Ok(s) => Ok((id, s, out_rx)),
            Err(msg) => {
                lock(&self.shared.outputs).remove(&id);
                Err(msg)
            }
        })
    }
}

fn decode<T: DeserializeOwned>(
    request: &Request,
    value: serde_json::Value,
) -> Result<T, CallError> {
    serde_json::from_value(value).map_err(|e| CallError::Remote {
        code: "decode".to_owned(),
        message: format!("unexpected answer to `{}`: {e}", request.name()),
    })
}

fn read_loop(reader: Box<dyn Read + Send>, shared: &Shared) {
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::new();
    let reason = loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break "the executor's output ended".to_owned(),
            Ok(_) => {}
            Err(e) => break format!("cannot read from the executor: {e}"),
        }
        let frame: ServerFrame = match serde_json::from_slice(&line) {
            Ok(f) => f,
            Err(_) => {
                // A login banner or a shell start-up file printing to stdout: not ours.
                tracing::debug!(
                    "exec client: ignoring a non-protocol line: {}",
                    String::from_utf8_lossy(&line).trim_end()
                );
                continue;
            }
        };
        if let Some(output) = frame.output {
            if let Some(tx) = lock(&shared.outputs).get(&output.process) {
                let _ = tx.send((output.stderr, output.data));
            }
            continue;
        }
        let Some(id) = frame.id else {
            if let Some(err) = frame.error {
                tracing::warn!(
                    "exec client: the executor rejected a frame: {}: {}",
                    err.code,
                    err.message
                );
            }
            continue;
        };
        let Some(waiter) = lock(&shared.pending).remove(&id) else {
            continue;
        };
        waiter.send(match (frame.ok, frame.error) {
            (_, Some(err)) => Err(CallError::Remote {
                code: err.code,
                message: err.message,
            }),
            (Some(value), None) => Ok(value),
            (None, None) => Ok(serde_json::Value::Null),
        });
    };
    // Give the launcher a moment to exit so its exit code can be part of the reason.
    std::thread::sleep(Duration::from_millis(50));
    let reason = format!("{reason}; {}", (shared.end_report)());
    tracing::warn!("exec client: connection ended: {reason}");
    shared.fail_all(&reason);
}

/// A remote target: an [`Environment`] over a [`Connection`].
pub struct RemoteEnvironment {
    info: EnvironmentInfo,
    /// The executor's protocol version (what it can do).
    version: u32,
    build: String,
    conn: Connection,
    /// Whatever must live as long as the connection (the launcher process).
    _guard: Option<Box<dyn Send + Sync>>,
}

impl std::fmt::Debug for RemoteEnvironment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEnvironment")
            .field("info", &self.info)
            .field("conn", &self.conn)
            .finish_non_exhaustive()
    }
}

/// Sends the handshake and checks the answer; `timeout` bounds the wait.
pub fn handshake(conn: &Connection, timeout: Duration) -> Result<Hello, CallError> {
    let value = conn.call_blocking(
        &Request::Hello {
            version: PROTOCOL_VERSION,
        },
        Some(timeout),
    )?;
    let hello: Hello = decode(
        &Request::Hello {
            version: PROTOCOL_VERSION,
        },
        value,
    )?;
    if !(crate::protocol::MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&hello.version) {
        return Err(CallError::Remote {
            code: "version".to_owned(),
            message: format!(
                "the executor (kimi-rs {}) speaks exec protocol {}, this kimi-rs speaks {PROTOCOL_VERSION}; \
                 install this kimi-rs ({}) on the target and reconnect",
                hello.build,
                hello.version,
                env!("CARGO_PKG_VERSION")
            ),
        });
    }
    Ok(hello)
}

impl RemoteEnvironment {
    pub fn new(
        id: &str,
        kind: &str,
        hello: &Hello,
        conn: Connection,
        guard: Option<Box<dyn Send + Sync>>,
    ) -> Self {
        Self {
            info: EnvironmentInfo {
                id: id.to_owned(),
                kind: kind.to_owned(),
                os: hello.os.clone(),
                arch: hello.arch.clone(),
                shell: hello.shell.clone(),
                home: hello.home.clone(),
            },
            version: hello.version,
            build: hello.build.clone(),
            conn,
            _guard: guard,
        }
    }

    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    fn err(&self, e: CallError) -> EnvError {
        match e {
            CallError::Lost(reason) => EnvError::Unavailable {
                id: self.info.id.clone(),
                reason,
            },
            CallError::Remote { code, message } => EnvError::Remote {
                id: self.info.id.clone(),
                code,
                message,
            },
        }
    }

    fn call<T: DeserializeOwned>(&self, request: &Request) -> Result<T, EnvError> {
        self.conn.call(request).map_err(|e| self.err(e))
    }

    fn text(reply: TextReply) -> ToolResult {
        if reply.is_error {
            ToolResult::error(reply.text)
        } else {
            ToolResult::ok(reply.text)
        }
    }

    /// A search that a cancellation stops on the target too.
    fn search(
        &self,
        request: &Request,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        let id = self.conn.next_id();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.conn
            .send(request, Waiter::Blocking(tx), id)
            .map_err(|e| self.err(e))?;
        let answer = loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(answer) => break answer,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                    drop(self.conn.call_async(&Request::Cancel { target: id }));
                    // The executor still answers the search (with a "cancelled" result).
                    break rx
                        .recv()
                        .map_err(|_| CallError::Lost("the connection ended".to_owned()))
                        .and_then(|a| a);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(CallError::Lost("the connection ended".to_owned()));
                }
            }
        };
        let reply: TextReply = answer
            .and_then(|v| decode(request, v))
            .map_err(|e| self.err(e))?;
        Ok(Self::text(reply))
    }
}

impl Environment for RemoteEnvironment {
    fn info(&self) -> &EnvironmentInfo {
        &self.info
    }

    fn canonicalize_lenient(&self, paths: &[PathBuf]) -> Result<Vec<PathBuf>, EnvError> {
        self.call(&Request::Canonicalize {
            paths: paths.to_vec(),
        })
    }

    fn stat(&self, path: &Path) -> Result<Option<FileStat>, EnvError> {
        self.call(&Request::Stat {
            path: path.to_path_buf(),
        })
    }

    fn check_unchanged(&self, planned: &Path) -> Result<Result<(), String>, EnvError> {
        self.call(&Request::CheckUnchanged {
            path: planned.to_path_buf(),
        })
    }

    fn read_regular(&self, path: &Path) -> Result<Result<Vec<u8>, ReadError>, EnvError> {
        let bytes: FileBytes = self.call(&Request::ReadFile {
            path: path.to_path_buf(),
        })?;
        Ok(match bytes {
            FileBytes::Ok(b) => Ok(b),
            FileBytes::Err(e) => Err(e),
        })
    }

    fn read_text(
        &self,
        path: &Path,
        offset: i64,
        n_lines: Option<usize>,
    ) -> Result<(ToolResult, Option<FileStat>), EnvError> {
        let reply: TextReply = self.call(&Request::ReadText {
            path: path.to_path_buf(),
            offset,
            n_lines,
        })?;
        let stat = reply.stat;
        Ok((Self::text(reply), stat))
    }

    fn write_file(
        &self,
        path: &Path,
        data: &[u8],
        append: bool,
    ) -> Result<Result<Option<FileStat>, String>, EnvError> {
        self.call(&Request::WriteFile {
            path: path.to_path_buf(),
            data: data.to_vec(),
            append,
        })
    }

    fn grep(
        &self,
        request: &GrepRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        self.search(&Request::Grep(request.clone()), cancel)
    }

    fn glob(
        &self,
        request: &GlobRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        self.search(&Request::Glob(request.clone()), cancel)
    }

    fn spawn(&self, spec: &ShellSpec) -> Result<Result<SpawnedProcess, String>, EnvError> {
        if !spec.launcher.is_empty() {
            // The sandbox helper is this machine's; it cannot wrap a command on the target.
            tracing::debug!("the sandbox launcher does not apply on a remote environment");
        }
        let started = self
            .conn
            .spawn(&spec.command, &spec.cwd, &spec.env, None)
            .map_err(|e| self.err(e))?;
        Ok(started.map(|(process, spawned, output)| SpawnedProcess {
            pid: spawned.pid,
            output: ProcessOutput::Unbounded(output),
            control: Box::new(RemoteProcess {
                conn: self.conn.clone(),
                id: self.info.id.clone(),
                process,
                wait: None,
            }),
        }))
    }

    fn open_terminal(
        &self,
        spec: &TerminalSpec,
    ) -> Result<Result<OpenedTerminal, String>, EnvError> {
        if self.version < TERMINAL_PROTOCOL_VERSION {
            return Ok(Err(format!(
                "the executor on environment `{}` (kimi-rs {}, exec protocol {}) has no terminals; \
                 install this kimi-rs ({}) on the target (remove the old executor so it is copied again) and reconnect",
                self.info.id,
                self.build,
                self.version,
                env!("CARGO_PKG_VERSION")
            )));
        }
        let started = self.conn.open_terminal(spec).map_err(|e| self.err(e))?;
        Ok(started.map(|(terminal, spawned, output)| OpenedTerminal {
            process: SpawnedProcess {
                pid: spawned.pid,
                output: ProcessOutput::Unbounded(output),
                control: Box::new(RemoteProcess {
                    conn: self.conn.clone(),
                    id: self.info.id.clone(),
                    process: terminal,
                    wait: None,
                }),
            },
            input: Arc::new(RemoteInput {
                conn: self.conn.clone(),
                terminal,
            }),
        }))
    }
}

/// Typing into a terminal on the target: one request per write, answered once the executor
/// has queued the bytes; requests leave in call order and the executor keeps it.
struct RemoteInput {
    conn: Connection,
    terminal: u64,
}

impl RemoteInput {
    fn call(&self, request: &Request) -> Result<(), String> {
        match self.conn.call::<Result<(), String>>(request) {
            Ok(done) => done,
            Err(CallError::Lost(reason)) => Err(format!(
                "environment.unavailable: the connection ended ({reason})"
            )),
            Err(CallError::Remote { code, message }) => Err(format!("{code}: {message}")),
        }
    }
}

impl TerminalInput for RemoteInput {
    fn write(&self, data: &[u8]) -> Result<(), String> {
        self.call(&Request::TerminalInput {
            terminal: self.terminal,
            data: data.to_vec(),
        })
    }

    fn resize(&self, size: TerminalSize) -> Result<(), String> {
        self.call(&Request::TerminalResize {
            terminal: self.terminal,
            cols: size.cols,
            rows: size.rows,
        })
    }
}

struct RemoteProcess {
    conn: Connection,
    id: String,
    process: u64,
    /// The one `wait` request, sent on first use and polled from then on.
    wait: Option<oneshot::Receiver<Answer>>,
}

impl RemoteProcess {
    /// The executor sends a process's last output before its exit answer, and frames are read
    /// in order: once the answer is here the output stream is complete, so it ends now instead
    /// of the runner waiting out its quiet-drain period.
    fn close_output(&self) {
        lock(&self.conn.shared.outputs).remove(&self.process);
    }

    fn end(
        &self,
        answer: Result<Answer, oneshot::error::RecvError>,
        request: &Request,
    ) -> ProcessEnd {
        let lost = |reason: String| {
            ProcessEnd::Lost(format!(
                "environment.unavailable: the connection to environment `{}` ended ({reason}); \
                 the executor killed the command with it",
                self.id
            ))
        };
        match answer {
            Ok(Ok(value)) => match decode::<Exit>(request, value) {
                Ok(exit) => ProcessEnd::Exited(exit.exit_code),
                Err(e) => lost(format!("{e:?}")),
            },
            Ok(Err(CallError::Lost(reason))) => lost(reason),
            Ok(Err(CallError::Remote { code, message })) => lost(format!("{code}: {message}")),
            Err(_) => lost("the connection ended".to_owned()),
        }
    }
}

#[async_trait::async_trait]
impl ProcessControl for RemoteProcess {
    async fn wait(&mut self) -> ProcessEnd {
        let request = Request::Wait {
            process: self.process,
        };
        let rx = self
            .wait
            .get_or_insert_with(|| self.conn.call_async(&request));
        let answer = rx.await;
        self.wait = None;
        self.close_output();
        self.end(answer, &request)
    }

    async fn kill_group(&mut self, grace: Duration) -> ProcessEnd {
        let request = Request::Kill {
            process: self.process,
            grace_ms: u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
        };
        let answer = self.conn.call_async(&request).await;
        self.close_output();
        self.end(answer, &request)
    }
}
