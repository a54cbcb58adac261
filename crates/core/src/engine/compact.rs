//! Driving a compaction: the pure `CompactionService` plans the summary request and decides
//! retries; this module sends the requests through the agent's provider, writes the journal
//! records (`full_compaction.begin`, `context.apply_compaction` with the replaced line range,
//! `token_counting.rebased`, `full_compaction.complete|cancel`) and tells the front ends.

use futures::StreamExt;
use kimi_context::compaction::service::{
    ApplyContext, ApplyOutcome, BeginInput, FinishKind, RoundStep, SummaryFailure, SummaryReply,
    Trigger,
};
use kimi_context::compaction::trigger::token_count::TokenCountingRecord;
use kimi_context::projector::project;
use kimi_context::tokens::{estimate_messages, estimate_text, estimate_tools};
use kimi_llm::{Accumulator, ChatRequest, ErrorKind, FinishReason, LlmError};
use kimi_protocol::ops::Event;
use kimi_protocol::record::{ApplyCompaction, CompactionSummary, FullCompactionBegin, TokenCount};
use kimi_protocol::{ContentPart, RecordPayload};
use tokio_util::sync::CancellationToken;

use super::runtime::Runtime;
use crate::hooks::HookEventData;

/// Tokens the next request would carry: system prompt, tool schemas and history.
pub fn context_tokens(rt: &Runtime) -> u64 {
    estimate_text(&rt.config.system_prompt.get())
        + estimate_tools(&rt.config.tools.schemas())
        + rt.log().history().estimated_tokens()
}

fn failure(err: &LlmError) -> SummaryFailure {
    match err.kind() {
        ErrorKind::ContextOverflow => SummaryFailure::ContextOverflow,
        ErrorKind::Transient => SummaryFailure::Retryable(err.to_string()),
        ErrorKind::Auth => SummaryFailure::Auth(err.to_string()),
        ErrorKind::Cancelled => SummaryFailure::Aborted,
        ErrorKind::RequestTooLarge
        | ErrorKind::ImageFormat
        | ErrorKind::StructureRejected
        | ErrorKind::QuotaExhausted
        | ErrorKind::BadRequest => SummaryFailure::Fatal(err.to_string()),
    }
}

async fn ask_for_summary(
    rt: &Runtime,
    request: kimi_context::compaction::service::SummaryRequest,
    cancel: &CancellationToken,
) -> Result<SummaryReply, LlmError> {
    let model = rt.config.model.get();
    let mut params = model.params;
    if let Some(cap) = request.max_output_tokens {
        params.max_tokens = Some(u32::try_from(cap).unwrap_or(u32::MAX));
    }
    let chat = ChatRequest {
        system: rt.config.system_prompt.get(),
        messages: project(&request.messages)
            .messages
            .into_iter()
            .map(std::sync::Arc::new)
            .collect(),
        tools: Vec::new(),
        params,
        cache_key: Some(rt.config.session_id.clone()),
        cancel: cancel.child_token(),
    };
    let mut stream = tokio::select! {
        s = kimi_llm::stream_watched(
            model.provider.as_ref(),
            chat,
            kimi_llm::StallLimits::from_policy(&rt.config.retry),
        ) => s?,
        () = cancel.cancelled() => return Err(LlmError::Cancelled),
    };
    let mut acc = Accumulator::new();
    loop {
        let next = tokio::select! {
            n = stream.next() => n,
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
        };
        match next {
            None => break,
            Some(Err(err)) => return Err(err),
            Some(Ok(delta)) => acc.push(delta),
        }
    }
    let done = acc.finish();
    let text: String = done
        .message
        .content
        .iter()
        .filter_map(ContentPart::as_text)
        .collect();
    let finish = match done.finish_reason {
        Some(FinishReason::Length) => FinishKind::Truncated,
        Some(FinishReason::Filtered) => FinishKind::Filtered,
        Some(FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Other(_)) | None => {
            FinishKind::Completed
        }
    };
    Ok(SummaryReply {
        text,
        finish,
        output_tokens: done.usage.map(|u| u.output),
    })
}

/// Run one compaction to its end. `Ok(true)` = applied, `Ok(false)` = cancelled because
/// history changed meanwhile, `Err` = failed (the message says why).
pub async fn run(
    rt: &Runtime,
    trigger: Trigger,
    cancel: &CancellationToken,
) -> Result<bool, String> {
    let manual = matches!(trigger, Trigger::Manual { .. });
    let history = rt.log().history().messages().to_vec();
    let overhead =
        estimate_text(&rt.config.system_prompt.get()) + estimate_tools(&rt.config.tools.schemas());
    let loop_idle = rt.shared().turn_cancel.is_none();
    let begun = rt.compaction().begin(BeginInput {
        trigger,
        history: &history,
        loop_idle,
        max_tokens: i64::try_from(rt.config.model.get().max_context_tokens).unwrap_or(i64::MAX),
        request_overhead_tokens: overhead,
        profile_max_output: None,
    });
    let (begin, mut round) = begun.map_err(|e| e.to_string())?;
    let trigger_name = if manual { "manual" } else { "auto" };
    tracing::info!(
        trigger = trigger_name,
        messages = history.len(),
        "compaction started"
    );
    if let Some(hooks) = &rt.config.hooks {
        // Awaited so a hook can save what it needs before history is replaced; result ignored.
        hooks
            .fire(HookEventData::PreCompact {
                trigger: trigger_name.to_owned(),
                token_count: overhead + estimate_messages(&history),
            })
            .await;
    }
    rt.commit(vec![RecordPayload::FullCompactionBegin(
        FullCompactionBegin {
            agent_id: None,
            source: if manual { "manual" } else { "auto" }.to_owned(),
            instruction: begin.instruction,
        },
    )]);
    rt.emit(Event::CompactionStarted { manual });
    let mut step = RoundStep::Send(round.first_request());
    loop {
        let request = match step {
            RoundStep::Send(request) => request,
            RoundStep::SendAfter { delay_ms, request } => {
                tokio::select! {
                    () = tokio::time::sleep(std::time::Duration::from_millis(delay_ms)) => {}
                    () = cancel.cancelled() => {
                        return Err(cancelled(rt));
                    }
                }
                request
            }
            RoundStep::Ready(summary) => {
                let journal_path = rt.log().journal_path().display().to_string();
                let line_count = rt.log().line_count();
                let current = rt.log().history().messages().to_vec();
                // The list as journaled: what resume and undo would also see.
                let todos = rt.log().todos().to_vec();
                let outcome = rt.compaction().apply(
                    round,
                    summary,
                    &current,
                    &ApplyContext {
                        journal_path: &journal_path,
                        journal_line_count: Some(line_count),
                        todos: &todos,
                    },
                );
                return Ok(finish_apply(rt, outcome));
            }
            RoundStep::Failed(err) => {
                tracing::warn!("compaction failed: {err}");
                rt.compaction().fail();
                rt.commit(vec![RecordPayload::FullCompactionCancel(
                    kimi_protocol::record::AgentOnly { agent_id: None },
                )]);
                rt.emit(Event::CompactionCancelled {
                    reason: err.to_string(),
                });
                return Err(format!("compaction failed: {err}"));
            }
        };
        step = match ask_for_summary(rt, request, cancel).await {
            Ok(reply) => round.on_reply(reply),
            Err(_) if cancel.is_cancelled() => return Err(cancelled(rt)),
            Err(err) => round.on_failure(failure(&err)),
        };
    }
}

fn cancelled(rt: &Runtime) -> String {
    tracing::info!("compaction cancelled");
    rt.compaction().cancel();
    rt.commit(vec![RecordPayload::FullCompactionCancel(
        kimi_protocol::record::AgentOnly { agent_id: None },
    )]);
    rt.emit(Event::CompactionCancelled {
        reason: "cancelled".to_owned(),
    });
    "compaction cancelled".to_owned()
}

fn finish_apply(rt: &Runtime, outcome: ApplyOutcome) -> bool {
    match outcome {
        ApplyOutcome::Applied(applied) => {
            let r = &applied.record;
            let record = ApplyCompaction {
                agent_id: None,
                summary: Some(CompactionSummary::Text(r.summary.clone())),
                context_summary: Some(r.context_summary.clone()),
                compacted_count: Some(r.compacted_count as u64),
                count: None,
                tokens_before: Some(r.tokens_before),
                tokens_after: Some(r.tokens_after),
                summary_output_tokens: r.summary_output_tokens,
                kept_user_message_count: Some(r.kept_user_message_count as u64),
                kept_head_user_message_count: r.kept_head_user_message_count.map(|c| c as u64),
                dropped_count: r.dropped_count,
                legacy_tail: None,
                wire_lines: r
                    .wire_lines
                    .map(|w| serde_json::json!({"start": w.start, "end": w.end})),
            };
            let mut records = vec![RecordPayload::ApplyCompaction(record)];
            if let TokenCountingRecord::Rebased {
                length,
                tokens,
                measured,
            } = applied.rebase
            {
                records.push(RecordPayload::TokenRebased(TokenCount {
                    agent_id: None,
                    length: length as u64,
                    tokens,
                    measured: Some(serde_json::Value::Bool(measured)),
                    turn_id: None,
                }));
            }
            records.push(RecordPayload::FullCompactionComplete(
                kimi_protocol::record::AgentOnly { agent_id: None },
            ));
            let (tokens_before, tokens_after) = (r.tokens_before, r.tokens_after);
            tracing::info!(
                tokens_before,
                tokens_after,
                compacted = r.compacted_count,
                "compaction applied"
            );
            rt.commit(records);
            rt.emit(Event::CompactionCompleted {
                tokens_before: r.tokens_before,
                tokens_after: r.tokens_after,
            });
            if let Some(hooks) = &rt.config.hooks {
                hooks.fire_and_forget(HookEventData::PostCompact {
                    trigger: "auto".to_owned(),
                    estimated_token_count: r.tokens_after,
                });
            }
            true
        }
        ApplyOutcome::Cancelled => {
            tracing::info!(
                "compaction dropped: the conversation changed while the summary was written"
            );
            rt.commit(vec![RecordPayload::FullCompactionCancel(
                kimi_protocol::record::AgentOnly { agent_id: None },
            )]);
            rt.emit(Event::CompactionCancelled {
                reason: "the conversation changed while the summary was written".to_owned(),
            });
            false
        }
    }
}

/// `/compact [instruction]` while idle.
pub async fn run_manual(rt: &Runtime, instruction: Option<String>) {
    let cancel = CancellationToken::new();
    if let Err(message) = run(rt, Trigger::Manual { instruction }, &cancel).await {
        rt.emit(Event::Error { message });
    }
}
