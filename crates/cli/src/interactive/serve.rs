//! The terminal's host requests (`HostRequest`), served off the UI thread: `/new` and resuming
//! from the picker, `/login`, `/providers`, `/plugins reload`, `/add-dir`, `/environment`,
//! the clipboard (OSC 52), writing exported Markdown, `/web` — each answered with a
//! `HostUpdate`, or by switching or reopening the attached session.

use std::io::Write;
use std::sync::{Arc, PoisonError};

use base64::Engine as _;
use kimi_core::session::{OpenedSession, Resume};
use kimi_tui::{HostRequest, HostUpdate};

use super::Launch;
use crate::extensions::Extensions;

/// `/login [global]` in the terminal: the device flow off the host loop, its code shown in the
/// transcript; `LoginEnded` says how it went.
pub(super) fn start_login(
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
pub(super) async fn reload_extensions(launch: &Launch) -> Arc<Extensions> {
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
pub(super) fn providers_command(launch: &Launch, args: &str) -> HostUpdate {
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

/// What a UI request did to the attached session.
pub(super) enum Served {
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
pub(super) async fn serve(
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
