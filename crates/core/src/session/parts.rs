//! The pieces `open_session` assembles: the sandbox launcher and hooks, the model and profile
//! a resumed session had, file checkpoints, the main agent's tool registry, and the config
//! sections that tune compaction and tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kimi_tools::ToolContext;

use crate::cron::CronService;
use crate::cron::tools::{CronCreateTool, CronDeleteTool, CronListTool};
use crate::engine::hooks::EngineHooks;
use crate::engine::log::BoundProfile;
use crate::engine::log::Restored;
use crate::engine::model::{ActiveModel, ModelResolver};
use crate::hooks::{CommonPayload, HookRunner, load_hooks};
use crate::permission::Workspace;
use crate::plan::PlanMode;
use crate::plan::tools::{EnterPlanModeTool, ExitPlanModeTool};
use crate::profile::catalog::load_agent_file;
use crate::profile::{DEFAULT_MAIN, Profile, ProfileCatalog, ProfileSource, registry_for};
use crate::subagent::{AgentTool, SubagentHost};

use super::{AgentChoice, SANDBOX_HELPER, SessionError};

/// `[sandbox] mode = "workspace-write"`: the launcher prefix for Bash with one warning per
/// protection this kernel lacks, or why the sandbox is off. The first session of the process
/// that asks for the sandbox logs what the kernel supports.
pub(super) fn sandbox_launcher(
    home: &Path,
    cwd: &Path,
    additional: &[PathBuf],
    config: &kimi_config::Config,
) -> Result<(Vec<String>, Vec<String>), String> {
    use crate::permission::sandbox::{
        SandboxMode, SandboxPolicy, SandboxSupport, helper_command, kernel_support, sandbox_mode,
    };
    match sandbox_mode(config.sandbox.mode.as_deref())
        .map_err(|e| format!("{}: {e}", config.path.display()))?
    {
        SandboxMode::Off => return Ok((Vec::new(), Vec::new())),
        SandboxMode::WorkspaceWrite => {}
    }
    let support = kernel_support();
    static LOGGED: std::sync::Once = std::sync::Once::new();
    LOGGED.call_once(|| tracing::info!("{}", support.log_line()));
    if let SandboxSupport::Unavailable { reason } = support.support() {
        return Err(format!(
            "the OS sandbox is not available here ({reason}); Bash runs with the permission chain only"
        ));
    }
    let Some(helper) = SANDBOX_HELPER.get() else {
        return Err(
            "no sandbox helper is registered in this process; Bash runs unsandboxed".to_owned(),
        );
    };
    let workspace = Workspace::new(cwd, additional, std::env::home_dir().as_deref());
    let policy = SandboxPolicy::workspace_write(&workspace, &[std::env::temp_dir()], home);
    let cmd =
        helper_command(helper, &["__sandbox-exec"], &policy, &[]).map_err(|e| e.to_string())?;
    let mut argv = vec![cmd.get_program().to_string_lossy().into_owned()];
    argv.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    Ok((argv, support.missing()))
}

/// `[[hooks]]` of the parsed config (re-read when the file changes); invalid entries are
/// reported and left out.
pub(super) fn session_hooks(
    config: &kimi_config::Config,
    plugin_hooks: &[crate::hooks::HookDef],
    cwd: &Path,
    session_id: &str,
) -> (Option<Arc<EngineHooks>>, Vec<String>) {
    let loaded = load_hooks(&config.hooks);
    let warnings = loaded
        .errors
        .iter()
        .map(|e| format!("{}: {e}", config.path.display()))
        .collect();
    let set = loaded.hooks;
    let hooks = EngineHooks::new(
        set,
        HookRunner::new(cwd),
        CommonPayload {
            session_id: session_id.to_owned(),
            cwd: cwd.display().to_string(),
            client_type: "kimi_rs_cli".to_owned(),
            session_title: None,
        },
        Some(config.clone()),
    )
    .with_extra(plugin_hooks.to_vec());
    (Some(Arc::new(hooks)), warnings)
}

/// The model a resumed session switched to last (`model.set`), built again; the error says
/// why the session goes on with the launch's model instead.
pub(super) fn restored_model(
    models: Option<&dyn ModelResolver>,
    set: &kimi_protocol::record::ModelSet,
    launch: &ActiveModel,
) -> Result<ActiveModel, String> {
    let effort = match set.effort.as_deref() {
        Some(text) => Some(crate::engine::model::parse_effort(text)?),
        None => None,
    };
    let alias = set.alias.clone().unwrap_or_else(|| launch.alias.clone());
    match models {
        Some(models) => models.resolve(&alias, effort).map_err(|err| {
            format!(
                "this session last used the model `{alias}`, which cannot be used now ({err}); it goes on with `{}`. Switch with /model",
                launch.alias
            )
        }),
        None if alias == launch.alias => {
            let mut model = launch.clone();
            if let Some(effort) = effort {
                model.params.thinking = Some(effort);
                model.requested_effort = Some(effort);
            }
            Ok(model)
        }
        None => Err(format!(
            "this session last used the model `{alias}`, but this front end cannot switch models; it goes on with `{}`",
            launch.alias
        )),
    }
}

/// The session's checkpointer (`None` with `[checkpoint] enabled = false`), after retention
/// pruned content only old checkpoints named.
pub(super) fn open_checkpoints(
    config: &kimi_config::Checkpoint,
    home: &Path,
    cwd: &Path,
    additional_dirs: &[PathBuf],
    session_dir: &Path,
    restored: &Restored,
) -> Option<Arc<crate::checkpoint::Checkpoints>> {
    if !config.enabled() {
        return None;
    }
    let settings = crate::checkpoint::CheckpointSettings::from(config);
    let mut roots = vec![cwd.to_path_buf()];
    roots.extend(additional_dirs.iter().cloned());
    let checkpoints = crate::checkpoint::Checkpoints::new(settings, session_dir, roots, home);
    let pruned = crate::checkpoint::prune::prune(
        checkpoints.blobs(),
        &restored.checkpoint_steps,
        checkpoints.settings(),
        crate::engine::log::now_ms(),
    );
    if pruned.blobs > 0 {
        tracing::info!(
            blobs = pruned.blobs,
            bytes = pruned.bytes,
            "checkpoint content past checkpoint.retain_turns / retain_days pruned"
        );
    }
    checkpoints.keep_existing_blobs();
    Some(Arc::new(checkpoints))
}

/// The profile a new session's main agent is bound to.
pub(super) fn choose_profile(
    catalog: &ProfileCatalog,
    choice: &AgentChoice,
    explicit: Option<&Path>,
) -> Result<Profile, SessionError> {
    match (choice, explicit) {
        (AgentChoice::File(_), Some(path)) => {
            // Bound as written, even when its name matches a built-in it did not override.
            Ok(load_agent_file(path, ProfileSource::Explicit(path.to_owned()))?.0)
        }
        (AgentChoice::Named(name), _) => Ok(catalog.require(name)?.clone()),
        (AgentChoice::Default | AgentChoice::File(_), _) => {
            Ok(catalog.require(DEFAULT_MAIN)?.clone())
        }
    }
}

/// The profile a resumed main agent was bound to; journals from before profiles (`default`)
/// and profiles that have disappeared fall back to the default one.
pub(super) fn restored_profile(
    catalog: &ProfileCatalog,
    bound: Option<&BoundProfile>,
    warnings: &mut Vec<String>,
) -> Profile {
    let default = || {
        catalog
            .get(DEFAULT_MAIN)
            .cloned()
            .unwrap_or_else(crate::profile::builtin::default_main)
    };
    let Some(bound) = bound.filter(|b| b.name != "default") else {
        return default();
    };
    if let Some(file) = &bound.file
        && let Ok((profile, _)) = load_agent_file(file, ProfileSource::Explicit(file.clone()))
    {
        return profile;
    }
    if let Some(profile) = catalog.get(&bound.name) {
        return profile.clone();
    }
    warnings.push(format!(
        "this session was started with agent `{}`, which no longer exists; continuing with the default agent's tools",
        bound.name
    ));
    default()
}

/// The main agent's tools: the built-ins, the front end's (and the goal tools), `Agent`, the
/// plan-mode tools and (unless disabled) the cron tools, as its profile allows.
pub(super) fn main_registry(
    profile: &Profile,
    extension_tools: &[Arc<dyn kimi_tools::Tool>],
    late_tools: Option<&kimi_tools::LateTools>,
    subagents: &Arc<SubagentHost>,
    plan: &Arc<PlanMode>,
    cron: Option<&Arc<CronService>>,
    allowed: &kimi_config::Tools,
) -> kimi_tools::ToolRegistry {
    let mut all = kimi_tools::builtin::default_registry();
    for tool in extension_tools {
        all.register(tool.clone());
    }
    all.register(Arc::new(AgentTool::new(subagents.clone())));
    all.register(crate::subagent::AgentSwarmTool::shared(subagents));
    all.register(Arc::new(EnterPlanModeTool::new(plan.clone())));
    all.register(Arc::new(ExitPlanModeTool::new(plan.clone())));
    if let Some(cron) = cron {
        all.register(Arc::new(CronCreateTool::new(cron.clone())));
        all.register(Arc::new(CronListTool::new(cron.clone())));
        all.register(Arc::new(CronDeleteTool::new(cron.clone())));
    }
    // `[tools] enabled/disabled` decide which tools exist at all, before the profile's list;
    // MCP tools that join later pass the same filter.
    let tools: Vec<Arc<dyn kimi_tools::Tool>> = all
        .names()
        .iter()
        .filter(|n| allowed.allows(n))
        .filter_map(|n| all.get(n))
        .collect();
    let mut registry = registry_for(profile, &tools);
    if let Some(late) = late_tools {
        crate::profile::attach_late_for(&mut registry, profile, late, allowed);
    }
    registry
}

/// `~/x` from the user's home, a relative path from `cwd`.
pub(super) fn expand_dir(dir: &str, cwd: &Path) -> PathBuf {
    match (dir.strip_prefix("~/"), std::env::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => cwd.join(dir),
    }
}

/// `[loop_control] compaction_trigger_ratio` and `reserved_context_size` over the defaults.
pub(super) fn compaction_config(
    loop_control: &kimi_config::LoopControl,
) -> kimi_context::compaction::trigger::CompactionConfig {
    let mut config = kimi_context::compaction::trigger::CompactionConfig::default();
    if let Some(ratio) = loop_control.compaction_trigger_ratio {
        config.trigger_ratio = ratio;
    }
    if let Some(reserved) = loop_control.reserved_context_size {
        config.reserved_context_size = reserved;
    }
    config
}

/// `[background]` keys the tools act on: the kill grace (the task manager is reopened with
/// it), auto-backgrounding of a timed-out command and its task timeout.
pub(super) fn apply_tool_settings(
    ctx: &mut ToolContext,
    background: &kimi_config::Background,
    agent_dir: &Path,
) {
    if let Some(ms) = background.kill_grace_period_ms {
        ctx.settings.kill_grace = std::time::Duration::from_millis(ms);
        ctx.tasks =
            kimi_tools::tasks::TaskManager::open(agent_dir.join("tasks"), ctx.settings.kill_grace);
    }
    if let Some(on) = background.bash_auto_background_on_timeout {
        ctx.settings.bash_auto_background_on_timeout = on;
    }
    if let Some(secs) = background.bash_task_timeout_s {
        ctx.settings.bash_task_timeout_s = secs;
    }
}
