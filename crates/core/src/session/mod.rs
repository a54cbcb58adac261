//! Opening a session: a new one in the working directory, a given id, or the newest one of the
//! directory; its main agent's journal replayed, the system prompt rendered (or reused from the
//! journal so a resumed session sends the same bytes and keeps the provider's cache warm), the
//! built-in tools registered, and the agent started.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kimi_llm::{ModelParams, Provider, RetryPolicy};
use kimi_store::{FsyncPolicy, Home, JournalOptions, MAIN_AGENT, Session, SessionStore};
use kimi_tools::ToolContext;

use crate::cron::{CronOptions, CronService};
use crate::engine::agent::{SpawnedAgent, spawn_linked};
use crate::engine::log::{AgentLog, Restored};
use crate::engine::model::{ActiveModel, ModelResolver, ModelSlot};
use crate::engine::permissions::ChainPolicy;
use crate::engine::records::profile_bind;
use crate::engine::runtime::{AgentConfig, FrontLink, PermissionPolicy};
use crate::hooks::HookEventData;
use crate::permission::{PermissionState, SessionApprovals, Workspace};
use crate::plan::PlanMode;
use crate::profile::{AgentDirs, ProfileCatalog, PromptEnv, render_profile_prompt};
use crate::subagent::{HostParts, SubagentHost};

mod environment;
mod parts;

pub use environment::{EnvironmentBinding, EnvironmentSwitch, environment_reminder};
use parts::{
    apply_tool_settings, choose_profile, compaction_config, expand_dir, main_registry,
    open_checkpoints, restored_model, restored_profile, sandbox_launcher, session_hooks,
};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Store(#[from] kimi_store::StoreError),
    #[error(transparent)]
    Log(#[from] crate::engine::log::LogError),
    #[error(transparent)]
    Prompt(#[from] crate::prompt::PromptError),
    #[error(
        "no session {0} was found under {1}; list sessions with `kimi-rs -S` or start a new one. \
         If its directory still holds its journal but lost state.json, run `kimi-rs sessions \
         recover {0}`"
    )]
    NotFound(String, PathBuf),
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    /// The session's execution environment cannot be reached (or this front end cannot reach
    /// environments); nothing runs on this machine instead.
    #[error("{0}")]
    Environment(String),
}

/// The declared environments subagents can be placed on (`Agent`'s `environment`,
/// `AgentSwarm`'s `environments`); the front end implements it over `[environments]`.
pub trait EnvironmentCatalog: Send + Sync {
    /// The declared ids, sorted (read when asked, so edited declarations apply).
    fn ids(&self) -> Vec<String>;
    /// Connects `id` (one shared connection per environment per process; blocks up to the
    /// connect bound) bound to its `defaultCwd`.
    fn bind(&self, id: &str) -> Result<EnvironmentBinding, String>;
}

/// Connects the environment a resumed session's journal names (`environment.bind`).
pub type EnvironmentResolver = Arc<
    dyn Fn(
            &kimi_protocol::record::EnvironmentBind,
        ) -> Result<Arc<dyn kimi_tools::Environment>, String>
        + Send
        + Sync,
>;

/// The id an `environment.bind` record uses for this machine (after a switch back).
pub const LOCAL_ENVIRONMENT: &str = "local";

/// Which profile the main agent of a new session is bound to (a resumed session keeps the one
/// its journal names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AgentChoice {
    /// `agent`, or a custom file that overrides it.
    #[default]
    Default,
    /// `--agent <name>`: a built-in or discovered profile.
    Named(String),
    /// `--agent-file <path>`: a custom agent file, which must be valid.
    File(PathBuf),
}

/// Which session to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    New,
    Id(String),
    /// The newest session of the working directory, or a new one when there is none.
    Latest,
}

pub struct SessionSetup {
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub resume: Resume,
    pub provider: Arc<dyn Provider>,
    pub params: ModelParams,
    pub max_context_tokens: u64,
    pub max_steps_per_turn: Option<u32>,
    pub retry: RetryPolicy,
    pub permissions: Arc<dyn PermissionPolicy>,
    /// When set, the permission chain decides (with this mode and these rules) instead of
    /// `permissions`; approvals remembered for the session are restored from the journal.
    pub permission_chain: Option<PermissionState>,
    pub additional_dirs: Vec<PathBuf>,
    /// Environment for tools' child processes.
    pub tool_env: Vec<(String, String)>,
    pub fsync: FsyncPolicy,
    /// Tools, skills and other additions the front end brings (MCP servers, skill catalog).
    pub extensions: SessionExtensions,
    /// The main agent's profile (new sessions only).
    pub agent: AgentChoice,
    /// The parsed config.toml (the front end reads it once); hooks, the sandbox, cron, tool
    /// settings, `[tools]`, `extra_agent_dirs` and compaction thresholds come from here.
    pub config: Arc<kimi_config::Config>,
    /// `[subagent] models`, resolved by the front end (it builds providers).
    pub model_pool: crate::subagent::ModelPool,
    /// What `/model` calls `provider` (`None`: its model id).
    pub model_alias: Option<String>,
    /// The models the session may switch to (`Op::SetModel`); `None` = it cannot switch.
    pub models: Option<Arc<dyn ModelResolver>>,
}

/// Builds tools for the session with the given id.
pub type SessionToolFactory = Arc<dyn Fn(&str) -> Vec<Arc<dyn kimi_tools::Tool>> + Send + Sync>;

/// What a front end adds to a session beyond the built-in tools.
#[derive(Default, Clone)]
pub struct SessionExtensions {
    /// Registered after the built-in tools (MCP tools); a tool with a built-in's name replaces
    /// it.
    pub tools: Vec<Arc<dyn kimi_tools::Tool>>,
    /// Tools that need the session id (the Skill tool fills `${KIMI_SESSION_ID}`), built once
    /// the session is open and registered like `tools`.
    pub session_tools: Vec<SessionToolFactory>,
    /// The skills listing rendered into the system prompt's `skills` variable.
    pub skills_prompt: String,
    /// Skill roots: readable like the workspace (never writable).
    pub skill_roots: Vec<PathBuf>,
    /// Tools that join after the session opened (MCP servers connecting in the background):
    /// each agent's registry offers those its profile allows from the next request on.
    pub late_tools: Option<kimi_tools::LateTools>,
    /// A new session's execution environment (`--environment`); `None` = this machine.
    pub environment: Option<EnvironmentBinding>,
    /// Reconnects the environment a resumed session is bound to. Without it such a session
    /// refuses to open: its tools must never fall back to this machine.
    pub environment_resolver: Option<EnvironmentResolver>,
    /// The declared environments subagents may be placed on; `None` = only the session's.
    pub environments: Option<Arc<dyn EnvironmentCatalog>>,
    /// Move a resumed session's tools elsewhere (journaled with a reminder).
    pub environment_switch: Option<EnvironmentSwitch>,
    /// Hooks contributed by plugins (bound to their plugin root with
    /// [`crate::hooks::HookDef::for_plugin`]); they run next to config.toml's `[[hooks]]`.
    pub hooks: Vec<crate::hooks::HookDef>,
    /// Plugins' prompt text (`systemPrompt`, `systemPromptPath`, `sessionStart.skill`), the
    /// system prompt's `plugin_sections` variable.
    pub plugin_sections: String,
    /// Agent folders plugins contribute (user-level agent roots).
    pub agent_dirs: Vec<PathBuf>,
    /// A front end's view over this machine's environment (ACP: files read and written through
    /// the editor, so its unsaved buffers count). Not applied to a remote environment, whose
    /// files the editor does not have.
    pub wrap_environment: Option<EnvironmentWrap>,
}

/// Wraps the environment a session's tools act on (see [`SessionExtensions::wrap_environment`]).
pub type EnvironmentWrap =
    Arc<dyn Fn(Arc<dyn kimi_tools::Environment>) -> Arc<dyn kimi_tools::Environment> + Send + Sync>;

impl std::fmt::Debug for SessionExtensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionExtensions")
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("skill_roots", &self.skill_roots)
            .field("late_tools", &self.late_tools)
            .field("hooks", &self.hooks.len())
            .field("agent_dirs", &self.agent_dirs)
            .finish_non_exhaustive()
    }
}

pub struct OpenedSession {
    pub session: Session,
    pub resumed: bool,
    pub restored: Restored,
    pub agent: SpawnedAgent,
    /// Problems found while loading configuration (invalid hooks, skipped agent files), for
    /// the front end to show.
    pub warnings: Vec<String>,
    /// The profile the main agent is bound to.
    pub profile: crate::profile::Profile,
    /// The session's cron jobs and scheduler; `None` when `KIMI_DISABLE_CRON` is set.
    pub cron: Option<Arc<CronService>>,
}

/// The executable that can act as the sandbox helper (`kimi-rs __sandbox-exec`). The binary
/// registers itself at start-up; library users that never do simply cannot sandbox Bash.
static SANDBOX_HELPER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

pub fn register_sandbox_helper(exe: PathBuf) {
    let _ = SANDBOX_HELPER.set(exe);
}

/// Keeps `state.json` (and the index) current as prompts arrive: the first prompt names an
/// untitled session, every prompt becomes `lastPrompt` and bumps `updatedAt`.
struct StoredMeta {
    store: SessionStore,
    session: std::sync::Mutex<Session>,
    /// `[experimental] auto_session_title`: the model titles the session after its first turn.
    auto_title: bool,
    /// A title request was started (one per session and launch).
    title_asked: std::sync::atomic::AtomicBool,
}

impl crate::engine::runtime::SessionMeta for StoredMeta {
    fn prompt_started(&self, prompt: &str) {
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let line = prompt
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        if session.state.title.is_none() && !line.is_empty() {
            session.state.title = Some(line.chars().take(60).collect());
            session.state.title_kind = Some("replaceable".to_owned());
        }
        session.state.last_prompt = Some(prompt.chars().take(200).collect());
        if let Err(err) = self.store.update(&mut session) {
            tracing::warn!("cannot update the session metadata: {err}");
        }
    }

    fn title(&self) -> Option<String> {
        self.session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .state
            .title
            .clone()
    }

    fn set_title(&self, title: &str) -> Result<(), String> {
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        session.state.title = Some(title.to_owned());
        session.state.title_kind = Some("custom".to_owned());
        self.store
            .update(&mut session)
            .map_err(|err| format!("cannot save the session's title: {err}"))
    }

    fn wants_generated_title(&self) -> bool {
        if !self.auto_title {
            return false;
        }
        let replaceable = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .state
            .title_kind
            .as_deref()
            == Some("replaceable");
        replaceable
            && !self
                .title_asked
                .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    fn set_generated_title(&self, title: &str) -> Result<bool, String> {
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if session.state.title_kind.as_deref() != Some("replaceable") {
            return Ok(false);
        }
        session.state.title = Some(title.to_owned());
        session.state.title_kind = Some("generated".to_owned());
        self.store
            .update(&mut session)
            .map(|()| true)
            .map_err(|err| format!("cannot save the session's title: {err}"))
    }
}

/// The newest non-archived session of `cwd` that has had a prompt (sessions opened and left
/// empty are not worth continuing).
pub fn latest_session(store: &SessionStore, cwd: &Path) -> Option<(String, String)> {
    let key = kimi_store::workdir_key(cwd);
    let mut entries = store.index().list_for(&key).ok()?;
    entries.retain(|e| !e.archived && e.title.is_some());
    entries.sort_by_key(|e| e.updated_at);
    entries
        .last()
        .map(|e| (e.workdir_key.clone(), e.id.clone()))
}

fn find_session(store: &SessionStore, id: &str) -> Option<(String, String)> {
    let entries = store.index().list().ok()?;
    entries
        .into_iter()
        .find(|e| e.id == id)
        .map(|e| (e.workdir_key, e.id))
}

/// Where agent files are looked for: the standard roots plus `extra_agent_dirs` (user-level;
/// `~` expanded, relative ones from `cwd`).
pub fn agent_dirs(home: &Path, cwd: &Path, config: &kimi_config::Config) -> AgentDirs {
    let mut dirs = AgentDirs::standard(home, std::env::home_dir().as_deref(), cwd);
    for dir in &config.extra_agent_dirs {
        dirs.user.push(expand_dir(dir, cwd));
    }
    dirs
}

pub fn open_session(mut setup: SessionSetup) -> Result<OpenedSession, SessionError> {
    let store = SessionStore::new(Home::new(&setup.home));
    let explicit = match &setup.agent {
        AgentChoice::File(path) => Some(setup.cwd.join(path)),
        AgentChoice::Default | AgentChoice::Named(_) => None,
    };
    let mut dirs = agent_dirs(&setup.home, &setup.cwd, &setup.config);
    dirs.user
        .extend(setup.extensions.agent_dirs.iter().cloned());
    let (catalog, mut warnings) = ProfileCatalog::load(&dirs, explicit.as_deref())?;
    let target = match &setup.resume {
        Resume::New => None,
        Resume::Id(id) => Some(
            find_session(&store, id)
                .ok_or_else(|| SessionError::NotFound(id.clone(), setup.home.clone()))?,
        ),
        Resume::Latest => latest_session(&store, &setup.cwd),
    };
    // A bad `--agent`/`--agent-file` fails before a session directory is created.
    let chosen = match target {
        Some(_) => None,
        None => Some(choose_profile(&catalog, &setup.agent, explicit.as_deref())?),
    };
    let (session, resumed) = match target {
        Some((key, id)) => {
            let session = store.open(&key, &id)?;
            session.ensure_resumable()?;
            (session, true)
        }
        None => (store.create(&setup.cwd)?, false),
    };
    // Lines logged while the session opens, and by its agents (their spans nest in this one),
    // go to `<session-dir>/logs/` as well as to the global log.
    let span = tracing::info_span!("session", session_id = %session.state.id, session_dir = %session.dir.display());
    let _entered = span.enter();
    let journal = session.journal_path(MAIN_AGENT);
    let options = JournalOptions { fsync: setup.fsync };
    let (log, restored) = AgentLog::open(&journal, MAIN_AGENT, options)?;
    // The directories `/add-dir` remembered in `.kimi-code/local.toml` join `--add-dir`'s.
    let (local_dirs, local_warnings) =
        crate::local_config::read_dirs(&setup.cwd, std::env::home_dir().as_deref());
    warnings.extend(local_warnings);
    for dir in local_dirs {
        if !setup.additional_dirs.contains(&dir) {
            setup.additional_dirs.push(dir);
        }
    }
    // Where the tools act: the journaled binding of a resumed session (reconnected), the
    // requested environment of a new one, or this machine.
    let switch = setup
        .extensions
        .environment_switch
        .clone()
        .filter(|_| resumed);
    let (binding, new_bind) = match (&restored.environment, &setup.extensions.environment) {
        _ if switch.is_some() => match switch {
            Some(EnvironmentSwitch::To(bound)) => (Some(bound.clone()), Some(bound.record())),
            Some(EnvironmentSwitch::Local) | None => {
                let local = kimi_tools::environment::Local::shared();
                let info = local.info();
                let record = kimi_protocol::record::EnvironmentBind {
                    id: LOCAL_ENVIRONMENT.to_owned(),
                    kind: info.kind.clone(),
                    cwd: setup.cwd.display().to_string(),
                    os: info.os.clone(),
                    arch: info.arch.clone(),
                    shell: info.shell.clone(),
                };
                (None, Some(record))
            }
        },
        // Switched back to this machine earlier.
        (Some(record), _) if record.id == LOCAL_ENVIRONMENT => (None, None),
        (Some(record), _) => {
            let Some(resolver) = &setup.extensions.environment_resolver else {
                return Err(SessionError::Environment(format!(
                    "session {} runs its tools on environment `{}`, which this front end cannot connect; \
                     resume it with `kimi-rs -S {}`",
                    session.state.id, record.id, session.state.id
                )));
            };
            let environment = resolver(record).map_err(SessionError::Environment)?;
            let cwd = PathBuf::from(&record.cwd);
            (Some(EnvironmentBinding { environment, cwd }), None)
        }
        (None, Some(bound)) if !resumed => (Some(bound.clone()), Some(bound.record())),
        (None, Some(bound)) => {
            warnings.push(format!(
                "session {} was started on this machine and keeps running here; environment `{}` was not used",
                session.state.id,
                bound.environment.info().id
            ));
            (None, None)
        }
        (None, None) => (None, None),
    };
    let tool_cwd = binding
        .as_ref()
        .map_or_else(|| setup.cwd.clone(), |b| b.cwd.clone());
    let remote = binding.is_some();
    let profile = match chosen {
        Some(profile) => profile,
        None => {
            if setup.agent != AgentChoice::Default {
                warnings.push(
                    "a resumed session keeps the agent it was started with; the requested agent was ignored"
                        .to_owned(),
                );
            }
            restored_profile(&catalog, restored.profile.as_ref(), &mut warnings)
        }
    };
    tracing::info!(
        resumed,
        cwd = %setup.cwd.display(),
        provider = setup.provider.name(),
        model = setup.provider.model(),
        profile = %profile.name,
        "session {}",
        if resumed { "resumed" } else { "opened" }
    );
    let prompt_env = PromptEnv {
        home: setup.home.clone(),
        cwd: tool_cwd.clone(),
        target: binding.as_ref().map(|b| b.environment.info().clone()),
        additional_dirs: setup.additional_dirs.clone(),
        skills: setup.extensions.skills_prompt.clone(),
        plugin_sections: setup.extensions.plugin_sections.clone(),
    };
    // A resumed session keeps its journaled prompt (the provider's prompt cache stays warm)
    // unless the workspace directories changed since (`/add-dir`, `local.toml`, `--add-dir`):
    // then the prompt is rendered again so the model is told the directories it may use.
    let (system_prompt, bind) = match &restored.system_prompt {
        Some(text) => {
            let now: Vec<String> = setup
                .additional_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            let listed = crate::prompt::template::listed_dirs(text);
            if listed == now {
                (text.clone(), false)
            } else {
                let fresh = render_profile_prompt(&profile, &prompt_env, true)?;
                // A custom prompt without the directory section lists none either way.
                if crate::prompt::template::listed_dirs(&fresh) == listed {
                    (text.clone(), false)
                } else {
                    tracing::info!(before = ?listed, now = ?now, "workspace directories changed; system prompt rendered again");
                    (fresh, true)
                }
            }
        }
        None => (render_profile_prompt(&profile, &prompt_env, true)?, true),
    };
    // AGENTS.md as it is now is the baseline: edits made while no kimi-rs ran are not
    // announced (as in the reference), edits from here on rebuild the prompt.
    let instructions = {
        let (profile, env) = (profile.clone(), prompt_env.clone());
        let (name, file) = (profile.name.clone(), profile.file().map(Path::to_owned));
        crate::prompt::Instructions::new(
            &setup.home,
            std::env::home_dir().as_deref(),
            &setup.cwd,
            &setup.additional_dirs,
            (&name, file.as_deref()),
            Box::new(move || {
                render_profile_prompt(&profile, &env, true).map_err(|err| err.to_string())
            }),
        )
    };
    let agent_dir = journal
        .parent()
        .map_or_else(|| session.dir.clone(), Path::to_path_buf);
    let mut ctx = ToolContext::new(&tool_cwd, &agent_dir);
    match (&binding, &setup.extensions.wrap_environment) {
        (Some(binding), _) => ctx.environment = binding.environment.clone(),
        (None, Some(wrap)) => ctx.environment = wrap(ctx.environment.clone()),
        (None, None) => {}
    }
    // The todo list the active branch last journaled (empty for a new session).
    ctx.todos.set(restored.todos.clone());
    ctx.additional_dirs = setup.additional_dirs.clone();
    ctx.env = setup.tool_env.clone();
    ctx.skill_roots = setup.extensions.skill_roots.clone();
    apply_tool_settings(&mut ctx, &setup.config.background, &agent_dir);
    // `--plan` / `default_plan_mode` turn plan mode on at start; a resumed session also keeps
    // the state its journal last recorded.
    let start_in_plan = setup
        .permission_chain
        .as_ref()
        .is_some_and(|state| state.mode.plan);
    let plan = Arc::new(PlanMode::new(
        &agent_dir,
        Workspace::new(
            &tool_cwd,
            &setup.additional_dirs,
            std::env::home_dir().as_deref(),
        ),
        restored.plan.clone(),
    ));
    let permissions: Arc<dyn PermissionPolicy> = match setup.permission_chain {
        Some(mut state) => {
            state.session = SessionApprovals::from_records(restored.approvals.iter());
            // The floor guards kimi-rs's home (but the session's plan files) and, with the
            // sandbox configured, keeps the file tools inside the sandbox's roots even where
            // the kernel cannot confine Bash.
            let sandbox_on = matches!(
                crate::permission::sandbox::sandbox_mode(setup.config.sandbox.mode.as_deref()),
                Ok(crate::permission::sandbox::SandboxMode::WorkspaceWrite)
            );
            let workspace = Workspace::new(
                &tool_cwd,
                &setup.additional_dirs,
                std::env::home_dir().as_deref(),
            )
            .with_floor(&setup.home, &session.dir, sandbox_on)
            .on_environment(&binding.as_ref().map_or_else(
                || LOCAL_ENVIRONMENT.to_owned(),
                |b| b.environment.info().id.clone(),
            ));
            Arc::new(ChainPolicy::new(state, workspace))
        }
        None => setup.permissions,
    };
    let cron_options = CronOptions::from_config(&setup.config.cron);
    let cron =
        (!cron_options.disabled).then(|| CronService::new(cron_options, restored.cron.clone()));
    let (hooks, hook_warnings) = session_hooks(
        &setup.config,
        &setup.extensions.hooks,
        &setup.cwd,
        &session.state.id,
    );
    warnings.extend(hook_warnings);
    if let Some(hooks) = &hooks {
        hooks.watch_tasks(&ctx.tasks);
    }
    match sandbox_launcher(
        &setup.home,
        &setup.cwd,
        &setup.additional_dirs,
        &setup.config,
    ) {
        // The sandbox helper confines processes of this machine; the target's are its own.
        Ok((launcher, _)) if remote && !launcher.is_empty() => warnings.push(
            "[sandbox] does not apply on a remote environment: Bash there runs with the permission chain only"
                .to_owned(),
        ),
        Ok(_) if remote => {}
        Ok((launcher, missing)) => {
            ctx.settings.launcher = launcher;
            warnings.extend(missing);
        }
        Err(warning) => warnings.push(warning),
    }
    let compaction = compaction_config(&setup.config.loop_control);
    // File checkpoints snapshot this machine's workspace; a remote session's files are not here.
    let checkpoints = if remote {
        if setup.config.checkpoint.enabled() {
            tracing::info!(
                "file checkpoints are off: the session's tools run on a remote environment"
            );
        }
        None
    } else {
        open_checkpoints(
            &setup.config.checkpoint,
            &setup.home,
            &setup.cwd,
            &setup.additional_dirs,
            &session.dir,
            &restored,
        )
    };
    let mut extension_tools = setup.extensions.tools.clone();
    for factory in &setup.extensions.session_tools {
        extension_tools.extend(factory(&session.state.id));
    }
    // The main agent's link to its front ends, made first: the subagent host and the question
    // broker hold it from construction.
    let (link, events) = FrontLink::new();
    let goals = Arc::new(
        crate::goal::GoalService::new(restored.goal.clone(), link.events()).with_queue(
            crate::goal::queue::GoalQueue::for_workspace(&setup.home, &setup.cwd),
        ),
    );
    let subagents = SubagentHost::new(HostParts {
        session: session.clone(),
        prompt_env,
        provider: setup.provider.clone(),
        params: setup.params.clone(),
        max_context_tokens: setup.max_context_tokens,
        max_steps_per_turn: setup.max_steps_per_turn,
        retry: setup.retry.clone(),
        compaction,
        tools_allowed: setup.config.effective_tools(),
        permissions: permissions.clone(),
        hooks: hooks.clone(),
        base_ctx: ctx.clone(),
        extension_tools: extension_tools.clone(),
        late_tools: setup.extensions.late_tools.clone(),
        catalog,
        caller: profile.clone(),
        fsync: setup.fsync,
        parent: link.clone(),
        pool: setup.model_pool.clone(),
        environments: setup.extensions.environments.clone(),
    });
    warnings.extend(setup.model_pool.warnings.iter().cloned());
    // After the subagent host copied the context: subagents cannot reach the user.
    ctx.questions = Some(crate::engine::questions::QuestionBroker::host(
        link.events(),
    ));
    // The goal tools belong to the main agent only (subagents got `extension_tools` above).
    let mut main_tools = extension_tools.clone();
    main_tools.extend(crate::goal::tools::goal_tools(&goals));
    let mut model = ActiveModel {
        alias: setup
            .model_alias
            .clone()
            .unwrap_or_else(|| setup.provider.model().to_owned()),
        provider: setup.provider,
        params: setup.params,
        max_context_tokens: setup.max_context_tokens,
        requested_effort: None,
    };
    if let Some(set) = &restored.model {
        match restored_model(setup.models.as_deref(), set, &model) {
            Ok(restored) => model = restored,
            Err(warning) => warnings.push(warning),
        }
    }
    let mut registry = main_registry(
        &profile,
        &main_tools,
        setup.extensions.late_tools.as_ref(),
        &subagents,
        &plan,
        cron.as_ref(),
        &setup.config.effective_tools(),
    );
    // With disclosure on, the loader is offered whatever the profile lists: it only ever
    // loads tools the profile already allows.
    let tool_select = setup
        .config
        .flag_enabled("tool-select")
        .then(crate::tool_select::ToolSelect::new);
    if let Some(state) = &tool_select {
        registry.register(Arc::new(crate::tool_select::SelectToolsTool::new(
            state.clone(),
        )));
    }
    let config = AgentConfig {
        session_id: session.state.id.clone(),
        system_prompt: crate::prompt::SystemPrompt::new(system_prompt.clone()),
        model: ModelSlot::new(model),
        models: setup.models.clone(),
        max_steps_per_turn: setup.max_steps_per_turn,
        retry: setup.retry,
        tools: Arc::new(registry),
        tool_ctx: Arc::new(ctx),
        permissions,
        hooks: hooks.clone(),
        session_meta: Some(Arc::new(StoredMeta {
            store: SessionStore::new(Home::new(&setup.home)),
            session: std::sync::Mutex::new(session.clone()),
            auto_title: setup.config.flag_enabled("auto_session_title"),
            title_asked: std::sync::atomic::AtomicBool::new(false),
        })),
        plan: Some(plan.clone()),
        goal: Some(goals.clone()),
        compaction,
        checkpoints,
        instructions: Some(Arc::new(instructions)),
        tool_select,
    };
    let queued = restored.queued_prompts.clone();
    let agent = spawn_linked(config, log, queued, link, events);
    // A resumed session's todo panel starts with the list its journal left.
    if !restored.todos.is_empty() {
        agent.handle.runtime().publish_todos();
    }
    subagents.attach_caller(agent.handle.runtime());
    crate::swarm_mode::restore(agent.handle.runtime());
    if let Some(cron) = &cron {
        cron.spawn_poll(agent.handle.runtime());
    }
    if bind {
        agent.handle.runtime().commit(vec![profile_bind(
            &profile.name,
            profile.file(),
            &system_prompt,
        )]);
    }
    if let Some(record) = new_bind {
        let reminder = environment_reminder(&record);
        agent.handle.runtime().commit(vec![
            kimi_protocol::RecordPayload::EnvironmentBind(record),
            crate::engine::records::message(reminder),
        ]);
    }
    // Nobody drives a goal that was running when the session stopped: it comes back paused.
    let goal_records = goals.normalize_after_resume();
    agent.handle.runtime().commit(goal_records);
    if start_in_plan
        && !plan.is_active()
        && let (_, Some(record)) = plan.enter(false)
    {
        agent.handle.runtime().commit(vec![record]);
    }
    if let Some(hooks) = hooks {
        hooks.fire_and_forget(HookEventData::SessionStart {
            source: if resumed { "resume" } else { "startup" }.to_owned(),
            model: agent
                .handle
                .runtime()
                .config
                .model
                .get()
                .provider
                .model()
                .to_owned(),
            profile: profile.name.clone(),
        });
        hooks.start_heartbeat(crate::engine::hooks::HEARTBEAT_INTERVAL);
    }
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    // What replay repaired or skipped (the store logged the repairs already): shown by every
    // front end, so no loss is silent.
    warnings.extend(kimi_store::repair_warnings(&journal, &restored.repairs));
    warnings.extend(
        restored
            .skipped
            .iter()
            // Corrupt lines are named by the repair warning above.
            .filter(|s| !s.contains(kimi_store::envelope::CORRUPT_LINE))
            .map(|s| format!("{}: {s} (skipped on resume)", journal.display())),
    );
    Ok(OpenedSession {
        session,
        resumed,
        restored,
        agent,
        warnings,
        profile,
        cron,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_control_sets_the_compaction_thresholds_and_extra_agent_dirs_are_searched() {
        let config = kimi_config::Config::parse(
            "extra_agent_dirs = [\"team-agents\"]\n[loop_control]\ncompaction_trigger_ratio = 0.6\nreserved_context_size = 1000\n",
            Path::new("/h/config.toml"),
        );
        let compaction = compaction_config(&config.loop_control);
        assert_eq!(compaction.trigger_ratio, 0.6);
        assert_eq!(compaction.reserved_context_size, 1000);
        let defaults = compaction_config(&kimi_config::LoopControl::default());
        assert_eq!(
            defaults,
            kimi_context::compaction::trigger::CompactionConfig::default()
        );
        let dirs = agent_dirs(Path::new("/h"), Path::new("/work"), &config);
        assert_eq!(dirs.user.last(), Some(&PathBuf::from("/work/team-agents")));
    }
}
