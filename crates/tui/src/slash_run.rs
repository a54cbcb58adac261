//! What the UI does for a slash command (`/model`, `/theme`, `/undo`, `/goal`, …) and for a
//! dialog's answer (an approval, a question's answers, a picked item).

use kimi_protocol::ops::{Op, PermissionMode};

use crate::app::{App, UiAction};
use crate::cells::{NoticeLevel, format_tokens};
use crate::commands::Command;
use crate::dialogs::{Dialog, DialogResult, Picker, PickerItem, PickerKind};
use crate::host::HostRequest;
use crate::input::{INIT_PROMPT, context_percent, mode_items, mode_name};

impl App {
    pub(crate) fn run_command(&mut self, command: Command, args: &str) {
        let arg = (!args.is_empty()).then(|| args.to_owned());
        match command {
            Command::Help => self.dialog = Some(Dialog::Help),
            Command::New => self.emit(UiAction::Host(HostRequest::NewSession)),
            Command::Sessions => {
                let mut picker = Picker::new(PickerKind::Session, "Resume a session", Vec::new());
                picker.empty_text = "loading sessions…".to_owned();
                self.open_picker(picker);
                self.op(Op::ListSessions { all: false });
            }
            Command::Model if !args.is_empty() => self.op(Op::SetModel {
                alias: args.to_owned(),
            }),
            Command::Model => {
                let current = self.info.model.clone();
                let items = self
                    .info
                    .models
                    .iter()
                    .map(|m| PickerItem {
                        label: m.alias.clone(),
                        detail: if m.alias == current {
                            format!("{} (current)", m.description)
                        } else {
                            m.description.clone()
                        },
                        value: m.alias.clone(),
                        this_dir: true,
                    })
                    .collect();
                let mut picker = Picker::new(PickerKind::Model, "Switch model", items);
                picker.empty_text =
                    "no models configured: add [models.<alias>] to config.toml".to_owned();
                // Start on the model in use.
                if let Some(i) = self.info.models.iter().position(|m| m.alias == current) {
                    picker.selected = i;
                }
                self.open_picker(picker);
            }
            Command::Effort if !args.is_empty() => self.op(Op::SetEffort {
                effort: args.to_owned(),
            }),
            Command::Effort => self.open_effort_picker(),
            Command::Btw => self.ask_btw(args),
            Command::Yolo => self.toggle_mode(PermissionMode::Yolo, args),
            Command::Auto => self.toggle_mode(PermissionMode::Auto, args),
            Command::Permission => {
                let items = mode_items([
                    (PermissionMode::Manual, "ask before edits and commands"),
                    (
                        PermissionMode::Auto,
                        "allow safe actions, ask for risky ones",
                    ),
                    (PermissionMode::Yolo, "allow everything"),
                ]);
                self.open_picker(Picker::new(
                    PickerKind::Permission,
                    "Permission mode",
                    items,
                ));
            }
            Command::Plan => {
                let enabled = match args {
                    "clear" => {
                        self.op(Op::ClearPlan);
                        return;
                    }
                    "on" => true,
                    "off" => false,
                    _ => !self.info.plan_mode,
                };
                self.set_plan(enabled);
            }
            Command::Swarm => self.swarm_command(args),
            Command::Goal => self.goal_command(args),
            Command::Compact => self.op(Op::Compact { instruction: arg }),
            Command::Undo => match args.parse::<u32>() {
                // A typed count skips the prompt picker and asks what to put back.
                Ok(count) if count > 0 => self.open_undo_scope(count),
                Ok(_) | Err(_) => self.open_undo(),
            },
            Command::Tasks => {
                let items = self.tasks.iter().map(crate::app::task_item).collect();
                let mut picker = Picker::new(PickerKind::Task, "Background tasks", items);
                picker.empty_text = "loading tasks…".to_owned();
                self.open_picker(picker);
                self.op(Op::ListTasks);
            }
            Command::Mcp => self.op(Op::McpStatus),
            Command::Title => self.op(Op::SetTitle { title: arg }),
            Command::Fork => self.op(Op::Fork),
            Command::AddDir => match args.trim() {
                "" | "list" => {
                    let text = if self.info.additional_dirs.is_empty() {
                        "No additional directories configured.".to_owned()
                    } else {
                        format!(
                            "Additional directories:\n  {}",
                            self.info.additional_dirs.join("\n  ")
                        )
                    };
                    self.notice(NoticeLevel::Info, text);
                }
                path => self.open_picker(crate::add_dir::scope_picker(path)),
            },
            Command::Usage => {
                let u = self.session_usage;
                let window = self.info.context_window;
                let pct = context_percent(self.context_tokens, window)
                    .map(|p| format!(" ({p}% of {})", format_tokens(window)))
                    .unwrap_or_default();
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "Tokens this session: {} input, {} cached, {} output.\nContext: {}{pct}.",
                        format_tokens(u.input_other + u.input_cache_creation),
                        format_tokens(u.input_cache_read),
                        format_tokens(u.output),
                        format_tokens(self.context_tokens)
                    ),
                );
                self.emit(UiAction::Host(HostRequest::PlanUsage));
            }
            Command::Status => {
                let i = &self.info;
                let plan = if i.plan_mode { "on" } else { "off" };
                let swarm = if i.swarm_mode { "on" } else { "off" };
                let effort = i
                    .effort
                    .as_deref()
                    .map(|e| format!(" · thinking {e}"))
                    .unwrap_or_default();
                let text = format!(
                    "kimi-rs {}\nSession: {}\nModel: {}{effort}\nDirectory: {}\nPermission mode: {} · plan mode {plan} · swarm mode {swarm}",
                    i.version,
                    i.session_id,
                    i.model,
                    i.cwd,
                    mode_name(i.permission_mode)
                );
                self.notice(NoticeLevel::Info, text);
                self.emit(UiAction::Host(HostRequest::PlanUsage));
            }
            Command::ExportMd => {
                let markdown = self.transcript_markdown();
                self.emit(UiAction::Host(HostRequest::ExportMarkdown {
                    path: arg,
                    markdown,
                }));
            }
            Command::ExportDebugZip => self.emit(UiAction::Host(HostRequest::ExportDebugZip)),
            Command::Feedback => self.emit(UiAction::Host(HostRequest::Feedback {
                args: args.to_owned(),
            })),
            Command::Experiments => self.emit(UiAction::Host(HostRequest::Experiments {
                args: args.to_owned(),
            })),
            Command::Copy => match self.last_answer() {
                Some(text) => self.emit(UiAction::Host(HostRequest::CopyToClipboard { text })),
                None => self.notice(NoticeLevel::Warning, "There is no answer to copy yet."),
            },
            Command::Init => self.op(Op::Submit {
                input: vec![kimi_protocol::ContentPart::text(INIT_PROMPT)],
                origin: None,
                prompt_id: None,
            }),
            Command::Login => {
                if self.login_waiting {
                    self.notice(
                        NoticeLevel::Warning,
                        "A login is already waiting; press Esc to give it up first.",
                    );
                } else {
                    self.emit(UiAction::Host(HostRequest::Login { region: arg }));
                }
            }
            Command::Provider => self.emit(UiAction::Host(HostRequest::Providers {
                args: args.to_owned(),
            })),
            // Reloading reopens the session, which must not happen under a running turn.
            Command::Plugins if self.is_busy() && args.trim() == "reload" => self.notice(
                NoticeLevel::Warning,
                "/plugins reload reopens the session; wait for the turn to end (or press Esc)."
                    .to_owned(),
            ),
            Command::Plugins => self.emit(UiAction::Host(HostRequest::Plugins {
                args: args.to_owned(),
            })),
            Command::Environment => self.emit(UiAction::Host(HostRequest::Environment {
                args: args.to_owned(),
            })),
            Command::Editor => self.editor_command_line(args),
            Command::Theme => self.theme_command(args),
            Command::Web => self.web_command(),
            Command::Exit => self.emit(UiAction::Exit),
            Command::Version => {
                let v = self.info.version.clone();
                self.notice(NoticeLevel::Info, format!("kimi-rs {v}"));
            }
        }
    }

    pub(crate) fn dialog_result(&mut self, result: DialogResult) {
        match result {
            DialogResult::Keep => self.preview_theme(),
            DialogResult::Close => {
                self.end_theme_preview();
                if let Some(Dialog::Picker(p)) = &self.dialog
                    && p.kind == PickerKind::AddDirScope
                {
                    let path = p.title.trim_start_matches("Add directory to workspace: ");
                    let text = format!("Did not add {path} as a working directory.");
                    self.notice(NoticeLevel::Info, text);
                }
                self.dialog = None;
                // A dismissed `/swarm` permission choice puts the command back.
                self.swarm_permission_chosen(None);
            }
            DialogResult::Approve {
                request_id,
                decision,
            } => {
                if let Some(Dialog::Approval(d)) = &self.dialog {
                    let call = d.request.tool_call_id.clone();
                    let now = self.now;
                    if let Some(card) = self.card_mut(&call) {
                        card.approval_answered(now);
                    }
                }
                self.dialog = None;
                self.op(Op::Approve {
                    request_id,
                    decision,
                });
                if let Some(next) = self.approvals.pop_front() {
                    self.open_approval(next);
                }
            }
            DialogResult::Answer {
                request_id,
                answers,
            } => {
                self.dialog = None;
                self.op(Op::Answer {
                    request_id,
                    answers,
                });
            }
            DialogResult::Picked { kind, value } => {
                self.dialog = None;
                match kind {
                    PickerKind::Session => {
                        self.emit(UiAction::Host(HostRequest::ResumeSession { id: value }));
                    }
                    // The footer changes when the engine confirms (`Event::ModelChanged`).
                    PickerKind::Model => self.op(Op::SetModel { alias: value }),
                    PickerKind::Prefill => self.editor.set_text(&value),
                    PickerKind::Editor => self.editor_chosen(&value),
                    PickerKind::Theme => self.theme_chosen(&value),
                    PickerKind::Web => self.web_chosen(&value),
                    PickerKind::Effort => self.op(Op::SetEffort { effort: value }),
                    PickerKind::Permission => {
                        let mode = match value.as_str() {
                            "yolo" => PermissionMode::Yolo,
                            "auto" => PermissionMode::Auto,
                            _ => PermissionMode::Manual,
                        };
                        self.set_mode(mode);
                    }
                    PickerKind::SwarmPermission => self.swarm_permission_chosen(Some(&value)),
                    PickerKind::GoalMode => {
                        let Some(action) = self.goal_pending.take() else {
                            return;
                        };
                        let mode = match value.as_str() {
                            "yolo" => PermissionMode::Yolo,
                            "auto" => PermissionMode::Auto,
                            _ => PermissionMode::Manual,
                        };
                        if mode != self.info.permission_mode {
                            self.set_mode(mode);
                        }
                        self.op(Op::Goal { action });
                    }
                    PickerKind::Undo => {
                        let count = value.parse().unwrap_or(1);
                        self.open_undo_scope(count);
                    }
                    PickerKind::UndoScope | PickerKind::RewindForce => {
                        if let Some((scope, turns)) = crate::rewind::parse_choice(&value) {
                            let force = kind == PickerKind::RewindForce;
                            self.op(Op::Rewind {
                                turns,
                                scope,
                                force,
                            });
                        }
                    }
                    PickerKind::AddDirScope => match crate::add_dir::parse_choice(&value) {
                        Some((path, remember)) => {
                            self.emit(UiAction::Host(HostRequest::AddDir { path, remember }));
                        }
                        None => {
                            let path = value.split_once('\n').map_or("", |(_, p)| p);
                            self.notice(
                                NoticeLevel::Info,
                                format!("Did not add {path} as a working directory."),
                            );
                        }
                    },
                    PickerKind::Task => {
                        let text = self
                            .tasks
                            .iter()
                            .find(|t| t.id == value)
                            .map(|t| format!("Task {} ({}):\n{}", t.id, t.status, t.output_tail))
                            .unwrap_or_else(|| format!("Task {value}: no output yet"));
                        self.notice(NoticeLevel::Info, text);
                    }
                }
            }
            DialogResult::ToggleScope { all } => {
                self.op(Op::ListSessions { all });
            }
            DialogResult::StopTask { id } => {
                self.op(Op::StopTask { task_id: id });
            }
        }
    }
}
