//! `kimi-rs` with no prompt: the interactive terminal UI on a new (or resumed) session. The
//! host side lives here: it forwards engine events to the UI and the UI's operations to the
//! engine, and serves what the UI cannot do alone (listing and switching sessions, exporting,
//! the clipboard, titles, background tasks, `!` shell commands, the skill list for completion,
//! the `/mcp` panel and startup warnings, which it shows in the transcript).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::Engine as _;
use kimi_core::permission::{ModeInputs, PermissionState, load_rules_from_str, resolve_mode};
use kimi_core::session::{AgentChoice, OpenedSession, Resume, SessionSetup, open_session};
use kimi_protocol::ContentPart;
use kimi_protocol::ops::Op;
use kimi_store::{Home, SessionStore};
use kimi_tui::{
    AppOptions, HostChannels, HostRequest, HostUpdate, RunOptions, SessionChannels, SessionEntry,
    SessionInfo, TaskEntry, TuiConfig,
};

use crate::cli::RunArgs;
use crate::extensions::{Extensions, expand_skill_command};
use crate::print::resume_hint_command;
use crate::run::{ModelChoice, agent_choice, resolve_model, setup};

const INIT_PROMPT: &str = "Analyze this repository and write an AGENTS.md at its root for coding agents: what the project is, how it is laid out, how to build, test and lint it, the conventions the code follows, and anything an agent must not do. Keep it short and factual; read the code before you write.";

struct Host {
    home: PathBuf,
    cwd: PathBuf,
    args_model: Option<String>,
    additional_dirs: Vec<PathBuf>,
    permissions: PermissionState,
    model_name: String,
    context_window: u64,
    /// `--agent`/`--agent-file`: binds the first session only (`/new` starts a default one).
    agent: std::sync::Mutex<AgentChoice>,
    /// Skills and MCP servers, shared by every session this launch opens.
    extensions: std::sync::Arc<Extensions>,
}

pub(crate) fn permission_state(home: &Path, args: &RunArgs) -> anyhow::Result<PermissionState> {
    let path = home.join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let config: toml::Value =
        toml::from_str(&text).unwrap_or(toml::Value::Table(Default::default()));
    let mode = resolve_mode(&ModeInputs {
        yolo_flag: args.yolo,
        auto_flag: args.auto,
        plan_flag: args.plan,
        config_default_mode: config
            .get("default_permission_mode")
            .and_then(toml::Value::as_str)
            .map(str::to_owned),
        config_default_plan: config
            .get("default_plan_mode")
            .and_then(toml::Value::as_bool)
            .unwrap_or(false),
        print_mode: false,
    })?;
    let mut state = PermissionState {
        mode,
        ..PermissionState::default()
    };
    if !text.is_empty() {
        let loaded =
            load_rules_from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        for err in &loaded.errors {
            eprintln!("kimi-rs: {}: {err}", path.display());
        }
        state.rules = loaded.rules;
    }
    Ok(state)
}

impl Host {
    fn open(&self, resume: Resume) -> anyhow::Result<OpenedSession> {
        let model: ModelChoice = resolve_model(&self.home, self.args_model.as_deref())?;
        let agent = std::mem::take(
            &mut *self
                .agent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let opened = open_session(SessionSetup {
            agent,
            extensions: self.extensions.session(),
            ..setup(
                self.home.clone(),
                self.cwd.clone(),
                resume,
                model,
                self.additional_dirs.clone(),
                Some(self.permissions.clone()),
            )
        })?;
        Ok(opened)
    }

    fn info(&self, opened: &OpenedSession) -> SessionInfo {
        SessionInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            session_id: opened.session.state.id.clone(),
            title: opened.session.state.title.clone().unwrap_or_default(),
            cwd: self.cwd.display().to_string(),
            model: self.model_name.clone(),
            models: Vec::new(),
            context_window: self.context_window,
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
        }
    }

    /// Where MCP servers are configured (surface.md §10): the user file, then the project's.
    fn mcp_config_files(&self) -> Vec<String> {
        vec![
            self.home.join("mcp.json").display().to_string(),
            ".kimi-code/mcp.json".to_owned(),
            ".mcp.json (at the git root)".to_owned(),
        ]
    }

    /// Sessions to resume, newest first. The open session is left out while it is still
    /// empty (e.g. the one `-S` without an id starts on): there is nothing in it to resume.
    fn sessions(&self, all: bool, current: &OpenedSession) -> Vec<SessionEntry> {
        let store = SessionStore::new(Home::new(&self.home));
        let here = kimi_store::workdir_key(&self.cwd);
        let skip = transcript(current)
            .is_empty()
            .then_some(current.session.state.id.as_str());
        let mut entries = store.index().list().unwrap_or_default();
        entries.retain(|e| {
            !e.archived && (all || e.workdir_key == here) && Some(e.id.as_str()) != skip
        });
        entries.sort_by_key(|e| std::cmp::Reverse(e.updated_at));
        let now = kimi_core::engine::log::now_ms();
        entries
            .into_iter()
            .map(|e| SessionEntry {
                this_dir: e.workdir_key == here,
                title: e.title.clone().unwrap_or_else(|| "(untitled)".to_owned()),
                cwd: e.cwd.clone().unwrap_or_default(),
                updated: ago(now.saturating_sub(e.updated_at)),
                id: e.id,
            })
            .collect()
    }
}

fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
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

async fn close(opened: OpenedSession) {
    opened.agent.handle.send(Op::Shutdown);
    let _ = opened.agent.join.await;
}

/// What the host loop does with one UI request; `Some(session)` when the session changed.
async fn serve(
    host: &Host,
    opened: &mut OpenedSession,
    request: HostRequest,
    updates: &tokio::sync::mpsc::Sender<HostUpdate>,
) -> anyhow::Result<Option<OpenedSession>> {
    let reply = |u: HostUpdate| async move {
        let _ = updates.send(u).await;
    };
    match request {
        HostRequest::ListSessions { all } => {
            reply(HostUpdate::Sessions(host.sessions(all, opened))).await
        }
        HostRequest::ResumeSession { id } if id == opened.session.state.id => {
            // Opening it again would put a second agent on the same journal.
            reply(HostUpdate::Notice("already in this session".to_owned())).await;
        }
        HostRequest::NewSession | HostRequest::ResumeSession { .. } => {
            let resume = match request {
                HostRequest::ResumeSession { id } => Resume::Id(id),
                _ => Resume::New,
            };
            match host.open(resume) {
                Ok(next) => return Ok(Some(next)),
                Err(err) => reply(HostUpdate::Error(format!("{err:#}"))).await,
            }
        }
        HostRequest::ExportMarkdown { path, markdown } => {
            let short: String = opened.session.state.id.chars().take(8).collect();
            let path = path.map_or_else(
                || {
                    host.cwd.join(format!(
                        "kimi-export-{short}-{}.md",
                        kimi_core::engine::log::now_ms()
                    ))
                },
                |p| host.cwd.join(p),
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
        HostRequest::CopyToClipboard { text } => {
            // OSC 52: the terminal (also over SSH) puts the text on the system clipboard.
            let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
            let mut err = std::io::stderr();
            let _ = write!(err, "\x1b]52;c;{encoded}\x07");
            let _ = err.flush();
            reply(HostUpdate::Notice("copied to the clipboard".to_owned())).await;
        }
        HostRequest::SetTitle { title: None } => {
            let title = opened
                .session
                .state
                .title
                .clone()
                .unwrap_or_else(|| "(untitled)".to_owned());
            reply(HostUpdate::Notice(format!("title: {title}"))).await;
        }
        HostRequest::SetTitle { title: Some(title) } => {
            let store = SessionStore::new(Home::new(&host.home));
            let title: String = title.chars().take(200).collect();
            opened.session.state.title = Some(title);
            opened.session.state.title_kind = Some("custom".to_owned());
            match store.update(&mut opened.session) {
                Ok(()) => reply(HostUpdate::Info(host.info(opened))).await,
                Err(err) => reply(HostUpdate::Error(err.to_string())).await,
            }
        }
        HostRequest::Init => {
            opened.agent.handle.send(Op::Submit {
                input: vec![ContentPart::text(INIT_PROMPT)],
                origin: None,
            });
        }
        HostRequest::ListTasks => {
            let tasks = &opened.agent.handle.runtime().config.tool_ctx.tasks;
            let entries = tasks
                .list()
                .into_iter()
                .map(|t| TaskEntry {
                    kind: t.kind.clone(),
                    output_tail: tasks.tail_output(&t.id, 4096).0,
                    status: t.status.as_str().to_owned(),
                    description: if t.description.is_empty() {
                        t.command.clone()
                    } else {
                        t.description.clone()
                    },
                    id: t.id,
                })
                .collect();
            reply(HostUpdate::Tasks(entries)).await;
        }
        HostRequest::StopTask { id } => {
            let tasks = opened.agent.handle.runtime().config.tool_ctx.tasks.clone();
            match tasks.stop(&id, "stopped by the user").await {
                Ok(info) => {
                    reply(HostUpdate::Notice(format!(
                        "task {id}: {}",
                        info.status.as_str()
                    )))
                    .await
                }
                Err(err) => reply(HostUpdate::Error(err.to_string())).await,
            }
        }
        HostRequest::McpStatus => {
            let status = host.extensions.mcp_status(host.mcp_config_files());
            reply(HostUpdate::Mcp(status)).await;
        }
        HostRequest::Shell {
            command,
            background,
        } => {
            let cwd = host.cwd.clone();
            let updates = updates.clone();
            let run = async move {
                let out = tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg(&command)
                    .current_dir(&cwd)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .await;
                let (output, is_error) = match out {
                    Ok(out) => {
                        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
                        text.push_str(&String::from_utf8_lossy(&out.stderr));
                        (text, !out.status.success())
                    }
                    Err(err) => (format!("cannot run the command: {err}"), true),
                };
                let _ = updates
                    .send(HostUpdate::ShellOutput {
                        command,
                        output,
                        is_error,
                    })
                    .await;
            };
            if background {
                tokio::spawn(run);
            } else {
                run.await;
            }
        }
    }
    Ok(None)
}

/// Pump events, operations and requests until the UI goes away. First the UI gets the skill
/// list and the `warnings` of the startup (shown in its transcript).
async fn host_loop(
    host: Host,
    mut opened: OpenedSession,
    mut channels: HostChannels,
    warnings: Vec<String>,
) -> OpenedSession {
    let _ = channels
        .host_updates
        .send(HostUpdate::Skills(host.extensions.skill_commands()))
        .await;
    for warning in warnings {
        let _ = channels
            .host_updates
            .send(HostUpdate::Warning(warning))
            .await;
    }
    loop {
        tokio::select! {
            event = opened.agent.events.recv() => {
                let Some(event) = event else { break };
                if channels.events.send(event).await.is_err() {
                    break;
                }
            }
            op = channels.ops.recv() => {
                let Some(op) = op else { break };
                match expand_skill_command(op, &host.extensions.skills, &opened.session.state.id) {
                    Ok(op) => {
                        opened.agent.handle.send(op);
                    }
                    Err(message) => {
                        let _ = channels.host_updates.send(HostUpdate::Error(message)).await;
                    }
                }
            }
            request = channels.host_requests.recv() => {
                let Some(request) = request else { break };
                match serve(&host, &mut opened, request, &channels.host_updates).await {
                    Ok(Some(next)) => {
                        let previous = std::mem::replace(&mut opened, next);
                        close(previous).await;
                        let update = HostUpdate::SessionSwitched {
                            info: host.info(&opened),
                            transcript: transcript(&opened),
                        };
                        let _ = channels.host_updates.send(update).await;
                        for warning in &opened.warnings {
                            let _ = channels.host_updates.send(HostUpdate::Warning(warning.clone())).await;
                        }
                    }
                    Ok(None) => {}
                    Err(err) => {
                        let _ = channels.host_updates.send(HostUpdate::Error(format!("{err:#}"))).await;
                    }
                }
            }
        }
    }
    opened
}

pub fn run(args: &RunArgs) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let pick = args.session.as_deref() == Some("");
    let resume = match (&args.session, args.continue_session) {
        (Some(id), _) if !id.is_empty() => Resume::Id(id.clone()),
        (_, true) => Resume::Latest,
        _ => Resume::New,
    };
    let model = resolve_model(&home, args.model.as_deref()).context(
        "no model to talk to; set KIMI_MODEL_NAME/KIMI_MODEL_API_KEY (see README) or add one to config.toml, or try `kimi-rs demo`",
    )?;
    let model_name = model.provider.model().to_owned();
    let context_window = model.max_context_tokens;
    drop(model);
    let mut host = Host {
        extensions: std::sync::Arc::new(Extensions::without_mcp(&home, &cwd, &args.skills_dir)),
        permissions: permission_state(&home, args)?,
        home: home.clone(),
        cwd: cwd.clone(),
        args_model: args.model.clone(),
        additional_dirs: args.add_dir.clone(),
        model_name,
        context_window,
        agent: std::sync::Mutex::new(agent_choice(args)),
    };
    let tui_config = TuiConfig::load(&home.join("tui.toml"))?;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let full_screen = ["KIMI_RS_TUI_FULL_SCREEN", "KIMI_CODE_TUI_FULL_SCREEN"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|x| x == "1"));
    let editor = tui_config
        .editor_command
        .clone()
        .or_else(|| std::env::var("VISUAL").ok())
        .or_else(|| std::env::var("EDITOR").ok());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let extensions = std::sync::Arc::new(Extensions::load(&home, &cwd, &args.skills_dir).await);
        host.extensions = extensions.clone();
        let opened = host.open(resume)?;
        // Shown in the transcript, where the user sees them (stderr would scroll away).
        let warnings: Vec<String> = extensions
            .warnings
            .iter()
            .chain(&opened.warnings)
            .cloned()
            .collect();
        let options = RunOptions {
            app: AppOptions::from_config(
                &tui_config,
                host.info(&opened),
                Some(home.join("tui")),
                cwd.clone(),
                no_color,
            ),
            transcript: transcript(&opened),
            full_screen,
            open_session_picker: pick,
            editor_command: editor,
        };
        let (ui, channels) = SessionChannels::pair(1024);
        let pump = tokio::spawn(host_loop(host, opened, channels, warnings));
        let ui_result = kimi_tui::run(options, ui).await;
        let opened = pump
            .await
            .context("the session host stopped unexpectedly")?;
        let id = opened.session.state.id.clone();
        close(opened).await;
        if let Ok(extensions) = std::sync::Arc::try_unwrap(extensions) {
            extensions.shutdown().await;
        }
        ui_result?;
        eprintln!(
            "To resume this session: {}",
            resume_hint_command(&id, Some(&cwd.display().to_string()))
        );
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn relative_times() {
        assert_eq!(super::ago(5_000), "just now");
        assert_eq!(super::ago(120_000), "2m ago");
        assert_eq!(super::ago(7_200_000), "2h ago");
        assert_eq!(super::ago(3 * 86_400_000), "3d ago");
    }
}
