//! `kimi-rs` with no prompt: the interactive terminal UI on a new (or resumed) session.
//!
//! Sessions are opened through the core session host ([`SessionHost`]), like ACP's and the web
//! server's, and every op the UI sends — the host ops (session listing, background tasks, `!`
//! shell commands, `/mcp`) included — goes through it; their answers come back as events.
//! What stays here is this terminal's own business, served over the TUI's `HostRequest`
//! channel: which session the terminal is attached to (`/new`, resuming from the picker), the
//! terminal's clipboard (OSC 52), writing the markdown file the UI rendered, and what the
//! launch tells the UI once (skill completions, startup warnings). The requests are answered in
//! `serve`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use kimi_config::Config;
use kimi_core::host::{SessionExtras, SessionFactory, SessionHost};
use kimi_core::permission::{ModeInputs, PermissionState, resolve_mode};
use kimi_core::session::{AgentChoice, OpenedSession, Resume, SessionSetup};
use kimi_protocol::ops::Op;
use kimi_tui::{
    AppOptions, HostChannels, HostUpdate, RunOptions, SessionChannels, SessionInfo, TuiConfig,
};

mod serve;

use serve::{Served, serve};

use crate::cli::RunArgs;
use crate::extensions::Extensions;
use crate::print::resume_hint_command;
use crate::run::{agent_choice, resolve_model, setup};

/// The terminal's side of opening sessions: one working directory, the skills and MCP
/// servers loaded once for the launch.
struct TuiSessions {
    home: PathBuf,
    args_model: Option<String>,
    additional_dirs: Vec<PathBuf>,
    permissions: PermissionState,
    /// config.toml, read once at start-up.
    config: Arc<Config>,
    /// `--agent`/`--agent-file`: binds the first session only (`/new` starts a default one).
    agent: Mutex<AgentChoice>,
    /// Skills and MCP servers, shared by every session this launch opens.
    extensions: Mutex<Option<Arc<Extensions>>>,
    /// How `extensions` was loaded, for `/plugins reload`: `--skills-dir` and the trust.
    skills_dirs: Vec<PathBuf>,
    trusted: bool,
    /// The declared execution environments and the `/environment` switch a reopen applies.
    environments: Arc<crate::environment_command::TuiEnvironments>,
    /// `--environment`: binds the first session only (later new sessions use the default).
    environment: Mutex<Option<String>>,
    /// Directories `/add-dir` added for one session only, by session id (shared with the
    /// [`Launch`]); they join the workspace whenever that session is (re)opened.
    session_dirs: SessionDirs,
}

type SessionDirs = Arc<Mutex<std::collections::BTreeMap<String, Vec<PathBuf>>>>;

impl TuiSessions {
    /// `--add-dir`'s directories, plus the session-only ones of a session being reopened.
    fn additional_dirs_for(&self, resume: &Resume) -> Vec<PathBuf> {
        let mut dirs = self.additional_dirs.clone();
        if let Resume::Id(id) = resume
            && let Some(extra) = self
                .session_dirs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(id)
        {
            dirs.extend(
                extra
                    .iter()
                    .filter(|d| !self.additional_dirs.contains(d))
                    .cloned(),
            );
        }
        dirs
    }
}

#[async_trait::async_trait]
impl SessionFactory for TuiSessions {
    fn setup(
        &self,
        cwd: &Path,
        resume: &Resume,
        _mcp_servers: Option<&serde_json::Value>,
    ) -> Result<(SessionSetup, Arc<dyn SessionExtras>), String> {
        let model = resolve_model(&self.config, self.args_model.as_deref())
            .map_err(|e| format!("{e:#}"))?;
        let extensions = self
            .extensions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| "the launch is shutting down; no session can be opened".to_owned())?;
        let agent = std::mem::take(&mut *self.agent.lock().unwrap_or_else(PoisonError::into_inner));
        let requested = self
            .environment
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let environments = self.environments.envs();
        let binding = match resume {
            Resume::New => crate::environments::bind_new(&environments, requested.as_deref())
                .map_err(|e| format!("{e:#}"))?,
            Resume::Id(_) | Resume::Latest => None,
        };
        let mut session_extensions = crate::environments::with_environment(
            extensions.session(),
            cwd,
            &environments,
            binding,
        );
        // `/environment <id>` reopens the session to move its tools.
        if matches!(resume, Resume::Id(_)) {
            session_extensions.environment_switch = self.environments.take_switch();
        }
        let setup = SessionSetup {
            agent,
            extensions: session_extensions,
            ..setup(
                self.home.clone(),
                cwd.to_owned(),
                resume.clone(),
                model,
                self.additional_dirs_for(resume),
                Some(self.permissions.clone()),
                &self.config,
            )
        };
        Ok((setup, extensions))
    }

    async fn shutdown(&self) {
        let extensions = self
            .extensions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(extensions) = extensions {
            crate::hosted::shutdown_extensions(extensions, "kimi-rs").await;
        }
    }
}

/// The terminal launch: the session host and what the UI is told about its sessions.
struct Launch {
    host: SessionHost,
    /// The host's factory, whose extensions `/plugins reload` replaces.
    sessions: Arc<TuiSessions>,
    cwd: PathBuf,
    home: PathBuf,
    config: Arc<Config>,
    /// The `/login` waiting for approval, to cancel with Esc.
    login: Mutex<Option<tokio_util::sync::CancellationToken>>,
    /// `/add-dir`'s session-only directories (the factory reads them).
    session_dirs: SessionDirs,
    /// `/environment`.
    environments: Arc<crate::environment_command::TuiEnvironments>,
}

/// The mode (flags over `default_permission_mode` / `default_plan_mode`) and the user's rules;
/// a broken deny or ask rule refuses start-up, broken allow rules come back as warnings.
pub(crate) fn permission_state(
    config: &Config,
    args: &RunArgs,
) -> anyhow::Result<(PermissionState, Vec<String>)> {
    let mode = resolve_mode(&ModeInputs {
        yolo_flag: args.yolo,
        auto_flag: args.auto,
        plan_flag: args.plan,
        config_default_mode: config.default_permission_mode.clone(),
        config_default_plan: config.default_plan_mode.unwrap_or(false),
        print_mode: false,
    })?;
    let (rules, warnings) = crate::run::checked_rules(config)?;
    let state = PermissionState {
        mode,
        rules,
        ..PermissionState::default()
    };
    Ok((state, warnings))
}

impl Launch {
    fn open(&self, resume: Resume) -> anyhow::Result<OpenedSession> {
        Ok(self.host.open(&self.cwd, resume, None)?)
    }

    fn info(&self, opened: &OpenedSession) -> SessionInfo {
        let runtime = opened.agent.handle.runtime();
        // The session's own model: a resumed session may have switched away from the launch's.
        let model = runtime.config.model.get();
        let models = runtime
            .config
            .models
            .as_ref()
            .map(|models| models.options())
            .unwrap_or_default()
            .into_iter()
            .map(|option| kimi_tui::ModelEntry {
                description: if option.model == option.alias {
                    option.provider
                } else {
                    format!("{} · {}", option.model, option.provider)
                },
                alias: option.alias,
                efforts: option.efforts,
            })
            .collect();
        SessionInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            session_id: opened.session.state.id.clone(),
            title: opened.session.state.title.clone().unwrap_or_default(),
            cwd: self.cwd.display().to_string(),
            model: model.alias.clone(),
            effort: model.params.thinking.map(|e| e.as_str().to_owned()),
            models,
            context_window: model.max_context_tokens,
            permission_mode: opened.agent.handle.runtime().config.permissions.mode(),
            // The engine's state: a resumed session may be in plan mode without `--plan`.
            plan_mode: opened
                .agent
                .handle
                .runtime()
                .config
                .plan
                .as_ref()
                .is_some_and(|plan| plan.is_active()),
            // Swarm mode as the engine restored it from the session's history.
            swarm_mode: opened.agent.handle.runtime().shared().swarm.is_some(),
            additional_dirs: opened
                .agent
                .handle
                .runtime()
                .config
                .tool_ctx
                .additional_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            environment: crate::environment_command::footer_label(
                opened
                    .agent
                    .handle
                    .runtime()
                    .config
                    .tool_ctx
                    .environment
                    .info(),
            ),
        }
    }

    async fn close(&self, opened: OpenedSession) {
        opened.agent.handle.send(Op::Shutdown);
        let _ = opened.agent.join.await;
        self.host.release(&opened.session.state.id);
    }
}

fn transcript(opened: &OpenedSession) -> Vec<kimi_protocol::Message> {
    opened
        .agent
        .handle
        .runtime()
        .log()
        .history()
        .messages()
        .to_vec()
}

/// Pump events, operations and requests until the UI goes away. First the UI gets the skill
/// list and the `warnings` of the startup (shown in its transcript); MCP servers that are
/// still connecting are counted in its footer and their failures shown as they happen.
async fn host_loop(
    launch: Arc<Launch>,
    mut opened: OpenedSession,
    mut channels: HostChannels,
    skills: Vec<kimi_tui::SkillEntry>,
    warnings: Vec<String>,
    mut mcp: Option<kimi_mcp::McpProgress>,
) -> anyhow::Result<OpenedSession> {
    let launch = &*launch;
    let _ = channels.host_updates.send(HostUpdate::Skills(skills)).await;
    // The first update never waits: the footer counts the servers before any warning shows.
    if let Some(progress) = &mut mcp
        && let Some(update) = progress.next().await
    {
        let _ = channels
            .host_updates
            .send(HostUpdate::McpConnecting(update.connecting))
            .await;
        for warning in update.warnings {
            let _ = channels
                .host_updates
                .send(HostUpdate::Warning(warning))
                .await;
        }
    }
    for warning in warnings {
        let _ = channels
            .host_updates
            .send(HostUpdate::Warning(warning))
            .await;
    }
    loop {
        tokio::select! {
            update = next_mcp_update(&mut mcp) => {
                let Some(update) = update else {
                    mcp = None;
                    continue;
                };
                let _ = channels.host_updates.send(HostUpdate::McpConnecting(update.connecting)).await;
                for warning in update.warnings {
                    let _ = channels.host_updates.send(HostUpdate::Warning(warning)).await;
                }
            }
            event = opened.agent.events.recv() => {
                let Some(event) = event else { break };
                if channels.events.send(event).await.is_err() {
                    break;
                }
            }
            op = channels.ops.recv() => {
                let Some(op) = op else { break };
                let prompt = matches!(op, Op::Submit { .. });
                if let Err(err) = launch.host.send(&opened.session.state.id, op).await {
                    let update = match err {
                        kimi_core::host::HostError::Rejected(_) if prompt => HostUpdate::Refused(err.to_string()),
                        _ => HostUpdate::Error(err.to_string()),
                    };
                    let _ = channels.host_updates.send(update).await;
                }
            }
            request = channels.host_requests.recv() => {
                let Some(request) = request else { break };
                let served = match serve(launch, &opened, request, &channels.host_updates).await {
                    Ok(Served::Reopen { notice }) => {
                        let id = opened.session.state.id.clone();
                        // Closed first: one journal never has two agents writing it.
                        launch.close(opened).await;
                        opened = match launch.open(Resume::Id(id.clone())) {
                            Ok(next) => next,
                            Err(err) => {
                                let message = format!("cannot reopen session {id} ({err:#}); a new session starts");
                                let _ = channels.host_updates.send(HostUpdate::Error(message)).await;
                                launch.open(Resume::New)?
                            }
                        };
                        Ok(Served::Reopen { notice })
                    }
                    other => other,
                };
                match served {
                    Ok(Served::Reopen { notice }) => {
                        let update = HostUpdate::SessionSwitched {
                            info: launch.info(&opened),
                            transcript: transcript(&opened),
                        };
                        let _ = channels.host_updates.send(update).await;
                        for warning in &opened.warnings {
                            let _ = channels.host_updates.send(HostUpdate::Warning(warning.clone())).await;
                        }
                        if let Some(notice) = notice {
                            let _ = channels.host_updates.send(HostUpdate::Notice(notice)).await;
                        }
                    }
                    Ok(Served::Switch(next)) => {
                        let previous = std::mem::replace(&mut opened, *next);
                        launch.close(previous).await;
                        let update = HostUpdate::SessionSwitched {
                            info: launch.info(&opened),
                            transcript: transcript(&opened),
                        };
                        let _ = channels.host_updates.send(update).await;
                        for warning in &opened.warnings {
                            let _ = channels.host_updates.send(HostUpdate::Warning(warning.clone())).await;
                        }
                    }
                    Ok(Served::Stay) => {}
                    Err(err) => {
                        let _ = channels.host_updates.send(HostUpdate::Error(format!("{err:#}"))).await;
                    }
                }
            }
        }
    }
    Ok(opened)
}

/// The next MCP status change; pending forever once there are none left.
async fn next_mcp_update(
    progress: &mut Option<kimi_mcp::McpProgress>,
) -> Option<kimi_mcp::McpUpdate> {
    match progress {
        Some(progress) => progress.next().await,
        None => std::future::pending().await,
    }
}

pub fn run(args: &RunArgs) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    // Before the config is read: an accepted import may bring the model to use.
    crate::import::offer::offer_on_terminal(&home);
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let pick = args.session.as_deref() == Some("");
    let resume = match (&args.session, args.continue_session) {
        (Some(id), _) if !id.is_empty() => Resume::Id(id.clone()),
        (_, true) => Resume::Latest,
        _ => Resume::New,
    };
    let config = crate::config::load(&home)?;
    // Checked before the terminal is taken over, so a missing model is a plain error.
    resolve_model(&config, args.model.as_deref()).context(
        "no model to talk to; set KIMI_MODEL_NAME/KIMI_MODEL_API_KEY (see README) or add one to config.toml, or try `kimi-rs demo`",
    )?;
    let (permissions, rule_warnings) = permission_state(&config, args)?;
    // tui.toml: a file with errors means the defaults, with its problems shown like the rest.
    let tui_file = kimi_config::tui::TuiFile::read(&home.join("tui.toml"));
    let tui_config = if tui_file
        .diagnostics
        .iter()
        .any(kimi_config::Diagnostic::is_error)
    {
        TuiConfig::default()
    } else {
        TuiConfig::from_keys(&tui_file.keys)
    };
    let tui_warnings: Vec<String> = tui_file
        .diagnostics
        .iter()
        .map(|d| {
            if d.is_error() {
                format!("{d}; using the default UI settings")
            } else {
                d.to_string()
            }
        })
        .collect();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let full_screen = ["KIMI_RS_TUI_FULL_SCREEN", "KIMI_CODE_TUI_FULL_SCREEN"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1"));
    let env_var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let colours = kimi_tui::theme_file::ColourSupport {
        no_color,
        truecolor: env_var("COLORTERM").is_some_and(|v| v == "truecolor" || v == "24bit"),
    };
    let ui_files = kimi_tui::settings::UiFiles::in_home(&home);
    // A custom theme's problems are shown with the other warnings; it falls back, never fails.
    let (theme, theme_warnings) =
        kimi_tui::theme_file::resolve(&tui_config.theme, &ui_files.themes_dir, colours);
    // Asked on the terminal before the UI takes the screen, once per folder.
    let (trusted, trust_warning) = crate::trust::ask_on_terminal(&home, &cwd, args.trust_workspace);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (environments, environment_warnings) =
        crate::environments::declared(&config, &cwd, trusted);
    let environments = Arc::new(crate::environment_command::TuiEnvironments::new(
        home.clone(),
        cwd.clone(),
        trusted,
        environments,
    ));
    let home_for_web = home.clone();
    let (id, web) = runtime.block_on(async move {
        let extensions =
            Arc::new(Extensions::load(&home, &cwd, &args.skills_dir, &config, trusted).await);
        let factory = Arc::new(TuiSessions {
            home: home.clone(),
            args_model: args.model.clone(),
            additional_dirs: args.add_dir.clone(),
            permissions,
            config: config.clone(),
            agent: Mutex::new(agent_choice(args)),
            extensions: Mutex::new(Some(extensions.clone())),
            skills_dirs: args.skills_dir.clone(),
            trusted,
            environments: environments.clone(),
            environment: Mutex::new(args.environment.clone()),
            session_dirs: SessionDirs::default(),
        });
        let session_dirs = factory.session_dirs.clone();
        let launch = Arc::new(Launch {
            host: SessionHost::new(home.clone(), factory.clone()),
            sessions: factory,
            cwd: cwd.clone(),
            home: home.clone(),
            config: config.clone(),
            login: Mutex::new(None),
            session_dirs,
            environments: environments.clone(),
        });
        let opened = launch.open(resume)?;
        // Shown in the transcript, where the user sees them (stderr would scroll away).
        let warnings: Vec<String> = crate::config::warnings(&config)
            .into_iter()
            .chain(tui_warnings)
            .chain(theme_warnings)
            .chain(rule_warnings)
            .chain(trust_warning)
            .chain(environment_warnings)
            .chain(extensions.warnings.iter().cloned())
            .chain(opened.warnings.iter().cloned())
            .collect();
        let skills = extensions.skill_commands();
        // MCP servers are still connecting: the footer says so, failures become notices.
        let mcp = extensions.mcp_progress();
        drop(extensions);
        let mut app = AppOptions::from_config(
            &tui_config,
            launch.info(&opened),
            Some(home.join("tui")),
            cwd.clone(),
            no_color,
        );
        app.theme = theme;
        app.prefs.files = Some(ui_files);
        app.prefs.colours = colours;
        app.prefs.editor_env = env_var("VISUAL").or_else(|| env_var("EDITOR"));
        app.prefs.path_env = std::env::var_os("PATH");
        let options = RunOptions {
            app,
            transcript: transcript(&opened),
            full_screen,
            open_session_picker: pick,
            terminal: kimi_tui::notify::TerminalInfo::from_env(),
            clipboard: clipboard_source(),
        };
        let (ui, channels) = SessionChannels::pair(1024);
        // Edits of the declarations apply while the UI runs; each re-read is shown.
        let watch_updates = channels.host_updates.clone();
        crate::environments::watch(
            home.clone(),
            cwd.clone(),
            trusted,
            environments.initial.clone(),
            move |line| {
                if let Err(e) = watch_updates.try_send(HostUpdate::Notice(line)) {
                    tracing::warn!("cannot show an environment re-read: {e}");
                }
            },
        );
        // In the background; a failure becomes a notice in the transcript.
        if let Some(refresh) = crate::model_refresh::spawn(&home, &config) {
            let updates = channels.host_updates.clone();
            tokio::spawn(async move {
                if let Ok(Some(notice)) = refresh.await {
                    let _ = updates.send(HostUpdate::Warning(notice)).await;
                }
            });
        }
        let pump = tokio::spawn(host_loop(
            launch.clone(),
            opened,
            channels,
            skills,
            warnings,
            mcp,
        ));
        let ui_result = kimi_tui::run(options, ui).await;
        let opened = pump
            .await
            .context("the session host stopped unexpectedly")??;
        let id = opened.session.state.id.clone();
        launch.close(opened).await;
        launch.host.shutdown().await;
        let exit = ui_result?;
        eprintln!(
            "To resume this session: {}",
            resume_hint_command(&id, Some(&cwd.display().to_string()))
        );
        Ok::<_, anyhow::Error>((id, exit.web))
    })?;
    match web {
        // The session's journal is free now: the web UI can open it.
        Some(handoff) => crate::web_handoff::run(args, &home_for_web, &id, handoff),
        None => Ok(0),
    }
}

/// The OS clipboard, or (test support only) the file `KIMI_RS_TEST_CLIPBOARD_FILE` names, so
/// pty tests can press Ctrl-V without a display server.
fn clipboard_source() -> kimi_tui::clipboard::ClipboardSource {
    match std::env::var_os("KIMI_RS_TEST_CLIPBOARD_FILE") {
        Some(path) => {
            kimi_tui::clipboard::ClipboardSource(Arc::new(kimi_tui::clipboard::FileClipboard {
                path: path.into(),
            }))
        }
        None => kimi_tui::clipboard::ClipboardSource::default(),
    }
}
