//! Key and paste handling: the prompt editor, completion popups, turn control (submit, queue,
//! steer, interrupt, exit) and recognising slash commands (run in `slash_run`).

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use kimi_protocol::message::ContentPart;
use kimi_protocol::ops::{Op, PermissionMode};

use crate::app::{App, UiAction};
use crate::cells::NoticeLevel;
use crate::clipboard::{ClipboardContent, MAX_MEDIA_BYTES};
use crate::commands::{self, Availability, Command};
use crate::dialogs::{Dialog, Picker, PickerItem, PickerKind};
use crate::files::{index_files, match_files};
use crate::host::HostRequest;

/// `/init`: the prompt that has the agent write the repository's AGENTS.md.
pub const INIT_PROMPT: &str = "Analyze this repository and write an AGENTS.md at its root for coding agents: what the project is, how it is laid out, how to build, test and lint it, the conventions the code follows, and anything an agent must not do. Keep it short and factual; read the code before you write.";

/// Two presses within this window count as a double press.
const DOUBLE_PRESS: Duration = Duration::from_millis(1500);
/// Rows in the completion popup.
pub const COMPLETION_ROWS: usize = 6;

/// An open completion popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// (text to insert, description)
    pub items: Vec<(String, String)>,
    pub selected: usize,
}

pub(crate) fn text_op(text: String) -> Vec<ContentPart> {
    vec![ContentPart::text(text)]
}

impl App {
    /// Applies one key press at time `now`.
    pub fn handle_key(&mut self, key: KeyEvent, now: std::time::Instant) {
        self.now = now;
        if key.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.exit_armed = None;
        }
        self.hint = None;
        if let Some(dialog) = self.dialog.as_mut() {
            let result = dialog.handle_key(key);
            self.dialog_result(result);
            return;
        }
        if self.completion.is_some() && self.completion_key(&key) {
            return;
        }
        match key.code {
            KeyCode::Char('c') if ctrl => self.ctrl_c(),
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.emit(UiAction::Exit);
                } else {
                    self.editor.delete();
                }
            }
            KeyCode::Esc => self.esc(),
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.editor.insert_char('\n');
            }
            KeyCode::Char('j') if ctrl => self.editor.insert_char('\n'),
            KeyCode::Enter => self.submit(),
            KeyCode::Char('s') if ctrl => self.steer(),
            KeyCode::Char('o') if ctrl => self.toggle_expanded(),
            KeyCode::Char('t') if ctrl => self.toggle_todos(),
            KeyCode::Char('g') if ctrl => {
                let text = self.editor.text().to_owned();
                self.emit(UiAction::EditExternally(text));
            }
            KeyCode::Char('b') if ctrl && self.shell_running.is_some() => {
                self.op(Op::ShellToBackground);
            }
            KeyCode::Char('b') if ctrl && self.shell_mode => {
                let command = self.editor.expanded_text();
                if !command.trim().is_empty() {
                    self.history.push(&format!("!{command}"));
                    self.editor.clear();
                    self.shell_mode = false;
                    self.op(Op::Shell {
                        command,
                        background: true,
                    });
                }
            }
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('u') if ctrl => self.editor.kill_line_start(),
            KeyCode::Char('k') if ctrl => self.editor.kill_line_end(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::BackTab => {
                let enabled = !self.info.plan_mode;
                self.set_plan(enabled);
            }
            // Ctrl-V (Alt-V where the terminal keeps Ctrl-V for itself): media paste.
            KeyCode::Char('v') if ctrl || key.modifiers.contains(KeyModifiers::ALT) => {
                self.emit(UiAction::PasteClipboard);
            }
            KeyCode::Char('!') if self.editor.is_empty() && !self.shell_mode => {
                self.shell_mode = true;
            }
            KeyCode::Char(c) if !ctrl => {
                self.editor.insert_char(c);
                self.update_completion();
            }
            KeyCode::Backspace => {
                if self.editor.is_empty() && self.shell_mode {
                    self.shell_mode = false;
                } else {
                    self.editor.backspace();
                    self.update_completion();
                }
            }
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up => {
                if self.editor.on_first_line() {
                    let current = self.editor.text().to_owned();
                    if let Some(prev) = self.history.back(&current).map(str::to_owned) {
                        self.recall(&prev);
                    }
                } else {
                    self.editor.up();
                }
            }
            KeyCode::Down => {
                if self.editor.on_last_line() {
                    if let Some(next) = self.history.forward().map(str::to_owned) {
                        self.recall(&next);
                    }
                } else {
                    self.editor.down();
                }
            }
            KeyCode::PageUp => self.scroll = self.scroll.saturating_add(10),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(10),
            _ => {}
        }
    }

    /// Opens the session picker and asks the host for the list (`kimi-rs -S` without an id).
    pub fn open_session_picker(&mut self) {
        self.run_command(Command::Sessions, "");
    }

    /// A bracketed paste.
    pub fn handle_paste(&mut self, text: &str) {
        if let Some(Dialog::Picker(p)) = self.dialog.as_mut() {
            p.query.push_str(text.lines().next().unwrap_or_default());
            return;
        }
        self.editor.paste(text);
    }

    /// What Ctrl-V read: media becomes an attachment placeholder at the cursor, text pastes
    /// like a bracketed paste, a failure is a notice (the prompt is untouched).
    pub fn clipboard_read(&mut self, read: Result<ClipboardContent, String>) {
        match read {
            Ok(ClipboardContent::Text(text)) => self.handle_paste(&text),
            Ok(ClipboardContent::Media(media)) => {
                if self.dialog.is_some() || self.shell_mode {
                    self.notice(
                        NoticeLevel::Warning,
                        "An image or video can only be attached to a prompt; close the dialog or leave shell mode first.".to_owned(),
                    );
                } else if media.bytes.len() > MAX_MEDIA_BYTES {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "The clipboard {} is {}, more than the {} MB a prompt can carry; it was not attached.",
                            media.kind.as_str(),
                            media.size_label(),
                            MAX_MEDIA_BYTES / (1024 * 1024)
                        ),
                    );
                } else {
                    self.editor.attach(media);
                }
            }
            Err(reason) => self.notice(
                NoticeLevel::Warning,
                format!("clipboard unavailable: {reason}"),
            ),
        }
    }

    /// Ctrl-O. In inline mode the newest tool card or thinking block may already be in the
    /// terminal's scrollback, where it cannot change; it is printed again, expanded.
    pub(crate) fn toggle_expanded(&mut self) {
        self.expanded = !self.expanded;
        if !self.expanded {
            return;
        }
        let newest = self.cells.iter().rposition(|c| {
            matches!(
                c.kind,
                crate::cells::CellKind::Tool(_) | crate::cells::CellKind::Thinking { .. }
            )
        });
        if let Some(i) = newest.filter(|i| *i < self.committed) {
            let kind = self.cells[i].kind.clone();
            self.push(kind);
        }
    }

    /// Puts a history entry in the editor; shell commands (stored as `!cmd`) reopen shell mode.
    pub(crate) fn recall(&mut self, entry: &str) {
        match entry.strip_prefix('!') {
            Some(command) => {
                self.shell_mode = true;
                self.editor.set_text(command);
            }
            None => {
                self.shell_mode = false;
                self.editor.set_text(entry);
            }
        }
    }

    pub(crate) fn ctrl_c(&mut self) {
        if self.is_busy() {
            self.op(Op::Cancel { queued: false });
        } else if !self.editor.is_empty() || self.shell_mode {
            self.editor.clear();
            self.shell_mode = false;
        } else if self
            .exit_armed
            .is_some_and(|t| self.now.saturating_duration_since(t) < DOUBLE_PRESS)
        {
            self.emit(UiAction::Exit);
        } else {
            self.exit_armed = Some(self.now);
            self.hint = Some("Press Ctrl-C again to exit".to_owned());
        }
    }

    pub(crate) fn esc(&mut self) {
        // The side-question pane closes first: it is what the user just looked at.
        if self.btw.is_some() {
            self.btw = None;
            return;
        }
        if self.login_waiting {
            self.emit(UiAction::Host(HostRequest::CancelLogin));
            return;
        }
        if self.is_busy() {
            self.op(Op::Cancel { queued: false });
            return;
        }
        if self.shell_mode && self.editor.is_empty() {
            self.shell_mode = false;
            return;
        }
        if !self.editor.is_empty() {
            return;
        }
        if self
            .last_esc
            .is_some_and(|t| self.now.saturating_duration_since(t) < DOUBLE_PRESS)
        {
            self.last_esc = None;
            self.open_undo();
        } else {
            self.last_esc = Some(self.now);
        }
    }

    pub(crate) fn submit(&mut self) {
        let raw = self.editor.text().to_owned();
        let text = self.editor.expanded_text();
        if text.trim().is_empty() {
            return;
        }
        // With attachments the prompt goes as text and media parts; the transcript shows the
        // placeholders as typed.
        let input = if self.editor.has_media() && !self.shell_mode {
            self.editor.parts()
        } else {
            text_op(text.clone())
        };
        self.sent = Some(self.editor.clone());
        self.editor.clear();
        self.completion = None;
        if self.shell_mode {
            self.history.push(&format!("!{raw}"));
            self.op(Op::Shell {
                command: text,
                background: false,
            });
            // One command per `!`: the next prompt goes to the model again.
            self.shell_mode = false;
            return;
        }
        if !commands::carries_secret(&raw) {
            self.history.push(&raw);
        }
        if let Some((spec, args)) = commands::parse(text.trim()) {
            if input.iter().any(ContentPart::is_media) {
                self.notice(
                    NoticeLevel::Warning,
                    format!("/{} takes no attachments; they were dropped.", spec.name),
                );
            }
            if self.is_busy() && spec.availability == Availability::Idle {
                self.notice(
                    NoticeLevel::Warning,
                    format!(
                        "/{} is not available while the agent works; press Esc to interrupt first.",
                        spec.name
                    ),
                );
                return;
            }
            self.run_command(spec.command, &args);
            return;
        }
        // `/mcp-config` acts on the servers itself for these; other arguments go to the
        // built-in `mcp-config` skill (adding or editing a server is the model's work).
        if let Some(op) = mcp_config_op(text.trim()) {
            self.op(op);
            return;
        }
        if self.busy {
            // The engine queues it; the pane shows it until its turn starts.
            self.queued.push_back(text);
        } else {
            self.push(crate::cells::CellKind::User { text, steer: None });
        }
        self.op(Op::Submit {
            input,
            origin: None,
            prompt_id: None,
        });
    }

    pub(crate) fn steer(&mut self) {
        let text = self.editor.expanded_text();
        if text.trim().is_empty() {
            return;
        }
        let input = if self.editor.has_media() {
            self.editor.parts()
        } else {
            text_op(text.clone())
        };
        self.editor.clear();
        self.history.push(&text);
        if !self.busy {
            // Idle: steering starts a turn, exactly like submitting.
            self.push(crate::cells::CellKind::User {
                text: text.clone(),
                steer: None,
            });
            self.op(Op::Steer { input });
            return;
        }
        self.push(crate::cells::CellKind::User {
            text: text.clone(),
            steer: Some(crate::cells::SteerState::Sending),
        });
        self.op(Op::Steer { input });
    }

    pub(crate) fn set_plan(&mut self, enabled: bool) {
        self.info.plan_mode = enabled;
        self.op(Op::SetPlanMode { enabled });
        let word = if enabled { "on" } else { "off" };
        self.notice(NoticeLevel::Info, format!("Plan mode {word}."));
    }

    pub(crate) fn set_mode(&mut self, mode: PermissionMode) {
        self.info.permission_mode = mode;
        self.op(Op::SetPermissionMode { mode });
        self.notice(
            NoticeLevel::Info,
            format!("Permission mode: {}.", mode_name(mode)),
        );
    }

    pub(crate) fn toggle_mode(&mut self, target: PermissionMode, args: &str) {
        let on = match args {
            "on" => true,
            "off" => false,
            _ => self.info.permission_mode != target,
        };
        self.set_mode(if on { target } else { PermissionMode::Manual });
    }

    pub(crate) fn open_undo(&mut self) {
        let items: Vec<PickerItem> = self
            .user_prompts()
            .into_iter()
            .enumerate()
            .map(|(i, text)| PickerItem {
                label: text.lines().next().unwrap_or_default().to_owned(),
                detail: if i == 0 {
                    "latest".to_owned()
                } else {
                    format!("{} prompts back", i + 1)
                },
                value: (i + 1).to_string(),
                this_dir: true,
            })
            .collect();
        let mut picker = Picker::new(PickerKind::Undo, "Undo back to before…", items);
        picker.empty_text = "no prompts to undo".to_owned();
        self.open_picker(picker);
    }

    /// What to put back for an undo of `turns` prompts: conversation, files, or both.
    pub(crate) fn open_undo_scope(&mut self, turns: u32) {
        let picker = crate::rewind::scope_picker(turns);
        self.open_picker(picker);
    }

    /// Reopens, refilters or closes the popup after the text changed.
    pub(crate) fn update_completion(&mut self) {
        let text = self.editor.text();
        let items: Vec<(String, String)> = if let Some(prefix) = text.strip_prefix('/')
            && !prefix.contains(char::is_whitespace)
            && !self.shell_mode
        {
            let mut items: Vec<(String, String)> = commands::complete(prefix)
                .into_iter()
                .map(|c| (format!("/{}", c.name), c.description.to_owned()))
                .collect();
            items.extend(crate::extensions::skill_completions(prefix, &self.skills));
            items
        } else {
            let (start, token) = self.editor.current_token();
            if let Some(query) = token.strip_prefix('/')
                && start > 0
                && !self.shell_mode
            {
                // Inside a longer prompt `/` offers skills only (inline skill mentions).
                crate::extensions::skill_completions(query, &self.skills)
            } else {
                match token.strip_prefix('@') {
                    Some(query) => {
                        let query = query.to_owned();
                        if self.files.is_none()
                            && let Some(root) = &self.workdir
                        {
                            self.files = Some(index_files(root));
                        }
                        let files = self.files.as_deref().unwrap_or_default();
                        match_files(files, &query, 50)
                            .into_iter()
                            .map(|f| (format!("@{f}"), String::new()))
                            .collect()
                    }
                    None => Vec::new(),
                }
            }
        };
        self.completion = (!items.is_empty()).then_some(Completion { items, selected: 0 });
    }

    /// Keys the popup consumes; returns false for keys that go on to the editor.
    pub(crate) fn completion_key(&mut self, key: &KeyEvent) -> bool {
        let Some(c) = self.completion.as_mut() else {
            return false;
        };
        match key.code {
            KeyCode::Up => c.selected = c.selected.saturating_sub(1),
            KeyCode::Down => c.selected = (c.selected + 1).min(c.items.len().saturating_sub(1)),
            KeyCode::Esc => self.completion = None,
            KeyCode::Tab | KeyCode::Enter if key.modifiers.is_empty() => {
                let Some((text, _)) = c.items.get(c.selected).cloned() else {
                    self.completion = None;
                    return true;
                };
                // A leading command replaces the input; an inline skill mention its token.
                let is_command =
                    text.starts_with('/') && !self.editor.text().contains(char::is_whitespace);
                let is_dir = text.ends_with('/');
                self.completion = None;
                if is_command {
                    // Enter on a complete command runs it; Tab only fills it in.
                    if key.code == KeyCode::Enter && self.editor.text() == text {
                        return false;
                    }
                    self.editor.set_text(&text);
                    if key.code == KeyCode::Enter {
                        return false;
                    }
                    self.editor.insert_char(' ');
                } else {
                    self.editor.replace_token(&text);
                    if is_dir {
                        self.update_completion();
                    } else {
                        self.editor.insert_char(' ');
                    }
                }
            }
            _ => return false,
        }
        true
    }
}

/// Picker items for permission modes, each with its description.
pub(crate) fn mode_items<const N: usize>(modes: [(PermissionMode, &str); N]) -> Vec<PickerItem> {
    modes
        .into_iter()
        .map(|(m, d)| PickerItem {
            label: mode_name(m).to_owned(),
            detail: d.to_owned(),
            value: mode_name(m).to_owned(),
            this_dir: true,
        })
        .collect()
}

pub fn mode_name(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Manual => "manual",
        PermissionMode::Yolo => "yolo",
        PermissionMode::Auto => "auto",
    }
}

/// Context use in percent, when the window is known.
pub fn context_percent(tokens: u64, window: u64) -> Option<u64> {
    (window > 0).then(|| (tokens * 100 / window).min(100))
}

/// `/mcp-config` (the servers and their state), `/mcp-config login|logout|reconnect <server>`;
/// `None` for anything else.
pub(crate) fn mcp_config_op(text: &str) -> Option<Op> {
    use kimi_protocol::host::McpServerAction;
    let rest = text.strip_prefix("/mcp-config")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let action = match words.as_slice() {
        [] => return Some(Op::McpStatus),
        ["login", _] => McpServerAction::Login,
        ["logout", _] => McpServerAction::Logout,
        ["reconnect", _] => McpServerAction::Reconnect,
        _ => return None,
    };
    Some(Op::McpServer {
        server: words[1].to_owned(),
        action,
    })
}
