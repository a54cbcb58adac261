//! Running the agent from the command line: resolving the model, opening (or resuming) the
//! session, and print mode (`-p`), which submits one prompt, writes the events in the chosen
//! format and exits with the turn's outcome.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use kimi_config::Config;
use kimi_core::engine::runtime::ApproveAll;
use kimi_core::permission::{PermissionState, load_rules};
use kimi_core::session::{
    AgentChoice, OpenedSession, Resume, SessionSetup, latest_session, open_session,
};
use kimi_core::subagent::{ModelPool, PoolModel};
use kimi_llm::config::LlmConfig;
use kimi_llm::{ModelParams, Provider, RetryPolicy};
use kimi_protocol::ContentPart;
use kimi_protocol::ops::PermissionMode;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use kimi_store::{FsyncPolicy, Home, SessionStore};

use crate::cli::{OutputFormat, RunArgs};
use crate::extensions::Extensions;
use crate::print::{JsonWriter, TextWriter, TurnWriter, resume_hint_command};

/// Exit status of print mode: 0 completed, 1 failed (or could not start), 130 cancelled.
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_CANCELLED: u8 = 130;

pub struct ModelChoice {
    /// The `[models]` alias, or the environment model's name.
    pub alias: String,
    pub provider: Arc<dyn Provider>,
    pub params: ModelParams,
    pub max_context_tokens: u64,
}

/// The model of the parsed config plus the `KIMI_MODEL_*` environment; `[thinking]
/// enabled/effort` pick the effort the model is asked for.
pub fn resolve_model(config: &Config, alias: Option<&str>) -> anyhow::Result<ModelChoice> {
    resolve_model_with(config, alias, None)
}

/// [`resolve_model`] asked with `effort` (a session's `/effort`) instead of `[thinking]`.
pub fn resolve_model_with(
    config: &Config,
    alias: Option<&str>,
    effort: Option<kimi_llm::ThinkingEffort>,
) -> anyhow::Result<ModelChoice> {
    let llm = LlmConfig::from_config(config)?;
    let env = |name: &str| std::env::var(name).ok();
    let model = llm.resolve_model(alias, &env)?;
    let home = config.path.parent().unwrap_or(std::path::Path::new("."));
    let provider = crate::accounts::provider_for(home, &model)?;
    let params = ModelParams {
        max_tokens: model.max_output_size,
        thinking: model.effective_thinking(effort.or(llm.thinking_effort())),
        ..ModelParams::default()
    };
    Ok(ModelChoice {
        alias: model.alias.clone(),
        provider,
        params,
        max_context_tokens: model.max_context_size,
    })
}

/// The permission chain for print mode: auto mode (nothing can wait for a human) with the
/// user's rules from `config.toml`. A broken deny or ask rule refuses start-up (see
/// [`checked_rules`]); a broken allow rule is reported and left out.
pub fn print_mode_permissions(config: &Config) -> anyhow::Result<PermissionState> {
    let mut state = PermissionState::default();
    state.mode.mode = PermissionMode::Auto;
    let (rules, warnings) = checked_rules(config)?;
    for warning in warnings {
        eprintln!("kimi-rs: {warning}");
    }
    state.rules = rules;
    Ok(state)
}

/// The user's rules, failing closed: a deny or ask rule that does not load (or whose decision
/// cannot be read) stops kimi-rs with its location, since dropping it would run what the user
/// meant to stop. Broken allow rules come back as warnings.
pub fn checked_rules(
    config: &Config,
) -> anyhow::Result<(kimi_core::permission::RuleSet, Vec<String>)> {
    let loaded = load_rules(&config.permission);
    let fatal: Vec<String> = loaded
        .fatal_errors()
        .map(|err| format!("{}: {err}", config.path.display()))
        .collect();
    if !fatal.is_empty() {
        anyhow::bail!(
            "{}\nkimi-rs will not start with a deny or ask rule it cannot read (it would run what \
             the rule is meant to stop); fix or remove the rule and start again",
            fatal.join("\n")
        );
    }
    let warnings = loaded
        .errors
        .iter()
        .map(|err| {
            format!(
                "{}: {err} (this allow rule is ignored)",
                config.path.display()
            )
        })
        .collect();
    Ok((loaded.rules, warnings))
}

/// `[loop_control]`: attempts per step, the stream timeouts and the Retry-After cap over the
/// default policy.
pub fn retry_policy(config: &Config) -> RetryPolicy {
    let loop_control = &config.loop_control;
    let mut retry = RetryPolicy {
        max_attempts: loop_control.max_attempts(),
        ..RetryPolicy::default()
    };
    if let Some(secs) = loop_control.first_token_timeout_s {
        retry.first_token_timeout = std::time::Duration::from_secs(secs);
    }
    if let Some(secs) = loop_control.stream_idle_timeout_s {
        retry.stream_idle_timeout = std::time::Duration::from_secs(secs);
    }
    if let Some(secs) = loop_control.max_retry_after_s {
        retry.max_retry_after = std::time::Duration::from_secs(secs);
    }
    retry
}

/// A session of this launch: every front end (print mode, TUI, ACP, web) opens sessions
/// through here, so `[loop_control]` and the rest of `config` apply in each.
pub fn setup(
    home: PathBuf,
    cwd: PathBuf,
    resume: Resume,
    model: ModelChoice,
    additional_dirs: Vec<PathBuf>,
    permission_chain: Option<PermissionState>,
    config: &Arc<Config>,
) -> SessionSetup {
    SessionSetup {
        home,
        cwd,
        resume,
        model_alias: Some(model.alias),
        models: Some(Arc::new(crate::model_catalog::ConfigModels::new(
            config.clone(),
        ))),
        provider: model.provider,
        params: model.params,
        max_context_tokens: model.max_context_tokens,
        max_steps_per_turn: config.loop_control.max_steps(),
        retry: retry_policy(config),
        permissions: Arc::new(ApproveAll),
        permission_chain,
        additional_dirs,
        tool_env: std::env::vars().collect(),
        fsync: FsyncPolicy::EveryBatch,
        extensions: Default::default(),
        agent: AgentChoice::Default,
        // `[experimental]` as the file holds it now: `/experiments` applies without a restart.
        config: crate::experiments::current(config),
        model_pool: model_pool(config),
    }
}

/// `[subagent] models` resolved like `-m <alias>`: each alias a provider of its own. An alias
/// that does not resolve is left out of the pool with a warning (the session still opens);
/// `primary` is reserved for the session's own model.
pub fn model_pool(config: &Config) -> ModelPool {
    let mut models = Vec::new();
    let mut warnings = Vec::new();
    for (alias, hint) in config.subagent.pool() {
        if alias == kimi_config::PRIMARY_MODEL {
            warnings.push(format!(
                "[subagent] models: `{alias}` is reserved for the session's own model; the entry is ignored"
            ));
            continue;
        }
        match resolve_model(config, Some(&alias)) {
            Ok(choice) => models.push(PoolModel {
                alias,
                hint,
                provider: choice.provider,
                params: choice.params,
                max_context_tokens: choice.max_context_tokens,
            }),
            Err(err) => warnings.push(format!(
                "[subagent] models: `{alias}` is left out of the subagent model pool: {err:#}"
            )),
        }
    }
    ModelPool::new(models, config.subagent.default_model.clone(), warnings)
}

/// The profile `--agent` / `--agent-file` ask for (validated in `cli.rs`; a resumed session
/// keeps its own).
pub fn agent_choice(args: &RunArgs) -> AgentChoice {
    match (&args.agent, &args.agent_file) {
        (_, Some(path)) => AgentChoice::File(path.clone()),
        (Some(name), None) => AgentChoice::Named(name.clone()),
        (None, None) => AgentChoice::Default,
    }
}

/// A background task still runs, or has finished and not yet been reported, or a turn about
/// one is queued.
fn background_pending(opened: &OpenedSession) -> bool {
    let runtime = opened.agent.handle.runtime();
    let tasks = &runtime.config.tool_ctx.tasks;
    let running = tasks.has_pending_notifications()
        || tasks
            .list()
            .iter()
            .any(|t| !t.foreground && !t.status.is_terminal());
    // The turn whose end we are looking at may still hold `turn_cancel` for a moment; only
    // queued work counts.
    running || !runtime.shared().jobs.is_empty()
}

/// Feed events to `writer` until the turn ends; returns how it ended.
pub async fn drive_turn(
    opened: &mut OpenedSession,
    writer: &mut dyn TurnWriter,
    submit: Op,
) -> anyhow::Result<(TurnEndReason, Option<String>)> {
    let handle = opened.agent.handle.clone();
    // A flow runs one turn per node: the run ends with its last update, not its first turn.
    let flow = matches!(submit, Op::Flow { .. });
    let mut flow_end: Option<kimi_protocol::flow::FlowUpdate> = None;
    let mut in_turn = false;
    if !handle.send(submit) {
        return Err(anyhow!("the agent stopped before the prompt could be sent"));
    }
    let mut interrupts = 0u32;
    loop {
        let event = tokio::select! {
            event = opened.agent.events.recv() => event,
            signal = tokio::signal::ctrl_c() => {
                // First Ctrl-C cancels the turn (its journal stays resumable); a second one
                // while the cancel is under way exits at once.
                signal.context("cannot listen for Ctrl-C")?;
                interrupts += 1;
                if interrupts > 1 {
                    return Ok((TurnEndReason::Cancelled, None));
                }
                eprintln!("kimi-rs: interrupting the turn (press Ctrl-C again to quit now)");
                handle.send(Op::Cancel { queued: true });
                continue;
            }
        };
        let Some(event) = event else {
            return Err(anyhow!("the agent stopped without ending the turn"));
        };
        if let Event::StepRetrying { .. } = &event {
            writer.discard_assistant();
        }
        writer.event(&event)?;
        match &event {
            Event::TurnStarted { .. } => in_turn = true,
            Event::FlowUpdated { update } if flow && update.state.is_over() => {
                flow_end = Some(update.clone());
                if !in_turn {
                    // Refused before any turn ran.
                    return Ok(update.outcome(TurnEndReason::Completed));
                }
            }
            _ => {}
        }
        if let Event::TurnEnded { reason, error, .. } = event {
            in_turn = false;
            if flow {
                match &flow_end {
                    Some(end) => return Ok(end.outcome(reason)),
                    // The flow queued its next node before this turn's end was announced.
                    None => continue,
                }
            }
            // Background work the turn started is waited for: each task that finishes starts
            // a turn of its own (the reference's default `steer` print_background_mode), and
            // the run ends when nothing is left.
            if reason == TurnEndReason::Completed && background_pending(opened) {
                continue;
            }
            return Ok((reason, error));
        }
    }
}

pub fn print_mode(args: &RunArgs, prompt: &str) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let resume = match (&args.session, args.continue_session) {
        (Some(id), _) => Resume::Id(id.clone()),
        (None, true) => {
            let store = SessionStore::new(Home::new(&home));
            if latest_session(&store, &cwd).is_none() {
                eprintln!("kimi-rs: no earlier session in this directory; starting a new one");
            }
            Resume::Latest
        }
        (None, false) => Resume::New,
    };
    let config = crate::config::load(&home)?;
    for warning in crate::config::warnings(&config) {
        eprintln!("kimi-rs: {warning}");
    }
    let model = resolve_model(&config, args.model.as_deref())?;
    let permissions = print_mode_permissions(&config)?;
    // The project's environments are project configuration: a recorded trust (or
    // --trust-workspace) is needed; the trust warning itself is printed below.
    let (env_trusted, _) = crate::trust::trusted_without_asking(&home, &cwd, args.trust_workspace);
    let (environments, environment_warnings) =
        crate::environments::declared(&config, &cwd, env_trusted);
    for warning in environment_warnings {
        eprintln!("kimi-rs: {warning}");
    }
    // Connected before anything is created: an unknown id or an unreachable target fails
    // start-up here and nothing runs on this machine instead.
    let binding = match resume {
        Resume::New => crate::environments::bind_new(&environments, args.environment.as_deref())?,
        Resume::Id(_) | Resume::Latest => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let format = args.output_format.unwrap_or(OutputFormat::Text);
    runtime.block_on(async move {
        // In the background: the first prompt does not wait for the model list.
        let model_refresh = crate::model_refresh::spawn(&home, &config);
        let (trusted, trust_warning) =
            crate::trust::trusted_without_asking(&home, &cwd, args.trust_workspace);
        if let Some(warning) = trust_warning {
            eprintln!("kimi-rs: {warning}");
        }
        let extensions = Extensions::load(&home, &cwd, &args.skills_dir, &config, trusted).await;
        for warning in &extensions.warnings {
            eprintln!("kimi-rs: {warning}");
        }
        // MCP servers connect meanwhile; a failure is one stderr line when it happens.
        let mcp_reporter = extensions.report_mcp(|warning| eprintln!("kimi-rs: {warning}"));
        let mut opened = open_session(SessionSetup {
            agent: agent_choice(args),
            extensions: crate::environments::with_environment(
                extensions.session(),
                &cwd,
                &environments,
                binding,
            ),
            ..setup(
                home,
                cwd.clone(),
                resume,
                model,
                args.add_dir.clone(),
                Some(permissions),
                &config,
            )
        })?;
        for warning in &opened.warnings {
            eprintln!("kimi-rs: {warning}");
        }
        if opened.resumed {
            eprintln!("kimi-rs: resuming session {}", opened.session.state.id);
        }
        let session_id = opened.session.state.id.clone();
        let command = resume_hint_command(&session_id, Some(&cwd.display().to_string()));
        let columns = std::io::stdout().is_terminal().then_some(100);
        let goal_start = crate::print::goal::parse(prompt)?;
        let submit = extensions
            .expand_command(
                Op::Submit {
                    input: vec![ContentPart::text(prompt)],
                    origin: None,
                    prompt_id: None,
                },
                &session_id,
            )
            .map_err(|message| anyhow!(message))?;
        if let Some(start) = goal_start {
            let code = match format {
                OutputFormat::Text => {
                    let mut writer =
                        TextWriter::new(std::io::stdout(), std::io::stderr(), columns, None);
                    let outcome =
                        crate::print::goal::drive_goal(&mut opened, &mut writer, start, false)
                            .await;
                    writer.finish()?;
                    writer.resume_hint(&session_id, &command)?;
                    outcome?
                }
                OutputFormat::StreamJson => {
                    let mut writer = JsonWriter::new(std::io::stdout());
                    let outcome =
                        crate::print::goal::drive_goal(&mut opened, &mut writer, start, true).await;
                    writer.finish()?;
                    writer.resume_hint(&session_id, &command)?;
                    outcome?
                }
            };
            opened.agent.handle.send(Op::Shutdown);
            let _ = opened.agent.join.await;
            if let Some(reporter) = mcp_reporter {
                reporter.finish().await;
            }
            extensions.shutdown().await;
            crate::model_refresh::finish_on_stderr(model_refresh).await;
            return Ok(code);
        }
        let (reason, error) = match format {
            OutputFormat::Text => {
                let mut writer =
                    TextWriter::new(std::io::stdout(), std::io::stderr(), columns, None);
                let outcome = drive_turn(&mut opened, &mut writer, submit).await;
                writer.finish()?;
                writer.resume_hint(&session_id, &command)?;
                outcome?
            }
            OutputFormat::StreamJson => {
                let mut writer = JsonWriter::new(std::io::stdout());
                let outcome = drive_turn(&mut opened, &mut writer, submit).await;
                writer.finish()?;
                writer.resume_hint(&session_id, &command)?;
                outcome?
            }
        };
        opened.agent.handle.send(Op::Shutdown);
        let _ = opened.agent.join.await;
        if let Some(reporter) = mcp_reporter {
            reporter.finish().await;
        }
        extensions.shutdown().await;
        crate::model_refresh::finish_on_stderr(model_refresh).await;
        Ok(match reason {
            TurnEndReason::Completed => 0,
            TurnEndReason::Cancelled => EXIT_CANCELLED,
            TurnEndReason::Failed | TurnEndReason::Blocked => {
                if let Some(error) = error {
                    eprintln!("kimi-rs: the turn failed: {error}");
                }
                EXIT_FAILED
            }
        })
    })
}
