//! The fixed texts of goal mode: the continuation instruction, the reminders injected into the
//! conversation, the outcome prompts `UpdateGoal` returns and the reasons a goal is paused or
//! blocked. The wording follows the reference (`features/goal/goalService.ts`,
//! `tools/outcome-prompts.ts`) so the model is steered the same way.

use kimi_protocol::host::GoalSnapshot;

pub const MAX_OBJECTIVE_CHARS: usize = 4000;

/// The prompt-origin name of an engine-started goal turn.
pub const CONTINUATION_ORIGIN: &str = "goal_continuation";
/// The injection variant of the active-goal reminder.
pub const REMINDER_VARIANT: &str = "goal_active";
/// The injection variant of the reminder added when a budget stops the goal mid-turn.
pub const BUDGET_STOP_VARIANT: &str = "goal_budget_stop";
/// The injection variant telling the model a cancelled goal is gone.
pub const CANCELLED_VARIANT: &str = "goal_cancelled";

pub const BUDGET_BLOCK_PREFIX: &str = "Blocked after goal budget reached";
pub const PAUSED_AFTER_INTERRUPTION: &str = "Paused after interruption";
pub const PAUSED_AFTER_RESUME: &str = "Paused after agent resume";
pub const BLOCKED_BY_HOOK: &str = "Blocked by UserPromptSubmit hook";
pub const RATE_LIMIT_PAUSE: &str = "Paused after provider rate limit";
pub const CONNECTION_PAUSE: &str = "Paused after provider connection error";
pub const AUTH_PAUSE: &str = "Paused after provider authentication error";
pub const API_PAUSE: &str = "Paused after provider API error";
pub const FILTERED_PAUSE: &str = "Paused after provider safety policy block";
pub const RUNTIME_PAUSE: &str = "Paused after runtime error";

pub const STALE_TOOL_RESULT: &str =
    "Goal changed since this turn started; ignored stale goal tool call.";
pub const BUDGET_TOOLS_REJECTED: &str =
    "Goal budget exhausted; tool calls are rejected. Write your final message.";

pub const BUDGET_STOP_REMINDER: &str = "The goal's hard budget was reached and the goal is now blocked; the user can resume it with /goal resume. Stop immediately. Do not call any more tools: they will be rejected. Write a brief final status message summarizing the progress so far.";

pub const CANCELLED_REMINDER: &str = "The user cancelled the current goal. Ignore earlier active-goal reminders for that goal. Handle the next user request normally unless the user starts or resumes a goal.";

/// The prompt `/goal resume` sends.
pub const RESUME_INPUT: &str = "Resume the active goal.";

/// The built-in instruction of every continuation turn.
pub const CONTINUATION_PROMPT: &str = "Continue working toward the active goal. Keep the self-audit brief. Do not explore unrelated interpretations once the goal can be decided. If the objective is simple, already answered, impossible, unsafe, or contradictory, do not run another goal turn. Explain briefly if useful, then call UpdateGoal with `complete` or `blocked` in the same turn. Otherwise, weigh the objective and any completion criteria against the work done so far, choose one bounded, useful slice of work, and use the existing conversation context and your tools. Do not try to finish a broad goal in one turn unless the whole goal is genuinely small. Most goal turns should not call UpdateGoal: after completing a useful slice, if material work remains, end the turn normally without calling UpdateGoal so the runtime can continue the goal in the next turn. Call UpdateGoal with `complete` only when all required work is done, any stated validation has passed, and there is no useful next action. Completion audit: before calling `complete`, verify the current state against the actual objective and every explicit requirement. Treat weak or indirect evidence as not complete. Do not mark complete after only producing a plan, summary, first pass, or partial result. Do not mark complete merely because a budget is nearly exhausted or you want to stop. Blocked audit: do not call UpdateGoal with `blocked` the first time you hit a blocker. Use `blocked` only for a genuine impasse: an external condition, required user input, missing credentials or permissions, or a persistent technical failure. For those non-terminal blockers, the same blocking condition must repeat for at least 3 consecutive goal turns before you call `blocked`, counting the original/user-triggered turn and automatic continuations. If a previously blocked goal is resumed, treat the resumed run as a fresh blocked audit. Exception: if the objective itself is impossible, unsafe, or contradictory, call UpdateGoal with `blocked` in the same turn; do not run more goal turns just to satisfy the audit. Do not use `blocked` because the work is large, hard, slow, uncertain, incomplete, still needs validation, would benefit from clarification, or needs more goal turns. Once the 3-turn threshold is met and you cannot make meaningful progress without user input or an external-state change, call UpdateGoal with `blocked`; do not keep reporting the blocker while leaving the goal active. Do not ask the user for input unless a real blocker prevents progress.";

/// The variant used when the previous goal turn ran out of steps.
pub fn step_cap_continuation_prompt() -> String {
    format!(
        "The previous goal turn reached the per-turn step limit before finishing its work, so a new turn was started for you. Pick up where that turn stopped and keep each slice of work small enough to fit the limit. {CONTINUATION_PROMPT}"
    )
}

/// `Blocked after goal budget reached: turn budget 3, token budget 100` — `None` when no
/// budget is reached.
pub fn budget_block_reason(goal: &GoalSnapshot) -> Option<String> {
    let b = &goal.budget;
    let mut reached = Vec::new();
    if b.turn_budget_reached {
        reached.push(format!("turn budget {}", b.turn_budget.unwrap_or_default()));
    }
    if b.token_budget_reached {
        reached.push(format!(
            "token budget {}",
            b.token_budget.unwrap_or_default()
        ));
    }
    if b.wall_clock_budget_reached {
        reached.push(format!(
            "wall-clock budget {}ms",
            b.wall_clock_budget_ms.unwrap_or_default()
        ));
    }
    (!reached.is_empty()).then(|| format!("{BUDGET_BLOCK_PREFIX}: {}", reached.join(", ")))
}

/// A pause reason with the error's message: `Paused after runtime error: boom`.
pub fn with_message(prefix: &str, message: &str) -> String {
    let message = message.trim();
    if message.is_empty() {
        prefix.to_owned()
    } else {
        format!("{prefix}: {message}")
    }
}

fn plural(n: u64, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// `12s`, `3m 4s`, `1h 2m`.
pub fn format_elapsed(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m {}s", secs / 60, secs % 60),
        _ => format!("{}h {}m", secs / 3600, (secs % 3600) / 60),
    }
}

fn stats(goal: &GoalSnapshot) -> String {
    format!(
        "Worked {} over {}, using {} tokens.",
        plural(goal.turns_used, "turn"),
        format_elapsed(goal.wall_clock_ms),
        goal.tokens_used
    )
}

/// What `UpdateGoal {complete}` returns: the figures and the instruction for the summary.
pub fn completion_summary_prompt(goal: &GoalSnapshot) -> String {
    let head = match &goal.terminal_reason {
        Some(reason) => format!("Goal completed successfully: {reason}."),
        None => "Goal completed successfully.".to_owned(),
    };
    format!(
        "{head} {}\n\nWrite a concise final message for the user. State that the goal is complete, summarize the main work completed, and mention any validation you ran. Do not call more goal tools.",
        stats(goal)
    )
}

/// What `UpdateGoal {blocked}` returns.
pub fn blocked_reason_prompt(goal: &GoalSnapshot) -> String {
    let head = match &goal.terminal_reason {
        Some(reason) => format!("Goal blocked: {reason}."),
        None => "Goal blocked.".to_owned(),
    };
    format!(
        "{head} {}\n\nWrite a concise final message for the user. State that the goal is blocked, explain the concrete blocker, and say what input or change is needed before work can continue. Do not call more goal tools.",
        stats(goal)
    )
}

/// The reminder injected into goal turns so the objective stays in view (also after a
/// compaction rewrote the conversation).
pub fn active_reminder(goal: &GoalSnapshot) -> String {
    let mut text = format!(
        "<system-reminder>\nA goal is active. Objective:\n{}\n",
        goal.objective
    );
    if let Some(criterion) = &goal.completion_criterion {
        text.push_str(&format!("Completion criterion:\n{criterion}\n"));
    }
    text.push_str(&format!(
        "Progress so far: {}, {} tokens, {}.",
        plural(goal.turns_used, "turn"),
        goal.tokens_used,
        format_elapsed(goal.wall_clock_ms)
    ));
    let b = &goal.budget;
    let mut left = Vec::new();
    if let Some(turns) = b.remaining_turns {
        left.push(plural(turns, "turn"));
    }
    if let Some(tokens) = b.remaining_tokens {
        left.push(format!("{tokens} tokens"));
    }
    if let Some(ms) = b.remaining_wall_clock_ms {
        left.push(format_elapsed(ms));
    }
    if !left.is_empty() {
        text.push_str(&format!(" Budget left: {}.", left.join(", ")));
    }
    text.push_str(" Work toward the objective; call UpdateGoal with `complete` once the completion audit passes, or `blocked` only for a genuine impasse.\n</system-reminder>");
    text
}

/// One line for `/goal status`, print mode's summary and the TUI.
pub fn status_line(goal: &GoalSnapshot) -> String {
    let mut line = format!("Goal [{}]", goal.status.label());
    if let Some(reason) = &goal.terminal_reason {
        line.push_str(": ");
        line.push_str(reason);
    }
    format!(
        "{line} (turns: {}, tokens: {}, time: {}) — {}",
        goal.turns_used,
        goal.tokens_used,
        format_elapsed(goal.wall_clock_ms),
        goal.objective
    )
}
