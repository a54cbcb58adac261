//! The UI's reducer for engine events: a turn's text and thinking as they stream, tool cards
//! and their approvals, retries, compaction, usage, queued and steered prompts, sessions,
//! tasks, goals, flows, MCP and the answers to host ops — each turned into cells and state.

use std::time::Instant;

use kimi_protocol::host::SessionSummary;
use kimi_protocol::ops::{Event, TurnEndReason, Usage};

use crate::app::{App, RetryStatus, ago, task_item};
use crate::cells::{Cell, CellKind, NoticeLevel, SteerState, format_tokens};
use crate::dialogs::{Dialog, PickerItem, PickerKind, QuestionDialog};
use crate::tool_card::{ToolCard, ToolStatus};
use crate::transcript::parts_text;

impl App {
    /// The engine journaled the oldest steer still shown as sending (steers are answered in
    /// the order they were sent).
    fn steer_accepted(&mut self, joined: bool) {
        let state = if joined {
            SteerState::Joined
        } else {
            SteerState::NextPrompt
        };
        let sending = self.cells.iter_mut().find(|c| {
            matches!(
                c.kind,
                CellKind::User {
                    steer: Some(SteerState::Sending),
                    ..
                }
            )
        });
        if let Some(cell) = sending
            && let CellKind::User { steer, .. } = cell.kind_mut()
        {
            *steer = Some(state);
        }
    }

    /// Appends to the streaming answer (or thinking block) at the end, creating it if needed.
    fn stream_into(&mut self, thinking: bool, delta: &str) {
        let last_matches = self
            .cells
            .last()
            .is_some_and(|c| c.streaming_kind() == Some(thinking));
        if !last_matches {
            self.finish_streams();
            self.push(if thinking {
                CellKind::Thinking {
                    text: String::new(),
                    streaming: true,
                }
            } else {
                CellKind::Assistant {
                    text: String::new(),
                    streaming: true,
                }
            });
        }
        if let Some((text, _)) = self.cells.last_mut().and_then(Cell::stream_mut) {
            text.push_str(delta);
        }
    }

    /// Drop the cells of an attempt still streaming: the engine discarded it (retried, or the
    /// turn failed), so its text must not stay on screen as if it were the answer.
    fn discard_streams(&mut self) {
        let mut i = self.committed;
        while i < self.cells.len() {
            if self.cells[i].streaming_kind().is_some() {
                self.cells.remove(i);
            } else {
                i += 1;
            }
        }
    }

    fn finish_streams(&mut self) {
        for cell in self.cells.iter_mut().skip(self.committed) {
            if cell.streaming_kind().is_some()
                && let Some((_, streaming)) = cell.stream_mut()
            {
                *streaming = false;
            }
        }
    }

    /// Applies one protocol event.
    pub fn handle_event(&mut self, event: Event, now: Instant) {
        self.now = now;
        match event {
            Event::TurnStarted { .. } => {
                self.busy = true;
                self.turn_started = Some(now);
                self.step = 0;
                self.turn_usage = Usage::default();
                // A queued prompt becomes the prompt of this turn.
                if let Some(text) = self.queued.pop_front() {
                    self.push(CellKind::User { text, steer: None });
                }
            }
            Event::TurnEnded { reason, error, .. } => {
                self.busy = false;
                self.retry = None;
                // The engine stopped waiting for the question when the turn ended.
                if matches!(self.dialog, Some(Dialog::Question(_))) {
                    self.dialog = None;
                }
                if reason == TurnEndReason::Failed {
                    self.discard_streams();
                }
                self.finish_streams();
                for cell in &mut self.cells {
                    if cell.tool().is_some_and(ToolCard::is_running)
                        && let Some(card) = cell.tool_mut()
                    {
                        card.approval_answered(now);
                        card.status = ToolStatus::Interrupted;
                        card.finished = Some(now);
                    }
                }
                match reason {
                    TurnEndReason::Completed => {
                        let body = self.last_answer().unwrap_or_else(|| "Done.".to_owned());
                        self.notify("turn_ended", &body);
                    }
                    TurnEndReason::Cancelled => {
                        self.notice(
                            NoticeLevel::Warning,
                            "Interrupted. Tell the model what to do instead.",
                        );
                    }
                    TurnEndReason::Failed => {
                        let why = error.unwrap_or_else(|| "unknown error".to_owned());
                        self.notify("turn_ended", &format!("The turn failed: {why}"));
                        self.notice(NoticeLevel::Error, format!("The turn failed: {why}"));
                    }
                    TurnEndReason::Blocked => {
                        let why = error.unwrap_or_else(|| "a hook or policy stopped it".to_owned());
                        self.notice(NoticeLevel::Warning, format!("The turn was blocked: {why}"));
                    }
                }
                self.turn_started = None;
            }
            Event::StepStarted { step, .. } => self.step = step,
            Event::StepCompleted { .. } => {
                self.retry = None;
                self.finish_streams();
            }
            // One status line that updates in place: a notice per retry would bury the
            // transcript under identical warnings while a provider is down.
            Event::StepRetrying {
                next_attempt,
                max_attempts,
                delay_ms,
                error_message,
                status_code,
                ..
            } => {
                self.discard_streams();
                let code = status_code
                    .map(|c| format!("HTTP {c}: "))
                    .unwrap_or_default();
                self.retry = Some(RetryStatus {
                    next_attempt,
                    max_attempts,
                    until: now + std::time::Duration::from_millis(delay_ms),
                    reason: format!("{code}{}", short_reason(&error_message)),
                });
            }
            Event::AssistantDelta { text } => {
                self.retry = None;
                self.stream_into(false, &text);
            }
            Event::ThinkingDelta { text } => {
                self.retry = None;
                self.stream_into(true, &text);
            }
            Event::AssistantMessage { message } => {
                // Without deltas (a non-streaming provider) the message is the only source.
                let streamed = self
                    .cells
                    .iter()
                    .skip(self.committed)
                    .any(|c| c.streaming_kind() == Some(false));
                self.finish_streams();
                if !streamed {
                    let text = message.text();
                    if !text.trim().is_empty() {
                        self.push(CellKind::Assistant {
                            text,
                            streaming: false,
                        });
                    }
                }
            }
            Event::ToolStarted { call } => {
                self.finish_streams();
                let card = ToolCard::new(call.id, call.name, call.arguments.as_deref(), now);
                self.push(CellKind::Tool(Box::new(card)));
            }
            Event::ToolDiff { tool_call_id, diff } => {
                if let Some(card) = self.card_mut(&tool_call_id) {
                    card.set_diff(&diff);
                }
            }
            Event::ToolProgress { tool_call_id, text } => {
                if let Some(card) = self.card_mut(&tool_call_id) {
                    card.output.push_str(&text);
                }
            }
            Event::ToolResult {
                tool_call_id,
                output,
                is_error,
            } => {
                let text = parts_text(&output);
                let mut plan_change = None;
                if let Some(card) = self.card_mut(&tool_call_id) {
                    // The model switches plan mode with its tools; the footer follows.
                    plan_change = match (card.name.as_str(), is_error) {
                        ("EnterPlanMode", false) => Some(true),
                        ("ExitPlanMode", false) if text.starts_with("Exited plan mode") => {
                            Some(false)
                        }
                        _ => None,
                    };
                    card.finish(text, is_error, now);
                }
                if let Some(active) = plan_change {
                    self.info.plan_mode = active;
                }
            }
            Event::ApprovalRequested(req) => {
                self.notify(
                    "approval",
                    &format!("Approval needed: {} {}", req.tool_name, req.summary),
                );
                if let Some(card) = self.card_mut(&req.tool_call_id) {
                    card.await_approval(now, req.diff.as_deref());
                }
                if matches!(self.dialog, Some(Dialog::Approval(_))) {
                    self.approvals.push_back(req);
                } else {
                    self.open_approval(req);
                }
            }
            Event::QuestionRequested {
                request_id,
                questions,
            } => {
                let first = questions.questions.first().map(|q| q.question.clone());
                self.notify(
                    "question",
                    &format!("A question is waiting: {}", first.unwrap_or_default()),
                );
                self.dialog = Some(Dialog::Question(QuestionDialog::new(
                    request_id, &questions,
                )))
            }
            Event::CompactionStarted { .. } => {
                // Outside a turn (`/compact`) the status line times the compaction itself.
                self.turn_started.get_or_insert(now);
                self.push(CellKind::Compacting);
            }
            Event::CompactionCompleted {
                tokens_before,
                tokens_after,
            } => {
                self.end_compaction(
                    NoticeLevel::Info,
                    format!(
                        "Context compacted: {} → {} tokens.",
                        format_tokens(tokens_before),
                        format_tokens(tokens_after)
                    ),
                );
                self.context_tokens = tokens_after;
            }
            Event::CompactionCancelled { reason } => {
                self.end_compaction(
                    NoticeLevel::Warning,
                    format!("Compaction cancelled: {reason}"),
                );
            }
            Event::PromptQueued { .. }
            | Event::PromptSteered { .. }
            | Event::AnswerRecorded { .. }
            | Event::PromptRecorded { .. } => {}
            Event::SteerAccepted { joined, .. } => self.steer_accepted(joined),
            Event::ContextUndone { turns } => {
                let s = if turns == 1 { "" } else { "s" };
                self.notice(
                    NoticeLevel::Info,
                    format!("Undid {turns} prompt{s}; the model no longer sees them."),
                );
            }
            Event::Rewound { report } => {
                let (level, text) = crate::rewind::summary(&report);
                self.notice(level, text);
                if let Some(picker) = crate::rewind::force_picker(&report) {
                    self.open_picker(picker);
                }
            }
            Event::Usage {
                usage,
                context_tokens,
            } => {
                add_usage(&mut self.turn_usage, &usage);
                add_usage(&mut self.session_usage, &usage);
                self.context_tokens = context_tokens;
            }
            Event::Status { status } => self.status = status,
            Event::SwarmMode { active, .. } => self.swarm_mode_changed(active),
            Event::Warning { message } => self.notice(NoticeLevel::Warning, message),
            Event::Error { message } => self.notice(NoticeLevel::Error, message),
            Event::SessionList { sessions } => self.session_list(sessions),
            Event::TaskList { tasks } => {
                if let Some(Dialog::Picker(p)) = &mut self.dialog
                    && p.kind == PickerKind::Task
                {
                    p.items = tasks.iter().map(task_item).collect();
                    p.empty_text = "no background tasks".to_owned();
                }
                self.tasks = tasks;
            }
            Event::TaskStopped { task_id, status } => {
                self.notice(NoticeLevel::Info, format!("task {task_id}: {status}"));
            }
            // This UI shows the tail the task list carries; a full read (sent by another
            // client of the same session) is shown like a command's output.
            Event::TaskOutput {
                task_id, output, ..
            } => self.push(CellKind::Shell {
                command: format!("output of task {task_id}"),
                output,
                is_error: false,
            }),
            Event::ShellStarted { command, .. } => self.shell_running = Some(command),
            Event::TodosUpdated { todos } => self.todos_updated(todos),
            Event::ShellOutput {
                command,
                output,
                is_error,
            } => {
                self.shell_running = None;
                self.push(CellKind::Shell {
                    command,
                    output,
                    is_error,
                });
            }
            Event::ShellBackgrounded { command, task_id } => {
                self.shell_running = None;
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "`{command}` runs in the background as task {task_id} (/tasks shows it)"
                    ),
                );
            }
            Event::McpStatus { status } => self.push(CellKind::Mcp(status)),
            Event::McpSignIn { server, url } => self.notice(
                NoticeLevel::Info,
                format!(
                    "Open this URL in a browser to sign in to MCP server `{server}` (kimi-rs waits up to 15 minutes):\n{url}"
                ),
            ),
            Event::McpServerDone {
                ok,
                message,
                status,
                ..
            } => {
                let level = if ok {
                    NoticeLevel::Info
                } else {
                    NoticeLevel::Warning
                };
                self.notice(level, message);
                self.push(CellKind::Mcp(status));
            }
            Event::GoalUpdated { goal, change } => self.goal_updated(goal, change),
            Event::FlowUpdated { update } => {
                let level = match update.state {
                    kimi_protocol::flow::FlowState::Stopped { .. } => NoticeLevel::Warning,
                    _ => NoticeLevel::Info,
                };
                self.notice(level, update.describe());
            }
            Event::GoalQueue { goals } => self.goal_queue_listed(goals),
            Event::ModelChanged {
                alias,
                model,
                effort,
                context_window,
            } => self.model_changed(alias, model, effort, context_window),
            Event::BtwAnswered {
                question,
                answer,
                error,
            } => self.btw_answered(question, answer, error),
            Event::SessionTitle { title, changed } => {
                self.info.title = title.clone().unwrap_or_default();
                if !changed {
                    let title = title.unwrap_or_else(|| "(untitled)".to_owned());
                    self.notice(NoticeLevel::Info, format!("title: {title}"));
                }
            }
            Event::SessionForked {
                session_id, cwd, ..
            } => {
                let resume = match cwd {
                    Some(cwd) if self.workdir.as_deref() != Some(std::path::Path::new(&cwd)) => {
                        format!("cd {cwd} && kimi-rs -S {session_id}")
                    }
                    _ => format!("kimi-rs -S {session_id}"),
                };
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "Forked this session into {session_id}; this one goes on here. Resume the fork with: {resume}"
                    ),
                );
            }
        }
    }

    /// `Event::SessionList`: fill the session picker if it is open.
    fn session_list(&mut self, list: Vec<SessionSummary>) {
        if let Some(Dialog::Picker(p)) = &mut self.dialog
            && p.kind == PickerKind::Session
        {
            let now = wall_clock_ms();
            p.items = list
                .into_iter()
                .map(|s| PickerItem {
                    label: match s.title {
                        None => "(untitled)".to_owned(),
                        Some(title) if title.is_empty() => s.id.clone(),
                        Some(title) => title,
                    },
                    detail: format!(
                        "{} · {}",
                        ago(now.saturating_sub(s.updated_at)),
                        s.cwd.unwrap_or_default()
                    ),
                    value: s.id,
                    this_dir: s.this_dir,
                })
                .collect();
            p.empty_text = "no sessions (ctrl-a shows all directories)".to_owned();
            p.selected = 0;
        }
    }

    fn end_compaction(&mut self, level: NoticeLevel, text: String) {
        if !self.busy {
            self.turn_started = None;
        }
        if let Some(i) = self
            .cells
            .iter()
            .rposition(|c| matches!(c.kind, CellKind::Compacting))
        {
            *self.cells[i].kind_mut() = CellKind::Notice { level, text };
        } else {
            self.notice(level, text);
        }
    }
}

fn add_usage(acc: &mut Usage, u: &Usage) {
    acc.input_other += u.input_other;
    acc.output += u.output;
    acc.input_cache_read += u.input_cache_read;
    acc.input_cache_creation += u.input_cache_creation;
}

/// The first sentence of a provider error, at most 80 characters: the status line has one row.
fn short_reason(message: &str) -> String {
    let first = message
        .split(". ")
        .next()
        .unwrap_or(message)
        .trim_end_matches('.');
    if first.chars().count() <= 80 {
        return first.to_owned();
    }
    let mut cut: String = first.chars().take(79).collect();
    cut.push('…');
    cut
}

/// Milliseconds since the Unix epoch (session times are stored so).
fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
