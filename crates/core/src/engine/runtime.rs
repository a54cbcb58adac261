//! The shared runtime of one agent: configuration, the journal-backed log, the queue of
//! prompts and steers, pending approvals, and the event channel to the front ends. The op
//! dispatcher (`agent.rs`) and the turn runner (`turn.rs`) both work on it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use kimi_context::compaction::service::CompactionService;
use kimi_context::compaction::trigger::CompactionConfig;
use kimi_llm::RetryPolicy;
use kimi_protocol::ops::{AgentStatus, Event, PermissionMode};
use kimi_protocol::{ContentPart, Origin, RecordPayload, ToolCall};
use kimi_tools::args::ArgsValidator;
use kimi_tools::{ToolContext, ToolPlan, ToolRegistry};
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::executor::{GateDecision, UserAnswer};
use super::log::AgentLog;
use super::model::{ModelResolver, ModelSlot};
use super::state::AgentMachine;

/// Decides whether a tool call may run (the permission chain plugs in here).
pub trait PermissionPolicy: Send + Sync {
    fn decide(&self, call: &ToolCall, args: &Value, plan: &ToolPlan) -> GateDecision;
    fn set_mode(&self, mode: PermissionMode);
    fn mode(&self) -> PermissionMode;
    /// The user approved this call for the rest of the session; returns the rule remembered
    /// and, for a path-based rule, the environment it holds on.
    fn remember_session_approval(
        &self,
        call: &ToolCall,
        plan: &ToolPlan,
    ) -> Option<(String, Option<String>)>;
    /// This policy for an agent isolated in `worktree` (working in `cwd` inside it): the same
    /// mode, rules and approvals so far, with the worktree as the workspace root. `None` when
    /// the policy cannot be moved (the call is then refused).
    fn for_worktree(
        &self,
        worktree: &std::path::Path,
        cwd: &std::path::Path,
    ) -> Option<Arc<dyn PermissionPolicy>>;
    /// This policy for an agent placed on execution environment `environment`, working in
    /// `cwd` there: the same mode, rules and approvals so far, with `cwd` as the workspace and
    /// path approvals of other environments not applying. `None` when it cannot be moved.
    fn for_environment(
        &self,
        environment: &str,
        cwd: &std::path::Path,
    ) -> Option<Arc<dyn PermissionPolicy>>;
}

/// Session metadata the engine keeps current (title, last prompt, updated time).
pub trait SessionMeta: Send + Sync {
    /// A user prompt is starting a turn.
    fn prompt_started(&self, prompt: &str);

    /// The session's title (`None` while untitled).
    fn title(&self) -> Option<String> {
        None
    }

    /// Name the session; the name is kept over later prompts.
    fn set_title(&self, _title: &str) -> Result<(), String> {
        Err("this session keeps no metadata, so it cannot be named".to_owned())
    }

    /// Whether the model should title the session now: generated titles are on and the
    /// title is still the first prompt line.
    fn wants_generated_title(&self) -> bool {
        false
    }

    /// Store a title the model wrote; `Ok(false)` when the user named the session meanwhile
    /// (their title stays).
    fn set_generated_title(&self, _title: &str) -> Result<bool, String> {
        Ok(false)
    }
}

/// Approve everything (yolo without labels); used until a real chain is configured and by tests.
#[derive(Debug, Default)]
pub struct ApproveAll;

impl PermissionPolicy for ApproveAll {
    fn decide(&self, _call: &ToolCall, _args: &Value, _plan: &ToolPlan) -> GateDecision {
        GateDecision::Approve
    }
    fn set_mode(&self, _mode: PermissionMode) {}
    fn mode(&self) -> PermissionMode {
        PermissionMode::Yolo
    }
    fn remember_session_approval(
        &self,
        _call: &ToolCall,
        _plan: &ToolPlan,
    ) -> Option<(String, Option<String>)> {
        None
    }
    fn for_environment(
        &self,
        _environment: &str,
        _cwd: &std::path::Path,
    ) -> Option<Arc<dyn PermissionPolicy>> {
        Some(Arc::new(ApproveAll))
    }
    fn for_worktree(
        &self,
        _worktree: &std::path::Path,
        _cwd: &std::path::Path,
    ) -> Option<Arc<dyn PermissionPolicy>> {
        Some(Arc::new(ApproveAll))
    }
}

pub struct AgentConfig {
    pub session_id: String,
    /// Replaced between turns when an AGENTS.md changes (see `crate::prompt::instructions`).
    pub system_prompt: crate::prompt::SystemPrompt,
    /// The model in use: every request reads it, `Op::SetModel` / `Op::SetEffort` change it.
    pub model: ModelSlot,
    /// Builds the models `Op::SetModel` may switch to; `None` = this agent cannot switch.
    pub models: Option<Arc<dyn ModelResolver>>,
    /// `[loop_control] max_steps_per_turn`; `None` = unlimited.
    pub max_steps_per_turn: Option<u32>,
    pub retry: RetryPolicy,
    pub tools: Arc<ToolRegistry>,
    pub tool_ctx: Arc<ToolContext>,
    pub permissions: Arc<dyn PermissionPolicy>,
    /// `[[hooks]]` of config.toml; `None` = no hooks configured.
    pub hooks: Option<Arc<super::hooks::EngineHooks>>,
    /// Where title / last prompt / updated time are kept; `None` = not tracked.
    pub session_meta: Option<Arc<dyn SessionMeta>>,
    /// Plan mode of this agent; `None` for agents that never plan (subagents).
    pub plan: Option<Arc<crate::plan::PlanMode>>,
    /// Goal mode of this agent; `None` for agents without goals (subagents).
    pub goal: Option<Arc<crate::goal::GoalService>>,
    /// When to compact (`[loop_control] compaction_trigger_ratio`, `reserved_context_size`).
    pub compaction: CompactionConfig,
    /// File checkpoints for rewind; `None` = off (`[checkpoint] enabled = false`, subagents:
    /// the parent's scan around the Agent call covers what they change).
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The AGENTS.md files watched for changes and discovered by tool calls; `None` = not
    /// watched (subagents).
    pub instructions: Option<Arc<crate::prompt::Instructions>>,
    /// Progressive tool disclosure (flag `tool-select`): MCP schemas load on demand.
    pub tool_select: Option<Arc<crate::tool_select::ToolSelect>>,
}

/// A prompt waiting for its turn.
#[derive(Debug, Clone)]
pub struct Pending {
    pub prompt_id: String,
    pub input: Vec<ContentPart>,
    pub origin: Origin,
}

/// Work the runner picks up when idle.
#[derive(Debug, Clone)]
pub enum Job {
    Prompt(Pending),
    Compact {
        instruction: Option<String>,
    },
    /// Background tasks finished while the agent was idle: tell the model in a turn of its own.
    TaskNotices,
}

#[derive(Default)]
pub struct Shared {
    pub machine: AgentMachine,
    pub jobs: VecDeque<Job>,
    pub steers: Vec<Pending>,
    /// Cancel token of the running turn.
    pub turn_cancel: Option<CancellationToken>,
    /// Set when the running turn was cancelled by the user (changes the aborted texts).
    pub user_cancelled: bool,
    /// Fired when a steer arrives, so waits (WaitFor) can end early.
    pub steer_signal: CancellationToken,
    pub shutting_down: bool,
    /// Swarm mode and what started it (`None` = off); see `crate::swarm_mode`.
    pub swarm: Option<kimi_protocol::ops::SwarmTrigger>,
    /// Set when a journal append failed during the running turn: the turn was stopped (its
    /// token cancelled) and ends failed with this message instead of going on unjournaled.
    pub journal_failure: Option<String>,
    /// Why the running turn's provider request failed, worded as the reason its goal is
    /// paused with (rate limit, connection, authentication, API error, safety filter).
    pub goal_failure: Option<String>,
    /// The flow being walked (`/flow:<name>`), see `crate::flow`.
    pub flow: Option<crate::flow::ActiveFlow>,
    /// The session-title request in flight (see `engine::title`), awaited before the agent
    /// stops so a short run keeps its title.
    pub title_task: Option<tokio::task::JoinHandle<()>>,
}

/// An agent's side toward its front ends: the event channel and the approvals waiting for the
/// user. It exists before the agent's runtime, so the parts built first hold it from their
/// construction (the question broker announces questions on it, the subagent host relays its
/// agents' approvals through it) — there is no later step to forget.
pub struct FrontLink {
    events: mpsc::UnboundedSender<Event>,
    approvals: Mutex<HashMap<String, ApprovalWaiter>>,
}

/// Who waits for an approval: the asker's channel and, for the agent's own calls, the call
/// (journaled with the answer, so resume knows what the user decided about it).
pub struct ApprovalWaiter {
    pub tx: oneshot::Sender<UserAnswer>,
    /// `(tool_call_id, tool_name)`; `None` for approvals relayed from a subagent, whose own
    /// journal records its calls.
    pub call: Option<(String, String)>,
}

impl FrontLink {
    /// A link and the receiving end of its events (what front ends read).
    pub fn new() -> (Arc<FrontLink>, mpsc::UnboundedReceiver<Event>) {
        let (events, rx) = mpsc::unbounded_channel();
        let link = FrontLink {
            events,
            approvals: Mutex::new(HashMap::new()),
        };
        (Arc::new(link), rx)
    }

    pub fn emit(&self, event: Event) {
        // A front end that went away is not an engine error.
        let _ = self.events.send(event);
    }

    /// A sender of this link's events (for parts that only announce).
    pub fn events(&self) -> mpsc::UnboundedSender<Event> {
        self.events.clone()
    }

    fn approvals(&self) -> MutexGuard<'_, HashMap<String, ApprovalWaiter>> {
        self.approvals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wait for the answer to approval `request_id` (delivered by `Op::Approve`). `call` is
    /// `(tool_call_id, tool_name)` of the agent's own call, `None` for a relayed one.
    pub fn await_approval(
        &self,
        request_id: &str,
        call: Option<(String, String)>,
    ) -> oneshot::Receiver<UserAnswer> {
        let (tx, rx) = oneshot::channel();
        self.approvals()
            .insert(request_id.to_owned(), ApprovalWaiter { tx, call });
        rx
    }

    /// The waiter of approval `request_id`, if it is still pending.
    pub fn take_approval(&self, request_id: &str) -> Option<ApprovalWaiter> {
        self.approvals().remove(request_id)
    }

    /// Withdraw approval `request_id` (its asker stopped waiting).
    pub fn forget_approval(&self, request_id: &str) {
        self.approvals().remove(request_id);
    }
}

pub struct Runtime {
    pub config: AgentConfig,
    pub validator: ArgsValidator,
    log: Mutex<AgentLog>,
    shared: Mutex<Shared>,
    compaction: Mutex<CompactionService>,
    pub wake: Notify,
    /// Counts finished jobs, so watchers can wait for the agent to go idle again.
    pub jobs_done: tokio::sync::watch::Sender<u64>,
    link: Arc<FrontLink>,
}

impl Runtime {
    pub fn new(config: AgentConfig, log: AgentLog, link: Arc<FrontLink>) -> Arc<Self> {
        let compaction = CompactionService::new(config.compaction);
        Arc::new(Runtime {
            config,
            validator: ArgsValidator::new(),
            log: Mutex::new(log),
            shared: Mutex::new(Shared::default()),
            compaction: Mutex::new(compaction),
            wake: Notify::new(),
            jobs_done: tokio::sync::watch::Sender::new(0),
            link,
        })
    }

    /// The link to this agent's front ends (events and pending approvals).
    pub fn link(&self) -> &Arc<FrontLink> {
        &self.link
    }

    /// The log; a poisoned lock (a panic elsewhere) is recovered rather than propagated,
    /// because the journal itself stays consistent.
    pub fn log(&self) -> MutexGuard<'_, AgentLog> {
        self.log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn compaction(&self) -> MutexGuard<'_, CompactionService> {
        self.compaction
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn emit(&self, event: Event) {
        log_event(&event);
        self.link.emit(event);
    }

    /// A state-machine transition that should never happen: shown to front ends as a
    /// warning (the agent goes on) and so logged, reported rather than lost.
    pub fn transition_failed(&self, err: &super::state::TransitionError) {
        self.emit(Event::Warning {
            message: format!(
                "internal state error: {err}; the agent goes on (please report this with the session log)"
            ),
        });
    }

    /// Commit records; `false` when they could not be made durable (see [`Runtime::try_commit`]).
    pub fn commit(&self, payloads: Vec<RecordPayload>) -> bool {
        self.try_commit(payloads).is_ok()
    }

    /// Commit records. A write error stops the running turn (its token is cancelled, so no
    /// tool starts on state the journal does not have; the turn ends failed with the returned
    /// message) or, when no turn runs, is shown to the front ends at once. The journal keeps
    /// the records pending and writes them first on the next append.
    pub fn try_commit(&self, payloads: Vec<RecordPayload>) -> Result<(), String> {
        let todos = payloads
            .iter()
            .any(|p| matches!(p, RecordPayload::TodoSet(_)));
        let result = self.log().commit(payloads);
        let Err(err) = result else {
            if todos {
                self.publish_todos();
            }
            return Ok(());
        };
        let path = self.log().journal_path().display().to_string();
        let message = format!(
            "could not write the session journal {path}: {err}. The turn was stopped so nothing \
             runs on unsaved state. Free disk space or fix the permissions of {path}, then resume \
             with `kimi-rs -S {}` (records not yet written are lost if kimi-rs exits first)",
            self.config.session_id
        );
        tracing::error!(journal = %path, "{message}");
        let running = {
            let mut shared = self.shared();
            let running = shared.turn_cancel.clone();
            if running.is_some() && shared.journal_failure.is_none() {
                shared.journal_failure = Some(message.clone());
            }
            running
        };
        match running {
            // The turn reports it when it ends (one error, not one per failed append).
            Some(token) => token.cancel(),
            None => self.link.emit(Event::Error {
                message: message.clone(),
            }),
        }
        Err(message)
    }

    pub fn snapshot(&self) -> AgentStatus {
        self.shared().machine.snapshot()
    }

    /// Hand the agent a message it did not get from the user's prompt box (a cron fire, a
    /// backgrounded `!command`): a steer into the running turn, otherwise a prompt that starts
    /// one. `false` when the agent is shutting down.
    pub fn inject(&self, input: Vec<ContentPart>, origin: Origin) -> bool {
        let pending = Pending {
            prompt_id: super::records::new_id("msg_"),
            input,
            origin,
        };
        let mut shared = self.shared();
        if shared.shutting_down {
            return false;
        }
        if shared.turn_cancel.is_some() {
            shared.steers.push(pending);
            shared.steer_signal.cancel();
            shared.steer_signal = CancellationToken::new();
        } else {
            shared.jobs.push_back(Job::Prompt(pending));
            shared.machine.queued = shared.jobs.len();
        }
        drop(shared);
        self.wake.notify_one();
        true
    }

    /// Tell the front ends the todo list as the journal has it now (the todo panel).
    pub fn publish_todos(&self) {
        let todos = self.log().todos().to_vec();
        self.emit(Event::TodosUpdated { todos });
    }

    pub fn publish_status(&self) {
        let status = self.snapshot();
        self.emit(Event::Status { status });
    }
}

/// Whatever front ends are told about trouble (warnings, errors, retries) is logged too, so
/// the log has it wherever the event was raised.
fn log_event(event: &Event) {
    match event {
        Event::Warning { message } => tracing::warn!("{message}"),
        Event::Error { message } => tracing::error!("{message}"),
        Event::StepRetrying {
            turn_id,
            failed_attempt,
            max_attempts,
            delay_ms,
            error_name,
            error_message,
            status_code,
            ..
        } => tracing::warn!(
            turn_id,
            attempt = failed_attempt,
            max_attempts,
            delay_ms,
            error = %error_name,
            status = status_code,
            "model request failed; retrying: {error_message}"
        ),
        _ => {}
    }
}
