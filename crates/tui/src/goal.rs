//! Goal mode in the TUI (surface.md §9.2): the `/goal …` grammar turned into `Op::Goal`, the
//! goal strip above the input, and what `goal.updated` / `goal.queue` events show. The queue
//! is the workspace's (the engine keeps it); `/goal next manage` lists it by number, and
//! `/goal next remove|up|down|edit <n> …` change it.

use kimi_protocol::host::{GoalChange, GoalSnapshot, GoalStatus, QueuedGoal};
use kimi_protocol::ops::{GoalAction, Op, PermissionMode};

use crate::app::App;
use crate::cells::NoticeLevel;
use crate::dialogs::{Picker, PickerKind};

const MAX_OBJECTIVE_CHARS: usize = 4000;

/// What a `/goal` line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalCommand {
    Action(GoalAction),
    /// `/goal next manage`: show the numbered queue.
    Manage,
    /// `/goal next remove|up|down|edit <n> [text]` on the listed queue.
    QueueEdit {
        verb: &'static str,
        index: usize,
        text: String,
    },
    /// A usage hint or a refusal.
    Hint(String),
}

fn objective_check(objective: &str, example: &str) -> Result<(), String> {
    if objective.is_empty() {
        return Err(format!("Provide a goal objective, e.g. `{example}`."));
    }
    if objective.chars().count() > MAX_OBJECTIVE_CHARS {
        return Err(format!(
            "Goal objective is too long (max {MAX_OBJECTIVE_CHARS} characters). Put long content in a file and reference the file path."
        ));
    }
    Ok(())
}

/// Parse the arguments of `/goal`. Sub-command words count only as the first word; `--`
/// starts an objective that begins with one of them.
pub fn parse(args: &str) -> GoalCommand {
    let args = args.trim();
    if args.is_empty() || args == "status" {
        return GoalCommand::Action(GoalAction::Status);
    }
    let words: Vec<&str> = args.split_whitespace().collect();
    match words.as_slice() {
        ["pause"] => return GoalCommand::Action(GoalAction::Pause),
        ["resume"] => return GoalCommand::Action(GoalAction::Resume),
        ["cancel"] => return GoalCommand::Action(GoalAction::Cancel),
        ["next", "manage"] => return GoalCommand::Manage,
        [
            "next",
            verb @ ("remove" | "up" | "down" | "edit"),
            n,
            rest @ ..,
        ] => {
            let verb = match *verb {
                "remove" => "remove",
                "up" => "up",
                "down" => "down",
                _ => "edit",
            };
            return match n.parse::<usize>() {
                Ok(index) if index > 0 => GoalCommand::QueueEdit {
                    verb,
                    index,
                    text: rest.join(" "),
                },
                _ => GoalCommand::Hint(format!(
                    "`/goal next {verb}` takes a queue number from `/goal next manage`."
                )),
            };
        }
        ["next", rest @ ..] => {
            let rest = rest.strip_prefix(&["--"]).unwrap_or(rest);
            let objective = rest.join(" ");
            return match objective_check(&objective, "/goal next Ship feature X") {
                Ok(()) => GoalCommand::Action(GoalAction::Next { objective }),
                Err(hint) => GoalCommand::Hint(hint),
            };
        }
        _ => {}
    }
    let (replace, rest) = match words.split_first() {
        Some((&"replace", rest)) => (true, rest),
        _ => (false, words.as_slice()),
    };
    let rest = rest.strip_prefix(&["--"]).unwrap_or(rest);
    let objective = rest.join(" ");
    match objective_check(&objective, "/goal Ship feature X") {
        Ok(()) => GoalCommand::Action(GoalAction::Start { objective, replace }),
        Err(hint) => GoalCommand::Hint(hint),
    }
}

fn status_text(goal: &GoalSnapshot) -> String {
    let mut line = format!("Goal [{}]", goal.status.label());
    if let Some(reason) = &goal.terminal_reason {
        line.push_str(": ");
        line.push_str(reason);
    }
    let mut text = format!(
        "{line}\nObjective: {}\nUsed: {} turns, {} tokens, {}s",
        goal.objective,
        goal.turns_used,
        goal.tokens_used,
        goal.wall_clock_ms / 1000
    );
    let b = &goal.budget;
    let mut budget = Vec::new();
    if let Some(t) = b.turn_budget {
        budget.push(format!("{t} turns"));
    }
    if let Some(t) = b.token_budget {
        budget.push(format!("{t} tokens"));
    }
    if let Some(ms) = b.wall_clock_budget_ms {
        budget.push(format!("{}s", ms / 1000));
    }
    if !budget.is_empty() {
        text.push_str(&format!("\nBudget: {}", budget.join(", ")));
    }
    text
}

impl App {
    /// `/goal …`.
    pub(crate) fn goal_command(&mut self, args: &str) {
        match parse(args) {
            GoalCommand::Action(GoalAction::Status) => {
                self.goal_status_wanted = true;
                self.op(Op::Goal {
                    action: GoalAction::Status,
                });
            }
            GoalCommand::Action(action @ GoalAction::Start { .. })
                if self.info.permission_mode != PermissionMode::Auto =>
            {
                // As in the reference: outside auto mode the user first picks the mode the
                // goal runs in.
                self.goal_pending = Some(action);
                let items = crate::input::mode_items([
                    (
                        PermissionMode::Auto,
                        "run the goal unattended: approve everything",
                    ),
                    (
                        PermissionMode::Yolo,
                        "approve regular tool calls, ask for sensitive ones",
                    ),
                    (PermissionMode::Manual, "keep asking before changes"),
                ]);
                self.open_picker(Picker::new(
                    PickerKind::GoalMode,
                    "Start the goal in which permission mode?",
                    items,
                ));
            }
            GoalCommand::Action(action) => self.op(Op::Goal { action }),
            GoalCommand::Manage => {
                self.goal_queue_wanted = true;
                self.op(Op::Goal {
                    action: GoalAction::QueueList,
                });
            }
            GoalCommand::QueueEdit { verb, index, text } => {
                let Some(entry) = self.goal_queue.get(index - 1).cloned() else {
                    self.notice(
                        NoticeLevel::Warning,
                        format!("no queued goal {index}; list the queue with `/goal next manage`"),
                    );
                    return;
                };
                let action = match verb {
                    "remove" => GoalAction::QueueRemove { id: entry.id },
                    "up" => GoalAction::QueueMove {
                        id: entry.id,
                        up: true,
                    },
                    "down" => GoalAction::QueueMove {
                        id: entry.id,
                        up: false,
                    },
                    _ if text.trim().is_empty() => {
                        self.notice(NoticeLevel::Warning, "`/goal next edit <n> <objective>`");
                        return;
                    }
                    _ => GoalAction::QueueEdit {
                        id: entry.id,
                        objective: text,
                    },
                };
                self.goal_queue_wanted = true;
                self.op(Op::Goal { action });
            }
            GoalCommand::Hint(text) => self.notice(NoticeLevel::Info, text),
        }
    }

    /// `goal.updated`.
    pub(crate) fn goal_updated(&mut self, goal: Option<GoalSnapshot>, change: Option<GoalChange>) {
        match &change {
            Some(GoalChange::Lifecycle { status, reason, .. }) => {
                let what = match status {
                    GoalStatus::Active => "Goal resumed.".to_owned(),
                    GoalStatus::Paused => "Goal paused. Use `/goal resume` to continue.".to_owned(),
                    GoalStatus::Blocked => "Goal blocked.".to_owned(),
                    GoalStatus::Complete => "Goal complete.".to_owned(),
                };
                let text = match reason {
                    Some(reason) => format!("{what} {reason}"),
                    None => what,
                };
                let level = if *status == GoalStatus::Blocked {
                    NoticeLevel::Warning
                } else {
                    NoticeLevel::Info
                };
                self.notice(level, text);
            }
            Some(GoalChange::Completion {
                turns_used,
                tokens_used,
                wall_clock_ms,
                ..
            }) => {
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "✓ Goal complete. Worked {turns_used} turns over {}s, using {tokens_used} tokens.",
                        wall_clock_ms / 1000
                    ),
                );
                // The next queued goal (if any) starts once this one is done.
                self.op(Op::Goal {
                    action: GoalAction::StartNext,
                });
            }
            None => {}
        }
        if self.goal.is_none()
            && change.is_none()
            && let Some(goal) = &goal
            && goal.turns_used == 0
        {
            self.notice(NoticeLevel::Info, format!("Goal set: {}", goal.objective));
        }
        if std::mem::take(&mut self.goal_status_wanted) {
            let text = match &goal {
                Some(goal) => status_text(goal),
                None => "No goal set. Start one with `/goal <objective>`.".to_owned(),
            };
            self.notice(NoticeLevel::Info, text);
        }
        self.goal = goal;
    }

    /// `goal.queue`.
    pub(crate) fn goal_queue_listed(&mut self, goals: Vec<QueuedGoal>) {
        if std::mem::take(&mut self.goal_queue_wanted) || goals.len() > self.goal_queue.len() {
            let text = if goals.is_empty() {
                "No upcoming goals. Queue one with `/goal next <objective>`.".to_owned()
            } else {
                let mut text = "Upcoming goals (`/goal next remove|up|down|edit <n>`):".to_owned();
                for (i, g) in goals.iter().enumerate() {
                    text.push_str(&format!("\n{}. {}", i + 1, g.objective));
                }
                text
            };
            self.notice(NoticeLevel::Info, text);
        }
        self.goal_queue = goals;
    }

    /// The goal strip: one line while a goal exists.
    pub(crate) fn goal_strip(&self) -> Option<String> {
        let goal = self.goal.as_ref()?;
        let mut line = format!(
            "◎ goal {} · {} turns · {} tokens",
            goal.status.label(),
            goal.turns_used,
            goal.tokens_used
        );
        if let Some(left) = goal.budget.remaining_turns {
            line.push_str(&format!(" · {left} turns left"));
        }
        line.push_str(" · ");
        line.push_str(&goal.objective);
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_goal_grammar() {
        assert_eq!(parse(""), GoalCommand::Action(GoalAction::Status));
        assert_eq!(parse("pause"), GoalCommand::Action(GoalAction::Pause));
        assert_eq!(
            parse("-- pause the rollout"),
            GoalCommand::Action(GoalAction::Start {
                objective: "pause the rollout".into(),
                replace: false
            })
        );
        assert_eq!(
            parse("replace ship it"),
            GoalCommand::Action(GoalAction::Start {
                objective: "ship it".into(),
                replace: true
            })
        );
        assert_eq!(
            parse("next write docs"),
            GoalCommand::Action(GoalAction::Next {
                objective: "write docs".into()
            })
        );
        assert_eq!(parse("next manage"), GoalCommand::Manage);
        assert!(matches!(
            parse("next up 2"),
            GoalCommand::QueueEdit {
                verb: "up",
                index: 2,
                ..
            }
        ));
        assert!(matches!(parse("replace"), GoalCommand::Hint(_)));
        assert!(matches!(parse(&"x".repeat(4001)), GoalCommand::Hint(_)));
    }
}
