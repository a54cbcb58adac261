//! The UI state, its construction and the host-update reducer. No terminal here: the runtime
//! feeds it, drains [`UiAction`]s, and draws it with `render`. Time is passed in so tests are
//! deterministic. Engine events are reduced in `app_events`; the transcript is loaded and
//! exported in `transcript`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use kimi_protocol::message::Message;
use kimi_protocol::ops::{AgentStatus, ApprovalRequest, Op, Usage};

use crate::cells::{Cell, CellKind, NoticeLevel};
use crate::dialogs::{ApprovalDialog, Dialog, Picker, PickerItem};
use crate::editor::Editor;
use crate::history::History;
use crate::host::{HostRequest, HostUpdate, SessionInfo, SkillEntry, TaskEntry};
use crate::theme::Theme;
use crate::tool_card::ToolCard;

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

    pub(crate) fn card_mut(&mut self, id: &str) -> Option<&mut ToolCard> {
        let i = self
            .cells
            .iter()
            .rposition(|c| c.tool().is_some_and(|card| card.id == id))?;
        self.cells[i].tool_mut()
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

    pub(crate) fn open_picker(&mut self, picker: Picker) {
        self.dialog = Some(Dialog::Picker(picker));
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
