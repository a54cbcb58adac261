//! The ACP agent: request handlers, one event pump per session, approvals forwarded to the
//! editor, prompt responses sent when their turn ends.
//!
//! Handlers run one at a time in the connection's dispatch loop, so nothing here awaits the
//! editor inside a handler: a prompt's response is sent from a task spawned on the connection
//! once its turn ends, and approvals are asked from tokio tasks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentAuthCapabilities, AgentCapabilities, AuthMethod, AuthMethodTerminal, AuthenticateRequest,
    AuthenticateResponse, CancelNotification, CloseSessionRequest, CloseSessionResponse,
    DeleteSessionRequest, DeleteSessionResponse, ForkSessionRequest, ForkSessionResponse,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, LogoutCapabilities,
    LogoutRequest, LogoutResponse, McpCapabilities, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionConfigOption, SessionDeleteCapabilities,
    SessionForkCapabilities, SessionInfo, SessionListCapabilities, SessionResumeCapabilities,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse, StopReason,
};
use agent_client_protocol::{Agent, ByteStreams, Client, Error as AcpError};
use kimi_core::engine::agent::AgentHandle;
use kimi_core::session::{OpenedSession, Resume};
use kimi_protocol::ops::{Op, TurnEndReason};
use tokio::sync::oneshot;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::config::{SetSessionModelRequest, SetSessionModelResponse};
use crate::convert;
use crate::editor_fs::{EditorFs, FsCapabilities};
use crate::pump::{Outcome, Waiters, notify, pump};
use crate::terminal::Terminals;
use kimi_core::host::SessionHost;

pub(crate) struct Live {
    pub(crate) handle: AgentHandle,
    /// Ends when the agent has stopped (its journal complete); awaited at shutdown.
    join: Mutex<Option<tokio::task::JoinHandle<Vec<kimi_core::engine::turn::TurnResult>>>>,
    waiters: Mutex<Waiters>,
    /// The editor shows `notice` updates (`session.notices`); otherwise notices are text.
    pub(crate) notices: bool,
    /// The mode id the editor was last told.
    pub(crate) mode: Mutex<&'static str>,
    /// The session's working directory: relative paths in tool calls are against it.
    pub(crate) cwd: PathBuf,
    /// The event pump; it holds the session (and so its journal) until it is stopped.
    pump: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Bash calls running in the editor's terminals (when it offers them).
    pub(crate) terminals: Arc<Terminals>,
}

/// The mode a session's agent is in now (permission mode, or plan mode on top of it).
pub(crate) fn mode_of(handle: &AgentHandle) -> &'static str {
    let config = &handle.runtime().config;
    let plan = config.plan.as_ref().is_some_and(|p| p.is_active());
    convert::current_mode_id(config.permissions.mode(), plan)
}

impl Live {
    pub(crate) fn waiters(&self) -> std::sync::MutexGuard<'_, Waiters> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

type Sessions = Arc<Mutex<HashMap<String, Arc<Live>>>>;

fn lock(sessions: &Sessions) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Live>>> {
    sessions.lock().unwrap_or_else(PoisonError::into_inner)
}

fn no_session(id: &str) -> AcpError {
    AcpError::invalid_params().data(serde_json::Value::from(format!(
        "no open session {id}: create one with session/new or load it with session/load"
    )))
}

fn start(
    cx: &ConnectionTo<Client>,
    sessions: &Sessions,
    opened: OpenedSession,
    cwd: &Path,
    (terminals, notices): (Arc<Terminals>, bool),
) {
    let id = opened.session.state.id.clone();
    let live = Arc::new(Live {
        terminals,
        notices,
        cwd: cwd.to_owned(),
        pump: Mutex::new(None),
        mode: Mutex::new(mode_of(&opened.agent.handle)),
        handle: opened.agent.handle.clone(),
        join: Mutex::new(Some(opened.agent.join)),
        waiters: Mutex::new(Waiters::default()),
    });
    let task = tokio::spawn(pump(
        cx.clone(),
        id.clone(),
        live.clone(),
        opened.agent.events,
    ));
    *live.pump.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);

    lock(sessions).insert(id, live);
}

/// A session just opened on this connection.
struct Started {
    id: String,
    mode: &'static str,
    commands: Vec<(String, String)>,
    /// The model and thinking options (`None` when the session cannot switch models).
    config: Option<Vec<SessionConfigOption>>,
}

impl Started {
    /// Tell the editor the session's slash commands (after the response that names it).
    fn advertise(&self, cx: &ConnectionTo<Client>) {
        if !self.commands.is_empty() {
            notify(cx, &self.id, convert::commands_update(&self.commands));
        }
    }
}

/// A session that could not be set up because the model needs the Kimi login and there is
/// none is ACP's "auth required" (-32000), so the editor offers its login; anything else is
/// an internal error.
fn open_error(err: &kimi_core::host::HostError, login: &LoginCheck) -> AcpError {
    let message = err.to_string();
    let wants_login = matches!(err, kimi_core::host::HostError::Setup(_))
        && message.contains("kimi-rs login")
        && login().is_err();
    if wants_login {
        AcpError::auth_required().data(serde_json::Value::from(message))
    } else {
        AcpError::internal_error().data(serde_json::Value::from(message))
    }
}

/// What every handler shares: the host, this connection's sessions, the login check and what
/// the editor said it can do with files.
struct Shared {
    host: Arc<SessionHost>,
    sessions: Sessions,
    login: LoginCheck,
    logout: LogoutAction,
    fs: Mutex<FsCapabilities>,
}

impl Shared {
    fn live(&self, id: &str) -> Result<Arc<Live>, AcpError> {
        lock(&self.sessions)
            .get(id)
            .cloned()
            .ok_or_else(|| no_session(id))
    }
}

/// How a session is opened: new, loaded (its conversation replayed to the editor) or resumed
/// (not replayed: the editor shows it already).
#[derive(Clone, PartialEq, Eq)]
enum Opening {
    /// A new session, bound to the declared execution environment when one is named.
    New(Option<String>),
    Load,
    Resume,
}

/// Open a session through the host and start its event pump; a loaded session's stored
/// conversation is replayed to the editor first.
fn open(
    shared: &Shared,
    cx: &ConnectionTo<Client>,
    (cwd, resume, opening): (&Path, Resume, Opening),
    servers: serde_json::Value,
) -> Result<Started, AcpError> {
    if let Resume::Id(id) = &resume
        && lock(&shared.sessions).contains_key(id)
    {
        return Err(
            AcpError::invalid_params().data(serde_json::Value::from(format!(
                "session {id} is already open on this connection"
            ))),
        );
    }
    let fs = *shared.fs.lock().unwrap_or_else(PoisonError::into_inner);
    // The editor's files for Read, Edit and Write when it offers them; the session id is
    // known once the session is open.
    let session_cell: Arc<std::sync::OnceLock<String>> = Arc::default();
    let terminals: Arc<Terminals> = Arc::default();
    let wrap: Option<kimi_core::session::EnvironmentWrap> = fs.any().then(|| {
        let (cx, cell, terminals) = (cx.clone(), session_cell.clone(), terminals.clone());
        let runtime = tokio::runtime::Handle::current();
        Arc::new(move |inner: Arc<dyn kimi_tools::Environment>| {
            Arc::new(EditorFs::new(
                inner,
                cx.clone(),
                runtime.clone(),
                cell.clone(),
                fs,
                terminals.clone(),
            )) as Arc<dyn kimi_tools::Environment>
        }) as kimi_core::session::EnvironmentWrap
    });
    let environment = match &opening {
        Opening::New(environment) => environment.clone(),
        Opening::Load | Opening::Resume => None,
    };
    let opened = shared
        .host
        .open_full(cwd, resume, Some(&servers), environment.as_deref(), wrap)
        .map_err(|err| open_error(&err, &shared.login))?;
    let mode = mode_of(&opened.agent.handle);
    let id = opened.session.state.id.clone();
    let _ = session_cell.set(id.clone());
    if opening == Opening::Load {
        let history = opened
            .agent
            .handle
            .runtime()
            .log()
            .history()
            .messages()
            .to_vec();
        for update in convert::replay(&history, cwd) {
            notify(cx, &id, update);
        }
    }
    let config = crate::config::options(&opened.agent.handle, None);
    start(cx, &shared.sessions, opened, cwd, (terminals, fs.notices));
    let mut commands = shared.host.commands(&id);
    commands.push((
        crate::rewind::COMMAND.0.to_owned(),
        crate::rewind::COMMAND.1.to_owned(),
    ));
    Ok(Started {
        commands,
        id,
        mode,
        config,
    })
}

/// Stop a session of this connection: prompts still running or waiting end as cancelled, the
/// agent stops and closes its journal (bounded wait), then `done` runs.
fn stop_session(
    shared: &Shared,
    cx: &ConnectionTo<Client>,
    id: String,
    done: impl FnOnce() -> Result<(), AcpError> + Send + 'static,
) -> Result<(), AcpError> {
    let Some(live) = lock(&shared.sessions).remove(&id) else {
        return Err(no_session(&id));
    };
    for waiter in live.waiters().queued.drain(..) {
        let _ = waiter.send(Outcome {
            reason: TurnEndReason::Cancelled,
            error: None,
        });
    }
    live.handle.send(Op::Cancel { queued: true });
    live.handle.send(Op::Shutdown);
    shared.host.release(&id);
    let join = live
        .join
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    cx.spawn(async move {
        if let Some(join) = join
            && tokio::time::timeout(std::time::Duration::from_secs(10), join)
                .await
                .is_err()
        {
            tracing::warn!("session {id} did not stop within 10 s of being closed");
        }
        // The agent has stopped: the pump has nothing left to forward, and it holds the
        // session's journal open until it goes.
        let pump = live
            .pump
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(pump) = pump {
            pump.abort();
            let _ = pump.await;
        }
        drop(live);
        done()
    })
}

/// `session/list`: stored sessions (not archived), newest first, those of `cwd` only when given.
fn list(shared: &Shared, request: &ListSessionsRequest) -> Result<ListSessionsResponse, AcpError> {
    let all = shared
        .host
        .list_sessions(request.cwd.as_deref())
        .map_err(|err| AcpError::internal_error().data(serde_json::Value::from(err.to_string())))?;
    let sessions = all
        .into_iter()
        .filter(|s| !s.archived && (request.cwd.is_none() || s.this_dir))
        .filter_map(|s| {
            let cwd = PathBuf::from(s.cwd?);
            let mut info = SessionInfo::new(s.id, cwd).title(s.title);
            if let Some(at) = i64::try_from(s.updated_at)
                .ok()
                .and_then(chrono::DateTime::from_timestamp_millis)
            {
                info = info.updated_at(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
            }
            Some(info)
        })
        .collect();
    Ok(ListSessionsResponse::new(sessions))
}

/// The model/thinking option `id` set to `value` on a session of this connection; returns
/// the options as they are with it.
fn set_option(
    shared: &Shared,
    session: &str,
    id: &str,
    value: &str,
) -> Result<Vec<SessionConfigOption>, AcpError> {
    let live = shared.live(session)?;
    crate::config::apply(&live.handle, id, value)
        .map_err(|why| AcpError::invalid_params().data(serde_json::Value::from(why)))?;
    Ok(crate::config::options(&live.handle, Some((id, value))).unwrap_or_default())
}

fn stop_reason(
    outcome: Result<Outcome, oneshot::error::RecvError>,
) -> Result<StopReason, AcpError> {
    match outcome {
        Ok(Outcome {
            reason: TurnEndReason::Completed | TurnEndReason::Blocked,
            ..
        }) => Ok(StopReason::EndTurn),
        Ok(Outcome {
            reason: TurnEndReason::Cancelled,
            ..
        })
        | Err(_) => Ok(StopReason::Cancelled),
        Ok(Outcome {
            reason: TurnEndReason::Failed,
            error,
        }) => Err(AcpError::internal_error().data(serde_json::Value::from(
            error.unwrap_or_else(|| "the turn failed".to_owned()),
        ))),
    }
}

/// Whether the Kimi account login is in place (`authenticate`): `Err` says what to do.
pub type LoginCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// Drop the stored Kimi login (ACP `logout`): `Err` says what went wrong.
pub type LogoutAction = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The one auth method: the editor runs `kimi-rs acp --login` in a terminal (ACP "terminal
/// auth"), then calls `authenticate` with this id.
pub const LOGIN_METHOD: &str = "login";

fn initialize(shared: &Shared, request: &InitializeRequest) -> InitializeResponse {
    let fs = &request.client_capabilities.fs;
    *shared.fs.lock().unwrap_or_else(PoisonError::into_inner) = FsCapabilities {
        read: fs.read_text_file,
        write: fs.write_text_file,
        terminal: request.client_capabilities.terminal,
        notices: request
            .client_capabilities
            .session
            .as_ref()
            .is_some_and(|s| s.notices.is_some()),
    };
    InitializeResponse::new(
        request
            .protocol_version
            .min(agent_client_protocol::schema::ProtocolVersion::LATEST),
    )
    .agent_capabilities(
        AgentCapabilities::new()
            .load_session(true)
            .session_capabilities(
                SessionCapabilities::new()
                    .close(SessionCloseCapabilities::new())
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .delete(SessionDeleteCapabilities::new())
                    .fork(SessionForkCapabilities::new()),
            )
            .auth(AgentAuthCapabilities::new().logout(LogoutCapabilities::new()))
            .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
            .prompt_capabilities(
                PromptCapabilities::new()
                    .image(true)
                    .audio(false)
                    .embedded_context(true),
            ),
    )
    .agent_info(Implementation::new("kimi-rs", env!("CARGO_PKG_VERSION")))
    .auth_methods(vec![AuthMethod::Terminal(
        AuthMethodTerminal::new(LOGIN_METHOD, "Log in to Kimi Code")
            .description("Opens a terminal running the Kimi account device login".to_owned())
            .args(vec!["--login".to_owned()]),
    )])
}

fn prompt(
    shared: &Shared,
    request: PromptRequest,
    responder: agent_client_protocol::Responder<PromptResponse, agent_client_protocol::V1>,
    cx: &ConnectionTo<Client>,
) -> Result<(), AcpError> {
    let id = request.session_id.0.to_string();
    let live = match shared.live(&id) {
        Ok(live) => live,
        Err(err) => return responder.respond_with_error(err),
    };
    let input = convert::prompt_parts(request.prompt);
    let text = input.iter().find_map(kimi_protocol::ContentPart::as_text);
    if let Some(parsed) = text.and_then(crate::rewind::parse) {
        let (turns, scope, force) = match parsed {
            Ok(args) => args,
            Err(why) => {
                return responder.respond_with_error(
                    AcpError::invalid_params().data(serde_json::Value::from(why)),
                );
            }
        };
        let (tx, rx) = oneshot::channel();
        live.waiters().rewinds.push_back(tx);
        live.handle.send(Op::Rewind {
            turns,
            scope,
            force,
        });
        let (cx2, sid) = (cx.clone(), id);
        return cx.spawn(async move {
            let text = match rx.await {
                Ok(Ok(report)) => crate::rewind::summary(&report),
                Ok(Err(message)) => format!("Rewind failed: {message}"),
                Err(_) => "The session stopped before the rewind finished.".to_owned(),
            };
            notify(&cx2, &sid, convert::agent_text(&text));
            responder.respond(PromptResponse::new(StopReason::EndTurn))
        });
    }
    if input.is_empty() {
        return responder.respond_with_error(AcpError::invalid_params().data(
            serde_json::Value::from("the prompt has no text or image to send"),
        ));
    }
    let submit = match shared.host.prepare(
        &id,
        Op::Submit {
            input,
            origin: None,
            prompt_id: None,
        },
    ) {
        Ok(op) => op,
        Err(err) => {
            return responder.respond_with_error(
                AcpError::invalid_params().data(serde_json::Value::from(err.to_string())),
            );
        }
    };
    let (tx, rx) = oneshot::channel();
    if matches!(submit, Op::Flow { .. }) {
        live.waiters().flows.push_back(tx);
    } else {
        live.waiters().queued.push_back(tx);
    }
    live.handle.send(submit);
    cx.spawn(async move {
        match stop_reason(rx.await) {
            Ok(stop) => responder.respond(PromptResponse::new(stop)),
            Err(err) => responder.respond_with_error(err),
        }
    })
}

fn set_mode(shared: &Shared, request: &SetSessionModeRequest) -> Result<(), AcpError> {
    let live = shared.live(&request.session_id.0)?;
    let choice = convert::mode_from_id(&request.mode_id.0)
        .map_err(|message| AcpError::invalid_params().data(serde_json::Value::from(message)))?;
    let plan = choice.is_none();
    if plan || mode_of(&live.handle) == "plan" {
        live.handle.send(Op::SetPlanMode { enabled: plan });
    }
    if let Some(mode) = choice {
        live.handle.send(Op::SetPermissionMode { mode });
    }
    *live.mode.lock().unwrap_or_else(PoisonError::into_inner) = convert::MODES
        .iter()
        .find(|m| m.0 == &*request.mode_id.0)
        .map_or("default", |m| m.0);
    Ok(())
}

fn rpc_error(err: kimi_core::host::HostError) -> AcpError {
    AcpError::invalid_params().data(serde_json::Value::from(err.to_string()))
}

/// Serve ACP over `reader`/`writer` (stdin/stdout for `kimi-rs acp`) until the editor closes
/// the connection.
pub async fn serve(
    host: Arc<SessionHost>,
    reader: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    writer: impl tokio::io::AsyncWrite + Send + Unpin + 'static,
    login: LoginCheck,
    logout: LogoutAction,
) -> Result<(), AcpError> {
    let shared = Arc::new(Shared {
        host,
        sessions: Arc::default(),
        login,
        logout,
        fs: Mutex::default(),
    });
    let (s1, s2, s3, s4, s5, s6, s7) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
    );
    let (s8, s9, s10, s11, s12, s13, s14, s15) = (
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
        shared.clone(),
    );
    let transport = ByteStreams::new(writer.compat_write(), reader.compat());
    let result = Agent
        .v1()
        .name("kimi-rs")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(initialize(&s1, &request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: AuthenticateRequest, responder, _cx| {
                if request.method_id.0.as_ref() != LOGIN_METHOD {
                    return responder.respond_with_error(AcpError::invalid_params().data(
                        serde_json::Value::from(format!(
                            "unknown auth method `{}`; the only one is `{LOGIN_METHOD}`",
                            request.method_id.0
                        )),
                    ));
                }
                match (s2.login)() {
                    Ok(()) => responder.respond(AuthenticateResponse::new()),
                    Err(message) => responder.respond_with_error(
                        AcpError::auth_required().data(serde_json::Value::from(message)),
                    ),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: LogoutRequest, responder, _cx| match (s3.logout)() {
                Ok(()) => responder.respond(LogoutResponse::new()),
                Err(message) => responder.respond_with_error(
                    AcpError::internal_error().data(serde_json::Value::from(message)),
                ),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let servers = convert::mcp_servers_json(&request.mcp_servers);
                // `_meta.environment`: a declared execution environment to bind the session to.
                let environment = match request.meta.as_ref().and_then(|m| m.get("environment")) {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::String(id)) => Some(id.clone()),
                    Some(other) => {
                        return responder.respond_with_error(AcpError::invalid_params().data(
                            serde_json::Value::from(format!(
                                "_meta.environment must be the id of a declared environment (a string), got {other}"
                            )),
                        ));
                    }
                };
                match open(
                    &s4,
                    &cx,
                    (&request.cwd, Resume::New, Opening::New(environment)),
                    servers,
                ) {
                    Ok(opened) => {
                        responder.respond(
                            NewSessionResponse::new(opened.id.clone())
                                .modes(convert::mode_state(opened.mode))
                                .config_options(opened.config.clone()),
                        )?;
                        opened.advertise(&cx);
                        Ok(())
                    }
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let id = request.session_id.0.to_string();
                let servers = convert::mcp_servers_json(&request.mcp_servers);
                match open(
                    &s5,
                    &cx,
                    (&request.cwd, Resume::Id(id), Opening::Load),
                    servers,
                ) {
                    Ok(opened) => {
                        responder.respond(
                            LoadSessionResponse::new()
                                .modes(convert::mode_state(opened.mode))
                                .config_options(opened.config.clone()),
                        )?;
                        opened.advertise(&cx);
                        Ok(())
                    }
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, cx| {
                let id = request.session_id.0.to_string();
                let servers = convert::mcp_servers_json(&request.mcp_servers);
                match open(
                    &s6,
                    &cx,
                    (&request.cwd, Resume::Id(id), Opening::Resume),
                    servers,
                ) {
                    Ok(opened) => {
                        responder.respond(
                            ResumeSessionResponse::new()
                                .modes(convert::mode_state(opened.mode))
                                .config_options(opened.config.clone()),
                        )?;
                        opened.advertise(&cx);
                        Ok(())
                    }
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ForkSessionRequest, responder, cx| {
                let forked = match s7.host.fork_session(&request.session_id.0) {
                    Ok(id) => id,
                    Err(err) => return responder.respond_with_error(rpc_error(err)),
                };
                let servers = convert::mcp_servers_json(&request.mcp_servers);
                match open(
                    &s7,
                    &cx,
                    (&request.cwd, Resume::Id(forked), Opening::Resume),
                    servers,
                ) {
                    Ok(opened) => {
                        responder.respond(
                            ForkSessionResponse::new(opened.id.clone())
                                .modes(convert::mode_state(opened.mode))
                                .config_options(opened.config.clone()),
                        )?;
                        opened.advertise(&cx);
                        Ok(())
                    }
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                responder.respond_with_result(list(&s8, &request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: DeleteSessionRequest, responder, cx| {
                let id = request.session_id.0.to_string();
                let host = s9.host.clone();
                // A session open here is closed first (its journal must be complete before
                // its files go).
                let delete = move || {
                    responder.respond_with_result(
                        host.delete_session(&id)
                            .map(|()| DeleteSessionResponse::new())
                            .map_err(rpc_error),
                    )
                };
                let open_here = lock(&s9.sessions).contains_key(&*request.session_id.0);
                if open_here {
                    stop_session(&s9, &cx, request.session_id.0.to_string(), delete)
                } else {
                    delete()
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                prompt(&s10, request, responder, &cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                responder.respond_with_result(
                    set_mode(&s11, &request).map(|()| SetSessionModeResponse::new()),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                let Some(value) = request.value.as_value_id() else {
                    return responder.respond_with_error(AcpError::invalid_params().data(
                        serde_json::Value::from("the model and thinking options take a value id"),
                    ));
                };
                responder.respond_with_result(
                    set_option(&s12, &request.session_id.0, &request.config_id.0, &value.0)
                        .map(SetSessionConfigOptionResponse::new),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModelRequest, responder, _cx| {
                responder.respond_with_result(
                    set_option(
                        &s13,
                        &request.session_id,
                        crate::config::MODEL,
                        &request.model_id,
                    )
                    .map(|_| SetSessionModelResponse::default()),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, cx| {
                let id = request.session_id.0.to_string();
                if !lock(&s14.sessions).contains_key(&id) {
                    return responder.respond_with_error(no_session(&id));
                }
                stop_session(&s14, &cx, id, move || {
                    responder.respond(CloseSessionResponse::new())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                let id = notification.session_id.0.to_string();
                if let Ok(live) = s15.live(&id) {
                    // Prompts that have not started end as cancelled right away.
                    for waiter in live.waiters().queued.drain(..) {
                        let _ = waiter.send(Outcome {
                            reason: TurnEndReason::Cancelled,
                            error: None,
                        });
                    }
                    live.handle.send(Op::Cancel { queued: true });
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    // The editor went away: stop every agent and wait (bounded) until its journal is closed
    // and its SessionEnd hooks ran, before the runtime goes away.
    let all: Vec<Arc<Live>> = lock(&shared.sessions)
        .drain()
        .map(|(_, live)| live)
        .collect();
    for live in &all {
        live.handle.send(Op::Shutdown);
    }
    for live in all {
        let join = live
            .join
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(join) = join
            && tokio::time::timeout(std::time::Duration::from_secs(10), join)
                .await
                .is_err()
        {
            tracing::warn!("an agent did not stop within 10 s of the editor closing");
        }
    }
    result
}
