//! Subagents (surface.md §8.3): agents a main agent starts with the `Agent` and `AgentSwarm`
//! tools. Each has its own id (`agent-0`, `agent-1`, …), its own journal under the session's
//! `agents/<id>/`, the prompt and tools of its profile, and the caller's provider, permission
//! policy and hooks. Its history is its own (or a fork of the caller's); it can be resumed
//! by id, run on a pooled model ([`pool`]) and be isolated in a git worktree ([`worktree`]).

mod placement;
pub mod pool;
mod ramp;
mod run;
mod swarm;
mod tool;
pub mod worktree;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use kimi_llm::{ModelParams, Provider, RetryPolicy};
use kimi_store::{FsyncPolicy, Session};
use kimi_tools::{Tool, ToolContext};

use crate::engine::hooks::EngineHooks;
use crate::engine::runtime::{FrontLink, PermissionPolicy, Runtime};
use crate::profile::{Profile, ProfileCatalog, PromptEnv};

pub use pool::{ModelPool, PoolModel};
pub use ramp::MAX_CONCURRENCY_ENV;
pub use run::{Isolation, Launch, RunOutcome, RunStatus, Target};
pub use swarm::{AgentSwarmTool, ITEM_PLACEHOLDER, MAX_SWARM_AGENTS, SwarmError, swarm_veto};
pub use tool::AgentTool;

/// Everything a subagent inherits from the session and its caller.
pub struct SubagentHost {
    pub session: Session,
    pub prompt_env: PromptEnv,
    pub provider: Arc<dyn Provider>,
    pub params: ModelParams,
    pub max_context_tokens: u64,
    pub max_steps_per_turn: Option<u32>,
    pub retry: RetryPolicy,
    pub compaction: kimi_context::compaction::trigger::CompactionConfig,
    /// `[tools] enabled/disabled`: which tools exist at all, for subagents as for the main agent.
    pub tools_allowed: kimi_config::Tools,
    pub permissions: Arc<dyn PermissionPolicy>,
    pub hooks: Option<Arc<EngineHooks>>,
    /// The caller's tool context: subagents take its environment, directories and settings.
    pub base_ctx: ToolContext,
    /// Tools beyond the built-ins (MCP, Skill) a subagent's profile may allow.
    pub extension_tools: Vec<Arc<dyn Tool>>,
    /// Tools that arrive after the session opened (MCP servers connecting in the background).
    pub late_tools: Option<kimi_tools::LateTools>,
    pub catalog: ProfileCatalog,
    /// The caller's profile (its `subagents` allowlist decides what it may start).
    pub caller: Profile,
    pub fsync: FsyncPolicy,
    next_id: AtomicU64,
    running: Mutex<HashSet<String>>,
    /// The caller's front-end link: approvals a subagent needs are asked through it.
    parent: Arc<FrontLink>,
    /// `[subagent] models`: what the `model` parameter may pick.
    pub pool: ModelPool,
    /// The declared environments `Agent`/`AgentSwarm` may place subagents on.
    pub environments: Option<Arc<dyn crate::session::EnvironmentCatalog>>,
    /// The caller's runtime (set once it exists), whose context a `fork` copies.
    caller_runtime: OnceLock<Weak<Runtime>>,
}

/// Why a subagent could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SubagentError {
    #[error(transparent)]
    Log(#[from] crate::engine::log::LogError),
    #[error(transparent)]
    Prompt(#[from] crate::prompt::PromptError),
    #[error(
        "agent `{0}` does not exist in this session; pass an agent_id an earlier Agent call returned, or omit `resume` to start a new one"
    )]
    NoSuchAgent(String),
    #[error("agent `{0}` is already running; wait for it to finish before resuming it")]
    Busy(String),
    #[error(
        "agent `{agent}` was bound to profile `{profile}`, which no longer exists; start a new agent instead"
    )]
    ProfileGone { agent: String, profile: String },
    #[error(transparent)]
    Worktree(#[from] worktree::WorktreeError),
    #[error(
        "`fork` copies the caller's context, and this caller has none to copy; call without `fork`"
    )]
    NoCallerContext,
    #[error(
        "this session's permission policy cannot be moved into a worktree, so the isolated agent was not started (its branch {0} is empty); run without `isolation`"
    )]
    PolicyNotMovable(String),
    #[error(
        "`isolation: worktree` needs the workspace on this machine, and this session's tools run on environment `{0}`; run without `isolation`"
    )]
    RemoteWorktree(String),
    /// The environment it was to run on cannot be reached; nothing ran on this machine instead.
    #[error("{0}")]
    Environment(String),
}

/// The fields of a `SubagentHost` the session fills in.
pub struct HostParts {
    pub session: Session,
    pub prompt_env: PromptEnv,
    pub provider: Arc<dyn Provider>,
    pub params: ModelParams,
    pub max_context_tokens: u64,
    pub max_steps_per_turn: Option<u32>,
    pub retry: RetryPolicy,
    pub compaction: kimi_context::compaction::trigger::CompactionConfig,
    /// `[tools] enabled/disabled`: which tools exist at all, for subagents as for the main agent.
    pub tools_allowed: kimi_config::Tools,
    pub permissions: Arc<dyn PermissionPolicy>,
    pub hooks: Option<Arc<EngineHooks>>,
    pub base_ctx: ToolContext,
    pub extension_tools: Vec<Arc<dyn Tool>>,
    pub late_tools: Option<kimi_tools::LateTools>,
    pub catalog: ProfileCatalog,
    pub caller: Profile,
    pub fsync: FsyncPolicy,
    /// The caller's link to its front ends (made before the caller's runtime).
    pub parent: Arc<FrontLink>,
    pub pool: ModelPool,
    pub environments: Option<Arc<dyn crate::session::EnvironmentCatalog>>,
}

impl SubagentHost {
    pub fn new(parts: HostParts) -> Arc<SubagentHost> {
        // Ids continue after the highest one on disk, so a resumed session never reuses one.
        let next = std::fs::read_dir(parts.session.dir.join("agents"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix("agent-"))
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .map(|n| n + 1)
            .max()
            .unwrap_or(0);
        Arc::new(SubagentHost {
            session: parts.session,
            prompt_env: parts.prompt_env,
            provider: parts.provider,
            params: parts.params,
            max_context_tokens: parts.max_context_tokens,
            max_steps_per_turn: parts.max_steps_per_turn,
            compaction: parts.compaction,
            tools_allowed: parts.tools_allowed,
            retry: parts.retry,
            permissions: parts.permissions,
            hooks: parts.hooks,
            base_ctx: parts.base_ctx,
            extension_tools: parts.extension_tools,
            late_tools: parts.late_tools,
            catalog: parts.catalog,
            caller: parts.caller,
            fsync: parts.fsync,
            next_id: AtomicU64::new(next),
            running: Mutex::new(HashSet::new()),
            parent: parts.parent,
            pool: parts.pool,
            environments: parts.environments,
            caller_runtime: OnceLock::new(),
        })
    }

    /// The caller's runtime, while it lives.
    pub(crate) fn caller(&self) -> Option<Arc<Runtime>> {
        self.caller_runtime.get().and_then(Weak::upgrade)
    }

    /// The caller's runtime, once it is spawned (a `fork` copies its context).
    pub fn attach_caller(&self, runtime: &Arc<Runtime>) {
        if self.caller_runtime.set(Arc::downgrade(runtime)).is_err() {
            tracing::warn!("the subagent host's caller was attached twice; the first one stays");
        }
    }

    fn new_agent_id(&self) -> String {
        format!("agent-{}", self.next_id.fetch_add(1, Ordering::SeqCst))
    }

    /// The profiles the caller may start, in catalog order.
    pub fn allowed_types(&self) -> Vec<&Profile> {
        self.catalog
            .profiles()
            .iter()
            .filter(|p| {
                p.name != crate::profile::DEFAULT_MAIN && self.caller.allows_subagent(&p.name)
            })
            .collect()
    }

    fn journal_path(&self, agent_id: &str) -> PathBuf {
        self.session.journal_path(agent_id)
    }

    /// Mark `agent_id` running; `false` when it already is.
    fn claim(&self, agent_id: &str) -> bool {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(agent_id.to_owned())
    }

    fn release(&self, agent_id: &str) {
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(agent_id);
    }
}
