//! `kimi-rs` with no prompt: the interactive terminal UI on a new (or resumed) session.
//!
//! Sessions are opened through the core session host ([`SessionHost`]), like ACP's and the web
//! server's, and every op the UI sends — the host ops (session listing, background tasks, `!`
//! shell commands, `/mcp`) included — goes through it; their answers come back as events.
//! What stays here is this terminal's own business, served over the TUI's `HostRequest`
//! channel: which session the terminal is attached to (`/new`, resuming from the picker), the
//! terminal's clipboard (OSC 52), writing the markdown file the UI rendered, and what the
//! launch tells the UI once (skill completions, startup warnings).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use base64::Engine as _;
use kimi_config::Config;
use kimi_core::host::{SessionExtras, SessionFactory, SessionHost};
use kimi_core::permission::{ModeInputs, PermissionState, resolve_mode};
use kimi_core::session::{AgentChoice, OpenedSession, Resume, SessionSetup};
use kimi_protocol::ops::Op;
use kimi_tui::{
    AppOptions, HostChannels, HostRequest, HostUpdate, RunOptions, SessionChannels, SessionInfo,
    TuiConfig,
};

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

/// `/login [global]` in the terminal: the device flow off the host loop, its code shown in the
/// transcript; `LoginEnded` says how it went.
fn start_login(
    launch: &Launch,
    region: Option<&str>,
    updates: &tokio::sync::mpsc::Sender<HostUpdate>,
) -> Option<HostUpdate> {
    let region = match region.map(str::trim) {
        None | Some("") => kimi_auth::Region::default(),
        Some(text) => match kimi_auth::Region::parse(text) {
            Some(region) => region,
            None => {
                return Some(HostUpdate::Error(format!(
                    "unknown login region `{text}`; use mainland-cn (kimi.com) or global (kimi.ai). \
                     For a Kimi Platform API key run `kimi-rs login --api-key -` in a shell"
                )));
            }
        },
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    {
        let mut slot = launch.login.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(previous) = slot.replace(cancel.clone()) {
            previous.cancel();
        }
    }
    let endpoints = kimi_auth::Endpoints::for_login(region, &|n| std::env::var(n).ok());
    let (home, updates) = (launch.home.clone(), updates.clone());
    tokio::spawn(async move {
        let waiting = updates.clone();
        let outcome = crate::accounts::login_flow(&home, &endpoints, None, &cancel, move |code| {
            let update = HostUpdate::LoginWaiting {
                url: code.url().to_owned(),
                code: code.user_code.clone(),
            };
            if let Err(err) = waiting.try_send(update) {
                tracing::warn!("cannot show the login code: {err}");
            }
        })
        .await;
        let update = match outcome {
            Ok(applied) => HostUpdate::LoginEnded {
                ok: true,
                message: format!(
                    "{} Restart kimi-rs (`kimi-rs -c` continues this session) to use it.",
                    crate::accounts::logged_in_message(&applied)
                ),
            },
            Err(kimi_auth::AuthError::Cancelled) => HostUpdate::LoginEnded {
                ok: false,
                message: "Login cancelled.".to_owned(),
            },
            Err(err) => {
                tracing::warn!("login failed: {err}");
                HostUpdate::LoginEnded {
                    ok: false,
                    message: format!("Login failed: {err}"),
                }
            }
        };
        let _ = updates.send(update).await;
    });
    None
}

/// `/plugins reload`: load the plugins, skills and MCP servers again and make them the ones
/// new sessions (and the reopened current one) get. The old set stops once the session that
/// holds it is closed.
async fn reload_extensions(launch: &Launch) -> Arc<Extensions> {
    let sessions = &launch.sessions;
    let fresh = Arc::new(
        Extensions::load(
            &launch.home,
            &launch.cwd,
            &sessions.skills_dirs,
            &launch.config,
            sessions.trusted,
        )
        .await,
    );
    let old = sessions
        .extensions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .replace(fresh.clone());
    drop(old);
    tracing::info!("extensions reloaded for /plugins reload");
    fresh
}

/// `/provider` (list), `/provider remove <id>`, `/provider catalog …` and `/provider add …`
/// (`providers::tui`) against the home's `config.toml`.
fn providers_command(launch: &Launch, args: &str) -> HostUpdate {
    let mut words = args.split_whitespace();
    match (words.next(), words.next()) {
        (None, _) | (Some("list"), _) => match crate::config::load(&launch.home) {
            Ok(config) => HostUpdate::Notice(format!(
                "Providers in config.toml:\n{}",
                crate::providers::list_lines(&config).join("\n")
            )),
            Err(err) => HostUpdate::Error(format!("{err:#}")),
        },
        (Some("remove"), Some(id)) => match crate::providers::remove_in(&launch.home, id) {
            Ok(Ok(text)) => HostUpdate::Notice(format!(
                "{text} Restart kimi-rs to stop offering its models."
            )),
            Ok(Err(text)) => HostUpdate::Error(text),
            Err(err) => HostUpdate::Error(format!("{err:#}")),
        },
        (Some("catalog"), _) => {
            let rest = args
                .trim_start()
                .strip_prefix("catalog")
                .unwrap_or_default();
            match crate::providers::tui::catalog_text(rest) {
                Ok(text) => HostUpdate::Notice(text),
                Err(text) => HostUpdate::Error(text),
            }
        }
        (Some("add"), None) => match crate::providers::tui::choices() {
            Ok(choices) => HostUpdate::Choose {
                title: "Add a provider from the models.dev catalog — then keep the $VAR or type \
                        the key, name the models (none: all) and press Enter"
                    .to_owned(),
                items: choices
                    .into_iter()
                    .map(|c| kimi_tui::dialogs::PickerItem {
                        label: c.label,
                        detail: c.detail,
                        value: c.prompt,
                        this_dir: false,
                    })
                    .collect(),
            },
            Err(text) => HostUpdate::Error(text),
        },
        (Some("add"), _) => {
            let rest = args.trim_start().strip_prefix("add").unwrap_or_default();
            let env = |name: &str| std::env::var(name).ok();
            match crate::providers::tui::add(&launch.home, rest, &env) {
                Ok(text) => HostUpdate::Notice(format!(
                    "{text} Restart kimi-rs (`kimi-rs -c` continues this session) to use them."
                )),
                Err(text) => HostUpdate::Error(text),
            }
        }
        _ => HostUpdate::Error(
            "use /provider (list), /provider catalog [id|filter], /provider add <catalog id> \
             <key|$VAR> [model …] or /provider remove <id>"
                .to_owned(),
        ),
    }
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

/// What a UI request did to the attached session.
enum Served {
    Stay,
    /// Attach this session instead (the previous one is closed).
    Switch(Box<OpenedSession>),
    /// Close the session and open it again (its workspace directories or extensions changed);
    /// `notice` is shown once it is open again (a notice sent before would be cleared with
    /// the old transcript).
    Reopen {
        notice: Option<String>,
    },
}

/// What the launch does with one UI request.
async fn serve(
    launch: &Launch,
    opened: &OpenedSession,
    request: HostRequest,
    updates: &tokio::sync::mpsc::Sender<HostUpdate>,
) -> anyhow::Result<Served> {
    let reply = |u: HostUpdate| async move {
        let _ = updates.send(u).await;
    };
    match request {
        HostRequest::ResumeSession { id } if id == opened.session.state.id => {
            // Opening it again would put a second agent on the same journal.
            reply(HostUpdate::Notice("already in this session".to_owned())).await;
        }
        HostRequest::NewSession | HostRequest::ResumeSession { .. } => {
            let resume = match request {
                HostRequest::ResumeSession { id } => Resume::Id(id),
                _ => Resume::New,
            };
            match launch.open(resume) {
                Ok(next) => return Ok(Served::Switch(Box::new(next))),
                Err(err) => reply(HostUpdate::Error(format!("{err:#}"))).await,
            }
        }
        HostRequest::ExportMarkdown { path, markdown } => {
            let short: String = opened.session.state.id.chars().take(8).collect();
            let path = path.map_or_else(
                || {
                    launch.cwd.join(format!(
                        "kimi-export-{short}-{}.md",
                        kimi_core::engine::log::now_ms()
                    ))
                },
                |p| launch.cwd.join(p),
            );
            match std::fs::write(&path, markdown) {
                Ok(()) => {
                    reply(HostUpdate::Notice(format!(
                        "exported to {}",
                        path.display()
                    )))
                    .await
                }
                Err(err) => {
                    reply(HostUpdate::Error(format!(
                        "cannot write {}: {err}",
                        path.display()
                    )))
                    .await
                }
            }
        }
        HostRequest::AddDir { path, remember } => {
            let home = std::env::home_dir();
            let added = kimi_core::local_config::resolve_dir(&launch.cwd, &path, home.as_deref())
                .and_then(|dir| {
                    if remember {
                        kimi_core::local_config::remember_dir(&launch.cwd, &dir)
                            .map(|file| (dir, Some(file)))
                    } else {
                        Ok((dir, None))
                    }
                });
            match added {
                Ok((dir, file)) => {
                    let saved = match &file {
                        Some(file) => format!("Saved to:\n  {}", file.display()),
                        None => {
                            launch
                                .session_dirs
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .entry(opened.session.state.id.clone())
                                .or_default()
                                .push(dir.clone());
                            "For this session only".to_owned()
                        }
                    };
                    tracing::info!(dir = %dir.display(), remember, "workspace directory added");
                    return Ok(Served::Reopen {
                        notice: Some(format!(
                            "Added workspace directory:\n  {}\n  {saved}",
                            dir.display()
                        )),
                    });
                }
                Err(err) => reply(HostUpdate::Error(format!("/add-dir: {err}"))).await,
            }
        }
        HostRequest::PlanUsage => {
            // Off the host loop: the usage server may take a while to answer.
            let (home, config, updates) =
                (launch.home.clone(), launch.config.clone(), updates.clone());
            tokio::spawn(async move {
                let update = match crate::accounts::plan_usage(&home, &config).await {
                    None => return,
                    Some(Ok(lines)) => HostUpdate::Notice(lines.join("\n")),
                    Some(Err(err)) => HostUpdate::Warning(format!("Plan usage: {err}")),
                };
                let _ = updates.send(update).await;
            });
        }
        HostRequest::Login { region } => {
            if let Some(update) = start_login(launch, region.as_deref(), updates) {
                reply(update).await;
            }
        }
        HostRequest::CancelLogin => {
            let waiting = launch
                .login
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            match waiting {
                Some(cancel) => cancel.cancel(),
                None => reply(HostUpdate::Notice("no login is waiting".to_owned())).await,
            }
        }
        HostRequest::Providers { args } => reply(providers_command(launch, &args)).await,
        HostRequest::Plugins { args } => {
            use crate::plugin_panel::Answer;
            match crate::plugin_panel::command(&launch.home, &args).await {
                Answer::Notice(text) => reply(HostUpdate::Notice(text)).await,
                Answer::Error(text) => reply(HostUpdate::Error(text)).await,
                Answer::Choose { title, items } => reply(HostUpdate::Choose { title, items }).await,
                Answer::Reload => {
                    let fresh = reload_extensions(launch).await;
                    reply(HostUpdate::Skills(fresh.skill_commands())).await;
                    for warning in &fresh.warnings {
                        reply(HostUpdate::Warning(warning.clone())).await;
                    }
                    return Ok(Served::Reopen {
                        notice: Some(
                            "Plugins, skills and MCP servers reloaded; this session now uses them."
                                .to_owned(),
                        ),
                    });
                }
            }
        }
        HostRequest::WebServers => {
            let home = launch.home.clone();
            // A few loopback connects, bounded; off the async workers.
            let urls = tokio::task::spawn_blocking(move || {
                kimi_web::instances::running(&home)
                    .into_iter()
                    .map(|i| i.page_url)
                    .collect()
            })
            .await
            .unwrap_or_default();
            reply(HostUpdate::WebServers(urls)).await;
        }
        HostRequest::Environment { args } => {
            let here = opened
                .agent
                .handle
                .runtime()
                .config
                .tool_ctx
                .environment
                .info()
                .clone();
            // Connecting blocks (bounded); the UI shows the answer when it is done.
            let outcome = tokio::task::block_in_place(|| launch.environments.run(&args, &here));
            match outcome {
                crate::environment_command::Outcome::Notice(text) => {
                    reply(HostUpdate::Notice(text)).await;
                }
                crate::environment_command::Outcome::Error(text) => {
                    reply(HostUpdate::Error(text)).await;
                }
                crate::environment_command::Outcome::Reopen(notice) => {
                    tracing::info!("{notice}");
                    return Ok(Served::Reopen {
                        notice: Some(notice),
                    });
                }
            }
        }
        HostRequest::ExportDebugZip => {
            let id = &opened.session.state.id;
            let output = crate::export::output_path(None, &launch.cwd, id);
            let extras = crate::export_debug::extras(&launch.home);
            let update = match crate::export::export_dir(&opened.session.dir, id, &output, &extras)
            {
                Ok(done) => HostUpdate::Notice(format!(
                    "Debug ZIP written to {} ({}, {} files; secrets in the settings redacted)",
                    done.path.display(),
                    crate::export::human_size(done.bytes),
                    done.files
                )),
                Err(err) => HostUpdate::Error(format!("{err:#}")),
            };
            reply(update).await;
        }
        HostRequest::Feedback { args } => match crate::feedback::parse(&args) {
            Err(err) => reply(HostUpdate::Error(format!("/feedback: {err}"))).await,
            Ok(request) => {
                // Off the host loop: archiving and sending may take a while.
                let (home, cwd, updates) =
                    (launch.home.clone(), launch.cwd.clone(), updates.clone());
                let (dir, id) = (opened.session.dir.clone(), opened.session.state.id.clone());
                let endpoint = launch.config.feedback.endpoint.clone();
                reply(HostUpdate::Notice(
                    "Preparing the feedback bundle…".to_owned(),
                ))
                .await;
                tokio::spawn(async move {
                    let outcome =
                        crate::feedback::run(&request, &dir, &id, &home, &cwd, endpoint.as_deref())
                            .await;
                    let update = match outcome {
                        Ok(done) => HostUpdate::Notice(done.describe()),
                        Err(err) => {
                            tracing::warn!("feedback: {err:#}");
                            HostUpdate::Error(format!("/feedback: {err:#}"))
                        }
                    };
                    let _ = updates.send(update).await;
                });
            }
        },
        HostRequest::Experiments { args } => {
            let config = crate::experiments::current(&launch.config);
            if matches!(args.trim(), "" | "list") {
                reply(HostUpdate::Notice(crate::experiments::list(&config))).await;
                return Ok(Served::Stay);
            }
            let switched = crate::experiments::plan(&config, &args).and_then(|(id, on)| {
                crate::experiments::write(&config.path, id, on).map(|()| (id, on))
            });
            match switched {
                Ok((id, on)) => {
                    tracing::info!(flag = id, on, "experimental flag switched");
                    return Ok(Served::Reopen {
                        notice: Some(format!(
                            "Experimental flag {id} is now {} (written to [experimental] in {}); this session is reopened with it.",
                            if on { "on" } else { "off" },
                            config.path.display()
                        )),
                    });
                }
                Err(err) => reply(HostUpdate::Error(format!("/experiments: {err:#}"))).await,
            }
        }
        HostRequest::CopyToClipboard { text } => {
            // OSC 52: the terminal (also over SSH) puts the text on the system clipboard.
            let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
            let mut err = std::io::stderr();
            let _ = write!(err, "\x1b]52;c;{encoded}\x07");
            let _ = err.flush();
            reply(HostUpdate::Notice("copied to the clipboard".to_owned())).await;
        }
    }
    Ok(Served::Stay)
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
