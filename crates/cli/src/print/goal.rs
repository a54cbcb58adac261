//! Goals in print mode (surface.md §1.2): `kimi-rs -p "/goal <objective>"` (or `/goal replace
//! …`) starts goal mode, and the run lasts until the goal reaches a terminal state. Exit
//! codes: 0 complete, 3 blocked, 6 paused. Other `/goal` sub-commands are not interpreted
//! here (they go to the model as the prompt, as in the reference).

use std::io::Write;

use anyhow::anyhow;
use kimi_core::session::OpenedSession;
use kimi_protocol::host::{GoalChange, GoalSnapshot, GoalStatus};
use kimi_protocol::ops::{Event, GoalAction, Op};
use serde_json::json;

use super::TurnWriter;

pub const EXIT_COMPLETE: u8 = 0;
pub const EXIT_BLOCKED: u8 = 3;
pub const EXIT_PAUSED: u8 = 6;

/// A print-mode prompt that starts a goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalStart {
    pub objective: String,
    pub replace: bool,
}

/// `Ok(Some(_))` for `/goal <objective>` / `/goal replace <objective>`; `Ok(None)` for any
/// other prompt (sub-commands included); `Err` for a goal prompt without an objective.
pub fn parse(prompt: &str) -> anyhow::Result<Option<GoalStart>> {
    let trimmed = prompt.trim();
    let Some(args) = trimmed.strip_prefix("/goal") else {
        return Ok(None);
    };
    if !(args.is_empty() || args.starts_with(char::is_whitespace)) {
        return Ok(None);
    }
    let words: Vec<&str> = args.split_whitespace().collect();
    match words.as_slice() {
        [] | ["status" | "pause" | "resume" | "cancel"] | ["next", ..] => return Ok(None),
        _ => {}
    }
    let (replace, rest) = match words.split_first() {
        Some((&"replace", rest)) => (true, rest),
        _ => (false, words.as_slice()),
    };
    let rest = rest.strip_prefix(&["--"]).unwrap_or(rest);
    let objective = rest.join(" ");
    if objective.is_empty() {
        return Err(anyhow!(
            "Provide a goal objective, e.g. `kimi-rs -p \"/goal Ship feature X\"`."
        ));
    }
    Ok(Some(GoalStart { objective, replace }))
}

/// Where the goal ended, from the events seen.
#[derive(Debug, Default)]
struct Tracker {
    last: Option<GoalSnapshot>,
    completed: bool,
}

impl Tracker {
    fn see(&mut self, event: &Event) {
        if let Event::GoalUpdated { goal, change } = event {
            if let Some(GoalChange::Completion { .. }) = change {
                self.completed = true;
            }
            if let Some(goal) = goal {
                self.completed &= goal.status == GoalStatus::Complete;
                self.last = Some(goal.clone());
            }
        }
    }

    fn exit_code(&self) -> u8 {
        if self.completed {
            return EXIT_COMPLETE;
        }
        match self.last.as_ref().map(|g| g.status) {
            Some(GoalStatus::Blocked) => EXIT_BLOCKED,
            Some(GoalStatus::Paused) => EXIT_PAUSED,
            Some(GoalStatus::Complete | GoalStatus::Active) | None => EXIT_COMPLETE,
        }
    }
}

/// The goal is still being pursued: active, or work queued for it.
fn goal_running(opened: &OpenedSession) -> bool {
    let runtime = opened.agent.handle.runtime();
    let active = runtime.config.goal.as_ref().is_some_and(|g| g.is_active());
    active || !runtime.shared().jobs.is_empty()
}

/// Start the goal and follow it to a terminal state; returns the exit code.
pub async fn drive_goal(
    opened: &mut OpenedSession,
    writer: &mut dyn TurnWriter,
    start: GoalStart,
    json_summary: bool,
) -> anyhow::Result<u8> {
    let handle = opened.agent.handle.clone();
    let op = Op::Goal {
        action: GoalAction::Start {
            objective: start.objective,
            replace: start.replace,
        },
    };
    if !handle.send(op) {
        return Err(anyhow!(
            "the agent stopped before the goal could be started"
        ));
    }
    let mut tracker = Tracker::default();
    let mut started = false;
    let mut interrupts = 0u32;
    loop {
        let event = tokio::select! {
            event = opened.agent.events.recv() => event,
            signal = tokio::signal::ctrl_c() => {
                signal.map_err(|e| anyhow!("cannot listen for Ctrl-C: {e}"))?;
                interrupts += 1;
                if interrupts > 1 {
                    return Ok(EXIT_PAUSED);
                }
                eprintln!("kimi-rs: interrupting the goal (it is paused; press Ctrl-C again to quit now)");
                handle.send(Op::Cancel { queued: true });
                continue;
            }
        };
        let Some(event) = event else {
            return Err(anyhow!("the agent stopped while the goal was running"));
        };
        if let Event::StepRetrying { .. } = &event {
            writer.discard_assistant();
        }
        writer.event(&event)?;
        tracker.see(&event);
        match &event {
            Event::TurnStarted { .. } => started = true,
            // The goal could not start (e.g. one already exists in a resumed session).
            Event::Error { message } if !started => {
                return Err(anyhow!("the goal did not start: {message}"));
            }
            Event::TurnEnded { .. } if !goal_running(opened) => break,
            _ => {}
        }
    }
    let summary = tracker.last.as_ref().map(|g| {
        let status = if tracker.completed {
            "complete"
        } else {
            g.status.label()
        };
        (status, g)
    });
    if json_summary {
        writer.finish()?;
        let line = match summary {
            Some((status, g)) => json!({
                "role": "meta", "type": "goal.summary", "goalId": g.goal_id, "status": status,
                "reason": g.terminal_reason, "turnsUsed": g.turns_used,
                "tokensUsed": g.tokens_used, "wallClockMs": g.wall_clock_ms,
            }),
            None => json!({"role": "meta", "type": "goal.summary", "goalId": null, "status": null}),
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()?;
    } else if let Some((status, g)) = summary {
        let reason = g
            .terminal_reason
            .as_deref()
            .filter(|_| !tracker.completed)
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        eprintln!(
            "Goal [{status}]{reason} (turns: {}, tokens: {})",
            g.turns_used, g.tokens_used
        );
    }
    Ok(tracker.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_goal_creation_is_interpreted() {
        let start = |o: &str, r| {
            Some(GoalStart {
                objective: o.to_owned(),
                replace: r,
            })
        };
        assert_eq!(parse("/goal ship it").unwrap(), start("ship it", false));
        assert_eq!(
            parse("  /goal replace ship it").unwrap(),
            start("ship it", true)
        );
        assert_eq!(
            parse("/goal -- pause the rollout").unwrap(),
            start("pause the rollout", false)
        );
        assert_eq!(
            parse("/goal pause the rollout now").unwrap(),
            start("pause the rollout now", false)
        );
        assert_eq!(parse("/goal status").unwrap(), None);
        assert_eq!(parse("/goal pause").unwrap(), None);
        assert_eq!(parse("/goal next later").unwrap(), None);
        assert_eq!(parse("/goal").unwrap(), None);
        assert_eq!(parse("/goals are nice").unwrap(), None);
        assert_eq!(parse("hello").unwrap(), None);
        assert!(parse("/goal replace").is_err());
    }
}
