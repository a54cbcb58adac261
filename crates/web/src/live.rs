//! The sessions this server has loaded: each one's agent handle, its event pump (engine events
//! → numbered frames on a broadcast channel), pending approvals and turn state; and the
//! registry that creates sessions, resumes them from disk on first use and shuts them down.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kimi_core::engine::agent::AgentHandle;
use kimi_core::session::{OpenedSession, Resume};
use kimi_protocol::ops::{
    AgentStatus, ApprovalDecision, ApprovalRequest, Event, Op, TurnEndReason,
};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::{ApiError, code};
use crate::events::{self, EventBuffer, Frame, MAX_EVENT_BUFFER, Resync};
use crate::questions::PendingQuestion;
use kimi_core::host::SessionHost;
use kimi_protocol::host::SessionSummary;

/// Frames a subscriber may lag behind the live channel before it is cut off (and resumes from
/// its cursor). The ring is one per session, its frames shared by every subscriber, so its
/// room for a fast model's bursts costs memory once, not per client.
const CHANNEL_CAPACITY: usize = 4 * MAX_EVENT_BUFFER;
/// Resolved approval ids remembered to answer a second resolution with 40902.
const RESOLVED_MEMORY: usize = 256;

/// One approval request waiting for the user.
#[derive(Debug, Clone)]
pub struct Approval {
    pub request: ApprovalRequest,
    pub turn_id: Option<u64>,
    pub created_ms: u64,
}

impl Approval {
    /// The reference's approval item.
    pub fn item(&self, session_id: &str) -> Value {
        let r = &self.request;
        let mut display = r.summary.clone();
        if let Some(detail) = &r.detail {
            display.push('\n');
            display.push_str(detail);
        }
        json!({
            "approval_id": r.request_id,
            "session_id": session_id,
            "turn_id": self.turn_id,
            "tool_call_id": r.tool_call_id,
            "tool_name": r.tool_name,
            "action": r.action,
            "tool_input_display": display,
            "summary": r.summary,
            "detail": r.detail,
            "diff": r.diff,
            "danger": r.danger,
            "options": r.options,
            "created_at": iso(self.created_ms),
            "expires_at": iso(self.created_ms + 24 * 3600 * 1000),
        })
    }
}

/// Milliseconds since the epoch as ISO 8601.
pub fn iso(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// Mutable facts about a loaded session.
#[derive(Debug)]
pub struct State {
    pub buffer: EventBuffer,
    pub turn_id: Option<u64>,
    pub turn_active: bool,
    pub last_turn_reason: Option<TurnEndReason>,
    pub pending: Vec<Approval>,
    /// AskUserQuestion requests waiting for an answer.
    pub questions: Vec<PendingQuestion>,
    /// Approval and question ids already resolved (a second resolution is a 40902).
    pub(crate) resolved: VecDeque<String>,
    pub context_tokens: u64,
    text_offset: u64,
    thinking_offset: u64,
    pub prompt_ids: Vec<String>,
    pub closed: bool,
    /// Tool calls the main agent started in the current turn: only their approvals end with
    /// it (a background subagent's requests outlive the main agent's turns).
    turn_calls: std::collections::HashSet<String>,
    /// Answers and prompts sent to the engine whose journaling it has not confirmed yet
    /// (`AnswerRecorded`, `PromptRecorded`), by request or prompt id.
    pub(crate) unrecorded: HashMap<String, oneshot::Sender<()>>,
}

/// How long a REST answer waits for the engine to confirm it journaled the answer.
const RECORD_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl State {
    /// Register interest in the engine's confirmation for answer `request_id`; call before
    /// sending the answer's op.
    pub(crate) fn expect_recorded(&mut self, request_id: &str) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.unrecorded.insert(request_id.to_owned(), tx);
        rx
    }
}

/// Wait for the engine to confirm the answer `what` is journaled: a REST client is told its
/// answer was taken only once a crash can no longer lose it.
pub(crate) async fn recorded(what: &str, rx: oneshot::Receiver<()>) -> Result<(), ApiError> {
    match tokio::time::timeout(RECORD_WAIT, rx).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(ApiError::new(
            code::INTERNAL,
            format!(
                "{what} reached the session, but it did not confirm saving it within {}s (its journal may be unwritable: see the session's error frames and the log); reload the session before relying on it",
                RECORD_WAIT.as_secs()
            ),
        )),
    }
}

/// What a subscriber gets: the frames to replay (or why it must resync) and the live channel,
/// taken together so nothing is lost or doubled in between.
pub struct Subscription {
    pub replay: Result<Vec<Arc<Frame>>, Resync>,
    pub live: broadcast::Receiver<Arc<Frame>>,
    pub last_seq: u64,
}

pub struct Live {
    pub id: String,
    pub cwd: String,
    /// The store's key for its working directory (the API's `workspace_id`).
    pub workspace_id: String,
    pub handle: AgentHandle,
    /// Changes each time the session is loaded: seq numbers restart with it.
    pub epoch: String,
    state: Mutex<State>,
    tx: broadcast::Sender<Arc<Frame>>,
    join: Mutex<Option<JoinHandle<()>>>,
}

impl Live {
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a turn is running (or the agent is otherwise not idle).
    pub fn busy(&self) -> bool {
        self.state().turn_active || !matches!(self.handle.snapshot(), AgentStatus::Idle { .. })
    }

    fn frame(&self, kind: &str, payload: Value, volatile: bool, offset: Option<u64>) -> Frame {
        Frame {
            kind: kind.to_owned(),
            seq: 0,
            epoch: self.epoch.clone(),
            volatile,
            offset,
            session_id: self.id.clone(),
            timestamp: events::timestamp(),
            payload,
        }
    }

    pub(crate) fn publish_locked(
        &self,
        state: &mut State,
        kind: &str,
        payload: Value,
        volatile: bool,
        offset: Option<u64>,
    ) {
        let frame = state
            .buffer
            .stamp(self.frame(kind, payload, volatile, offset));
        // No subscriber is fine: durable frames stay in the buffer.
        let _ = self.tx.send(frame);
    }

    /// Number and send one frame to the subscribers.
    pub fn publish(&self, kind: &str, payload: Value) {
        let mut state = self.state();
        self.publish_locked(&mut state, kind, payload, false, None);
    }

    /// Subscribe, replaying the durable frames after `cursor` (`(seq, epoch)`) if given.
    pub fn subscribe(&self, cursor: Option<(u64, Option<String>)>) -> Subscription {
        let state = self.state();
        let replay = match cursor {
            None => Ok(Vec::new()),
            Some((_, Some(epoch))) if epoch != self.epoch => Err(Resync {
                reason: format!(
                    "the cursor's epoch {epoch} is not the session's current epoch {}",
                    self.epoch
                ),
            }),
            Some((seq, _)) => state.buffer.replay_after(seq),
        };
        Subscription {
            replay,
            live: self.tx.subscribe(),
            last_seq: state.buffer.last_seq(),
        }
    }

    /// Answer a pending approval: its resolution time and the engine's confirmation that the
    /// answer is journaled (see [`recorded`]).
    pub fn resolve(
        &self,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(String, oneshot::Receiver<()>), ApiError> {
        let mut state = self.state();
        let Some(index) = state
            .pending
            .iter()
            .position(|a| a.request.request_id == approval_id)
        else {
            if state.resolved.iter().any(|id| id == approval_id) {
                return Err(ApiError::new(
                    code::ALREADY_RESOLVED,
                    format!("approval {approval_id} was already resolved; nothing to do"),
                )
                .with_data(json!({"resolved": false})));
            }
            return Err(ApiError::new(
                code::APPROVAL_NOT_FOUND,
                format!(
                    "no pending approval {approval_id} in session {}: list them with GET /api/v1/sessions/{}/approvals?status=pending",
                    self.id, self.id
                ),
            ));
        };
        state.pending.remove(index);
        remember(&mut state.resolved, approval_id);
        let label = match &decision {
            ApprovalDecision::ApproveOnce
            | ApprovalDecision::ApproveForSession
            | ApprovalDecision::ApproveOption { .. } => "approved",
            ApprovalDecision::Reject | ApprovalDecision::RejectWithFeedback { .. } => "rejected",
        };
        let resolved_at = events::timestamp();
        let recorded = state.expect_recorded(approval_id);
        self.handle.send(Op::Approve {
            request_id: approval_id.to_owned(),
            decision,
        });
        self.publish_locked(
            &mut state,
            "event.approval.resolved",
            json!({"approval_id": approval_id, "decision": label, "resolved_at": resolved_at}),
            false,
            None,
        );
        Ok((resolved_at, recorded))
    }

    fn handle_event(&self, event: Event) {
        let mut state = self.state();
        let mut offset = None;
        match &event {
            Event::ToolStarted { call } => {
                state.turn_calls.insert(call.id.clone());
            }
            Event::TurnStarted { turn_id } => {
                state.turn_id = Some(*turn_id);
                state.turn_active = true;
                state.turn_calls.clear();
                state.text_offset = 0;
                state.thinking_offset = 0;
            }
            Event::TurnEnded { reason, .. } => {
                state.turn_active = false;
                state.last_turn_reason = Some(*reason);
                // The engine dropped whatever this turn was still asking.
                let calls = std::mem::take(&mut state.turn_calls);
                let (dropped, kept): (Vec<Approval>, Vec<Approval>) = state
                    .pending
                    .drain(..)
                    .partition(|a| calls.contains(&a.request.tool_call_id));
                state.pending = kept;
                for approval in dropped {
                    let id = approval.request.request_id;
                    remember(&mut state.resolved, &id);
                    self.publish_locked(
                        &mut state,
                        "event.approval.resolved",
                        json!({"approval_id": id, "decision": "cancelled", "resolved_at": events::timestamp()}),
                        false,
                        None,
                    );
                }
                let dropped: Vec<PendingQuestion> = state.questions.drain(..).collect();
                for question in dropped {
                    let id = question.request_id;
                    remember(&mut state.resolved, &id);
                    self.publish_locked(
                        &mut state,
                        "event.question.dismissed",
                        json!({"question_id": id, "reason": "cancelled", "resolved_at": events::timestamp()}),
                        false,
                        None,
                    );
                }
            }
            Event::AssistantDelta { text } => {
                offset = Some(state.text_offset);
                state.text_offset += text.chars().count() as u64;
            }
            Event::ThinkingDelta { text } => {
                offset = Some(state.thinking_offset);
                state.thinking_offset += text.chars().count() as u64;
            }
            Event::Usage { context_tokens, .. } => state.context_tokens = *context_tokens,
            Event::AnswerRecorded { request_id }
            | Event::PromptRecorded {
                prompt_id: request_id,
            } => {
                if let Some(tx) = state.unrecorded.remove(request_id) {
                    let _ = tx.send(());
                }
                return;
            }
            Event::QuestionRequested {
                request_id,
                questions,
            } => {
                let question = PendingQuestion {
                    request_id: request_id.clone(),
                    questions: questions.clone(),
                    turn_id: state.turn_id,
                    created_ms: kimi_core::engine::log::now_ms(),
                };
                let item = question.item(&self.id);
                state.questions.push(question);
                self.publish_locked(&mut state, "event.question.requested", item, false, None);
                return;
            }
            Event::ApprovalRequested(request) => {
                let approval = Approval {
                    request: request.clone(),
                    turn_id: state.turn_id,
                    created_ms: kimi_core::engine::log::now_ms(),
                };
                let item = approval.item(&self.id);
                state.pending.push(approval);
                self.publish_locked(&mut state, "event.approval.requested", item, false, None);
                return;
            }
            _ => {}
        }
        if let Some((kind, payload, volatile)) = events::convert(&event) {
            self.publish_locked(&mut state, kind, payload, volatile, offset);
        }
    }
}

pub(crate) fn remember(resolved: &mut VecDeque<String>, id: &str) {
    if resolved.len() == RESOLVED_MEMORY {
        resolved.pop_front();
    }
    resolved.push_back(id.to_owned());
}

async fn pump(live: Arc<Live>, mut events: mpsc::UnboundedReceiver<Event>) {
    while let Some(event) = events.recv().await {
        live.handle_event(event);
    }
    live.state().closed = true;
}

/// Every session this server has loaded, by id.
pub struct Registry {
    host: Arc<SessionHost>,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// One open at a time, so a session is never loaded twice.
    opening: tokio::sync::Mutex<()>,
}

impl Registry {
    pub fn new(host: Arc<SessionHost>) -> Self {
        Registry {
            host,
            sessions: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    pub fn host(&self) -> &Arc<SessionHost> {
        &self.host
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Live>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A loaded session.
    pub fn loaded(&self, id: &str) -> Option<Arc<Live>> {
        self.sessions().get(id).cloned()
    }

    /// Stored sessions, newest first, as the session host lists them (this server never
    /// reads the store itself). An unreadable index lists nothing and is logged.
    pub fn index(&self) -> Vec<SessionSummary> {
        self.host.list_sessions(None).unwrap_or_else(|err| {
            tracing::warn!("cannot list sessions: {err}");
            Vec::new()
        })
    }

    pub fn entry(&self, id: &str) -> Option<SessionSummary> {
        self.index().into_iter().find(|e| e.id == id)
    }

    /// A loaded session, or the stored one resumed.
    pub async fn get(&self, id: &str) -> Result<Arc<Live>, ApiError> {
        if let Some(live) = self.loaded(id) {
            return Ok(live);
        }
        let _guard = self.opening.lock().await;
        if let Some(live) = self.loaded(id) {
            return Ok(live);
        }
        let entry = self
            .entry(id)
            .ok_or_else(|| ApiError::session_not_found(id))?;
        let cwd = entry.cwd.map(PathBuf::from).ok_or_else(|| {
            ApiError::session_not_found(id)
                .with_data(json!({"reason": "the session has no recorded working directory"}))
        })?;
        self.open(cwd, Resume::Id(id.to_owned()), None).await
    }

    /// Start a new session in `cwd`, bound to the declared execution environment
    /// `environment` (`None`: the declared default).
    pub async fn create(
        &self,
        cwd: PathBuf,
        environment: Option<String>,
    ) -> Result<Arc<Live>, ApiError> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(ApiError::new(
                code::DIRECTORY_NOT_FOUND,
                format!(
                    "the working directory {} does not exist or is not a directory: pass an existing absolute path as metadata.cwd",
                    cwd.display()
                ),
            ));
        }
        let _guard = self.opening.lock().await;
        self.open(cwd, Resume::New, environment).await
    }

    async fn open(
        &self,
        cwd: PathBuf,
        resume: Resume,
        environment: Option<String>,
    ) -> Result<Arc<Live>, ApiError> {
        let host = self.host.clone();
        let dir = cwd.clone();
        let opened = tokio::task::spawn_blocking(move || {
            host.open_on(&dir, resume, None, environment.as_deref())
        })
        .await
        .map_err(|e| ApiError::internal(format!("opening the session failed: {e}")))?
        .map_err(|err| ApiError::internal(format!("cannot open the session: {err}")))?;
        Ok(self.start(opened, &cwd))
    }

    fn start(&self, opened: OpenedSession, cwd: &Path) -> Arc<Live> {
        let id = opened.session.state.id.clone();
        let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
        let live = Arc::new(Live {
            id: id.clone(),
            cwd: opened
                .session
                .state
                .cwd
                .clone()
                .unwrap_or_else(|| cwd.display().to_string()),
            workspace_id: opened.session.workdir_key.clone(),
            handle: opened.agent.handle.clone(),
            epoch: uuid::Uuid::new_v4().simple().to_string(),
            state: Mutex::new(State {
                buffer: EventBuffer::new(MAX_EVENT_BUFFER),
                turn_id: None,
                turn_active: false,
                last_turn_reason: None,
                pending: Vec::new(),
                questions: Vec::new(),
                turn_calls: Default::default(),
                unrecorded: HashMap::new(),
                resolved: VecDeque::new(),
                context_tokens: 0,
                text_offset: 0,
                thinking_offset: 0,
                prompt_ids: Vec::new(),
                closed: false,
            }),
            tx,
            join: Mutex::new(None),
        });
        for warning in &opened.warnings {
            tracing::warn!("session {id}: {warning}");
        }
        tokio::spawn(pump(live.clone(), opened.agent.events));
        let agent = opened.agent.join;
        let watcher = tokio::spawn(async move {
            let _ = agent.await;
        });
        *live.join.lock().unwrap_or_else(PoisonError::into_inner) = Some(watcher);
        self.sessions().insert(id, live.clone());
        live
    }

    /// Stop every agent so journals are closed cleanly.
    pub async fn shutdown(&self) {
        let all: Vec<Arc<Live>> = self.sessions().drain().map(|(_, l)| l).collect();
        for live in all {
            live.handle.send(Op::Shutdown);
            self.host.release(&live.id);
            let join = live
                .join
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(join) = join {
                let _ = tokio::time::timeout(Duration::from_secs(10), join).await;
            }
        }
    }
}
