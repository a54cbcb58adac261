//! Where the engine drives goal mode: `Op::Goal` from the front ends, and the turn loop's
//! hooks — a turn starting, each step's head (count the turn, keep the objective in view),
//! usage, the end of a step (budget grace or stop) and the end of a turn (pause, block, or
//! queue the `goal_continuation` turn). Every change's records are committed here.

use std::sync::Arc;

use kimi_llm::LlmError;
use kimi_protocol::host::{GoalActor, GoalStatus};
use kimi_protocol::ops::{Event, GoalAction, TurnEndReason};
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Message, Origin, Role};

use super::{AfterStep, Continuation, GoalError, GoalService, TurnOutcome, text};
use crate::engine::records as rec;
use crate::engine::runtime::{Job, Pending, Runtime};

fn goals(rt: &Runtime) -> Option<&Arc<GoalService>> {
    rt.config.goal.as_ref()
}

fn running(rt: &Runtime) -> bool {
    rt.shared().turn_cancel.is_some()
}

/// Stop the running turn on the user's behalf (`/goal pause`, `/goal cancel`).
fn stop_running_turn(rt: &Runtime) {
    let mut shared = rt.shared();
    if let Some(token) = shared.turn_cancel.clone() {
        shared.user_cancelled = true;
        token.cancel();
    }
}

/// A reminder message (`<system-reminder>` text with an injection origin).
fn reminder(variant: &str, body: &str) -> Message {
    let text = if body.starts_with("<system-reminder>") {
        body.to_owned()
    } else {
        format!("<system-reminder>\n{body}\n</system-reminder>")
    };
    let mut message = Message::new(Role::User, vec![ContentPart::text(text)]);
    message.origin = Some(Origin::injection(variant));
    message
}

/// `Op::Goal`. `submit` sends a prompt as if the user typed it.
pub fn handle_op(rt: &Arc<Runtime>, action: GoalAction, submit: impl FnOnce(String)) {
    let Some(goals) = goals(rt) else {
        rt.emit(Event::Warning {
            message: "this agent has no goal mode (goals belong to the main agent)".to_owned(),
        });
        return;
    };
    match action {
        GoalAction::Start { objective, replace } => {
            if running(rt) {
                rt.emit(Event::Error {
                    message: "Cannot start a goal while a turn is running. Wait for it to finish (or press Esc), then retry.".to_owned(),
                });
                return;
            }
            match goals.create(&objective, None, replace, false) {
                Ok((snap, records)) => {
                    rt.commit(records);
                    submit(snap.objective);
                }
                Err(err) => rt.emit(Event::Error {
                    message: err.to_string(),
                }),
            }
        }
        GoalAction::Status => goals.announce(),
        GoalAction::Pause => match goals.pause(GoalActor::User) {
            Ok((_, records)) => {
                rt.commit(records);
                stop_running_turn(rt);
            }
            Err(GoalError::NotFound) => rt.emit(Event::Warning {
                message: "No goal to pause.".to_owned(),
            }),
            Err(err) => rt.emit(Event::Error {
                message: err.to_string(),
            }),
        },
        GoalAction::Resume => {
            if running(rt) {
                rt.emit(Event::Error {
                    message: "Cannot resume the goal while a turn is running. Wait for it to finish, then retry.".to_owned(),
                });
                return;
            }
            match goals.resume(GoalActor::User, false) {
                Ok((snap, records)) => {
                    rt.commit(records);
                    if snap.status == GoalStatus::Active {
                        submit(text::RESUME_INPUT.to_owned());
                    }
                }
                Err(GoalError::NotFound) => rt.emit(Event::Warning {
                    message: "No goal to resume.".to_owned(),
                }),
                Err(err) => rt.emit(Event::Error {
                    message: err.to_string(),
                }),
            }
        }
        GoalAction::Next { objective } => {
            if goals.snapshot().is_none() && !running(rt) {
                rt.emit(Event::Warning {
                    message: "No active goal. Starting this goal now.".to_owned(),
                });
                handle_op(
                    rt,
                    GoalAction::Start {
                        objective,
                        replace: false,
                    },
                    submit,
                );
                return;
            }
            queue_op(rt, goals, |q| q.push(&objective).map(|_| ()));
        }
        GoalAction::StartNext => {
            if goals.snapshot().is_some() || running(rt) {
                return;
            }
            let Some(queue) = goals.queue() else {
                return;
            };
            match queue.pop() {
                Ok(Some(next)) => {
                    announce_queue(rt, goals);
                    handle_op(
                        rt,
                        GoalAction::Start {
                            objective: next.objective,
                            replace: false,
                        },
                        submit,
                    );
                }
                Ok(None) => {}
                Err(err) => rt.emit(Event::Error {
                    message: err.to_string(),
                }),
            }
        }
        GoalAction::QueueList => queue_op(rt, goals, |_| Ok(())),
        GoalAction::QueueRemove { id } => queue_op(rt, goals, |q| q.remove(&id)),
        GoalAction::QueueEdit { id, objective } => {
            queue_op(rt, goals, |q| q.edit(&id, &objective));
        }
        GoalAction::QueueMove { id, up } => queue_op(rt, goals, |q| q.shift(&id, up)),
        GoalAction::Cancel => match goals.cancel() {
            Ok((_, mut records)) => {
                records.push(rec::message(reminder(
                    text::CANCELLED_VARIANT,
                    text::CANCELLED_REMINDER,
                )));
                rt.commit(records);
                stop_running_turn(rt);
            }
            Err(GoalError::NotFound) => rt.emit(Event::Warning {
                message: "No goal to cancel.".to_owned(),
            }),
            Err(err) => rt.emit(Event::Error {
                message: err.to_string(),
            }),
        },
    }
}

/// A turn started.
pub fn turn_started(rt: &Runtime, turn_id: u64) {
    if let Some(goals) = goals(rt) {
        let records = goals.turn_started(turn_id);
        rt.commit(records);
    }
}

fn is_goal_reminder(message: &Message) -> bool {
    matches!(
        message.origin.as_ref().and_then(Origin::known),
        Some(KnownOrigin::Injection { variant, .. }) if variant == text::REMINDER_VARIANT
    )
}

fn is_prompt(message: &Message) -> bool {
    message.role == Role::User
        && !matches!(
            message.origin.as_ref().and_then(Origin::known),
            Some(KnownOrigin::Injection { .. })
        )
}

/// A step's head: count the goal turn on its first step, and add the active-goal reminder
/// when the conversation since the turn's prompt lacks it (a compaction may have folded it
/// away).
pub fn step_head(rt: &Runtime, turn_id: u64) {
    let Some(goals) = goals(rt) else {
        return;
    };
    let mut records = goals.step_started(turn_id);
    if goals.turn_goal(turn_id).is_some()
        && let Some(snap) = goals.snapshot().filter(|g| g.status == GoalStatus::Active)
    {
        let has_reminder = {
            let log = rt.log();
            log.history()
                .messages()
                .iter()
                .rev()
                .take_while(|m| !is_prompt(m))
                .any(is_goal_reminder)
        };
        if !has_reminder {
            records.push(rec::message(reminder(
                text::REMINDER_VARIANT,
                &text::active_reminder(&snap),
            )));
        }
    }
    rt.commit(records);
}

/// A step of `turn_id` reported usage.
pub fn usage(rt: &Runtime, turn_id: u64, output_tokens: u64) {
    if let Some(goals) = goals(rt) {
        let records = goals.record_usage(turn_id, output_tokens);
        rt.commit(records);
    }
}

/// A step of `turn_id` finished; `true` = end the turn now.
pub fn after_step(rt: &Runtime, turn_id: u64, step: u32, tool_calls: bool) -> bool {
    let Some(goals) = goals(rt) else {
        return false;
    };
    let more_steps = rt
        .config
        .max_steps_per_turn
        .is_none_or(|max| max == 0 || step < max);
    match goals.after_step(turn_id, tool_calls, more_steps) {
        AfterStep::Continue => false,
        AfterStep::Grace => {
            rt.commit(vec![rec::message(reminder(
                text::BUDGET_STOP_VARIANT,
                text::BUDGET_STOP_REMINDER,
            ))]);
            false
        }
        AfterStep::Stop => true,
    }
}

/// Why a goal turn failed on `err`, as the reason its goal is paused with.
pub fn provider_pause_reason(err: &LlmError) -> String {
    if err.status() == Some(429) {
        return text::RATE_LIMIT_PAUSE.to_owned();
    }
    let message = err.to_string();
    let prefix = match err {
        LlmError::Connection { .. } | LlmError::Timeout { .. } => text::CONNECTION_PAUSE,
        LlmError::Auth { .. } => text::AUTH_PAUSE,
        _ => text::API_PAUSE,
    };
    text::with_message(prefix, &message)
}

/// `turn_id` ended: settle the goal and queue its continuation. Runs before `TurnEnded` is
/// announced, so a front end that hears of the end already sees the goal's new state and
/// any queued continuation.
pub fn turn_ended(rt: &Arc<Runtime>, turn_id: u64, reason: TurnEndReason, error: Option<&str>) {
    let Some(goals) = goals(rt) else {
        return;
    };
    let provider_failure = rt.shared().goal_failure.take();
    let outcome = match reason {
        TurnEndReason::Completed => TurnOutcome::Completed,
        TurnEndReason::Cancelled => TurnOutcome::Cancelled,
        TurnEndReason::Blocked => TurnOutcome::Blocked,
        TurnEndReason::Failed => {
            let message = error.unwrap_or_default();
            if message.starts_with("Turn exceeded maxSteps=") {
                TurnOutcome::StepCapped
            } else {
                TurnOutcome::Failed(
                    provider_failure
                        .unwrap_or_else(|| text::with_message(text::RUNTIME_PAUSE, message)),
                )
            }
        }
    };
    let (records, continuation) = goals.turn_ended(turn_id, &outcome);
    rt.commit(records);
    if let Some(continuation) = continuation {
        queue_continuation(rt, continuation);
    }
}

fn continuation_job(continuation: &Continuation) -> Job {
    Job::Prompt(Pending {
        prompt_id: rec::new_id("msg_"),
        input: vec![ContentPart::text(continuation.prompt.clone())],
        origin: Origin::Known(KnownOrigin::SystemTrigger {
            name: text::CONTINUATION_ORIGIN.to_owned(),
        }),
    })
}

fn push_job(rt: &Runtime, job: Job) {
    let mut shared = rt.shared();
    if shared.shutting_down {
        return;
    }
    shared.jobs.push_back(job);
    shared.machine.queued = shared.jobs.len();
    drop(shared);
    rt.wake.notify_one();
}

/// Queue the continuation now, or after its idle back-off (dropped if the goal changed or
/// the user spoke meanwhile).
fn queue_continuation(rt: &Arc<Runtime>, continuation: Continuation) {
    if continuation.delay.is_zero() {
        push_job(rt, continuation_job(&continuation));
        return;
    }
    tracing::info!(
        delay_s = continuation.delay.as_secs(),
        "goal turns made no tool calls; the next continuation waits"
    );
    let rt = rt.clone();
    tokio::spawn(async move {
        tokio::time::sleep(continuation.delay).await;
        let due = goals(&rt).is_some_and(|g| g.still_due(&continuation));
        if due {
            push_job(&rt, continuation_job(&continuation));
        }
    });
}

/// While a goal turn runs: block the goal and stop the turn when its wall-clock budget runs
/// out. The returned task is aborted when the turn ends.
pub fn watch_deadline(
    rt: &Arc<Runtime>,
    cancel: tokio_util::sync::CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    goals(rt)?.wall_clock_remaining()?;
    let rt = rt.clone();
    Some(tokio::spawn(async move {
        loop {
            let Some(left) = goals(&rt).and_then(|g| g.wall_clock_remaining()) else {
                return;
            };
            if left.is_zero() {
                break;
            }
            tokio::time::sleep(left).await;
        }
        if let Some(goals) = goals(&rt) {
            let records = goals.block_if_over_budget();
            if !records.is_empty() {
                rt.commit(records);
                cancel.cancel();
            }
        }
    }))
}

/// Change the workspace's goal queue with `change`, then announce it.
fn queue_op(
    rt: &Runtime,
    goals: &GoalService,
    change: impl FnOnce(&super::queue::GoalQueue) -> Result<(), super::queue::QueueError>,
) {
    let Some(queue) = goals.queue() else {
        rt.emit(Event::Warning {
            message: "this session has no goal queue".to_owned(),
        });
        return;
    };
    if let Err(err) = change(queue) {
        rt.emit(Event::Error {
            message: err.to_string(),
        });
        return;
    }
    announce_queue(rt, goals);
}

fn announce_queue(rt: &Runtime, goals: &GoalService) {
    let Some(queue) = goals.queue() else {
        return;
    };
    match queue.list() {
        Ok(list) => rt.emit(Event::GoalQueue { goals: list }),
        Err(err) => rt.emit(Event::Error {
            message: err.to_string(),
        }),
    }
}
