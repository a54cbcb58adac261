//! Plan-mode reminders injected at the step gate as user messages with an injection origin:
//! a full reminder on entry (or after a new user message, or every
//! [`FULL_REFRESH_STEPS`] assistant turns), a sparse one after [`SPARSE_AFTER_STEPS`], a
//! re-entry variant when the plan file already has content, and an exit reminder once plan
//! mode ends. What was injected is read back from history, so resume, undo and compaction all
//! see the right next reminder without extra state.

use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Message, Origin, Role};

use super::PlanMode;
use crate::engine::runtime::Runtime;

/// Assistant turns after any plan reminder before a sparse one.
pub const SPARSE_AFTER_STEPS: usize = 2;
/// Assistant turns after a full reminder before the next full one.
pub const FULL_REFRESH_STEPS: usize = 5;

pub const VARIANT_FULL: &str = "plan_mode";
pub const VARIANT_SPARSE: &str = "plan_mode_sparse";
pub const VARIANT_REENTRY: &str = "plan_mode_reentry";
pub const VARIANT_EXIT: &str = "plan_mode_exit";

const FULL: &str = "Plan mode is on. Until the user approves a plan, do not change anything: no edits except to the plan file named below, and no other changes to the system unless a tool call is explicitly approved. Prefer read-only tools (Read, Grep, Glob). Bash stays available under the normal permission rules; use it only when you need it. This overrides any other instruction. TaskStop, CronCreate and CronDelete are blocked while planning — call ExitPlanMode first if you need them.

How to work:
  1. Understand: explore the code with Glob, Grep and Read.
  2. Design: weigh the trade-offs and settle on one recommended approach.
  3. Check: re-read the key files to confirm your understanding.
  4. Write the plan into the plan file with Write (or Edit once it exists).
  5. Call ExitPlanMode so the user can review and approve it.

Offer alternatives only when they genuinely differ (two or three at most). If the right choice depends on the user's preferences or on facts you lack, ask with AskUserQuestion before writing the plan. When the plan does contain several approaches, pass them as the `options` parameter of ExitPlanMode so the user can pick one when approving.

Never ask for plan approval in plain text or with AskUserQuestion — the user sees the plan only through ExitPlanMode. End your turn with either AskUserQuestion (to clarify requirements) or ExitPlanMode (to submit the plan).";

const SPARSE: &str = "Plan mode is still on: read-only exploration, edits only to the plan file, then ExitPlanMode for approval.";

const REENTRY: &str = "Plan mode is on again, and the plan file below already holds a plan from earlier. Read it first. If the current request is a different task, replace the plan; if it continues the same task, revise it. Everything else from plan mode applies: no edits except to the plan file, read-only tools preferred, and finish with ExitPlanMode (or AskUserQuestion to clarify).";

const EXIT: &str = "Plan mode is off. You may now edit files and use every tool again, under the normal permission rules.";

/// Which reminder the gate adds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reminder {
    Full,
    Sparse,
    Reentry,
    Exit,
}

impl Reminder {
    pub fn variant(self) -> &'static str {
        match self {
            Reminder::Full => VARIANT_FULL,
            Reminder::Sparse => VARIANT_SPARSE,
            Reminder::Reentry => VARIANT_REENTRY,
            Reminder::Exit => VARIANT_EXIT,
        }
    }

    fn from_variant(variant: &str) -> Option<Reminder> {
        [
            Reminder::Full,
            Reminder::Sparse,
            Reminder::Reentry,
            Reminder::Exit,
        ]
        .into_iter()
        .find(|r| r.variant() == variant)
    }

    /// The reminder's text (with the plan file's path, when there is one).
    pub fn text(self, plan_file: Option<&std::path::Path>) -> String {
        let body = match self {
            Reminder::Full => FULL,
            Reminder::Sparse => SPARSE,
            Reminder::Reentry => REENTRY,
            Reminder::Exit => EXIT,
        };
        let footer = match (self, plan_file) {
            (Reminder::Exit, _) | (_, None) => String::new(),
            (_, Some(path)) => format!("\n\nPlan file: {}", path.display()),
        };
        format!("<system-reminder>\n{body}{footer}\n</system-reminder>")
    }
}

fn plan_reminder(message: &Message) -> Option<Reminder> {
    match message.origin.as_ref()?.known()? {
        KnownOrigin::Injection { variant, .. } => Reminder::from_variant(variant),
        _ => None,
    }
}

fn is_user_prompt(message: &Message) -> bool {
    message.role == Role::User
        && matches!(
            message.origin.as_ref().and_then(Origin::known),
            None | Some(KnownOrigin::User { .. })
        )
}

/// The reminder due now, given history and whether plan mode is on (and whether its plan file
/// already holds a plan).
pub fn due(history: &[Message], active: bool, plan_has_content: bool) -> Option<Reminder> {
    let last = history
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| plan_reminder(m).map(|r| (i, r)));
    let was_active = matches!(last, Some((_, r)) if r != Reminder::Exit);
    if !active {
        return was_active.then_some(Reminder::Exit);
    }
    let Some((last_at, _)) = last.filter(|_| was_active) else {
        return Some(if plan_has_content {
            Reminder::Reentry
        } else {
            Reminder::Full
        });
    };
    let since = &history[last_at + 1..];
    if since.iter().any(is_user_prompt) {
        return Some(Reminder::Full);
    }
    let last_full = history
        .iter()
        .rposition(|m| matches!(plan_reminder(m), Some(Reminder::Full | Reminder::Reentry)))
        .unwrap_or(0);
    let assistant = |from: usize| {
        history[from..]
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count()
    };
    if assistant(last_full) >= FULL_REFRESH_STEPS {
        Some(Reminder::Full)
    } else if assistant(last_at) >= SPARSE_AFTER_STEPS {
        Some(Reminder::Sparse)
    } else {
        None
    }
}

/// The message the gate injects for `reminder`, owned by the turn's prompt (an undo of that
/// turn takes it away too).
pub fn message(reminder: Reminder, plan: &PlanMode, prompt_id: Option<&str>) -> Message {
    let file = plan.plan_file();
    let mut message = Message::new(
        Role::User,
        vec![ContentPart::text(reminder.text(file.as_deref()))],
    );
    message.origin = Some(Origin::Known(KnownOrigin::Injection {
        variant: reminder.variant().to_owned(),
        owner_prompt_id: prompt_id.map(str::to_owned),
        disclosure: None,
    }));
    message
}

/// The step gate's part: add the reminder that is due (if any) to the conversation.
pub fn inject(rt: &Runtime, prompt_id: &str) {
    let Some(plan) = &rt.config.plan else {
        return;
    };
    let snapshot = plan.snapshot();
    // Never entered on this branch: no reminder is in the history and none is due, so the
    // step does not scan the whole conversation for one.
    if !snapshot.active && snapshot.id.is_none() {
        return;
    }
    let active = snapshot.active;
    let has_content = active && !plan.plan_text().trim().is_empty();
    let reminder = due(rt.log().history().messages(), active, has_content);
    if let Some(reminder) = reminder {
        rt.commit(vec![crate::engine::records::message(message(
            reminder,
            plan,
            Some(prompt_id),
        ))]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        let mut m = Message::new(Role::User, vec![ContentPart::text(text)]);
        m.origin = Some(Origin::user());
        m
    }

    fn assistant() -> Message {
        Message::new(Role::Assistant, vec![ContentPart::text("…")])
    }

    fn injected(r: Reminder) -> Message {
        let mut m = Message::new(Role::User, vec![ContentPart::text(r.text(None))]);
        m.origin = Some(Origin::injection(r.variant()));
        m
    }

    #[test]
    fn the_schedule_is_entry_sparse_full_and_exit_once() {
        let mut h = vec![user("plan it")];
        assert_eq!(due(&h, false, false), None);
        assert_eq!(due(&h, true, false), Some(Reminder::Full));
        assert_eq!(due(&h, true, true), Some(Reminder::Reentry));
        h.push(injected(Reminder::Full));
        h.push(assistant());
        assert_eq!(due(&h, true, false), None);
        h.push(assistant());
        assert_eq!(due(&h, true, false), Some(Reminder::Sparse));
        h.push(injected(Reminder::Sparse));
        h.extend([assistant(), assistant()]);
        assert_eq!(due(&h, true, false), Some(Reminder::Sparse));
        h.push(injected(Reminder::Sparse));
        h.push(assistant());
        assert_eq!(due(&h, true, false), Some(Reminder::Full));
        h.push(injected(Reminder::Full));
        h.push(user("next"));
        assert_eq!(due(&h, true, false), Some(Reminder::Full));
        assert_eq!(due(&h, false, false), Some(Reminder::Exit));
        h.push(injected(Reminder::Exit));
        assert_eq!(due(&h, false, false), None);
        assert_eq!(due(&h, true, true), Some(Reminder::Reentry));
    }
}
