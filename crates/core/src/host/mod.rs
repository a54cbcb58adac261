//! The one session host every front end uses (design.md principle 4, "Wave-2 shape"): the TUI,
//! `kimi-rs acp` and `kimi-rs web` open and resume sessions through it, list stored sessions
//! through it, and send it every operation. Conversation ops go on to the session's agent; the
//! host ops (session listing, background tasks, `!` shell commands, MCP status — see the host
//! block of [`kimi_protocol::ops::Op`]) are answered here, as events on the same session's
//! event stream, so a front end needs nothing beside `Op`/`Event`.
//!
//! What only the launch knows (the model, configuration, permission rules, skills, MCP servers)
//! comes from a [`SessionFactory`] the binary supplies. Adding a host feature (goals,
//! environments, rewind) means one op and one event in the protocol's host block and one arm in
//! [`answer`].

mod answer;
pub mod shell;
mod stored;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kimi_protocol::ContentPart;
use kimi_protocol::host::{McpStatus, SessionSummary};
use kimi_protocol::ops::Op;
use kimi_store::{Home, IndexEntry, SessionStore};

use crate::engine::agent::AgentHandle;
use crate::session::{OpenedSession, Resume, SessionError, SessionSetup, open_session};

/// What goes wrong in the host; every message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("the session directory {0} is not an existing absolute path")]
    BadDirectory(PathBuf),
    /// The front end could not prepare the session (model, configuration …).
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Open(#[from] SessionError),
    #[error("cannot read the session index: {0}")]
    Index(#[from] kimi_store::StoreError),
    #[error("session {0} is not open in this host; open or resume it first")]
    NotOpen(String),
    /// A prompt the front end's rewriting refused (e.g. a flow skill).
    #[error("{0}")]
    Rejected(String),
    #[error("session {0} has shut down")]
    Closed(String),
}

/// An MCP sign-in that has started: the URL the user opens, and the task that waits for the
/// browser, stores the token and reconnects the server (its text says how that went).
pub struct McpLoginStarted {
    pub url: String,
    pub done: tokio::task::JoinHandle<Result<String, String>>,
}

/// Said by a launch without MCP servers.
const NO_MCP: &str =
    "this session has no MCP servers; configure them in mcp.json and start a new session";

/// What a launch adds to one session beyond its [`SessionSetup`]: skill commands, the MCP
/// servers' status and their sign-in, sign-out and reconnection. Front ends without them use
/// the defaults.
#[async_trait::async_trait]
pub trait SessionExtras: Send + Sync {
    /// Rewrite a prompt before it reaches the agent (e.g. expand `/skill:name`); an error is
    /// returned to the front end and nothing is sent.
    fn prepare(&self, _session_id: &str, op: Op) -> Result<Op, String> {
        Ok(op)
    }

    /// Slash commands besides the engine's (skills): name and description.
    fn commands(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The session's MCP servers, for `Op::McpStatus`.
    fn mcp_status(&self) -> McpStatus {
        McpStatus::default()
    }

    /// Start the OAuth sign-in of the remote MCP server `server`.
    async fn mcp_login(&self, _server: &str) -> Result<McpLoginStarted, String> {
        Err(NO_MCP.to_owned())
    }

    /// Delete the stored sign-in of `server` and reconnect it; the text says what happened.
    async fn mcp_logout(&self, _server: &str) -> Result<String, String> {
        Err(NO_MCP.to_owned())
    }

    /// Close `server`'s connection and connect it again; the text says how that went.
    async fn mcp_reconnect(&self, _server: &str) -> Result<String, String> {
        Err(NO_MCP.to_owned())
    }
}

/// The launch's side of opening a session, implemented by the binary.
#[async_trait::async_trait]
pub trait SessionFactory: Send + Sync + 'static {
    /// The setup of a session in `cwd` (model, configuration, permission rules, skills, MCP
    /// servers) and its extras. `mcp_servers` are servers for this session only (an editor's,
    /// in `mcp.json` shape), never written anywhere. May block (MCP servers connecting).
    fn setup(
        &self,
        cwd: &Path,
        resume: &Resume,
        mcp_servers: Option<&serde_json::Value>,
    ) -> Result<(SessionSetup, Arc<dyn SessionExtras>), String>;

    /// [`SessionFactory::setup`] of a new session bound to the declared execution environment
    /// `environment` (`local` = this machine; `None` = the declared default). A factory that
    /// cannot reach environments refuses any id, so nothing silently runs here instead.
    fn setup_on(
        &self,
        cwd: &Path,
        resume: &Resume,
        mcp_servers: Option<&serde_json::Value>,
        environment: Option<&str>,
    ) -> Result<(SessionSetup, Arc<dyn SessionExtras>), String> {
        match environment {
            None => self.setup(cwd, resume, mcp_servers),
            Some(id) => Err(format!(
                "this front end cannot bind a session to environment `{id}`; start it without one"
            )),
        }
    }

    /// Problems found while opening `session_id` (invalid hooks, skipped agent files), for a
    /// front end that shows them outside the session (stderr); they are also in
    /// [`OpenedSession::warnings`].
    fn warnings(&self, _session_id: &str, _warnings: &[String]) {}

    /// Stop what the launch started (MCP servers); called by [`SessionHost::shutdown`].
    async fn shutdown(&self) {}
}

struct Hosted {
    handle: AgentHandle,
    cwd: PathBuf,
    extras: Arc<dyn SessionExtras>,
    /// Its running foreground `!command`.
    shell: Arc<shell::ShellSlot>,
}

/// Opens sessions, routes every op, answers the host ops.
pub struct SessionHost {
    home: PathBuf,
    factory: Arc<dyn SessionFactory>,
    sessions: Mutex<HashMap<String, Hosted>>,
}

impl SessionHost {
    pub fn new(home: PathBuf, factory: Arc<dyn SessionFactory>) -> SessionHost {
        SessionHost {
            home,
            factory,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// `KIMI_RS_HOME`: where sessions are stored.
    pub fn home(&self) -> &Path {
        &self.home
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Hosted>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Open a new session in `cwd` (`Resume::New`) or an existing one. The caller owns the
    /// returned session's events and join handle; ops go through [`SessionHost::send`]. May
    /// block (MCP servers connecting): call it on a multi-threaded runtime.
    pub fn open(
        &self,
        cwd: &Path,
        resume: Resume,
        mcp_servers: Option<&serde_json::Value>,
    ) -> Result<OpenedSession, HostError> {
        self.open_full(cwd, resume, mcp_servers, None, None)
    }

    /// [`SessionHost::open`], with the front end's view over the session's environment (ACP's
    /// editor files, see [`crate::session::SessionExtensions::wrap_environment`]).
    pub fn open_with(
        &self,
        cwd: &Path,
        resume: Resume,
        mcp_servers: Option<&serde_json::Value>,
        wrap: Option<crate::session::EnvironmentWrap>,
    ) -> Result<OpenedSession, HostError> {
        self.open_full(cwd, resume, mcp_servers, None, wrap)
    }

    /// [`SessionHost::open`] of a new session bound to the declared execution environment
    /// `environment` (ACP's `_meta.environment`, the web's `metadata.environment`). A resumed
    /// session stays where its journal says, so it takes no environment.
    pub fn open_on(
        &self,
        cwd: &Path,
        resume: Resume,
        mcp_servers: Option<&serde_json::Value>,
        environment: Option<&str>,
    ) -> Result<OpenedSession, HostError> {
        self.open_full(cwd, resume, mcp_servers, environment, None)
    }

    /// [`SessionHost::open_on`] and [`SessionHost::open_with`] together.
    pub fn open_full(
        &self,
        cwd: &Path,
        resume: Resume,
        mcp_servers: Option<&serde_json::Value>,
        environment: Option<&str>,
        wrap: Option<crate::session::EnvironmentWrap>,
    ) -> Result<OpenedSession, HostError> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(HostError::BadDirectory(cwd.to_owned()));
        }
        if let (Some(id), Resume::Id(_) | Resume::Latest) = (environment, &resume) {
            return Err(HostError::Setup(format!(
                "environment `{id}` binds new sessions only; a resumed session reconnects to the environment it was started on"
            )));
        }
        let (mut setup, extras) = self
            .factory
            .setup_on(cwd, &resume, mcp_servers, environment)
            .map_err(HostError::Setup)?;
        if wrap.is_some() {
            setup.extensions.wrap_environment = wrap;
        }
        let opened = open_session(SessionSetup { resume, ..setup })?;
        let id = opened.session.state.id.clone();
        self.factory.warnings(&id, &opened.warnings);
        self.sessions().insert(
            id,
            Hosted {
                handle: opened.agent.handle.clone(),
                cwd: cwd.to_owned(),
                extras,
                shell: Arc::default(),
            },
        );
        Ok(opened)
    }

    /// The session was shut down by its front end: forget it.
    pub fn release(&self, session_id: &str) {
        self.sessions().remove(session_id);
    }

    /// Rewrite a prompt with the session's extras (skill commands) without sending it.
    pub fn prepare(&self, session_id: &str, op: Op) -> Result<Op, HostError> {
        let (handle, extras) = {
            let sessions = self.sessions();
            let hosted = sessions
                .get(session_id)
                .ok_or_else(|| HostError::NotOpen(session_id.to_owned()))?;
            (hosted.handle.clone(), hosted.extras.clone())
        };
        let op = extras
            .prepare(session_id, op)
            .map_err(HostError::Rejected)?;
        media_gate(&handle, &op).map_err(HostError::Rejected)?;
        Ok(op)
    }

    /// The session's slash commands besides the engine's (skills).
    pub fn commands(&self, session_id: &str) -> Vec<(String, String)> {
        self.extras(session_id)
            .map(|e| e.commands())
            .unwrap_or_default()
    }

    /// What the launch added to `session_id` (its MCP servers, for the web server's routes).
    pub fn extras(&self, session_id: &str) -> Result<Arc<dyn SessionExtras>, HostError> {
        self.sessions()
            .get(session_id)
            .map(|h| h.extras.clone())
            .ok_or_else(|| HostError::NotOpen(session_id.to_owned()))
    }

    /// Send `op` to `session_id`. Host ops are answered on the session's event stream (a
    /// `!command` when it ends, without holding up later ops); other ops are prepared (skill commands)
    /// and handed to the agent.
    pub async fn send(&self, session_id: &str, op: Op) -> Result<(), HostError> {
        let (handle, cwd, extras, shell) = {
            let sessions = self.sessions();
            let hosted = sessions
                .get(session_id)
                .ok_or_else(|| HostError::NotOpen(session_id.to_owned()))?;
            (
                hosted.handle.clone(),
                hosted.cwd.clone(),
                hosted.extras.clone(),
                hosted.shell.clone(),
            )
        };
        if op.is_host_op() {
            let ctx = answer::Context {
                host: self,
                handle: &handle,
                cwd: &cwd,
                extras: &extras,
                shell: &shell,
            };
            answer::answer(&ctx, op).await;
            return Ok(());
        }
        let op = extras
            .prepare(session_id, op)
            .map_err(HostError::Rejected)?;
        media_gate(&handle, &op).map_err(HostError::Rejected)?;
        if handle.send(op) {
            Ok(())
        } else {
            Err(HostError::Closed(session_id.to_owned()))
        }
    }

    /// Every stored session (archived ones included), newest first; `this_dir` is set for
    /// those of `here`.
    pub fn list_sessions(&self, here: Option<&Path>) -> Result<Vec<SessionSummary>, HostError> {
        let here = here.map(kimi_store::workdir_key);
        let entries = SessionStore::new(Home::new(&self.home)).index().list()?;
        Ok(entries
            .into_iter()
            .map(|e| summary(e, here.as_deref()))
            .collect())
    }

    /// One stored session, from the index.
    pub fn session(&self, id: &str) -> Result<Option<SessionSummary>, HostError> {
        Ok(self.list_sessions(None)?.into_iter().find(|s| s.id == id))
    }

    /// Stop what the launch started (MCP servers). The front end shuts its sessions down
    /// first (`Op::Shutdown`), so their journals close cleanly.
    pub async fn shutdown(&self) {
        self.sessions().clear();
        self.factory.shutdown().await;
    }
}

fn summary(entry: IndexEntry, here: Option<&str>) -> SessionSummary {
    SessionSummary {
        this_dir: here == Some(entry.workdir_key.as_str()),
        id: entry.id,
        title: entry.title,
        cwd: entry.cwd,
        workspace_id: entry.workdir_key,
        created_at: entry.created_at,
        updated_at: entry.updated_at,
        archived: entry.archived,
    }
}

/// A prompt carrying images or videos is refused, with what to do, when the session's model
/// is known not to take them (surface.md §5.2): nothing is sent for the model to ignore.
fn media_gate(handle: &AgentHandle, op: &Op) -> Result<(), String> {
    let (Op::Submit { input, .. } | Op::Steer { input }) = op else {
        return Ok(());
    };
    let needs = |part: &ContentPart| match part {
        ContentPart::Image(_) => Some(("image_in", "images")),
        ContentPart::Video(_) => Some(("video_in", "videos")),
        ContentPart::Audio(_) => Some(("audio_in", "audio")),
        ContentPart::Text { .. } | ContentPart::Think { .. } => None,
    };
    let mut wanted: Vec<(&str, &str)> = input.iter().filter_map(needs).collect();
    if wanted.is_empty() {
        return Ok(());
    }
    wanted.dedup();
    let runtime = handle.runtime();
    let alias = runtime.config.model.get().alias;
    let Some(capabilities) = runtime
        .config
        .models
        .as_ref()
        .and_then(|models| models.capabilities(&alias))
    else {
        return Ok(());
    };
    match wanted
        .into_iter()
        .find(|(flag, _)| !capabilities.iter().any(|c| c == flag))
    {
        None => Ok(()),
        Some((flag, what)) => Err(format!(
            "the model `{alias}` does not take {what} (its capabilities lack `{flag}`), so the prompt was not sent. \
             Switch to a model that does with /model, or add \"{flag}\" to the model's `capabilities` in config.toml if it supports them."
        )),
    }
}
