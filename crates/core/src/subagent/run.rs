//! Running one subagent task: open (or reopen) its journal, start it as an ordinary agent,
//! submit the task, follow its events to the end of the turn (forwarding approval requests to
//! the caller, summing usage, keeping the last assistant text), apply the summary policy, and
//! shut it down so its journal is complete and unlocked. A [`Launch`] adds the model it runs
//! on (the caller's or one of the pool), a fork of the caller's context, and worktree
//! isolation.

use std::sync::Arc;

use kimi_protocol::ops::{ApprovalDecision, ApprovalRequest, Event, Op, TurnEndReason, Usage};
use kimi_protocol::{ContentPart, Origin};
use kimi_store::JournalOptions;
use kimi_tools::ToolContext;
use tokio_util::sync::CancellationToken;

use super::{SubagentError, SubagentHost};
use crate::engine::agent::{AgentHandle, spawn_agent};
use crate::engine::executor::UserAnswer;
use crate::engine::log::AgentLog;
use crate::engine::model::{ActiveModel, ModelSlot};
use crate::engine::records as rec;
use crate::engine::runtime::AgentConfig;
use crate::profile::builtin::{SUMMARY_CONTINUATION, SUMMARY_MIN_CHARS};
use crate::profile::catalog::load_agent_file;
use crate::profile::{Profile, ProfileSource, registry_for, render_profile_prompt};

/// What to run.
#[derive(Debug, Clone)]
pub enum Target {
    New(Box<Profile>),
    /// Continue an existing subagent of this session.
    Resume(String),
}

/// Where a subagent's tools work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// In the caller's working directory.
    #[default]
    None,
    /// In a git worktree of its own ([`super::worktree`]).
    Worktree,
}

/// How a subagent is started besides its profile and prompt.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// A pooled model; `None` = the caller's model.
    pub model: Option<super::pool::PoolModel>,
    /// Start from a copy of the caller's context instead of an empty history.
    pub fork: bool,
    pub isolation: Isolation,
    /// The call's short label (the commit message of an isolated agent's leftovers).
    pub label: String,
    /// A declared environment to run on instead of the caller's (new agents only).
    pub environment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    Completed,
    Cancelled,
    Failed(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub agent_id: String,
    pub profile: String,
    pub status: RunStatus,
    /// The final assistant text of the run.
    pub text: String,
    pub usage: Usage,
    /// The pooled model it ran on (`None` = the caller's).
    pub model: Option<String>,
    /// What an isolated agent's branch holds.
    pub worktree: Option<super::worktree::WorktreeReport>,
    /// The environment it ran on when that is not the caller's.
    pub environment: Option<String>,
}

/// Releases the agent id however the run ends (including the caller dropping the future).
struct Claim<'a> {
    host: &'a SubagentHost,
    agent_id: String,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.host.release(&self.agent_id);
    }
}

fn add_usage(total: &mut Usage, more: &Usage) {
    total.input_other += more.input_other;
    total.output += more.output;
    total.input_cache_read += more.input_cache_read;
    total.input_cache_creation += more.input_cache_creation;
}

/// `agent-<n>`: the only ids a subagent can have. Anything else (the main agent, a path) is
/// refused before it reaches the file system.
pub(super) fn is_subagent_id(id: &str) -> bool {
    id.strip_prefix("agent-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Follows one turn of the subagent to its end.
struct Follower<'a> {
    host: &'a SubagentHost,
    handle: AgentHandle,
    events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    usage: Usage,
    last_text: String,
    /// Approval ids registered with the caller, withdrawn when the run ends.
    forwarded: Vec<String>,
}

impl Follower<'_> {
    async fn turn(&mut self, input: String, cancel: &CancellationToken) -> RunStatus {
        self.last_text.clear();
        if cancel.is_cancelled() {
            return RunStatus::Cancelled;
        }
        if !self.handle.send(Op::Submit {
            input: vec![ContentPart::text(input)],
            origin: Some(Origin::user()),
            prompt_id: None,
        }) {
            return RunStatus::Failed("the subagent stopped before its task was sent".to_owned());
        }
        // A cancel before the turn starts would drop the queued prompt without any event, so
        // it is held back until the turn has started (and then ends it as cancelled).
        let mut started = false;
        let mut cancel_wanted = false;
        let mut cancel_sent = false;
        loop {
            let event = tokio::select! {
                event = self.events.recv() => event,
                () = cancel.cancelled(), if !cancel_wanted => {
                    cancel_wanted = true;
                    if started {
                        cancel_sent = true;
                        self.handle.send(Op::Cancel { queued: true });
                    }
                    continue;
                }
            };
            let Some(event) = event else {
                return RunStatus::Failed("the subagent stopped unexpectedly".to_owned());
            };
            if matches!(event, Event::TurnStarted { .. }) {
                started = true;
                if cancel_wanted && !cancel_sent {
                    cancel_sent = true;
                    self.handle.send(Op::Cancel { queued: true });
                }
            }
            match event {
                Event::Usage { usage, .. } => add_usage(&mut self.usage, &usage),
                Event::AssistantMessage { message } => {
                    let text = message.text();
                    if !text.trim().is_empty() {
                        self.last_text = text;
                    }
                }
                Event::ApprovalRequested(request) => self.forward_approval(request),
                Event::TurnEnded { reason, error, .. } => {
                    return match reason {
                        TurnEndReason::Completed => RunStatus::Completed,
                        TurnEndReason::Cancelled => RunStatus::Cancelled,
                        TurnEndReason::Failed | TurnEndReason::Blocked => RunStatus::Failed(
                            error.unwrap_or_else(|| "the subagent's turn failed".to_owned()),
                        ),
                    };
                }
                _ => {}
            }
        }
    }

    /// A subagent's approval request goes to the caller's front end (which answers through
    /// the caller's `Op::Approve`), and the answer is relayed back.
    fn forward_approval(&mut self, request: ApprovalRequest) {
        let request_id = request.request_id.clone();
        let parent = &self.host.parent;
        let rx = parent.await_approval(&request_id, None);
        parent.emit(Event::ApprovalRequested(request));
        self.forwarded.push(request_id.clone());
        let child = self.handle.clone();
        tokio::spawn(async move {
            let Ok(answer) = rx.await else { return };
            let decision = match answer {
                UserAnswer::Approve => ApprovalDecision::ApproveOnce,
                UserAnswer::ApproveForSession => ApprovalDecision::ApproveForSession,
                UserAnswer::ApproveOption(label) => ApprovalDecision::ApproveOption { label },
                UserAnswer::Reject(None) => ApprovalDecision::Reject,
                UserAnswer::Reject(Some(feedback)) => {
                    ApprovalDecision::RejectWithFeedback { feedback }
                }
            };
            child.send(Op::Approve {
                request_id,
                decision,
            });
        });
    }
}

impl SubagentHost {
    fn resolve_bound(
        &self,
        agent_id: &str,
        bound: Option<crate::engine::log::BoundProfile>,
    ) -> Result<Profile, SubagentError> {
        let Some(bound) = bound else {
            return Err(SubagentError::NoSuchAgent(agent_id.to_owned()));
        };
        if let Some(profile) = self.catalog.get(&bound.name) {
            return Ok(profile.clone());
        }
        bound
            .file
            .and_then(|file| load_agent_file(&file, ProfileSource::Explicit(file.clone())).ok())
            .map(|(profile, _)| profile)
            .ok_or(SubagentError::ProfileGone {
                agent: agent_id.to_owned(),
                profile: bound.name,
            })
    }

    /// Run `prompt` as a new subagent or on an existing one, to the end of its turn.
    pub async fn run(
        &self,
        target: Target,
        prompt: String,
        launch: Launch,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, SubagentError> {
        let agent_id = match &target {
            Target::New(_) => self.new_agent_id(),
            Target::Resume(id) => id.clone(),
        };
        self.run_as(agent_id, target, prompt, launch, cancel).await
    }

    /// The caller's context as a fork seed: its messages, with the tool calls still running
    /// (this very `Agent` call among them) closed by an "outcome unknown" result.
    fn fork_seed(&self) -> Result<Vec<kimi_protocol::Message>, SubagentError> {
        let caller = self.caller().ok_or(SubagentError::NoCallerContext)?;
        let messages = caller.log().history().messages().to_vec();
        Ok(kimi_context::open_exchange::close_trailing_open_tool_exchange(&messages))
    }

    /// `run` with the agent id already chosen (a swarm hands out ids in item order).
    pub(super) async fn run_as(
        &self,
        agent_id: String,
        target: Target,
        prompt: String,
        launch: Launch,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, SubagentError> {
        let journal = self.journal_path(&agent_id);
        if let Target::Resume(_) = &target
            && (!is_subagent_id(&agent_id) || !journal.exists())
        {
            return Err(SubagentError::NoSuchAgent(agent_id));
        }
        if !self.claim(&agent_id) {
            return Err(SubagentError::Busy(agent_id));
        }
        let _claim = Claim {
            host: self,
            agent_id: agent_id.clone(),
        };
        let options = JournalOptions { fsync: self.fsync };
        let (log, restored) = AgentLog::open(&journal, &agent_id, options)?;
        let profile = match target {
            Target::New(profile) => *profile,
            Target::Resume(_) => self.resolve_bound(&agent_id, restored.profile.clone())?,
        };
        // Only a new agent forks: a resumed one already has its own history.
        let seed = if launch.fork && restored.system_prompt.is_none() {
            self.fork_seed()?
        } else {
            Vec::new()
        };
        // Where it runs: a resumed agent where its journal says, a new one where the call
        // placed it, otherwise where the caller runs.
        let (placed, new_bind) = match (&restored.environment, &launch.environment) {
            (Some(record), _) => (Some(super::placement::reconnect(self, record).await?), None),
            (None, Some(id)) if restored.system_prompt.is_none() => {
                let binding = super::placement::bind(self, id).await?;
                let record = binding.record();
                (Some(binding), Some(record))
            }
            (None, Some(id)) => {
                return Err(SubagentError::Environment(format!(
                    "agent `{agent_id}` runs where its caller runs and cannot move to environment `{id}`; start a new agent there instead"
                )));
            }
            (None, None) => (None, None),
        };
        let environment = placed.as_ref().map_or_else(
            || self.base_ctx.environment.clone(),
            |b| b.environment.clone(),
        );
        let worktree = match launch.isolation {
            Isolation::None => None,
            Isolation::Worktree if !environment.is_this_machine() => {
                return Err(SubagentError::RemoteWorktree(environment.info().id.clone()));
            }
            Isolation::Worktree => Some(
                super::worktree::Worktree::create(
                    &self.base_ctx.cwd,
                    &self.session.dir,
                    &self.session.state.id,
                    &agent_id,
                )
                .await?,
            ),
        };
        let cwd = match (&worktree, &placed) {
            (Some(tree), _) => tree.cwd.clone(),
            (None, Some(binding)) => binding.cwd.clone(),
            (None, None) => self.base_ctx.cwd.clone(),
        };
        let permissions = match &worktree {
            // The workspace of an agent placed elsewhere is its directory there (paths of the
            // caller's machine mean nothing on that target).
            // Its path approvals hold on that environment only (path approvals given on the
            // caller's do not carry over).
            None if placed.is_some() => self
                .permissions
                .for_environment(&environment.info().id, &cwd)
                .unwrap_or_else(|| self.permissions.clone()),
            None => self.permissions.clone(),
            Some(tree) => match self.permissions.for_worktree(&tree.path, &tree.cwd) {
                Some(policy) => policy,
                None => {
                    let report = tree.clone().finish(&launch.label).await;
                    return Err(SubagentError::PolicyNotMovable(report.branch));
                }
            },
        };
        let mut prompt_env = self.prompt_env.clone();
        prompt_env.cwd.clone_from(&cwd);
        if placed.is_some() {
            // Placed on `local`: this machine's prompt (its OS, shell, listing, AGENTS.md).
            prompt_env.target =
                (!environment.is_this_machine()).then(|| environment.info().clone());
        }
        let system_prompt = match &restored.system_prompt {
            Some(text) => text.clone(),
            None => match render_profile_prompt(&profile, &prompt_env, false) {
                Ok(text) => text,
                Err(err) => {
                    // Nothing ran in the worktree yet: it goes, its (empty) branch stays.
                    if let Some(tree) = worktree {
                        tree.finish(&launch.label).await;
                    }
                    return Err(err.into());
                }
            },
        };
        let agent_dir = journal
            .parent()
            .map_or_else(|| self.session.dir.clone(), std::path::Path::to_path_buf);
        let mut ctx = ToolContext::new(&cwd, &agent_dir);
        // Subagents act where the session acts (a remote environment too), unless placed.
        ctx.environment = environment.clone();
        if placed.is_none() {
            ctx.additional_dirs
                .clone_from(&self.base_ctx.additional_dirs);
        }
        ctx.skill_roots.clone_from(&self.base_ctx.skill_roots);
        ctx.env.clone_from(&self.base_ctx.env);
        ctx.settings = self.base_ctx.settings.clone();
        if ctx.settings.kill_grace != kimi_tools::ToolSettings::default().kill_grace {
            // `[background] kill_grace_period_ms` for this agent's tasks too.
            ctx.tasks = kimi_tools::tasks::TaskManager::open(
                agent_dir.join("tasks"),
                ctx.settings.kill_grace,
            );
        }
        if let Some(hooks) = &self.hooks {
            hooks.watch_tasks(&ctx.tasks);
        }
        // A resumed subagent continues with the todo list its journal last recorded.
        ctx.todos.set(restored.todos.clone());
        // Subagents never delegate further, so chains end here.
        let builtins = kimi_tools::builtin::default_registry();
        let available: Vec<Arc<dyn kimi_tools::Tool>> = builtins
            .names()
            .iter()
            .filter_map(|n| builtins.get(n))
            .chain(self.extension_tools.iter().cloned())
            .filter(|t| t.name() != "Agent" && self.tools_allowed.allows(t.name()))
            .collect();
        let mut registry = registry_for(&profile, &available);
        if let Some(late) = &self.late_tools {
            crate::profile::attach_late_for(&mut registry, &profile, late, &self.tools_allowed);
        }
        let (provider, params, max_context_tokens) = match &launch.model {
            Some(model) => (
                model.provider.clone(),
                model.params.clone(),
                model.max_context_tokens,
            ),
            // The caller's model as it is now (it may have switched with `/model`).
            None => match self.caller() {
                Some(caller) => {
                    let model = caller.config.model.get();
                    (model.provider, model.params, model.max_context_tokens)
                }
                None => (
                    self.provider.clone(),
                    self.params.clone(),
                    self.max_context_tokens,
                ),
            },
        };
        let config = AgentConfig {
            session_id: self.session.state.id.clone(),
            system_prompt: crate::prompt::SystemPrompt::new(system_prompt.clone()),
            model: ModelSlot::new(ActiveModel::new(provider, params, max_context_tokens)),
            models: None,
            max_steps_per_turn: self.max_steps_per_turn,
            retry: self.retry.clone(),
            tools: Arc::new(registry),
            tool_ctx: Arc::new(ctx),
            permissions,
            hooks: self.hooks.clone(),
            session_meta: None,
            plan: None,
            goal: None,
            compaction: self.compaction,
            // The parent's scan around its Agent call checkpoints what a subagent changes.
            checkpoints: None,
            // Subagents keep the instructions they started with (the reference watches the
            // main agent's).
            instructions: None,
            // Subagents get every tool's schema up front (disclosure is the main agent's).
            tool_select: None,
        };
        let spawned = spawn_agent(config, log, Vec::new());
        if restored.system_prompt.is_none() {
            let mut records = vec![rec::profile_bind(
                &profile.name,
                profile.file(),
                &system_prompt,
            )];
            // The fork seed is journaled as the agent's own history, so a resume keeps it.
            records.extend(seed.into_iter().map(rec::message));
            if let Some(record) = new_bind {
                let reminder = crate::session::environment_reminder(&record);
                records.push(kimi_protocol::RecordPayload::EnvironmentBind(record));
                records.push(rec::message(reminder));
            }
            spawned.handle.runtime().commit(records);
        }
        let mut follower = Follower {
            host: self,
            handle: spawned.handle.clone(),
            events: spawned.events,
            usage: Usage::default(),
            last_text: String::new(),
            forwarded: Vec::new(),
        };
        if let Some(hooks) = &self.hooks {
            // Awaited (surface.md §6.3): the hook sees the task before the subagent works.
            let result = hooks
                .fire(crate::hooks::HookEventData::SubagentStart {
                    agent_name: profile.name.clone(),
                    prompt: prompt.clone(),
                })
                .await;
            for warning in result.warnings {
                tracing::warn!("{warning}");
            }
        }
        let mut input = prompt;
        // `git` runs on this machine, so only an agent working here gets its context.
        if profile.git_context && restored.system_prompt.is_none() && environment.is_local() {
            input = format!("{}{input}", crate::profile::git_context(&cwd).await);
        }
        let mut status = follower.turn(input, &cancel).await;
        if status == RunStatus::Completed
            && profile.summary_policy
            && follower.last_text.trim().chars().count() < SUMMARY_MIN_CHARS
        {
            let first = std::mem::take(&mut follower.last_text);
            status = follower
                .turn(SUMMARY_CONTINUATION.to_owned(), &cancel)
                .await;
            if follower.last_text.trim().is_empty() {
                follower.last_text = first;
            }
        }
        for id in &follower.forwarded {
            self.parent.forget_approval(id);
        }
        if let Some(hooks) = &self.hooks {
            hooks.fire_and_forget(crate::hooks::HookEventData::SubagentStop {
                agent_name: profile.name.clone(),
                response: follower.last_text.clone(),
            });
        }
        follower.handle.send(Op::Shutdown);
        drop(follower.handle);
        // The runner releases the journal lock when it ends; a resume right after must find
        // it free.
        let _ = spawned.join.await;
        let worktree = match worktree {
            Some(tree) => {
                let message = format!("{agent_id}: {}", launch.label.trim());
                Some(tree.finish(message.trim_end_matches(": ")).await)
            }
            None => None,
        };
        Ok(RunOutcome {
            agent_id,
            profile: profile.name,
            status,
            text: follower.last_text,
            usage: follower.usage,
            model: launch.model.map(|m| m.alias),
            worktree,
            environment: placed.map(|b| b.environment.info().id.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::is_subagent_id;

    #[test]
    fn only_agent_n_ids_can_be_resumed() {
        for ok in ["agent-0", "agent-17"] {
            assert!(is_subagent_id(ok), "{ok}");
        }
        for bad in [
            "main",
            "agent-",
            "agent-1a",
            "../../other/agents/main",
            "/tmp/x",
            "agent-1/../../main",
            "",
        ] {
            assert!(!is_subagent_id(bad), "{bad}");
        }
    }
}
