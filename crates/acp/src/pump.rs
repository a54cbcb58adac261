//! One ACP session's event pump: engine events become `session/update` notifications (text,
//! thoughts, tool calls, the todo list as the plan, context usage, the title, notices),
//! approvals and questions become requests to the editor, and waiting prompts are answered
//! when their turn — or their flow — ends.
//!
//! Warnings, errors outside a turn, retries, compaction and flow progress reach the user as
//! `notice` updates when the editor advertised `session.notices`, otherwise as agent text:
//! never only in the log.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, PoisonError};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, ContentBlock, CurrentModeUpdate, Notice, NoticeSeverity, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, RequestPermissionOutcome, RequestPermissionRequest,
    SessionInfoUpdate, SessionNotification, SessionUpdate, TextContent, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};
use kimi_core::engine::agent::AgentHandle;
use kimi_protocol::ops::{
    AgentStatus, ApprovalDecision, ApprovalRequest, Event, Op, TurnEndReason,
};
use kimi_protocol::record::{TodoItem, TodoStatus};
use tokio::sync::{mpsc, oneshot};

use crate::convert;
use crate::server::{Live, mode_of};

/// How a prompt's turn ended.
pub(crate) struct Outcome {
    pub(crate) reason: TurnEndReason,
    pub(crate) error: Option<String>,
}

/// Prompts waiting for their turn to end: not started yet (in submit order), and started.
#[derive(Default)]
pub(crate) struct Waiters {
    pub(crate) queued: VecDeque<oneshot::Sender<Outcome>>,
    pub(crate) started: HashMap<u64, oneshot::Sender<Outcome>>,
    /// `/flow:<name>` prompts, answered when their flow finishes or stops (in start order).
    pub(crate) flows: VecDeque<oneshot::Sender<Outcome>>,
    /// `/rewind` prompts waiting for the engine's report (or its error).
    pub(crate) rewinds:
        VecDeque<oneshot::Sender<Result<kimi_protocol::checkpoint::RewindReport, String>>>,
}

pub(crate) fn notify(cx: &ConnectionTo<Client>, session_id: &str, update: SessionUpdate) {
    if let Err(err) = cx.send_notification(SessionNotification::new(session_id.to_owned(), update))
    {
        tracing::warn!("cannot send a session update: {err}");
    }
}

/// Ask the editor about one tool call and pass the answer to the engine.
pub(crate) async fn ask(
    cx: ConnectionTo<Client>,
    session_id: String,
    handle: AgentHandle,
    request: ApprovalRequest,
) {
    let mut title = format!("{}: {}", request.action, request.summary);
    if let Some(danger) = &request.danger {
        title.push_str(&format!(" (warning: {danger})"));
    }
    let review = request.tool_name == "ExitPlanMode";
    let mut fields = ToolCallUpdateFields::new().title(title);
    if let Some(detail) = request.detail.as_deref().filter(|d| !d.is_empty()) {
        // The plan under review (or the command's detail) is shown with the question.
        fields = fields.content(vec![ToolCallContent::from(ContentBlock::Text(
            TextContent::new(detail),
        ))]);
    }
    let tool_call = ToolCallUpdate::new(request.tool_call_id.clone(), fields);
    let options = convert::permission_options(review, &request.options);
    let answer = cx
        .send_request(RequestPermissionRequest::new(
            session_id.clone(),
            tool_call,
            options,
        ))
        .block_task()
        .await;
    let decision = match answer.map(|r| r.outcome) {
        Ok(RequestPermissionOutcome::Selected(selected)) => {
            convert::decision_for(&selected.option_id.0)
        }
        Ok(_) => ApprovalDecision::Reject,
        Err(err) => {
            tracing::warn!("permission request failed, rejecting the call: {err}");
            ApprovalDecision::Reject
        }
    };
    let approved = !matches!(
        decision,
        ApprovalDecision::Reject | ApprovalDecision::RejectWithFeedback { .. }
    );
    let call = request.tool_call_id.clone();
    handle.send(Op::Approve {
        request_id: request.request_id,
        decision,
    });
    // The call left `pending`: it runs now (a rejected one ends `failed` with its result).
    if approved {
        notify(&cx, &session_id, convert::tool_running(&call));
    }
}

/// Forward one session's engine events to the editor until the agent stops.
pub(crate) async fn pump(
    cx: ConnectionTo<Client>,
    session_id: String,
    live: Arc<Live>,
    mut events: mpsc::UnboundedReceiver<Event>,
) {
    // The question event does not name its tool call; AskUserQuestion runs alone, so it is
    // the last one started.
    let mut asking_call = String::new();
    // The call announced last, while it is not known whether it waits for permission: the
    // engine announces a call, then asks (the next events are the approval phase and the
    // request) or runs it (any other event).
    let mut unsettled: Option<String> = None;
    // A flow's last update comes before the end of the turn it stopped on; the prompt is
    // answered at that end, with its reason.
    let mut in_turn = false;
    let mut flow_end: Option<kimi_protocol::flow::FlowUpdate> = None;
    while let Some(event) = events.recv().await {
        if let Some(call) = unsettled.take() {
            match &event {
                Event::Status {
                    status: AgentStatus::AwaitingApproval { .. },
                } => unsettled = Some(call),
                Event::ApprovalRequested(request) if request.tool_call_id == call => {}
                // The call's diff comes right after its announcement, before either.
                Event::ToolDiff { tool_call_id, .. } if *tool_call_id == call => {
                    unsettled = Some(call);
                }
                _ => notify(&cx, &session_id, convert::tool_running(&call)),
            }
        }
        match event {
            Event::TurnStarted { turn_id } => {
                in_turn = true;
                let mut waiters = live.waiters();
                if let Some(waiter) = waiters.queued.pop_front() {
                    waiters.started.insert(turn_id, waiter);
                }
            }
            Event::TurnEnded {
                turn_id,
                reason,
                error,
            } => {
                in_turn = false;
                if let Some(end) = flow_end.take()
                    && let Some(waiter) = live.waiters().flows.pop_front()
                {
                    let (reason, error) = end.outcome(reason);
                    let _ = waiter.send(Outcome { reason, error });
                }
                if let Some(waiter) = live.waiters().started.remove(&turn_id) {
                    let _ = waiter.send(Outcome { reason, error });
                }
            }
            Event::FlowUpdated { update } => {
                // The node prompts are the engine's: the editor sees where the flow is.
                let severity = match update.state {
                    kimi_protocol::flow::FlowState::Stopped { .. } => NoticeSeverity::Warning,
                    _ => NoticeSeverity::Info,
                };
                tell(&cx, &session_id, &live, severity, &update.describe());
                if update.state.is_over() {
                    if in_turn {
                        flow_end = Some(update);
                    } else if let Some(waiter) = live.waiters().flows.pop_front() {
                        let (reason, error) = update.outcome(TurnEndReason::Completed);
                        let _ = waiter.send(Outcome { reason, error });
                    }
                }
            }
            Event::AssistantDelta { text } => notify(&cx, &session_id, convert::agent_text(&text)),
            Event::ThinkingDelta { text } => {
                notify(&cx, &session_id, convert::agent_thought(&text));
            }
            Event::ToolStarted { call } => {
                if call.name == "AskUserQuestion" {
                    asking_call.clone_from(&call.id);
                }
                if call.name == "Bash"
                    && let Some(command) = convert::args_of(&call)["command"].as_str()
                {
                    live.terminals.expect(&call.id, command);
                }
                let before = convert::file_before_write(&call, &live.cwd);
                notify(
                    &cx,
                    &session_id,
                    convert::tool_started(&call, &live.cwd, before, ToolCallStatus::Pending),
                );
                unsettled = Some(call.id.clone());
            }
            Event::QuestionRequested {
                request_id,
                questions,
            } => {
                let call = if asking_call.is_empty() {
                    request_id.clone()
                } else {
                    asking_call.clone()
                };
                tokio::spawn(crate::question::ask(
                    cx.clone(),
                    session_id.clone(),
                    live.handle.clone(),
                    call,
                    request_id,
                    questions,
                ));
            }
            Event::ToolResult {
                tool_call_id,
                output,
                is_error,
            } => {
                let terminal = live.terminals.finish(&tool_call_id);
                notify(
                    &cx,
                    &session_id,
                    convert::tool_finished(&tool_call_id, &output, is_error, terminal.as_deref()),
                );
                // EnterPlanMode / ExitPlanMode change the mode the editor shows.
                let now = mode_of(&live.handle);
                let changed = {
                    let mut shown = live.mode.lock().unwrap_or_else(PoisonError::into_inner);
                    std::mem::replace(&mut *shown, now) != now
                };
                if changed {
                    notify(
                        &cx,
                        &session_id,
                        SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(now)),
                    );
                }
            }
            Event::ApprovalRequested(request) => {
                tokio::spawn(ask(
                    cx.clone(),
                    session_id.clone(),
                    live.handle.clone(),
                    request,
                ));
            }
            Event::Rewound { report } => {
                if let Some(waiter) = live.waiters().rewinds.pop_front() {
                    let _ = waiter.send(Ok(report));
                }
            }
            Event::Error { message } if !live.waiters().rewinds.is_empty() => {
                // A rewind is only sent while idle, so an error now is its answer.
                if let Some(waiter) = live.waiters().rewinds.pop_front() {
                    let _ = waiter.send(Err(message));
                }
            }
            Event::ModelChanged { .. } => {
                if let Some(options) = crate::config::options(&live.handle, None) {
                    notify(
                        &cx,
                        &session_id,
                        SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options)),
                    );
                }
            }
            Event::TodosUpdated { todos } => notify(&cx, &session_id, plan(&todos)),
            Event::Usage { context_tokens, .. } => {
                let size = live.handle.runtime().config.model.get().max_context_tokens;
                if size > 0 {
                    notify(
                        &cx,
                        &session_id,
                        SessionUpdate::UsageUpdate(UsageUpdate::new(context_tokens, size)),
                    );
                }
            }
            Event::SessionTitle { title, .. } => notify(
                &cx,
                &session_id,
                SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title(title)),
            ),
            Event::StepRetrying { .. } | Event::CompactionStarted { .. } => {
                if let Some(text) = progress_text(&event) {
                    tell(&cx, &session_id, &live, NoticeSeverity::Info, &text);
                }
            }
            Event::Warning { message } => {
                tracing::warn!("session {session_id}: {message}");
                tell(&cx, &session_id, &live, NoticeSeverity::Warning, &message);
            }
            Event::Error { message } => {
                // A failed turn's error is its prompt's answer; other errors are told.
                tracing::warn!("session {session_id}: {message}");
                if !in_turn {
                    tell(&cx, &session_id, &live, NoticeSeverity::Error, &message);
                }
            }
            _ => {}
        }
    }
}

/// The todo list as the editor's plan (every entry medium priority, as the reference does).
fn plan(todos: &[TodoItem]) -> SessionUpdate {
    let entries = todos
        .iter()
        .map(|t| {
            let status = match t.status {
                TodoStatus::Pending => PlanEntryStatus::Pending,
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Done => PlanEntryStatus::Completed,
            };
            PlanEntry::new(t.title.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// What a retry or a compaction tells the user while it happens.
fn progress_text(event: &Event) -> Option<String> {
    match event {
        Event::StepRetrying {
            next_attempt,
            max_attempts,
            delay_ms,
            error_message,
            ..
        } => Some(format!(
            "The model request failed ({error_message}); retrying in {:.1}s (attempt {next_attempt} of {max_attempts}).",
            *delay_ms as f64 / 1000.0
        )),
        Event::CompactionStarted { .. } => Some("Compacting the context…".to_owned()),
        _ => None,
    }
}

/// Show `text` to the user: a notice when the editor takes them, agent text otherwise.
fn tell(
    cx: &ConnectionTo<Client>,
    session_id: &str,
    live: &Live,
    severity: NoticeSeverity,
    text: &str,
) {
    let update = if live.notices {
        SessionUpdate::Notice(Notice::new(severity, text))
    } else {
        let mark = match severity {
            NoticeSeverity::Warning => "⚠ ",
            NoticeSeverity::Error => "✗ ",
            _ => "",
        };
        convert::agent_text(&format!("\n\n_{mark}{text}_\n\n"))
    };
    notify(cx, session_id, update);
}
