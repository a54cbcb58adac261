//! The host ops' answers: each one becomes an event on the asking session's stream (an error
//! becomes `Event::Error` there too), so every front end reads them like any other event.

use std::path::Path;

use kimi_protocol::host::{McpServerAction, TaskSummary};
use kimi_protocol::ops::{Event, Op};

use super::{SessionExtras, SessionHost};
use crate::engine::agent::AgentHandle;

/// The asking session.
pub(super) struct Context<'a> {
    pub host: &'a SessionHost,
    pub handle: &'a AgentHandle,
    pub cwd: &'a Path,
    pub extras: &'a std::sync::Arc<dyn SessionExtras>,
    pub shell: &'a std::sync::Arc<super::shell::ShellSlot>,
}

/// The task browser shows this much of each task's output.
const TAIL_BYTES: u64 = 4096;
/// A title is cut to this many characters.
const TITLE_CHARS: usize = 200;
/// `Op::TaskOutput` without `max_bytes`.
const OUTPUT_BYTES: u64 = 32 * 1024;

pub(super) async fn answer(ctx: &Context<'_>, op: Op) {
    let rt = ctx.handle.runtime();
    match op {
        Op::ListSessions { all } => match sessions(ctx, all) {
            Ok(sessions) => rt.emit(Event::SessionList { sessions }),
            Err(err) => rt.emit(Event::Error {
                message: err.to_string(),
            }),
        },
        Op::ListTasks => rt.emit(Event::TaskList { tasks: tasks(ctx) }),
        Op::StopTask { task_id } => {
            let tasks = rt.config.tool_ctx.tasks.clone();
            let rt = rt.clone();
            // Stopping waits for the process to exit; later ops need not wait for it.
            tokio::spawn(async move {
                match tasks.stop(&task_id, "stopped by the user").await {
                    Ok(info) => rt.emit(Event::TaskStopped {
                        task_id,
                        status: info.status.as_str().to_owned(),
                    }),
                    Err(err) => rt.emit(Event::Error {
                        message: err.to_string(),
                    }),
                }
            });
        }
        Op::TaskOutput { task_id, max_bytes } => {
            let tasks = &rt.config.tool_ctx.tasks;
            match tasks.get(&task_id) {
                Ok(_) => {
                    let (output, total) =
                        tasks.tail_output(&task_id, max_bytes.unwrap_or(OUTPUT_BYTES));
                    rt.emit(Event::TaskOutput {
                        truncated: total > output.len() as u64,
                        task_id,
                        output,
                    });
                }
                Err(err) => rt.emit(Event::Error {
                    message: err.to_string(),
                }),
            }
        }
        Op::Shell {
            command,
            background,
        } => super::shell::start(ctx.shell, rt, ctx.cwd.to_owned(), command, background),
        Op::ShellToBackground => super::shell::to_background(ctx.shell, rt),
        Op::McpStatus => rt.emit(Event::McpStatus {
            status: ctx.extras.mcp_status(),
        }),
        Op::McpServer { server, action } => {
            let extras = ctx.extras.clone();
            let rt = rt.clone();
            // A sign-in waits for the browser (up to 15 minutes); later ops must not wait.
            tokio::spawn(async move {
                let outcome = match action {
                    McpServerAction::Login => match extras.mcp_login(&server).await {
                        Ok(started) => {
                            rt.emit(Event::McpSignIn {
                                server: server.clone(),
                                url: started.url,
                            });
                            match started.done.await {
                                Ok(outcome) => outcome,
                                Err(e) => Err(format!("the sign-in task ended early: {e}")),
                            }
                        }
                        Err(message) => Err(message),
                    },
                    McpServerAction::Logout => extras.mcp_logout(&server).await,
                    McpServerAction::Reconnect => extras.mcp_reconnect(&server).await,
                };
                let (ok, message) = match outcome {
                    Ok(message) => (true, message),
                    Err(message) => (false, message),
                };
                rt.emit(Event::McpServerDone {
                    server,
                    action,
                    ok,
                    message,
                    status: extras.mcp_status(),
                });
            });
        }
        Op::SetTitle { title } => match (&rt.config.session_meta, title) {
            (None, _) => rt.emit(Event::Error {
                message: "this session keeps no metadata, so it has no title".to_owned(),
            }),
            (Some(meta), None) => rt.emit(Event::SessionTitle {
                title: meta.title(),
                changed: false,
            }),
            (Some(meta), Some(title)) => {
                let title: String = title.chars().take(TITLE_CHARS).collect();
                match meta.set_title(&title) {
                    Ok(()) => rt.emit(Event::SessionTitle {
                        title: Some(title),
                        changed: true,
                    }),
                    Err(message) => rt.emit(Event::Error { message }),
                }
            }
        },
        Op::Fork => match fork(ctx) {
            Ok(event) => rt.emit(event),
            Err(message) => rt.emit(Event::Error { message }),
        },
        other => rt.emit(Event::Error {
            message: format!("the session host does not answer {other:?}; send it to the agent"),
        }),
    }
}

/// Sessions to resume, newest first, without archived ones. The asking session is left out
/// while it is still empty (e.g. the one `-S` without an id starts on): there is nothing in
/// it to resume.
fn sessions(
    ctx: &Context<'_>,
    all: bool,
) -> Result<Vec<kimi_protocol::host::SessionSummary>, super::HostError> {
    let rt = ctx.handle.runtime();
    let empty = rt.log().history().messages().is_empty();
    let current = &rt.config.session_id;
    let mut list = ctx.host.list_sessions(Some(ctx.cwd))?;
    list.retain(|s| !s.archived && (all || s.this_dir) && !(empty && &s.id == current));
    Ok(list)
}

/// Copy the asking session into a new one. Only between turns: a turn still appending to
/// the journal would leave the copy with half of it.
fn fork(ctx: &Context<'_>) -> Result<Event, String> {
    let rt = ctx.handle.runtime();
    if !matches!(rt.snapshot(), kimi_protocol::ops::AgentStatus::Idle { .. }) {
        return Err("a turn is running; wait for it to end (or cancel it), then fork".to_owned());
    }
    let store = kimi_store::SessionStore::new(kimi_store::Home::new(ctx.host.home()));
    let id = &rt.config.session_id;
    let key = store.locate(id).ok_or_else(|| {
        format!(
            "session {id} has no directory under {}; nothing to fork",
            ctx.host.home().display()
        )
    })?;
    let source = store
        .open(&key, id)
        .map_err(|err| format!("cannot read session {id}: {err}"))?;
    let fork = store
        .fork(&source)
        .map_err(|err| format!("cannot fork session {id}: {err}"))?;
    tracing::info!(from = %id, to = %fork.state.id, "session forked");
    Ok(Event::SessionForked {
        session_id: fork.state.id,
        cwd: fork.state.cwd,
        title: fork.state.title,
    })
}

fn tasks(ctx: &Context<'_>) -> Vec<TaskSummary> {
    let tasks = &ctx.handle.runtime().config.tool_ctx.tasks;
    tasks
        .list()
        .into_iter()
        .map(|t| TaskSummary {
            kind: t.kind.clone(),
            output_tail: tasks.tail_output(&t.id, TAIL_BYTES).0,
            status: t.status.as_str().to_owned(),
            description: if t.description.is_empty() {
                t.command.clone()
            } else {
                t.description.clone()
            },
            id: t.id,
        })
        .collect()
}
