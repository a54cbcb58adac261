//! The UI state and its reducer for protocol events and host updates. No terminal here: the
//! runtime feeds it, drains [`UiAction`]s, and draws it with `render`. Time is passed in so
//! tests are deterministic.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use kimi_protocol::message::{ContentPart, Message, Role};
use kimi_protocol::ops::{AgentStatus, ApprovalRequest, Event, Op, TurnEndReason, Usage};
use kimi_protocol::origin::{KnownOrigin, Origin};

use crate::cells::{Cell, CellKind, NoticeLevel, SteerState, format_tokens};
use crate::dialogs::{ApprovalDialog, Dialog, Picker, PickerItem, PickerKind, QuestionDialog};
use crate::editor::Editor;
use crate::history::History;
use crate::host::{HostRequest, HostUpdate, SessionInfo, SkillEntry, TaskEntry};
use crate::theme::Theme;
use crate::tool_card::{ToolCard, ToolStatus};
use kimi_protocol::host::SessionSummary;

/// What the app wants done outside itself.
#[derive(Debug, Clone, PartialEq)]
pub enum UiAction {
    Op(Op),
    Host(HostRequest),
    /// Ctrl-G: edit this text in the external editor, then call [`App::set_input`].
    EditExternally(String),
    /// Ctrl-V / Alt-V: read the clipboard, then call [`App::clipboard_read`].
    PasteClipboard,
    Exit,
}

/// Construction parameters.
#[derive(Debug, Clone, Default)]
pub struct AppOptions {
    pub info: SessionInfo,
    pub theme: Theme,
    pub history: Option<(PathBuf, PathBuf)>,
    pub collapse_pastes: bool,
    pub status_items: Vec<String>,
    /// `[status_line] command` (see [`crate::status_command`]).
    pub status_command: Option<String>,
    /// Root for `@` completion; the index is built on first use if the host sent none.
    pub workdir: Option<PathBuf>,
    /// Theme, editor and notification settings, and where `/theme` and `/editor` save them.
    pub prefs: crate::prefs::Prefs,
}

impl AppOptions {
    /// Options from `tui.toml`. `no_color` is the host's reading of `NO_COLOR` (passed in so
    /// tests never touch the process environment); history goes under `data_dir/history/`.
    pub fn from_config(
        config: &crate::config::TuiConfig,
        info: SessionInfo,
        data_dir: Option<PathBuf>,
        cwd: PathBuf,
        no_color: bool,
    ) -> Self {
        AppOptions {
            info,
            theme: Theme::new(config.theme.clone(), no_color),
            history: data_dir.map(|d| (d, cwd.clone())),
            collapse_pastes: !config.disable_paste_burst,
            status_items: config.status_items.clone(),
            status_command: config.status_command.clone(),
            workdir: Some(cwd),
            prefs: crate::prefs::Prefs {
                theme: config.theme.clone(),
                editor_config: config.editor_command.clone(),
                notifications: config.notifications.clone(),
                colours: crate::theme_file::ColourSupport {
                    no_color,
                    truecolor: false,
                },
                ..crate::prefs::Prefs::default()
            },
        }
    }
}

/// A failed request waiting for its next attempt.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RetryStatus {
    pub next_attempt: u32,
    pub max_attempts: u32,
    /// When the next attempt goes out.
    pub until: Instant,
    pub reason: String,
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

pub struct App {
    pub(crate) cells: Vec<Cell>,
    /// Cells before this index are in the terminal's scrollback (inline mode).
    pub(crate) committed: usize,
    pub(crate) info: SessionInfo,
    pub(crate) theme: Theme,
    pub(crate) editor: Editor,
    /// The editor as it was when the last prompt was sent: put back if the session refuses
    /// the prompt (`HostUpdate::Refused`), so nothing typed or pasted is lost.
    pub(crate) sent: Option<Editor>,
    pub(crate) history: History,
    pub(crate) dialog: Option<Dialog>,
    pub(crate) approvals: VecDeque<ApprovalRequest>,
    pub(crate) queued: VecDeque<String>,
    pub(crate) busy: bool,
    pub(crate) turn_started: Option<Instant>,
    pub(crate) step: u32,
    pub(crate) status: AgentStatus,
    pub(crate) turn_usage: Usage,
    pub(crate) session_usage: Usage,
    pub(crate) context_tokens: u64,
    pub(crate) expanded: bool,
    pub(crate) shell_mode: bool,
    /// The running foreground `!command` (Ctrl-B moves it to the background).
    pub(crate) shell_running: Option<String>,
    /// The agent's todo list (the panel above the prompt) and whether Ctrl-T expanded it.
    pub(crate) todos: Vec<kimi_protocol::record::TodoItem>,
    pub(crate) todos_expanded: bool,
    pub(crate) now: Instant,
    pub(crate) exit_armed: Option<Instant>,
    pub(crate) last_esc: Option<Instant>,
    pub(crate) completion: Option<crate::input::Completion>,
    pub(crate) files: Option<Vec<String>>,
    pub(crate) workdir: Option<PathBuf>,
    pub(crate) status_items: Vec<String>,
    pub(crate) status_command: Option<crate::status_command::StatusCommand>,
    /// The status-line command's line generation last drawn.
    pub(crate) status_generation: u64,
    pub(crate) scroll: usize,
    pub(crate) tasks: Vec<TaskEntry>,
    /// Skills for the `/` completion menu (from the host).
    pub(crate) skills: Vec<SkillEntry>,
    pub(crate) hint: Option<String>,
    /// The request being retried (shown in the status line until the answer streams).
    pub(crate) retry: Option<RetryStatus>,
    /// MCP servers still connecting (shown in the footer while non-zero).
    pub(crate) mcp_connecting: usize,
    /// A `/login` is waiting for the user's approval in the browser.
    pub(crate) login_waiting: bool,
    /// A `/swarm` waiting for its permission choice.
    pub(crate) swarm_pending: Option<crate::swarm::SwarmStart>,
    /// The session's goal (the goal strip), from `goal.updated`.
    pub(crate) goal: Option<kimi_protocol::host::GoalSnapshot>,
    /// The workspace's goal queue as last listed.
    pub(crate) goal_queue: Vec<kimi_protocol::host::QueuedGoal>,
    /// `/goal status` asked: show the next snapshot.
    pub(crate) goal_status_wanted: bool,
    /// `/goal next manage` asked: show the next queue listing.
    pub(crate) goal_queue_wanted: bool,
    /// A `/goal` start waiting for its permission-mode choice.
    pub(crate) goal_pending: Option<kimi_protocol::ops::GoalAction>,
    /// The `/btw` side question on screen (its own pane, never in the transcript).
    pub(crate) btw: Option<crate::btw::BtwPane>,
    pub(crate) prefs: crate::prefs::Prefs,
    /// Focus reporting's last word (a terminal that never reports counts as focused).
    pub(crate) focused: bool,
    pub(crate) notifications: Vec<crate::notify::Notification>,
    /// `/web`: where to open this session once the UI has closed.
    pub(crate) web_handoff: Option<crate::web_handoff::WebHandoff>,
    actions: Vec<UiAction>,
    pub(crate) should_exit: bool,
}

impl App {
    pub fn new(opts: AppOptions, transcript: &[Message], now: Instant) -> Self {
        let history = match &opts.history {
            Some((data_dir, cwd)) => History::load(data_dir, cwd),
            None => History::in_memory(),
        };
        let mut app = App {
            cells: Vec::new(),
            committed: 0,
            info: opts.info,
            theme: opts.theme,
            editor: Editor::new(opts.collapse_pastes),
            sent: None,
            history,
            dialog: None,
            approvals: VecDeque::new(),
            queued: VecDeque::new(),
            busy: false,
            turn_started: None,
            step: 0,
            status: AgentStatus::Idle {
                background_tasks: 0,
            },
            turn_usage: Usage::default(),
            session_usage: Usage::default(),
            context_tokens: 0,
            expanded: false,
            shell_mode: false,
            shell_running: None,
            todos: Vec::new(),
            todos_expanded: false,
            now,
            exit_armed: None,
            last_esc: None,
            completion: None,
            files: None,
            workdir: opts.workdir,
            status_items: opts.status_items,
            status_command: opts
                .status_command
                .as_deref()
                .map(crate::status_command::StatusCommand::new),
            status_generation: 0,
            scroll: 0,
            tasks: Vec::new(),
            skills: Vec::new(),
            hint: None,
            retry: None,
            mcp_connecting: 0,
            login_waiting: false,
            swarm_pending: None,
            goal: None,
            goal_queue: Vec::new(),
            goal_status_wanted: false,
            goal_queue_wanted: false,
            goal_pending: None,
            btw: None,
            prefs: opts.prefs,
            focused: true,
            notifications: Vec::new(),
            web_handoff: None,
            actions: Vec::new(),
            should_exit: false,
        };
        app.load_transcript(transcript);
        app
    }

    /// Takes the actions produced since the last call.
    pub fn drain_actions(&mut self) -> Vec<UiAction> {
        std::mem::take(&mut self.actions)
    }

    pub fn should_exit(&self) -> bool {
        self.should_exit
    }

    pub fn is_busy(&self) -> bool {
        self.busy || self.compacting()
    }

    /// A compaction is running (it may run outside a turn, e.g. `/compact`).
    pub(crate) fn compacting(&self) -> bool {
        self.cells
            .iter()
            .skip(self.committed)
            .any(|c| matches!(c.kind, CellKind::Compacting))
    }

    /// Replaces the prompt text (after the external editor returns).
    pub fn set_input(&mut self, text: &str) {
        self.editor.set_text(text.trim_end_matches('\n'));
    }

    pub fn input_text(&self) -> &str {
        self.editor.text()
    }

    pub(crate) fn emit(&mut self, action: UiAction) {
        if action == UiAction::Exit {
            self.should_exit = true;
        }
        self.actions.push(action);
    }

    pub(crate) fn op(&mut self, op: Op) {
        self.emit(UiAction::Op(op));
    }

    pub(crate) fn push(&mut self, kind: CellKind) {
        self.cells.push(Cell::new(kind));
        self.scroll = 0;
    }

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

    pub(crate) fn notice(&mut self, level: NoticeLevel, text: impl Into<String>) {
        self.push(CellKind::Notice {
            level,
            text: text.into(),
        });
    }

    /// Advances the clock (spinner, elapsed times, double-press windows).
    pub fn tick(&mut self, now: Instant) {
        self.now = now;
        if let Some(command) = &self.status_command
            && command.due(now)
        {
            command.refresh(self.status_snapshot().to_string(), now);
        }
    }

    /// Wait, at most `limit`, until no status-line command run is in progress (true when
    /// idle or when there is no command): lets a caller see a run's line without polling.
    pub fn wait_status_command(&self, limit: std::time::Duration) -> bool {
        self.status_command
            .as_ref()
            .is_none_or(|command| command.wait_idle(limit))
    }

    /// Whether the status-line command printed a new line since the last call (the idle UI
    /// only draws when something changed).
    pub fn take_status_change(&mut self) -> bool {
        let now = self
            .status_command
            .as_ref()
            .map_or(0, crate::status_command::StatusCommand::generation);
        std::mem::replace(&mut self.status_generation, now) != now
    }

    /// What the status-line command gets on stdin (the reference's fields).
    pub(crate) fn status_snapshot(&self) -> serde_json::Value {
        let window = self.info.context_window;
        serde_json::json!({
            "model": self.info.model,
            "cwd": self.info.cwd,
            "permissionMode": crate::input::mode_name(self.info.permission_mode),
            "planMode": self.info.plan_mode,
            "contextTokens": self.context_tokens,
            "maxContextTokens": window,
            "contextUsage": if window > 0 { self.context_tokens as f64 / window as f64 } else { 0.0 },
            "sessionId": self.info.session_id,
            "version": self.info.version,
        })
    }

    fn load_transcript(&mut self, messages: &[Message]) {
        for m in messages {
            match m.role {
                Role::User => {
                    // Only what the user typed; injections and reminders stay hidden.
                    let typed = match m.origin.as_ref().and_then(Origin::known) {
                        None | Some(KnownOrigin::User { .. }) => true,
                        Some(
                            KnownOrigin::SkillActivation { .. }
                            | KnownOrigin::PluginCommand { .. }
                            | KnownOrigin::Injection { .. }
                            | KnownOrigin::ShellCommand { .. }
                            | KnownOrigin::CompactionSummary
                            | KnownOrigin::SystemTrigger { .. }
                            | KnownOrigin::Task { .. }
                            | KnownOrigin::CronJob { .. }
                            | KnownOrigin::CronMissed { .. }
                            | KnownOrigin::HookResult { .. }
                            | KnownOrigin::Retry { .. },
                        ) => false,
                    };
                    let mut text = m.text();
                    if let Some(KnownOrigin::User {
                        skill_activations: Some(loaded),
                        ..
                    }) = m.origin.as_ref().and_then(Origin::known)
                    {
                        // Inline skill mentions: one part per loaded skill, then what the
                        // user typed.
                        text = m
                            .content
                            .iter()
                            .skip(loaded.len())
                            .filter_map(ContentPart::as_text)
                            .collect();
                    }
                    if typed && !text.trim().is_empty() {
                        self.push(CellKind::User { text, steer: None });
                    }
                }
                Role::Assistant => {
                    for part in &m.content {
                        match part {
                            ContentPart::Think { think, .. } if !think.trim().is_empty() => {
                                self.push(CellKind::Thinking {
                                    text: think.clone(),
                                    streaming: false,
                                });
                            }
                            ContentPart::Text { text } if !text.trim().is_empty() => {
                                self.push(CellKind::Assistant {
                                    text: text.clone(),
                                    streaming: false,
                                });
                            }
                            ContentPart::Think { .. }
                            | ContentPart::Text { .. }
                            | ContentPart::Image(_)
                            | ContentPart::Audio(_)
                            | ContentPart::Video(_) => {}
                        }
                    }
                    for call in &m.tool_calls {
                        let mut card = ToolCard::new(
                            call.id.clone(),
                            call.name.clone(),
                            call.arguments.as_deref(),
                            self.now,
                        );
                        card.status = ToolStatus::Interrupted;
                        card.finished = Some(self.now);
                        card.resumed = true;
                        self.push(CellKind::Tool(Box::new(card)));
                    }
                }
                Role::Tool => {
                    if let Some(id) = &m.tool_call_id {
                        let output = parts_text(&m.content);
                        let now = self.now;
                        if let Some(card) = self.card_mut(id) {
                            card.finish(output, m.is_error == Some(true), now);
                        }
                    }
                }
                Role::System => {}
            }
        }
    }

    pub(crate) fn card_mut(&mut self, id: &str) -> Option<&mut ToolCard> {
        let i = self
            .cells
            .iter()
            .rposition(|c| c.tool().is_some_and(|card| card.id == id))?;
        self.cells[i].tool_mut()
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

    pub(crate) fn open_approval(&mut self, request: ApprovalRequest) {
        self.dialog = Some(Dialog::Approval(ApprovalDialog {
            request,
            selected: 0,
            feedback: None,
            expanded: false,
        }));
    }

    /// Applies one update from the host.
    pub fn handle_host(&mut self, update: HostUpdate) {
        match update {
            HostUpdate::SessionSwitched { info, transcript } => {
                self.info = info;
                self.cells.clear();
                self.committed = 0;
                self.queued.clear();
                self.busy = false;
                self.dialog = None;
                self.load_transcript(&transcript);
                let id = self.info.session_id.clone();
                self.notice(NoticeLevel::Info, format!("Session {id}"));
            }
            HostUpdate::Info(info) => self.info = info,
            HostUpdate::Notice(text) => self.notice(NoticeLevel::Info, text),
            HostUpdate::Error(text) => self.notice(NoticeLevel::Error, text),
            HostUpdate::Refused(text) => {
                match self.sent.take() {
                    Some(sent) if self.editor.is_empty() => {
                        self.editor = sent;
                        self.notice(
                            NoticeLevel::Error,
                            format!("{text} (your prompt is back in the editor)"),
                        );
                    }
                    _ => self.notice(NoticeLevel::Error, text),
                }
                // Refused before it was queued: the queue pane no longer holds it.
                if self.busy {
                    self.queued.pop_back();
                }
            }
            HostUpdate::Files(files) => self.files = Some(files),
            HostUpdate::Skills(skills) => self.skills = skills,
            HostUpdate::Warning(text) => self.notice(NoticeLevel::Warning, text),
            HostUpdate::McpConnecting(count) => self.mcp_connecting = count,
            HostUpdate::Choose { title, items } => {
                self.open_picker(crate::dialogs::Picker::new(
                    crate::dialogs::PickerKind::Prefill,
                    &title,
                    items,
                ));
            }
            HostUpdate::LoginWaiting { url, code } => {
                self.login_waiting = true;
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "To log in to Kimi Code, open {url}\nand enter the code: {code}\nWaiting for the approval… (Esc cancels)"
                    ),
                );
            }
            HostUpdate::WebServers(urls) => self.web_servers(urls),
            HostUpdate::LoginEnded { ok, message } => {
                self.login_waiting = false;
                let level = if ok {
                    NoticeLevel::Info
                } else {
                    NoticeLevel::Error
                };
                self.notice(level, message);
            }
        }
    }

    /// The user prompts of the transcript, newest first (the undo selector's rows).
    pub(crate) fn user_prompts(&self) -> Vec<String> {
        self.cells
            .iter()
            .rev()
            .filter_map(|c| c.user_prompt().map(str::to_owned))
            .collect()
    }

    pub(crate) fn open_picker(&mut self, picker: Picker) {
        self.dialog = Some(Dialog::Picker(picker));
    }

    /// The transcript as Markdown, for `/export-md`.
    pub fn transcript_markdown(&self) -> String {
        let mut out = String::new();
        for c in &self.cells {
            match &c.kind {
                CellKind::User { text, .. } => out.push_str(&format!("## User\n\n{text}\n\n")),
                CellKind::Assistant { text, .. } => {
                    out.push_str(&format!("## Assistant\n\n{text}\n\n"));
                }
                CellKind::Thinking { text, .. } => {
                    let quoted: Vec<String> = text.lines().map(|l| format!("> {l}")).collect();
                    out.push_str(&format!("{}\n\n", quoted.join("\n")));
                }
                CellKind::Tool(card) => out.push_str(&format!(
                    "**Tool** `{}` {}\n\n```\n{}\n```\n\n",
                    card.name,
                    card.key_arg,
                    card.output.trim_end()
                )),
                CellKind::Notice { text, .. } => out.push_str(&format!("_{text}_\n\n")),
                CellKind::Compacting => {}
                CellKind::Shell {
                    command, output, ..
                } => {
                    out.push_str(&format!("```\n$ {command}\n{}\n```\n\n", output.trim_end()));
                }
                CellKind::Mcp(status) => {
                    let text = crate::extensions::mcp_text(status);
                    out.push_str(&format!("```\n{text}\n```\n\n"));
                }
            }
        }
        out
    }

    pub(crate) fn last_answer(&self) -> Option<String> {
        self.cells
            .iter()
            .rev()
            .find_map(|c| c.answer().map(str::to_owned))
    }
}

/// A task browser row: what the task does, and its kind and state (`agent · running`).
pub(crate) fn task_item(t: &TaskEntry) -> PickerItem {
    PickerItem {
        label: t.description.clone(),
        detail: if t.kind.is_empty() {
            t.status.clone()
        } else {
            format!("{} · {}", t.kind, t.status)
        },
        value: t.id.clone(),
        this_dir: true,
    }
}

/// Milliseconds since the Unix epoch (session times are stored so).
fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How long ago, for the session picker: "just now", "5m ago", "2h ago", "3d ago".
pub(crate) fn ago(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

fn add_usage(acc: &mut Usage, u: &Usage) {
    acc.input_other += u.input_other;
    acc.output += u.output;
    acc.input_cache_read += u.input_cache_read;
    acc.input_cache_creation += u.input_cache_creation;
}

fn parts_text(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .map(|p| match p {
            ContentPart::Text { text } => text.clone(),
            ContentPart::Think { .. } => String::new(),
            ContentPart::Image(_) => "[image]".to_owned(),
            ContentPart::Audio(_) => "[audio]".to_owned(),
            ContentPart::Video(_) => "[video]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
