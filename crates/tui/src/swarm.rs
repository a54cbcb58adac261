//! `/swarm` (surface.md §2): `/swarm on|off` toggles swarm mode, a bare `/swarm` flips it, and
//! `/swarm <task>` turns it on for that one task and sends it. Idle only (the command table
//! says so). In manual permission mode it first offers switching to auto or yolo, since a swarm
//! of agents asking one approval each would stall; Esc puts the command back in the editor.

use kimi_protocol::ops::{Op, PermissionMode, SwarmTrigger};

use crate::app::App;
use crate::cells::{CellKind, NoticeLevel};
use crate::dialogs::{Picker, PickerItem, PickerKind};
use crate::input::mode_name;

/// What `/swarm` will do once the permission choice is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwarmStart {
    /// Turn swarm mode on (`/swarm on`, or a bare `/swarm` while off).
    Enable { command: String },
    /// Turn it on for this task and send the task.
    Task { task: String },
}

impl SwarmStart {
    fn command_text(&self) -> String {
        match self {
            SwarmStart::Enable { command } => command.clone(),
            SwarmStart::Task { task } => format!("/swarm {task}"),
        }
    }

    fn cancelled_text(&self) -> &'static str {
        match self {
            SwarmStart::Enable { .. } => "Swarm mode not enabled.",
            SwarmStart::Task { .. } => "Swarm task not started.",
        }
    }
}

impl App {
    pub(crate) fn swarm_command(&mut self, args: &str) {
        let args = args.trim();
        let start = match args.to_ascii_lowercase().as_str() {
            "on" => SwarmStart::Enable {
                command: "/swarm on".to_owned(),
            },
            "off" => {
                if self.info.swarm_mode {
                    self.op(Op::SetSwarmMode {
                        enabled: false,
                        trigger: SwarmTrigger::Manual,
                    });
                } else {
                    self.notice(NoticeLevel::Info, "Swarm mode is already off.");
                }
                return;
            }
            "" if self.info.swarm_mode => {
                self.op(Op::SetSwarmMode {
                    enabled: false,
                    trigger: SwarmTrigger::Manual,
                });
                return;
            }
            "" => SwarmStart::Enable {
                command: "/swarm".to_owned(),
            },
            _ => SwarmStart::Task {
                task: args.to_owned(),
            },
        };
        if matches!(start, SwarmStart::Enable { .. }) && self.info.swarm_mode {
            self.notice(NoticeLevel::Info, "Swarm mode is already on.");
            return;
        }
        if self.info.permission_mode == PermissionMode::Manual {
            let items = [
                (
                    "auto",
                    "approve what reaches the permission chain; switch to auto mode",
                ),
                ("yolo", "approve regular tool calls; switch to yolo mode"),
                (
                    "manual",
                    "stay in manual mode: every subagent asks for its tool calls",
                ),
            ]
            .into_iter()
            .map(|(value, detail)| PickerItem {
                label: value.to_owned(),
                detail: detail.to_owned(),
                value: value.to_owned(),
                this_dir: true,
            })
            .collect();
            self.swarm_pending = Some(start);
            self.open_picker(Picker::new(
                PickerKind::SwarmPermission,
                "Swarm mode runs many agents: which permission mode?",
                items,
            ));
            return;
        }
        self.start_swarm(start);
    }

    /// The permission choice of the swarm picker (`None` = dismissed).
    pub(crate) fn swarm_permission_chosen(&mut self, choice: Option<&str>) {
        let Some(start) = self.swarm_pending.take() else {
            return;
        };
        let mode = match choice {
            None => {
                self.editor.set_text(&start.command_text());
                self.notice(NoticeLevel::Info, start.cancelled_text());
                return;
            }
            Some("auto") => Some(PermissionMode::Auto),
            Some("yolo") => Some(PermissionMode::Yolo),
            Some(_) => None,
        };
        if let Some(mode) = mode {
            self.info.permission_mode = mode;
            self.op(Op::SetPermissionMode { mode });
            self.notice(
                NoticeLevel::Info,
                format!("Permission mode: {}.", mode_name(mode)),
            );
        }
        self.start_swarm(start);
    }

    fn start_swarm(&mut self, start: SwarmStart) {
        match start {
            SwarmStart::Enable { .. } => self.op(Op::SetSwarmMode {
                enabled: true,
                trigger: SwarmTrigger::Manual,
            }),
            SwarmStart::Task { task } => {
                self.op(Op::SetSwarmMode {
                    enabled: true,
                    trigger: SwarmTrigger::Task,
                });
                self.push(CellKind::User {
                    text: task.clone(),
                    steer: None,
                });
                self.op(Op::Submit {
                    input: vec![kimi_protocol::ContentPart::text(task)],
                    origin: None,
                    prompt_id: None,
                });
            }
        }
    }

    /// `Event::SwarmMode`: the engine's state, with a marker line when it changed.
    pub(crate) fn swarm_mode_changed(&mut self, active: bool) {
        if self.info.swarm_mode == active {
            return;
        }
        self.info.swarm_mode = active;
        let text = if active {
            "Swarm mode on: the agent delegates through AgentSwarm."
        } else {
            "Swarm mode off."
        };
        self.notice(NoticeLevel::Info, text);
    }
}
