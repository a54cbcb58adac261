//! An agent as two cooperating tasks over one `Runtime`: the dispatcher takes operations from
//! the front ends (submit, steer, cancel, approve, …) the moment they arrive, and the runner
//! executes queued work one turn at a time. A steer accepted at any moment is either consumed
//! at the running turn's next gate or, if the turn is already ending, starts the next turn —
//! never lost in between.

use std::sync::Arc;

use kimi_protocol::ops::{ApprovalDecision, Event, Op};
use kimi_protocol::{ContentPart, Origin, RecordPayload};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::executor::UserAnswer;
use super::log::{AgentLog, QueuedPrompt};
use super::questions::{AnswerRejected, QuestionBroker};
use super::records as rec;
use super::runtime::{AgentConfig, FrontLink, Job, Pending, Runtime};
use super::turn::{TurnResult, run_turn};

/// The front ends' handle on a running agent.
#[derive(Clone)]
pub struct AgentHandle {
    ops: mpsc::UnboundedSender<Op>,
    runtime: Arc<Runtime>,
}

impl AgentHandle {
    /// Send an operation; `false` when the agent has shut down.
    pub fn send(&self, op: Op) -> bool {
        self.ops.send(op).is_ok()
    }

    pub fn snapshot(&self) -> kimi_protocol::ops::AgentStatus {
        self.runtime.snapshot()
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }
}

pub struct SpawnedAgent {
    pub handle: AgentHandle,
    pub events: mpsc::UnboundedReceiver<Event>,
    /// Ends after `Op::Shutdown` (or when every handle is dropped) and the last turn finished.
    pub join: JoinHandle<Vec<TurnResult>>,
}

/// Start an agent over its restored log. `queued` are prompts a previous process accepted but
/// never ran; they run first, in order.
pub fn spawn_agent(config: AgentConfig, log: AgentLog, queued: Vec<QueuedPrompt>) -> SpawnedAgent {
    let (link, events) = FrontLink::new();
    spawn_linked(config, log, queued, link, events)
}

/// [`spawn_agent`] over a link made beforehand, for sessions whose parts (question broker,
/// subagent host) talk to the front ends through it. `events` is the link's receiver.
pub fn spawn_linked(
    config: AgentConfig,
    log: AgentLog,
    queued: Vec<QueuedPrompt>,
    link: Arc<FrontLink>,
    events: mpsc::UnboundedReceiver<Event>,
) -> SpawnedAgent {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    // Everything the agent's tasks log names its session (and lands in the session's log).
    let span =
        tracing::info_span!("agent", session_id = %config.session_id, agent = log.agent_id());
    let rt = Runtime::new(config, log, link);
    // Answers journaled before a crash reach their calls now, before anything else runs.
    let settled = rt.log().take_settled();
    rt.commit(settled);
    let flow = rt.log().take_flow();
    crate::flow::report_interrupted(&rt, flow.as_ref());
    {
        let mut shared = rt.shared();
        for q in queued {
            shared.jobs.push_back(Job::Prompt(Pending {
                prompt_id: q.prompt_id,
                input: q.input,
                origin: Origin::user(),
            }));
        }
        shared.machine.queued = shared.jobs.len();
    }
    let dispatcher = tokio::spawn(dispatch(rt.clone(), ops_rx).instrument(span.clone()));
    let watcher = tokio::spawn(watch_tasks(rt.clone()).instrument(span.clone()));
    let runner_rt = rt.clone();
    let join = tokio::spawn(
        async move {
            let results = run_jobs(runner_rt).await;
            dispatcher.abort();
            watcher.abort();
            // Wait until both are gone: their references to the runtime (and so the journal's
            // lock) must be released by the time `join` resolves, or reopening the session right
            // after a shutdown fails with "locked".
            let _ = dispatcher.await;
            let _ = watcher.await;
            results
        }
        .instrument(span),
    );
    SpawnedAgent {
        handle: AgentHandle {
            ops: ops_tx,
            runtime: rt,
        },
        events,
        join,
    }
}

fn is_running(rt: &Runtime) -> bool {
    rt.shared().turn_cancel.is_some()
}

async fn dispatch(rt: Arc<Runtime>, mut ops: mpsc::UnboundedReceiver<Op>) {
    while let Some(op) = ops.recv().await {
        match op {
            Op::Submit {
                input,
                origin,
                prompt_id,
            } => {
                submit(&rt, input, origin.unwrap_or_else(Origin::user), prompt_id);
            }
            Op::Steer { input } => {
                if is_running(&rt) {
                    steer(&rt, input);
                } else {
                    let prompt_id = submit(&rt, input, Origin::user(), None);
                    rt.emit(Event::SteerAccepted {
                        prompt_id,
                        joined: false,
                    });
                }
            }
            Op::Cancel { queued } => cancel(&rt, queued),
            Op::Approve {
                request_id,
                decision,
            } => approve(&rt, &request_id, decision),
            Op::Answer {
                request_id,
                answers,
            } => answer(&rt, &request_id, &answers),
            Op::Undo { count } => {
                if is_running(&rt) {
                    rt.emit(Event::Error {
                        message: "Cannot undo while a turn is active or queued. Wait for it to finish, then retry.".to_owned(),
                    });
                } else {
                    undo(&rt, count);
                }
            }
            Op::Rewind {
                turns,
                scope,
                force,
            } => {
                if is_running(&rt) {
                    rt.emit(Event::Error {
                        message: "Cannot rewind while a turn is active or queued. Wait for it to finish, then retry.".to_owned(),
                    });
                } else {
                    rewind(&rt, u64::from(turns), scope, force);
                }
            }
            Op::Compact { instruction } => {
                rt.shared().jobs.push_back(Job::Compact { instruction });
                rt.wake.notify_one();
            }
            Op::SetPermissionMode { mode } => {
                rt.config.permissions.set_mode(mode);
                let mode_text = serde_json::to_value(mode)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                rt.commit(vec![RecordPayload::PermissionSetMode(
                    kimi_protocol::record::PermissionSetMode {
                        agent_id: None,
                        mode: mode_text,
                    },
                )]);
            }
            Op::SetPlanMode { enabled } => match &rt.config.plan {
                Some(plan) => {
                    if let Some(record) = plan.set_enabled(enabled) {
                        rt.commit(vec![record]);
                    }
                }
                None => rt.emit(Event::Warning {
                    message: "this agent has no plan mode (subagents never plan)".to_owned(),
                }),
            },
            Op::ClearPlan => clear_plan(&rt),
            Op::SetSwarmMode { enabled, trigger } => {
                let idle = !is_running(&rt) && rt.shared().jobs.is_empty();
                crate::swarm_mode::set(&rt, enabled, trigger, idle);
            }
            Op::Goal { action } => {
                let runtime = rt.clone();
                crate::goal::engine::handle_op(&rt, action, move |text| {
                    submit(&runtime, vec![ContentPart::text(text)], Origin::user(), None);
                });
            }
            Op::Flow {
                name,
                graph,
                prompt_id,
            } => crate::flow::start(&rt, name, graph, prompt_id),
            Op::SetModel { alias } => super::model::set_model(&rt, &alias),
            Op::SetEffort { effort } => super::model::set_effort(&rt, &effort),
            Op::Btw { question } => super::btw::spawn(&rt, question),
            op @ (Op::ListSessions { .. }
            | Op::ListTasks
            | Op::StopTask { .. }
            | Op::TaskOutput { .. }
            | Op::Shell { .. }
            | Op::ShellToBackground
            | Op::McpStatus
            | Op::McpServer { .. }
            | Op::SetTitle { .. }
            | Op::Fork) => rt.emit(Event::Error {
                message: format!(
                    "{op:?} is answered by the session host (kimi_core::host::SessionHost), not by the agent; send it through the host"
                ),
            }),
            Op::Shutdown => {
                let mut shared = rt.shared();
                shared.shutting_down = true;
                if let Some(token) = &shared.turn_cancel {
                    token.cancel();
                }
                drop(shared);
                rt.wake.notify_one();
                break;
            }
        }
    }
    // Every handle is gone: finish queued work, then stop.
    rt.shared().shutting_down = true;
    rt.wake.notify_one();
}

/// Queue a prompt; returns its prompt id (`prompt_id`, or a new one). What a person typed,
/// what a front end acknowledges by id, and any prompt that has to wait is journaled
/// (`prompt.queued`) before it is acknowledged (`PromptRecorded`, `PromptQueued`), so a
/// crash before its turn starts does not lose it: resume runs it, and the turn's
/// `turn.prompt` consumes the record.
fn submit(
    rt: &Runtime,
    input: Vec<ContentPart>,
    origin: Origin,
    prompt_id: Option<String>,
) -> String {
    if origin.is_user()
        && let Some(goals) = &rt.config.goal
    {
        // The user spoke: a continuation waiting out its idle back-off is not wanted now.
        goals.user_activity();
    }
    let explicit_id = prompt_id.is_some();
    let prompt_id = prompt_id.unwrap_or_else(|| rec::new_id("msg_"));
    let waits = is_running(rt) || !rt.shared().jobs.is_empty();
    // Durable before acknowledged: a crash now does not lose what the user typed. (A failed
    // write is reported and stops the turn; the prompt is then not acknowledged.)
    let typed = origin.is_user() || origin.is_user_slash();
    let journaled =
        (waits || typed || explicit_id) && rt.commit(vec![rec::prompt_queued(&prompt_id, &input)]);
    if journaled {
        rt.emit(Event::PromptRecorded {
            prompt_id: prompt_id.clone(),
        });
    }
    if waits {
        rt.emit(Event::PromptQueued {
            prompt_id: prompt_id.clone(),
        });
        if let Some(hooks) = &rt.config.hooks {
            let queue_length = rt.shared().jobs.len() as u64 + 1;
            hooks.fire_and_forget(crate::hooks::HookEventData::UserPromptQueued {
                prompt_id: prompt_id.clone(),
                prompt: input.clone(),
                queue_length,
            });
        }
    }
    let mut shared = rt.shared();
    shared.jobs.push_back(Job::Prompt(Pending {
        prompt_id: prompt_id.clone(),
        input,
        origin,
    }));
    shared.machine.queued = shared.jobs.len();
    drop(shared);
    rt.wake.notify_one();
    prompt_id
}

/// A steer into the running turn: durable on receipt (`prompt.steer`), so a crash before the
/// next gate does not lose it — resume delivers it. The gate's `turn.steer` consumes it. Only
/// a journaled steer is acknowledged (`SteerAccepted`), so a front end never shows as taken
/// what a crash would lose. A steer the journal refused still joins the turn (the write error
/// stops the turn and is reported), so it is not lost while this process lives.
fn steer(rt: &Runtime, input: Vec<ContentPart>) {
    let prompt_id = rec::new_id("msg_");
    let journaled = rt.commit(vec![rec::prompt_steer(&prompt_id, &input)]);
    {
        let mut shared = rt.shared();
        shared.steers.push(Pending {
            prompt_id: prompt_id.clone(),
            input,
            origin: Origin::user(),
        });
        shared.steer_signal.cancel();
        shared.steer_signal = CancellationToken::new();
    }
    if journaled {
        rt.emit(Event::SteerAccepted {
            prompt_id,
            joined: true,
        });
    }
}

fn cancel(rt: &Runtime, queued: bool) {
    let mut shared = rt.shared();
    if let Some(token) = shared.turn_cancel.clone() {
        shared.user_cancelled = true;
        token.cancel();
    }
    if queued {
        let dropped: Vec<String> = shared
            .jobs
            .drain(..)
            .filter_map(|job| match job {
                Job::Prompt(p) => Some(p.prompt_id),
                Job::Compact { .. } | Job::TaskNotices => None,
            })
            .collect();
        shared.machine.queued = 0;
        // A flow whose next prompt was dropped cannot go on.
        let flow = shared
            .flow
            .take_if(|flow| dropped.contains(&flow.prompt_id));
        drop(shared);
        if let Some(flow) = flow {
            crate::flow::cancelled(rt, &flow);
        }
        let records = dropped
            .iter()
            .map(|id| rec::prompt(kimi_protocol::record::PromptKind::Aborted, id, None))
            .collect();
        rt.commit(records);
    }
}

fn approve(rt: &Runtime, request_id: &str, decision: ApprovalDecision) {
    let Some(waiter) = rt.link().take_approval(request_id) else {
        rt.emit(Event::Warning {
            message: format!(
                "approval {request_id} is not pending (already answered or cancelled)"
            ),
        });
        return;
    };
    let answer = match decision {
        ApprovalDecision::ApproveOnce => UserAnswer::Approve,
        ApprovalDecision::ApproveForSession => UserAnswer::ApproveForSession,
        ApprovalDecision::Reject => UserAnswer::Reject(None),
        ApprovalDecision::RejectWithFeedback { feedback } => UserAnswer::Reject(Some(feedback)),
        ApprovalDecision::ApproveOption { label } => UserAnswer::ApproveOption(label),
    };
    // Durable before anything acts on it: a crash after this line does not lose the answer
    // (resume gives the call the result it decided). A failed write stops the turn.
    if let Some((call_id, tool_name)) = &waiter.call {
        let (approved, feedback) = match &answer {
            UserAnswer::Approve | UserAnswer::ApproveForSession | UserAnswer::ApproveOption(_) => {
                (true, None)
            }
            UserAnswer::Reject(feedback) => (false, feedback.as_deref()),
        };
        if !rt.commit(vec![rec::approval_resolved(
            request_id, call_id, tool_name, approved, feedback,
        )]) {
            // Not recorded: the write error stops the turn and is reported; no confirmation.
            let _ = waiter.tx.send(answer);
            return;
        }
    }
    let _ = waiter.tx.send(answer);
    rt.emit(Event::AnswerRecorded {
        request_id: request_id.to_owned(),
    });
}

fn answer(rt: &Runtime, request_id: &str, answers: &kimi_protocol::question::Answers) {
    let result = match QuestionBroker::of(&rt.config.tool_ctx) {
        // Journaled before the tool sees it, as the result it becomes.
        Some(questions) => {
            let mut recorded = false;
            let result = questions.answer(request_id, answers, |resolution| {
                recorded = rt.commit(vec![rec::question_resolved(request_id, &resolution)]);
            });
            if recorded {
                rt.emit(Event::AnswerRecorded {
                    request_id: request_id.to_owned(),
                });
            }
            result
        }
        None => Err(AnswerRejected::NotPending(request_id.to_owned())),
    };
    if let Err(err) = result {
        rt.emit(Event::Warning {
            message: err.to_string(),
        });
    }
}

/// `/plan clear`: empty the plan file; the outcome is reported as a warning or an error.
fn clear_plan(rt: &Runtime) {
    let Some(plan) = &rt.config.plan else {
        rt.emit(Event::Warning {
            message: "this agent has no plan mode (subagents never plan)".to_owned(),
        });
        return;
    };
    match plan.clear() {
        Ok(path) => rt.emit(Event::Warning {
            message: format!("plan file {} emptied", path.display()),
        }),
        Err(err) => rt.emit(Event::Error {
            message: err.to_string(),
        }),
    }
}

/// `Op::Rewind`: files from their checkpoints and/or the conversation (the undo above).
fn rewind(rt: &Runtime, turns: u64, scope: kimi_protocol::checkpoint::RewindScope, force: bool) {
    let Some(blobs) = rt.config.checkpoints.as_ref().map(|c| c.blobs().clone()) else {
        if scope.files() {
            rt.emit(Event::Error {
                message: "this session keeps no file checkpoints ([checkpoint] enabled = false); rewind the conversation only".to_owned(),
            });
            return;
        }
        undo(rt, u32::try_from(turns).unwrap_or(u32::MAX));
        return;
    };
    let request = super::rewind::RewindRequest {
        turns,
        scope,
        force,
    };
    let result = rt.log().rewind(request, &blobs);
    match result {
        Ok(report) => {
            if report.conversation_undone {
                restore_undoable_state(rt);
                rt.emit(Event::ContextUndone {
                    turns: u32::try_from(turns).unwrap_or(u32::MAX),
                });
            }
            rt.emit(Event::Rewound { report });
        }
        Err(message) => rt.emit(Event::Error { message }),
    }
}

/// Plan mode and the todo list go back together with the conversation.
fn restore_undoable_state(rt: &Runtime) {
    if let Some(plan) = &rt.config.plan {
        let snapshot = rt.log().plan_snapshot();
        plan.restore(snapshot);
    }
    let todos = rt.log().todos().to_vec();
    rt.config.tool_ctx.todos.set(todos);
    rt.publish_todos();
}

fn undo(rt: &Runtime, count: u32) {
    let result = rt.log().undo(u64::from(count));
    match result {
        Ok(()) => {
            // Plan mode and the todo list go back together with the conversation.
            if let Some(plan) = &rt.config.plan {
                let snapshot = rt.log().plan_snapshot();
                plan.restore(snapshot);
            }
            let todos = rt.log().todos().to_vec();
            rt.config.tool_ctx.todos.set(todos);
            rt.publish_todos();
            rt.emit(Event::ContextUndone { turns: count });
        }
        Err(message) => rt.emit(Event::Error { message }),
    }
}

/// Background tasks that finish while the agent is idle start a turn of their own, so the
/// model hears about them without waiting for the user's next prompt.
async fn watch_tasks(rt: Arc<Runtime>) {
    let tasks = rt.config.tool_ctx.tasks.clone();
    let mut done = rt.jobs_done.subscribe();
    loop {
        tasks.notification_ready().await;
        // Mark the current job count as seen before queueing, so the job's completion (however
        // fast) is what wakes us below.
        done.borrow_and_update();
        let queued = {
            let mut shared = rt.shared();
            if shared.shutting_down {
                return;
            }
            let idle = shared.turn_cancel.is_none() && shared.jobs.is_empty();
            if idle {
                shared.jobs.push_back(Job::TaskNotices);
            }
            idle
        };
        if queued {
            rt.wake.notify_one();
        }
        // Whether we queued a job or a turn is running (its gate drains the notices), wait
        // for the next job to finish before looking again.
        if done.changed().await.is_err() {
            return;
        }
    }
}

async fn run_jobs(rt: Arc<Runtime>) -> Vec<TurnResult> {
    let mut results = Vec::new();
    loop {
        let job = {
            let mut shared = rt.shared();
            let job = shared.jobs.pop_front();
            shared.machine.queued = shared.jobs.len();
            if job.is_none() && shared.shutting_down {
                break;
            }
            job
        };
        let Some(job) = job else {
            rt.wake.notified().await;
            continue;
        };
        match job {
            Job::Prompt(prompt) => {
                let token = CancellationToken::new();
                {
                    let mut shared = rt.shared();
                    if shared.shutting_down {
                        break;
                    }
                    shared.turn_cancel = Some(token.clone());
                    shared.user_cancelled = false;
                }
                // The turn itself hands steers that came after its last gate on (they start
                // the next turn).
                let deadline = crate::goal::engine::watch_deadline(&rt, token.clone());
                let result = run_turn(&rt, prompt, token).await;
                if let Some(deadline) = deadline {
                    deadline.abort();
                }
                rt.shared().turn_cancel = None;
                results.push(result);
            }
            Job::Compact { instruction } => {
                super::compact::run_manual(&rt, instruction).await;
            }
            Job::TaskNotices => {
                let finished = rt.config.tool_ctx.tasks.drain_notifications();
                if let Some((first, rest)) = finished.split_first() {
                    // The first notice is the turn's prompt; any others join at its gate.
                    let notice = super::turn::task_notice(first, &rt.config.tool_ctx.tasks);
                    let prompt = Pending {
                        prompt_id: rec::new_id("msg_"),
                        input: notice.content.clone(),
                        origin: notice.origin.clone().unwrap_or_else(Origin::user),
                    };
                    let records = rest
                        .iter()
                        .map(|t| {
                            rec::message(super::turn::task_notice(t, &rt.config.tool_ctx.tasks))
                        })
                        .collect::<Vec<_>>();
                    let token = CancellationToken::new();
                    rt.shared().turn_cancel = Some(token.clone());
                    let result = run_turn(&rt, prompt, token).await;
                    rt.shared().turn_cancel = None;
                    rt.commit(records);
                    results.push(result);
                }
            }
        }
        rt.jobs_done.send_modify(|n| *n += 1);
    }
    // A title request in flight finishes (it is bounded by its own timeout).
    let title = rt.shared().title_task.take();
    if let Some(task) = title
        && let Err(err) = task.await
    {
        tracing::warn!("the session-title request stopped: {err}");
    }
    // Records a failed append kept pending get a last chance; what still cannot be written is
    // said, not dropped silently at exit.
    let pending = rt.log().pending_records();
    if pending > 0 {
        let result = rt.log().retry_pending();
        if let Err(err) = result {
            rt.emit(Event::Error {
                message: format!(
                    "{pending} journal record(s) could not be written and are lost: {err}. Free disk space or fix the journal's permissions before resuming this session"
                ),
            });
        }
    }
    // Only the session's main agent (the one keeping its metadata) ends the session; a
    // subagent shutting down shares the hooks but is not a SessionEnd.
    if let (Some(hooks), Some(_)) = (&rt.config.hooks, &rt.config.session_meta) {
        hooks.stop_heartbeat();
        hooks
            .fire(crate::hooks::HookEventData::SessionEnd {
                reason: "exit".to_owned(),
            })
            .await;
    }
    results
}
