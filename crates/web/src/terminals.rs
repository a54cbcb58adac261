//! Terminals (PTYs) of a session: `GET/POST sessions/{id}/terminals`,
//! `GET …/terminals/{tid}`, `POST …/terminals/{tid}:close`, and the WebSocket frames that attach
//! to one (`terminal_attach`, `terminal_input`, `terminal_resize`, `terminal_detach`,
//! `terminal_close`; the server sends `terminal_output` and `terminal_exit`).
//!
//! A terminal opens on the environment the session is bound to at that moment — this machine,
//! or the target of an ssh/docker/command environment through its executor — never on this
//! machine instead of the target. A terminal is a shell for whoever holds the token, so it is
//! served to loopback clients only unless the server was started with
//! `--allow-remote-terminals`.
//!
//! Each terminal keeps its last [`SCROLLBACK`] bytes, so a client that attaches (or re-attaches)
//! sees the screen's recent past; output is numbered by byte offset so a client can drop what it
//! already has.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::{Path, State};
use base64::Engine as _;
use kimi_tools::environment::{ProcessEnd, SpawnedProcess};
use kimi_tools::terminal::{TerminalInput, TerminalSize, TerminalSpec};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::error::{ApiError, ApiResult, Data, code};
use crate::events::timestamp;
use crate::rest::JsonBody;
use crate::server::App;

/// Output bytes each terminal keeps for clients that attach later.
pub const SCROLLBACK: usize = 64 * 1024;
/// How long a closed terminal's shell gets between SIGHUP/SIGTERM and SIGKILL.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// The peer of the connection a request came on (set by the accept loop).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// What a terminal's attached clients are sent.
#[derive(Debug, Clone)]
pub enum TermEvent {
    /// Bytes and the offset of their first byte in the terminal's output.
    Output {
        offset: u64,
        data: Arc<[u8]>,
    },
    Exit {
        exit_code: Option<i32>,
    },
}

struct Screen {
    /// The last bytes of output; `start` is the offset of the first one kept.
    kept: VecDeque<u8>,
    start: u64,
    size: TerminalSize,
    /// `Some` once the shell has ended (`Some(None)`: ended by a signal or lost).
    exit: Option<Option<i32>>,
    lost: Option<String>,
}

pub struct Terminal {
    pub id: String,
    pub session_id: String,
    environment: String,
    cwd: PathBuf,
    shell: Option<String>,
    created_at: String,
    pid: Option<u32>,
    input: Arc<dyn TerminalInput>,
    screen: Mutex<Screen>,
    events: broadcast::Sender<TermEvent>,
    close: mpsc::UnboundedSender<oneshot::Sender<()>>,
}

impl Terminal {
    fn screen(&self) -> MutexGuard<'_, Screen> {
        self.screen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The terminal object the API returns.
    pub fn describe(&self) -> Value {
        let screen = self.screen();
        json!({
            "id": self.id,
            "session_id": self.session_id,
            "environment": self.environment,
            "cwd": self.cwd.display().to_string(),
            "shell": self.shell,
            "pid": self.pid,
            "cols": screen.size.cols,
            "rows": screen.size.rows,
            "status": if screen.exit.is_some() { "exited" } else { "running" },
            "exit_code": screen.exit.flatten(),
            "error": screen.lost,
            "output_bytes": screen.start + screen.kept.len() as u64,
            "created_at": self.created_at,
        })
    }

    /// The kept output (its offset and bytes), whether the shell has ended, and the live
    /// events from then on, taken together so nothing is lost or doubled in between.
    pub fn attach(
        &self,
    ) -> (
        u64,
        Vec<u8>,
        Option<Option<i32>>,
        broadcast::Receiver<TermEvent>,
    ) {
        let screen = self.screen();
        let live = self.events.subscribe();
        (
            screen.start,
            screen.kept.iter().copied().collect(),
            screen.exit,
            live,
        )
    }

    /// Types `data`, in order with earlier input. A remote write is a round trip, so it runs
    /// on a blocking thread.
    pub async fn write(&self, data: Vec<u8>) -> Result<(), ApiError> {
        if self.screen().exit.is_some() {
            return Err(self.failed("it has exited"));
        }
        let input = self.input.clone();
        tokio::task::spawn_blocking(move || input.write(&data))
            .await
            .map_err(|e| ApiError::internal(format!("writing to the terminal failed: {e}")))?
            .map_err(|e| self.failed(&e))
    }

    pub async fn resize(&self, size: TerminalSize) -> Result<(), ApiError> {
        let input = self.input.clone();
        tokio::task::spawn_blocking(move || input.resize(size))
            .await
            .map_err(|e| ApiError::internal(format!("resizing the terminal failed: {e}")))?
            .map_err(|e| self.failed(&e))?;
        self.screen().size = size;
        Ok(())
    }

    fn failed(&self, why: &str) -> ApiError {
        if self.screen().exit.is_some() {
            ApiError::new(
                code::TERMINAL_EXITED,
                format!(
                    "terminal {} has exited: open a new one with POST /api/v1/sessions/{}/terminals",
                    self.id, self.session_id
                ),
            )
        } else {
            ApiError::internal(format!("terminal {}: {why}", self.id))
        }
    }

    /// Ends the shell (SIGHUP to its group, SIGKILL after a grace) and waits until it has.
    pub async fn close(&self) {
        let (done_tx, done) = oneshot::channel();
        if self.close.send(done_tx).is_ok() {
            let _ = done.await;
        }
    }
}

/// Every open (and exited, until the session goes) terminal of the server.
#[derive(Default)]
pub struct Terminals {
    map: Mutex<HashMap<String, Arc<Terminal>>>,
}

impl Terminals {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Terminal>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn get(&self, session_id: &str, id: &str) -> Result<Arc<Terminal>, ApiError> {
        self.map()
            .get(id)
            .filter(|t| t.session_id == session_id)
            .cloned()
            .ok_or_else(|| {
                ApiError::new(
                    code::TERMINAL_NOT_FOUND,
                    format!(
                        "session {session_id} has no terminal {id}: list them with GET /api/v1/sessions/{session_id}/terminals"
                    ),
                )
            })
    }

    fn of_session(&self, session_id: &str) -> Vec<Arc<Terminal>> {
        let mut all: Vec<_> = self
            .map()
            .values()
            .filter(|t| t.session_id == session_id)
            .cloned()
            .collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// Closes every terminal (the server is stopping).
    pub async fn close_all(&self) {
        let all: Vec<_> = self.map().drain().map(|(_, t)| t).collect();
        for terminal in all {
            terminal.close().await;
        }
    }
}

/// Refuses a client that is not on this machine unless remote terminals were allowed.
pub fn check_peer(app: &App, peer: Option<Peer>) -> Result<(), ApiError> {
    if app.allow_remote_terminals || peer.is_some_and(|Peer(addr)| addr.ip().is_loopback()) {
        return Ok(());
    }
    let from = peer.map_or_else(
        || "an unknown address".to_owned(),
        |Peer(a)| a.ip().to_string(),
    );
    Err(ApiError::new(
        code::FORBIDDEN_REMOTE,
        format!(
            "terminals are served to clients on this machine only, and this request came from {from}: connect through 127.0.0.1 (for example an SSH tunnel), or restart with `kimi-rs web --allow-remote-terminals` to allow it"
        ),
    ))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OpenTerminal {
    /// On the session's environment; the session's working directory by default.
    cwd: Option<String>,
    cols: Option<u64>,
    rows: Option<u64>,
    /// The program to run; the target's shell by default.
    shell: Option<String>,
    #[serde(default)]
    env: HashMap<String, String>,
}

pub async fn open(
    State(app): State<Arc<App>>,
    peer: Option<axum::Extension<Peer>>,
    Path(session_id): Path<String>,
    JsonBody(body): JsonBody<OpenTerminal>,
) -> ApiResult<Value> {
    check_peer(&app, peer.map(|p| p.0))?;
    let live = app.registry.get(&session_id).await?;
    let size = TerminalSize::checked(body.cols.unwrap_or(80), body.rows.unwrap_or(24))
        .map_err(ApiError::validation)?;
    let ctx = &live.handle.runtime().config.tool_ctx;
    let environment = ctx.environment.clone();
    let cwd = match body.cwd {
        Some(cwd) if !cwd.starts_with('/') => {
            return Err(ApiError::validation(format!(
                "cwd must be an absolute path on the session's environment, got {cwd:?}"
            )));
        }
        Some(cwd) => PathBuf::from(cwd),
        None => ctx.cwd.clone(),
    };
    let mut env: Vec<(String, String)> = body.env.into_iter().collect();
    env.sort();
    let spec = TerminalSpec {
        cwd: cwd.clone(),
        env,
        size,
        shell: body.shell.clone(),
    };
    let label = environment.info().label();
    // A remote open is a round trip on the connection's own threads; it must not hold a
    // runtime worker. `open_terminal` needs the runtime for the local PTY's child.
    let runtime = tokio::runtime::Handle::current();
    let opened = tokio::task::spawn_blocking(move || {
        let _entered = runtime.enter();
        environment.open_terminal(&spec)
    })
    .await
    .map_err(|e| ApiError::internal(format!("opening the terminal failed: {e}")))?
    .map_err(|e| ApiError::new(code::ENVIRONMENT_UNAVAILABLE, e.to_string()))?
    .map_err(|e| {
        ApiError::internal(format!(
            "cannot open a terminal on {label} in {}: {e}",
            cwd.display()
        ))
    })?;
    let (events, _) = broadcast::channel(256);
    let (close, close_rx) = mpsc::unbounded_channel();
    let terminal = Arc::new(Terminal {
        id: format!("term_{}", crate::error::new_ulid()),
        session_id: session_id.clone(),
        environment: label,
        cwd,
        shell: body.shell,
        created_at: timestamp(),
        pid: opened.process.pid,
        input: opened.input,
        screen: Mutex::new(Screen {
            kept: VecDeque::new(),
            start: 0,
            size,
            exit: None,
            lost: None,
        }),
        events,
        close,
    });
    tokio::spawn(pump(terminal.clone(), opened.process, close_rx));
    app.terminals
        .map()
        .insert(terminal.id.clone(), terminal.clone());
    tracing::info!(session_id, terminal = %terminal.id, environment = %terminal.environment, "terminal opened");
    Ok(Data(terminal.describe()))
}

/// Forwards the shell's output to the screen and attached clients until it ends (or a close
/// ends it), then announces the exit.
async fn pump(
    terminal: Arc<Terminal>,
    mut process: SpawnedProcess,
    mut close: mpsc::UnboundedReceiver<oneshot::Sender<()>>,
) {
    let mut open = true;
    let mut closers = Vec::new();
    let end = loop {
        tokio::select! {
            chunk = process.output.recv(), if open => match chunk {
                Some((_, data)) => output(&terminal, data),
                None => open = false,
            },
            end = process.control.wait() => break end,
            closer = close.recv() => {
                if let Some(closer) = closer {
                    closers.push(closer);
                }
                break process.control.kill_group(CLOSE_GRACE).await;
            }
        }
    };
    // What the shell wrote last comes before its exit; a job that keeps the terminal open
    // must not hold the exit back for long.
    let drain = tokio::time::Instant::now() + Duration::from_secs(2);
    while open {
        let quiet = tokio::time::Instant::now() + Duration::from_millis(300);
        match tokio::time::timeout_at(quiet.min(drain), process.output.recv()).await {
            Ok(Some((_, data))) => output(&terminal, data),
            Ok(None) | Err(_) => open = false,
        }
    }
    let exit_code = match end {
        ProcessEnd::Exited(code) => code,
        ProcessEnd::Lost(reason) => {
            terminal.screen().lost = Some(reason);
            None
        }
    };
    terminal.screen().exit = Some(exit_code);
    let _ = terminal.events.send(TermEvent::Exit { exit_code });
    tracing::info!(terminal = %terminal.id, ?exit_code, "terminal ended");
    for closer in closers {
        let _ = closer.send(());
    }
    // Closes that came while it was ending: it has ended.
    while let Ok(closer) = close.try_recv() {
        let _ = closer.send(());
    }
    close.close();
    while let Some(closer) = close.recv().await {
        let _ = closer.send(());
    }
}

fn output(terminal: &Terminal, data: Vec<u8>) {
    let mut screen = terminal.screen();
    let offset = screen.start + screen.kept.len() as u64;
    screen.kept.extend(&data);
    let excess = screen.kept.len().saturating_sub(SCROLLBACK);
    screen.kept.drain(..excess);
    screen.start += excess as u64;
    // Sent under the lock, so an attach sees each byte either kept or live, never both.
    let _ = terminal.events.send(TermEvent::Output {
        offset,
        data: data.into(),
    });
}

pub async fn list(
    State(app): State<Arc<App>>,
    peer: Option<axum::Extension<Peer>>,
    Path(session_id): Path<String>,
) -> ApiResult<Value> {
    check_peer(&app, peer.map(|p| p.0))?;
    app.registry.get(&session_id).await?;
    let items: Vec<Value> = app
        .terminals
        .of_session(&session_id)
        .iter()
        .map(|t| t.describe())
        .collect();
    Ok(Data(json!({"items": items, "has_more": false})))
}

pub async fn get(
    State(app): State<Arc<App>>,
    peer: Option<axum::Extension<Peer>>,
    Path((session_id, terminal)): Path<(String, String)>,
) -> ApiResult<Value> {
    check_peer(&app, peer.map(|p| p.0))?;
    Ok(Data(app.terminals.get(&session_id, &terminal)?.describe()))
}

/// `POST …/terminals/{tid}:close` (the `:close` suffix is part of the path segment).
pub async fn action(
    State(app): State<Arc<App>>,
    peer: Option<axum::Extension<Peer>>,
    Path((session_id, segment)): Path<(String, String)>,
) -> ApiResult<Value> {
    check_peer(&app, peer.map(|p| p.0))?;
    let Some(terminal) = segment.strip_suffix(":close") else {
        return Err(ApiError::new(
            code::NO_ENDPOINT,
            format!(
                "unknown terminal action in {segment:?}: use POST /api/v1/sessions/{session_id}/terminals/{{terminal_id}}:close"
            ),
        ));
    };
    let terminal = app.terminals.get(&session_id, terminal)?;
    terminal.close().await;
    Ok(Data(terminal.describe()))
}

/// A WebSocket frame about a terminal, as JSON text.
pub fn frame(session_id: &str, terminal_id: &str, event: &TermEvent) -> String {
    let payload = match event {
        TermEvent::Output { offset, data } => json!({
            "terminal_id": terminal_id,
            "offset": offset,
            "data": base64::engine::general_purpose::STANDARD.encode(data),
        }),
        TermEvent::Exit { exit_code } => json!({
            "terminal_id": terminal_id,
            "exit_code": exit_code,
        }),
    };
    let kind = match event {
        TermEvent::Output { .. } => "terminal_output",
        TermEvent::Exit { .. } => "terminal_exit",
    };
    json!({
        "type": kind,
        "session_id": session_id,
        "timestamp": timestamp(),
        "payload": payload,
    })
    .to_string()
}
