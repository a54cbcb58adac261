//! One turn: the user's prompt goes in, steps run until the model answers without tool calls
//! (or the turn is cancelled, fails, or hits its step limit), and everything is journaled as it
//! happens. A step = gate → project → stream → tools. A retry of a failed request is the same
//! step: it does not re-run the gate or count against the step limit.

use std::sync::Arc;
use std::time::Instant;

use kimi_context::projector::{ProjectionPolicy, project_with};
use kimi_context::tool_call_ids::ToolCallIdNormalizer;
use kimi_llm::{Accumulator, ChatRequest, Completion, ErrorKind, FinishReason};
use kimi_protocol::ops::{Event, TurnEndReason};
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::record::PromptKind;
use kimi_protocol::{ContentPart, Message, Origin, Role};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use kimi_context::compaction::service::{AutoCheck, OverflowDecision, Trigger};

use super::compact;
use super::executor::{BatchEnv, run_batch};
pub use super::gate::task_notice;
use super::gate::{consume_steers, consume_task_notices, requeue_late_steers};
use super::hooks::hook_result_text;
use super::records as rec;
use super::repeat::RepeatGuard;
use super::runtime::{Pending, Runtime};
use super::state::TurnPhase;
use super::stream::{LATE_TOOLS_GRACE, stream_once, wait_for_late_tools};
use super::turn_host::TurnHost;
use crate::hooks::{EventResult, HookEventData};

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub turn_id: u64,
    pub reason: TurnEndReason,
    pub error: Option<String>,
    pub steps: u32,
}

enum StepEnd {
    /// The model answered without tool calls.
    Answered,
    /// Tools ran; continue unless a result stopped the turn.
    Continue { stop_turn: bool },
}

enum Failure {
    Cancelled,
    Error(String),
}

fn finish_reason_text(reason: Option<&FinishReason>) -> String {
    match reason {
        None | Some(FinishReason::Stop) => "end_turn".to_owned(),
        Some(FinishReason::ToolCalls) => "tool_use".to_owned(),
        Some(FinishReason::Length) => "max_tokens".to_owned(),
        Some(FinishReason::Filtered) => "filtered".to_owned(),
        Some(FinishReason::Other(other)) => other.clone(),
    }
}

pub(super) fn set_phase(rt: &Runtime, phase: TurnPhase) {
    let changed = {
        let mut shared = rt.shared();
        match shared.machine.turn_mut() {
            Some(turn) => match turn.advance(phase) {
                Ok(()) => true,
                Err(err) => {
                    rt.transition_failed(&err);
                    false
                }
            },
            None => false,
        }
    };
    // Front ends show where the agent waits (streaming, tools, approval, backoff).
    if changed {
        rt.publish_status();
    }
}

/// Run one turn for `prompt` to its end.
pub async fn run_turn(rt: &Arc<Runtime>, prompt: Pending, cancel: CancellationToken) -> TurnResult {
    let started = Instant::now();
    let turn_id = rt.log().clock().next_turn_id;
    {
        let mut shared = rt.shared();
        if let Err(err) = shared.machine.start_turn(turn_id) {
            rt.transition_failed(&err);
        }
        // A failure outside a turn was reported when it happened; this turn starts afresh
        // (its first append writes what is still pending, or fails it).
        shared.journal_failure = None;
        shared.goal_failure = None;
    }
    tracing::info!(turn_id, prompt_id = %prompt.prompt_id, "turn started");
    let mut user = Message::new(Role::User, prompt.input.clone());
    user.origin = Some(prompt.origin.clone());
    user.id = Some(prompt.prompt_id.clone());
    if let Some(hooks) = &rt.config.hooks {
        for message in hooks.reload_if_changed() {
            rt.emit(Event::Warning { message });
        }
    }
    let submit = match (&rt.config.hooks, prompt.origin.is_user()) {
        (Some(hooks), true) => {
            hooks
                .fire(HookEventData::UserPromptSubmit {
                    prompt: prompt.input.clone(),
                    is_steer: false,
                })
                .await
        }
        _ => EventResult::default(),
    };
    for message in &submit.warnings {
        rt.emit(Event::Warning {
            message: message.clone(),
        });
    }
    let mut records = vec![rec::turn_prompt(
        &prompt.input,
        &prompt.origin,
        &prompt.prompt_id,
        turn_id,
    )];
    if let Some(reason) = &submit.blocked {
        // The hook's verdict comes first, then the prompt it refused: the model will see both.
        let mut verdict = Message::new(
            Role::Assistant,
            vec![ContentPart::text(hook_result_text(
                "UserPromptSubmit",
                reason,
                true,
            ))],
        );
        verdict.origin = Some(Origin::Known(KnownOrigin::HookResult {
            event: "UserPromptSubmit".to_owned(),
            blocked: Some(true),
        }));
        records.push(rec::message(verdict));
        records.push(rec::message(user));
        records.push(rec::turn_ended(
            turn_id,
            TurnEndReason::Blocked,
            Some(reason),
            0,
        ));
        records.push(rec::prompt(
            PromptKind::Completed,
            &prompt.prompt_id,
            Some(TurnEndReason::Blocked),
        ));
        rt.commit(records);
        crate::swarm_mode::turn_ended(rt, &prompt.prompt_id);
        rt.emit(Event::TurnStarted { turn_id });
        crate::goal::engine::turn_started(rt, turn_id);
        crate::goal::engine::turn_ended(rt, turn_id, TurnEndReason::Blocked, Some(reason.as_str()));
        crate::flow::turn_ended(
            rt,
            &prompt.prompt_id,
            TurnEndReason::Blocked,
            Some(reason.as_str()),
        );
        set_phase(rt, TurnPhase::Failed);
        {
            let mut shared = rt.shared();
            if let Err(err) = shared.machine.end_turn() {
                rt.transition_failed(&err);
            }
            shared.turn_cancel = None;
            requeue_late_steers(&mut shared);
        }
        rt.emit(Event::TurnEnded {
            turn_id,
            reason: TurnEndReason::Blocked,
            error: Some(reason.clone()),
        });
        return TurnResult {
            turn_id,
            reason: TurnEndReason::Blocked,
            error: Some(reason.clone()),
            steps: 0,
        };
    }
    records.push(rec::message(user));
    for text in &submit.messages {
        let mut note = Message::new(
            Role::User,
            vec![ContentPart::text(hook_result_text(
                "UserPromptSubmit",
                text,
                false,
            ))],
        );
        note.origin = Some(Origin::Known(KnownOrigin::HookResult {
            event: "UserPromptSubmit".to_owned(),
            blocked: None,
        }));
        records.push(rec::message(note));
    }
    rt.commit(records);
    if let (Some(meta), true) = (&rt.config.session_meta, prompt.origin.is_user()) {
        let text: String = prompt
            .input
            .iter()
            .filter_map(ContentPart::as_text)
            .collect();
        meta.prompt_started(&text);
    }
    rt.emit(Event::TurnStarted { turn_id });
    crate::goal::engine::turn_started(rt, turn_id);
    rt.publish_status();
    if let Some(hooks) = &rt.config.hooks {
        hooks.fire_and_forget(HookEventData::TurnStarted {
            turn_id: Value::from(turn_id),
            origin_kind: prompt.origin.kind().to_owned(),
            origin_name: None,
            prompt: prompt.input.clone(),
        });
    }

    rt.compaction().turn_started();
    crate::prompt::instructions::turn_start(rt, &prompt.prompt_id);
    let mut ids = ToolCallIdNormalizer::new();
    ids.seed_from(rt.log().history().messages());
    let mut repeat = RepeatGuard::default();
    let mut strict = false;
    let mut stop_hook_used = false;
    let mut step: u32 = 0;
    let outcome: Result<(), Failure> = loop {
        // The gate: cancellation, steers, the step limit.
        if cancel.is_cancelled() {
            break Err(Failure::Cancelled);
        }
        consume_steers(rt, turn_id);
        consume_task_notices(rt);
        crate::plan::reminders::inject(rt, &prompt.prompt_id);
        crate::prompt::instructions::step_head(rt, &prompt.prompt_id);
        crate::swarm_mode::sync(rt, Some(&prompt.prompt_id));
        crate::goal::engine::step_head(rt, turn_id);
        step += 1;
        if let Some(max) = rt.config.max_steps_per_turn
            && max > 0
            && step > max
        {
            break Err(Failure::Error(format!(
                "Turn exceeded maxSteps={max}. Raise [loop_control] max_steps_per_turn in config.toml, or send a new prompt to continue."
            )));
        }
        set_phase(rt, TurnPhase::Gating { step });
        if let Err(message) = auto_compact(rt, turn_id, step, &cancel).await {
            break Err(message);
        }
        rt.emit(Event::StepStarted { turn_id, step });
        match run_step(
            rt,
            &prompt.prompt_id,
            turn_id,
            step,
            &cancel,
            &mut ids,
            &mut strict,
            &mut repeat,
        )
        .await
        {
            Ok(StepEnd::Answered) => {
                if crate::goal::engine::after_step(rt, turn_id, step, false) {
                    break Ok(());
                }
                if !rt.shared().steers.is_empty() {
                    continue;
                }
                if !stop_hook_used && let Some(reason) = stop_hook(rt).await {
                    // A Stop hook may ask for more work once per turn; its reason becomes the
                    // next instruction.
                    stop_hook_used = true;
                    let mut message = Message::new(
                        Role::User,
                        vec![ContentPart::text(hook_result_text("Stop", &reason, true))],
                    );
                    message.origin = Some(Origin::Known(KnownOrigin::SystemTrigger {
                        name: "stop_hook".to_owned(),
                    }));
                    rt.commit(vec![rec::message(message)]);
                    continue;
                }
                break Ok(());
            }
            Ok(StepEnd::Continue { stop_turn: true }) => break Ok(()),
            Ok(StepEnd::Continue { stop_turn: false }) => {
                // A spent goal budget ends the turn, after one grace step to sum up.
                if crate::goal::engine::after_step(rt, turn_id, step, true) {
                    break Ok(());
                }
            }
            Err(failure) => break Err(failure),
        }
    };

    // A failed journal append cancelled the turn's token: the turn failed, it was not
    // interrupted, and the user must hear what to do about it.
    let journal_failure = rt.shared().journal_failure.clone();
    let outcome = match journal_failure {
        Some(message) => Err(Failure::Error(message)),
        None => outcome,
    };
    let (reason, error, phase) = match outcome {
        Ok(()) => (TurnEndReason::Completed, None, TurnPhase::Done),
        Err(Failure::Cancelled) => (TurnEndReason::Cancelled, None, TurnPhase::Aborted),
        Err(Failure::Error(message)) => (TurnEndReason::Failed, Some(message), TurnPhase::Failed),
    };
    if let Some(hooks) = &rt.config.hooks {
        match reason {
            TurnEndReason::Cancelled => hooks.fire_and_forget(HookEventData::Interrupt {
                turn_id: Value::from(turn_id),
                reason: "cancelled".to_owned(),
            }),
            TurnEndReason::Failed => hooks.fire_and_forget(HookEventData::StopFailure {
                error_type: "error".to_owned(),
                error_message: error.clone().unwrap_or_default(),
            }),
            TurnEndReason::Completed | TurnEndReason::Blocked => {}
        }
    }
    let duration = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    tracing::info!(
        turn_id,
        ?reason,
        duration_ms = duration,
        error = error.as_deref(),
        "turn ended"
    );
    // A prompt whose turn was cancelled still completed (as far as the queue is concerned).
    let prompt_reason = if reason == TurnEndReason::Failed {
        TurnEndReason::Failed
    } else {
        TurnEndReason::Completed
    };
    // A `/swarm <task>` or AgentSwarm-started swarm mode ends with its turn.
    crate::swarm_mode::turn_ended(rt, &prompt.prompt_id);
    rt.commit(vec![
        rec::turn_ended(turn_id, reason, error.as_deref(), duration),
        rec::prompt(
            PromptKind::Completed,
            &prompt.prompt_id,
            Some(prompt_reason),
        ),
    ]);
    set_phase(rt, phase);
    {
        let mut shared = rt.shared();
        if let Err(err) = shared.machine.end_turn() {
            rt.transition_failed(&err);
        }
        // The turn is over before front ends hear so: an undo or steer sent on `TurnEnded`
        // must find the agent idle.
        shared.turn_cancel = None;
        requeue_late_steers(&mut shared);
    }
    crate::goal::engine::turn_ended(rt, turn_id, reason, error.as_deref());
    crate::flow::turn_ended(rt, &prompt.prompt_id, reason, error.as_deref());
    if let Some(message) = &error {
        rt.emit(Event::Error {
            message: message.clone(),
        });
    }
    rt.emit(Event::TurnEnded {
        turn_id,
        reason,
        error: error.clone(),
    });
    if reason == TurnEndReason::Completed && prompt.origin.is_user() {
        super::title::after_turn(rt);
    }
    rt.publish_status();
    TurnResult {
        turn_id,
        reason,
        error,
        steps: step,
    }
}

/// Run the Stop hooks; `Some(reason)` when one blocks (asks the model to keep going).
async fn stop_hook(rt: &Runtime) -> Option<String> {
    let hooks = rt.config.hooks.as_ref()?;
    let result = hooks
        .fire(HookEventData::Stop {
            stop_hook_active: false,
        })
        .await;
    for message in result.warnings {
        rt.emit(Event::Warning { message });
    }
    result.blocked
}

/// The request's messages and tools: the projected history and every tool's schema, or, with
/// disclosure on, the schemas of tools not deferred plus those the model loaded. Without it,
/// what a session with disclosure on left in the history is not sent.
fn shaped_request(
    rt: &Runtime,
    policy: &ProjectionPolicy,
) -> (Vec<Arc<Message>>, Vec<kimi_protocol::ToolSchema>) {
    let log = rt.log();
    let history = log.history().messages();
    let shared = |messages: Vec<Message>| messages.into_iter().map(Arc::new).collect();
    match &rt.config.tool_select {
        Some(state) => {
            let mut messages = project_with(history, policy).messages;
            let late = rt.config.tools.late();
            let pending = |name: &str| late.is_some_and(|late| late.may_provide(name));
            let tools = state.shape(rt.config.tools.schemas(), history, &mut messages, &pending);
            (shared(messages), tools)
        }
        None => {
            let messages = match crate::tool_select::without_disclosure(history) {
                Some(stripped) => shared(project_with(&stripped, policy).messages),
                // The usual case: history's projection cache re-projects only what changed
                // since the last request, and the request shares its messages.
                None => log.history().project(policy).messages,
            };
            (messages, rt.config.tools.schemas())
        }
    }
}

/// Close the step of an attempt that did not finish. An interrupted attempt keeps what it
/// streamed (the user saw it and stopped it); a broken one is discarded — it is retried or the
/// turn fails, so its partial text would otherwise be replayed as an answer on resume.
fn close_failed_attempt(
    rt: &Runtime,
    uuid: &str,
    turn_id: u64,
    step: u32,
    partial: &Message,
    interrupted: bool,
) {
    let mut records: Vec<_> = if interrupted {
        partial
            .content
            .iter()
            .filter(|p| !p.is_vacuous())
            .cloned()
            .map(|p| rec::content_part(uuid, turn_id, step, p))
            .collect()
    } else {
        Vec::new()
    };
    let reason = if interrupted { "interrupted" } else { "error" };
    records.push(rec::step_end(uuid, reason, None));
    rt.commit(records);
}

#[allow(clippy::too_many_arguments)]
async fn run_step(
    rt: &Arc<Runtime>,
    prompt_id: &str,
    turn_id: u64,
    step: u32,
    cancel: &CancellationToken,
    ids: &mut ToolCallIdNormalizer,
    strict: &mut bool,
    repeat: &mut RepeatGuard,
) -> Result<StepEnd, Failure> {
    if let Some(late) = rt.config.tools.late() {
        // Tools that are moments away (a local MCP server finishing its handshake) make the
        // first request; a server that hangs costs it this much and no more.
        late.first_request_grace(LATE_TOOLS_GRACE).await;
    }
    // After the wait above, so servers that just connected are announced with this step.
    crate::tool_select::announce(rt, prompt_id);
    let mut attempt: u32 = 1;
    let (uuid, completion) = loop {
        set_phase(rt, TurnPhase::Thinking { step, attempt });
        let policy = if *strict {
            ProjectionPolicy::strict()
        } else {
            ProjectionPolicy::default()
        };
        // On a step's first attempt `step.begin` goes first: it settles a step an earlier turn
        // left open (cancelled, failed, or cut off by a crash before this resume) — its calls
        // get their results and held-back messages join history — so the projection never
        // sees a half-open exchange. A retry projects first instead, so the broken attempt it
        // repeats (still open) is not sent back to the model.
        let uuid = rec::new_id("step_");
        if attempt == 1 {
            rt.commit(vec![rec::step_begin(&uuid, turn_id, step)]);
        }
        let (messages, tools) = shaped_request(rt, &policy);
        if attempt > 1 {
            rt.commit(vec![rec::step_begin(&uuid, turn_id, step)]);
        }
        let request = ChatRequest {
            system: rt.config.system_prompt.get(),
            messages,
            tools,
            params: rt.config.model.get().params,
            cache_key: Some(rt.config.session_id.clone()),
            cancel: cancel.child_token(),
        };
        let mut acc = Accumulator::new();
        let result = stream_once(rt, request, &mut acc, cancel).await;
        match result {
            Ok(()) => break (uuid, acc.finish()),
            Err(err) => {
                let partial = acc.snapshot();
                if cancel.is_cancelled() {
                    close_failed_attempt(rt, &uuid, turn_id, step, &partial, true);
                    return Err(Failure::Cancelled);
                }
                close_failed_attempt(rt, &uuid, turn_id, step, &partial, false);
                match err.kind() {
                    ErrorKind::StructureRejected if !*strict => {
                        *strict = true;
                        continue;
                    }
                    ErrorKind::ContextOverflow => {
                        let decision = rt.compaction().on_step_overflow();
                        match decision {
                            OverflowDecision::Compact => {
                                set_phase(rt, TurnPhase::Compacting { step });
                                let trigger = Trigger::Auto {
                                    turn_id: Some(turn_id),
                                };
                                match compact::run(rt, trigger, cancel).await {
                                    Ok(_) => continue,
                                    Err(_) if cancel.is_cancelled() => {
                                        return Err(Failure::Cancelled);
                                    }
                                    Err(message) => {
                                        return Err(Failure::Error(format!("{err}; {message}")));
                                    }
                                }
                            }
                            OverflowDecision::GiveUp(reason) => {
                                return Err(Failure::Error(format!("{err}; {reason}")));
                            }
                        }
                    }
                    ErrorKind::StructureRejected
                    | ErrorKind::Transient
                    | ErrorKind::Auth
                    | ErrorKind::BadRequest
                    | ErrorKind::QuotaExhausted
                    | ErrorKind::RequestTooLarge
                    | ErrorKind::ImageFormat
                    | ErrorKind::Cancelled => {}
                }
                // An unreachable server gets a smaller budget: waiting minutes will not fix
                // a wrong URL or a stopped local server.
                let max_attempts = rt.config.retry.max_attempts_for(&err);
                if err.is_retryable() && attempt < max_attempts {
                    let delay = rt.config.retry.delay_for(attempt, &err);
                    let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                    rt.emit(Event::StepRetrying {
                        turn_id,
                        failed_attempt: attempt,
                        next_attempt: attempt + 1,
                        max_attempts,
                        delay_ms,
                        error_name: err.name().to_owned(),
                        error_message: err.to_string(),
                        status_code: err.status(),
                    });
                    set_phase(
                        rt,
                        TurnPhase::Retrying {
                            step,
                            attempt: attempt + 1,
                            delay_ms,
                        },
                    );
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = cancel.cancelled() => return Err(Failure::Cancelled),
                    }
                    attempt += 1;
                    continue;
                }
                rt.shared().goal_failure = Some(crate::goal::engine::provider_pause_reason(&err));
                if err.is_retryable() && attempt > 1 {
                    return Err(Failure::Error(format!(
                        "{err} (gave up after {attempt} attempts)"
                    )));
                }
                return Err(Failure::Error(err.to_string()));
            }
        }
    };
    rt.compaction().step_succeeded();
    finish_step(rt, turn_id, step, &uuid, completion, cancel, ids, repeat).await
}

/// Compact before the request when the context is over the trigger; a failure only ends the
/// turn when the context is past the block limit (the request would fail anyway).
async fn auto_compact(
    rt: &Runtime,
    turn_id: u64,
    step: u32,
    cancel: &CancellationToken,
) -> Result<(), Failure> {
    let max = rt.config.model.get().max_context_tokens;
    if max == 0 {
        return Ok(());
    }
    let max = i64::try_from(max).unwrap_or(i64::MAX);
    let used = compact::context_tokens(rt);
    let check = rt.compaction().check_auto(max, used);
    match check {
        AutoCheck::AlreadyRunning | AutoCheck::NotNeeded => return Ok(()),
        AutoCheck::Start => {}
    }
    set_phase(rt, TurnPhase::Compacting { step });
    let trigger = Trigger::Auto {
        turn_id: Some(turn_id),
    };
    let result = compact::run(rt, trigger, cancel).await;
    set_phase(rt, TurnPhase::Gating { step });
    match result {
        Ok(_) => Ok(()),
        Err(_) if cancel.is_cancelled() => Err(Failure::Cancelled),
        Err(message) => {
            if rt
                .compaction()
                .should_block(max, compact::context_tokens(rt))
            {
                Err(Failure::Error(message))
            } else {
                rt.emit(Event::Warning { message });
                Ok(())
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn finish_step(
    rt: &Arc<Runtime>,
    turn_id: u64,
    step: u32,
    uuid: &str,
    completion: Completion,
    cancel: &CancellationToken,
    ids: &mut ToolCallIdNormalizer,
    repeat: &mut RepeatGuard,
) -> Result<StepEnd, Failure> {
    let Completion {
        mut message,
        usage,
        finish_reason,
        ..
    } = completion;
    let mut response_ids = ids.begin_response();
    response_ids.apply_to_calls(ids, &mut message.tool_calls);
    let usage_value = usage.map(|u| {
        serde_json::json!({
            "inputOther": u.input_other,
            "output": u.output,
            "inputCacheRead": u.input_cache_read,
            "inputCacheCreation": u.input_cache_creation,
        })
    });
    let parts: Vec<_> = message
        .content
        .iter()
        .cloned()
        .map(|p| rec::content_part(uuid, turn_id, step, p))
        .collect();
    if !rt.commit(parts) {
        // Nothing runs on an answer the journal does not have (the turn maps this to the
        // journal error).
        return Err(Failure::Cancelled);
    }
    if let Some(u) = usage {
        let usage = kimi_protocol::ops::Usage {
            input_other: u.input_other,
            output: u.output,
            input_cache_read: u.input_cache_read,
            input_cache_creation: u.input_cache_creation,
        };
        rt.emit(Event::Usage {
            usage,
            context_tokens: usage.total(),
        });
        crate::goal::engine::usage(rt, turn_id, usage.output);
    }
    rt.emit(Event::AssistantMessage {
        message: message.clone(),
    });

    if message.tool_calls.is_empty() {
        let reason = finish_reason_text(finish_reason.as_ref());
        rt.commit(vec![rec::step_end(uuid, &reason, usage_value)]);
        rt.emit(Event::StepCompleted {
            turn_id,
            step,
            finish_reason: Some(reason),
        });
        if finish_reason == Some(FinishReason::Filtered) {
            rt.shared().goal_failure = Some(crate::goal::text::FILTERED_PAUSE.to_owned());
            return Err(Failure::Error(
                "Provider safety policy blocked the response.".to_owned(),
            ));
        }
        if message.content.iter().all(ContentPart::is_vacuous) {
            tracing::debug!("model returned an empty answer");
        }
        return Ok(StepEnd::Answered);
    }

    set_phase(
        rt,
        TurnPhase::Acting {
            step,
            pending: message.tool_calls.iter().map(|c| c.id.clone()).collect(),
        },
    );
    let host = TurnHost {
        rt,
        turn_id,
        step,
        step_uuid: uuid.to_owned(),
        cancel: cancel.clone(),
        calls_in_step: message.tool_calls.len(),
    };
    wait_for_late_tools(rt, &message.tool_calls, cancel).await;
    let user_cancel = rt.shared().user_cancelled;
    let env = BatchEnv {
        registry: &rt.config.tools,
        validator: &rt.validator,
        ctx: &rt.config.tool_ctx,
        host: &host,
        cancel: cancel.clone(),
        user_cancel,
        tool_select: rt.config.tool_select.as_deref(),
    };
    let outcome = run_batch(&env, &message.tool_calls, repeat).await;
    if cancel.is_cancelled() {
        rt.commit(vec![rec::step_end(uuid, "interrupted", usage_value)]);
        return Err(Failure::Cancelled);
    }
    let reason = if outcome.stop_turn {
        "completed"
    } else {
        "tool_use"
    };
    if !rt.commit(vec![rec::step_end(uuid, reason, usage_value)]) {
        return Err(Failure::Cancelled);
    }
    rt.emit(Event::StepCompleted {
        turn_id,
        step,
        finish_reason: Some(reason.to_owned()),
    });
    if let Some((tool, times)) = outcome.repeat_stop {
        // The model is stuck in a loop: the turn fails with the reason instead of ending as
        // if it had completed.
        return Err(Failure::Error(format!(
            "stopped the turn: the model made the same {tool} call {times} times in a row without \
             making progress. Tell it what to do differently (or what it is missing) in a new \
             prompt to continue."
        )));
    }
    Ok(StepEnd::Continue {
        stop_turn: outcome.stop_turn,
    })
}
