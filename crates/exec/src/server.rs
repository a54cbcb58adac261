//! The executor loop behind `kimi-rs exec-server`: reads request frames from its input, runs
//! each as its own task (so answers go out in the order work finishes), and writes answers and
//! process output to its output. It touches nothing but the filesystem and processes of the
//! machine it runs on: no models, keys, sessions or network. When its input ends (the client
//! went away or the connection dropped) it kills every process group it started and returns.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kimi_tools::environment::{ProcessEnd, ShellSpec, SpawnedProcess, local};
use kimi_tools::terminal::{TerminalInput, TerminalSize, TerminalSpec};
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::protocol::{
    DirEntry, Exit, FileBytes, Hello, MIN_PROTOCOL_VERSION, Output, PROTOCOL_VERSION, Request,
    ServerFrame, Spawned, TextReply,
};

/// Longest request line accepted (a Write of a large file is one line).
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;
/// Grace between SIGTERM and SIGKILL for the processes killed when the connection ends.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

type Kill = (Duration, oneshot::Sender<Option<i32>>);

struct Process {
    /// `None` while running; the exit code (or `None` for a signal) once ended.
    exit: watch::Receiver<Option<Option<i32>>>,
    kill: mpsc::UnboundedSender<Kill>,
}

#[derive(Default)]
struct State {
    processes: Mutex<HashMap<u64, Process>>,
    searches: Mutex<HashMap<u64, CancellationToken>>,
    /// The input side of each open terminal (its process is in `processes`).
    terminals: Mutex<HashMap<u64, Arc<dyn TerminalInput>>>,
}

impl State {
    fn processes(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Process>> {
        self.processes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn searches(&self) -> std::sync::MutexGuard<'_, HashMap<u64, CancellationToken>> {
        self.searches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn terminals(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<dyn TerminalInput>>> {
        self.terminals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn terminal(&self, id: u64) -> Result<Arc<dyn TerminalInput>, Failure> {
        self.terminals()
            .get(&id)
            .cloned()
            .ok_or_else(|| ("no_process", format!("no open terminal {id}")))
    }
}

/// The handshake answer of this executor.
pub fn hello() -> Hello {
    let local = kimi_tools::environment::Local::new();
    let info = kimi_tools::Environment::info(&local);
    Hello {
        version: PROTOCOL_VERSION,
        os: info.os.clone(),
        arch: info.arch.clone(),
        shell: info.shell.clone(),
        home: info.home.clone(),
        build: env!("CARGO_PKG_VERSION").to_owned(),
    }
}

/// Serve one connection until its input ends.
pub async fn serve<R, W>(reader: R, writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<ServerFrame>();
    let writer_task = tokio::spawn(async move {
        let mut writer = tokio::io::BufWriter::new(writer);
        while let Some(frame) = rx.recv().await {
            let mut line = match serde_json::to_vec(&frame) {
                Ok(line) => line,
                Err(e) => {
                    tracing::error!("exec-server: cannot encode an answer: {e}");
                    continue;
                }
            };
            line.push(b'\n');
            if writer.write_all(&line).await.is_err() {
                return;
            }
            // Flush once the queue is empty: frames produced together leave together.
            if rx.is_empty() && writer.flush().await.is_err() {
                return;
            }
        }
        let _ = writer.flush().await;
    });
    let state = Arc::new(State::default());
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).await?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_FRAME_BYTES {
            let _ = tx.send(ServerFrame::error(
                None,
                "bad_frame",
                format!(
                    "frame of {} bytes exceeds the {MAX_FRAME_BYTES}-byte limit",
                    line.len()
                ),
            ));
            continue;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        handle_frame(text, &state, &tx);
    }
    shutdown(&state).await;
    drop(tx);
    let _ = writer_task.await;
    Ok(())
}

/// Parse one frame and start its work; malformed frames get an error answer.
fn handle_frame(text: &[u8], state: &Arc<State>, tx: &mpsc::UnboundedSender<ServerFrame>) {
    let value: serde_json::Value = match serde_json::from_slice(text) {
        Ok(v) => v,
        Err(e) => {
            let _ = tx.send(ServerFrame::error(
                None,
                "bad_frame",
                format!("not a JSON frame: {e}"),
            ));
            return;
        }
    };
    let Some(id) = value.get("id").and_then(serde_json::Value::as_u64) else {
        let _ = tx.send(ServerFrame::error(
            None,
            "bad_frame",
            "the frame has no numeric `id`",
        ));
        return;
    };
    let request: Request = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(ServerFrame::error(
                Some(id),
                "bad_request",
                format!("cannot read the request: {e}"),
            ));
            return;
        }
    };
    // Input and resizes are done here, in arrival order: as tasks of their own, two pieces of
    // typing could overtake each other. Neither blocks (input is queued for the terminal).
    let inline = match &request {
        Request::TerminalInput { terminal, data } => {
            Some(state.terminal(*terminal).and_then(|t| json(&t.write(data))))
        }
        Request::TerminalResize {
            terminal,
            cols,
            rows,
        } => Some(state.terminal(*terminal).and_then(|t| {
            json(&t.resize(TerminalSize {
                cols: *cols,
                rows: *rows,
            }))
        })),
        _ => None,
    };
    if let Some(answer) = inline {
        let _ = tx.send(match answer {
            Ok(value) => ServerFrame::ok(id, value),
            Err((code, message)) => ServerFrame::error(Some(id), code, message),
        });
        return;
    }
    let state = state.clone();
    let tx = tx.clone();
    tokio::spawn(async move {
        let frame = match run(id, request, &state, &tx).await {
            Ok(value) => ServerFrame::ok(id, value),
            Err((code, message)) => ServerFrame::error(Some(id), code, message),
        };
        let _ = tx.send(frame);
    });
}

type Failure = (&'static str, String);

fn json<T: Serialize>(value: &T) -> Result<serde_json::Value, Failure> {
    serde_json::to_value(value).map_err(|e| ("internal", e.to_string()))
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ("internal", e.to_string()))
}

fn io_text(path: &Path, e: &std::io::Error) -> String {
    format!("`{}`: {e}", path.display())
}

async fn run(
    id: u64,
    request: Request,
    state: &Arc<State>,
    tx: &mpsc::UnboundedSender<ServerFrame>,
) -> Result<serde_json::Value, Failure> {
    match request {
        Request::Hello { version } => {
            if !(MIN_PROTOCOL_VERSION..=PROTOCOL_VERSION).contains(&version) {
                return Err((
                    "version",
                    format!(
                        "this executor (kimi-rs {}) speaks exec protocol {MIN_PROTOCOL_VERSION}..={PROTOCOL_VERSION}, \
                         the client speaks {version}. Install the client's kimi-rs on the target (the same binary), \
                         for example by deleting the executor so the client copies its own, then reconnect.",
                        env!("CARGO_PKG_VERSION")
                    ),
                ));
            }
            json(&hello())
        }
        Request::Canonicalize { paths } => json(
            &blocking(move || {
                paths
                    .iter()
                    .map(|p| kimi_tools::path::canonicalize_lenient(p))
                    .collect::<Vec<_>>()
            })
            .await?,
        ),
        Request::Stat { path } => json(&blocking(move || local::stat(&path)).await?),
        Request::CheckUnchanged { path } => {
            json(&blocking(move || kimi_tools::path::check_unchanged_since_approval(&path)).await?)
        }
        Request::ReadFile { path } => {
            let read = blocking(move || local::read_regular(&path)).await?;
            json(&match read {
                Ok(bytes) => FileBytes::Ok(bytes),
                Err(e) => FileBytes::Err(e),
            })
        }
        Request::ReadText {
            path,
            offset,
            n_lines,
        } => {
            let (result, stat) = blocking(move || local::read_text(&path, offset, n_lines)).await?;
            json(&TextReply {
                text: result.text().unwrap_or_default(),
                is_error: result.is_error,
                stat,
            })
        }
        Request::WriteFile { path, data, append } => {
            json(&blocking(move || local::write_file(&path, &data, append)).await?)
        }
        Request::List { path } => json(
            &blocking(move || {
                let entries = std::fs::read_dir(&path).map_err(|e| io_text(&path, &e))?;
                let mut out = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(|e| io_text(&path, &e))?;
                    out.push(DirEntry {
                        name: entry.file_name().to_string_lossy().into_owned(),
                        kind: local::stat(&entry.path()).map(|s| s.kind),
                    });
                }
                out.sort_by(|a, b| a.name.cmp(&b.name));
                Ok::<_, String>(out)
            })
            .await?,
        ),
        Request::Mkdir { path, parents } => json(
            &blocking(move || {
                let made = if parents {
                    std::fs::create_dir_all(&path)
                } else {
                    std::fs::create_dir(&path)
                };
                made.map_err(|e| io_text(&path, &e))
            })
            .await?,
        ),
        Request::Remove { path, recursive } => json(
            &blocking(move || {
                let meta = std::fs::symlink_metadata(&path).map_err(|e| io_text(&path, &e))?;
                let removed = if !meta.is_dir() {
                    std::fs::remove_file(&path)
                } else if recursive {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_dir(&path)
                };
                removed.map_err(|e| io_text(&path, &e))
            })
            .await?,
        ),
        Request::Rename { from, to } => json(
            &blocking(move || std::fs::rename(&from, &to).map_err(|e| io_text(&from, &e))).await?,
        ),
        Request::Grep(request) => {
            let cancel = CancellationToken::new();
            state.searches().insert(id, cancel.clone());
            let result = blocking(move || local::grep(&request, &cancel)).await;
            state.searches().remove(&id);
            let result = result?;
            json(&TextReply {
                text: result.text().unwrap_or_default(),
                is_error: result.is_error,
                stat: None,
            })
        }
        Request::Glob(request) => {
            let cancel = CancellationToken::new();
            state.searches().insert(id, cancel.clone());
            let result = blocking(move || local::glob(&request, &cancel)).await;
            state.searches().remove(&id);
            let result = result?;
            json(&TextReply {
                text: result.text().unwrap_or_default(),
                is_error: result.is_error,
                stat: None,
            })
        }
        Request::Cancel { target } => {
            if let Some(token) = state.searches().get(&target) {
                token.cancel();
            }
            Ok(serde_json::Value::Null)
        }
        Request::Spawn {
            command,
            cwd,
            env,
            timeout_ms,
        } => json(&spawn(id, command, cwd, env, timeout_ms, state, tx)),
        Request::TerminalOpen {
            cwd,
            env,
            cols,
            rows,
            shell,
        } => {
            let size =
                TerminalSize::checked(cols.into(), rows.into()).map_err(|e| ("bad_request", e))?;
            let spec = TerminalSpec {
                cwd,
                env,
                size,
                shell,
            };
            json(&match kimi_tools::terminal::open_local(&spec) {
                Ok(term) => {
                    let pid = term.process.pid;
                    state.terminals().insert(id, term.input);
                    supervise(id, term.process, None, state, tx);
                    Ok(Spawned { pid })
                }
                Err(e) => Err(e),
            })
        }
        Request::TerminalInput { .. } | Request::TerminalResize { .. } => Err((
            "internal",
            "terminal input is handled as it arrives".to_owned(),
        )),
        Request::Wait { process } => {
            let mut exit = state
                .processes()
                .get(&process)
                .map(|p| p.exit.clone())
                .ok_or_else(|| ("no_process", format!("no process {process}")))?;
            let code = loop {
                if let Some(code) = *exit.borrow_and_update() {
                    break code;
                }
                if exit.changed().await.is_err() {
                    break None;
                }
            };
            json(&Exit { exit_code: code })
        }
        Request::Kill { process, grace_ms } => {
            let (kill, mut exit) = state
                .processes()
                .get(&process)
                .map(|p| (p.kill.clone(), p.exit.clone()))
                .ok_or_else(|| ("no_process", format!("no process {process}")))?;
            if let Some(code) = *exit.borrow_and_update() {
                return json(&Exit { exit_code: code });
            }
            let (reply, done) = oneshot::channel();
            let code = if kill.send((Duration::from_millis(grace_ms), reply)).is_ok() {
                done.await.unwrap_or(None)
            } else {
                None
            };
            json(&Exit { exit_code: code })
        }
    }
}

fn spawn(
    id: u64,
    command: String,
    cwd: std::path::PathBuf,
    overrides: Vec<(String, String)>,
    timeout_ms: Option<u64>,
    state: &Arc<State>,
    tx: &mpsc::UnboundedSender<ServerFrame>,
) -> Result<Spawned, String> {
    // The executor's own environment, with the client's variables on top.
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| !overrides.iter().any(|(o, _)| o == k))
        .collect();
    env.extend(overrides);
    let shell = kimi_tools::environment::shell();
    env.retain(|(k, _)| k != "SHELL");
    env.push(("SHELL".to_owned(), shell.to_owned()));
    let spec = ShellSpec {
        command,
        cwd,
        env,
        launcher: Vec::new(),
    };
    let spawned = local::spawn(&spec)?;
    let pid = spawned.pid;
    supervise(id, spawned, timeout_ms, state, tx);
    Ok(Spawned { pid })
}

/// Registers a started process (or terminal) under `id`, forwards its output, and answers
/// `wait`/`kill` requests about it until it has ended.
fn supervise(
    id: u64,
    mut spawned: SpawnedProcess,
    timeout_ms: Option<u64>,
    state: &Arc<State>,
    tx: &mpsc::UnboundedSender<ServerFrame>,
) {
    let (exit_tx, exit_rx) = watch::channel(None);
    let (kill_tx, mut kill_rx) = mpsc::unbounded_channel::<Kill>();
    state.processes().insert(
        id,
        Process {
            exit: exit_rx,
            kill: kill_tx,
        },
    );
    let tx = tx.clone();
    let state = state.clone();
    tokio::spawn(async move {
        let deadline = timeout_ms.map(|ms| tokio::time::Instant::now() + Duration::from_millis(ms));
        let mut open = true;
        let mut kill: Option<Kill> = None;
        let mut timed_out = false;
        let mut code = loop {
            tokio::select! {
                chunk = spawned.output.recv(), if open => match chunk {
                    Some((stderr, data)) => send_output(&tx, id, stderr, data),
                    None => open = false,
                },
                end = spawned.control.wait() => break end,
                request = kill_rx.recv() => if let Some(request) = request {
                    kill = Some(request);
                    break ProcessEnd::Exited(None);
                },
                () = sleep_until(deadline) => {
                    timed_out = true;
                    break ProcessEnd::Exited(None);
                }
            }
        };
        if let Some((grace, _)) = &kill {
            code = spawned.control.kill_group(*grace).await;
        } else if timed_out {
            code = spawned.control.kill_group(SHUTDOWN_GRACE).await;
        }
        // What is still buffered goes out before the exit is announced; a daemon that keeps
        // the pipes open must not hold the answer hostage.
        let drain = tokio::time::Instant::now() + Duration::from_secs(2);
        while open {
            let quiet = tokio::time::Instant::now() + Duration::from_millis(500);
            match tokio::time::timeout_at(quiet.min(drain), spawned.output.recv()).await {
                Ok(Some((stderr, data))) => send_output(&tx, id, stderr, data),
                Ok(None) | Err(_) => open = false,
            }
        }
        let exit_code = match code {
            ProcessEnd::Exited(code) => code,
            ProcessEnd::Lost(_) => None,
        };
        if let Some((_, reply)) = kill {
            let _ = reply.send(exit_code);
        }
        // A terminal whose shell has ended takes no more input (dropping it closes the PTY).
        state.terminals().remove(&id);
        let _ = exit_tx.send(Some(exit_code));
        // A kill that arrived while the output drained: the process has already ended.
        while let Ok((_, reply)) = kill_rx.try_recv() {
            let _ = reply.send(exit_code);
        }
    });
}

fn send_output(tx: &mpsc::UnboundedSender<ServerFrame>, process: u64, stderr: bool, data: Vec<u8>) {
    let _ = tx.send(ServerFrame {
        output: Some(Output {
            process,
            stderr,
            data,
        }),
        ..ServerFrame::default()
    });
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The connection ended: kill every process group still running and wait for them.
async fn shutdown(state: &Arc<State>) {
    for token in state.searches().values() {
        token.cancel();
    }
    let running: Vec<_> = state
        .processes()
        .values()
        .filter(|p| p.exit.borrow().is_none())
        .map(|p| p.kill.clone())
        .collect();
    let mut waits = Vec::new();
    for kill in running {
        let (reply, done) = oneshot::channel();
        if kill.send((SHUTDOWN_GRACE, reply)).is_ok() {
            waits.push(done);
        }
    }
    for done in waits {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE * 3, done).await;
    }
}
