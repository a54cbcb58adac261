//! Service tests driven by a scripted model (a test double of the provider).

use std::collections::VecDeque;

use kimi_protocol::{ContentPart, Message, Origin, ToolCall};
use pretty_assertions::assert_eq;

use super::*;
use crate::compaction::footer::TodoStatus;
use crate::compaction::handoff::COMPACTION_SUMMARY_PREFIX;

/// Plays back canned answers and records every request it was sent.
struct ScriptedModel {
    script: VecDeque<Result<SummaryReply, SummaryFailure>>,
    requests: Vec<SummaryRequest>,
    delays: Vec<u64>,
}

impl ScriptedModel {
    fn new(script: Vec<Result<SummaryReply, SummaryFailure>>) -> Self {
        ScriptedModel {
            script: script.into(),
            requests: Vec::new(),
            delays: Vec::new(),
        }
    }

    /// Drive a round to its end: the summary, or the error it failed with.
    fn drive(&mut self, round: &mut Round) -> Result<Summary, CompactionError> {
        let mut step = RoundStep::Send(round.first_request());
        loop {
            let request = match step {
                RoundStep::Send(request) => request,
                RoundStep::SendAfter { delay_ms, request } => {
                    self.delays.push(delay_ms);
                    request
                }
                RoundStep::Ready(summary) => return Ok(summary),
                RoundStep::Failed(error) => return Err(error),
            };
            self.requests.push(request);
            step = match self.script.pop_front() {
                Some(Ok(reply)) => round.on_reply(reply),
                Some(Err(failure)) => round.on_failure(failure),
                None => round.on_failure(SummaryFailure::Fatal("script exhausted".into())),
            };
        }
    }
}

fn reply(text: &str) -> Result<SummaryReply, SummaryFailure> {
    Ok(SummaryReply {
        text: text.into(),
        finish: FinishKind::Completed,
        output_tokens: Some(40),
    })
}

fn conversation() -> Vec<Message> {
    let mut schema = Message::new(kimi_protocol::Role::System, vec![]);
    schema.tools = Some(vec![kimi_protocol::ToolSchema {
        name: "mcp__x".into(),
        description: String::new(),
        parameters: serde_json::Value::Null,
    }]);
    schema.origin = Some(Origin::injection("dynamic_tool_schema"));
    vec![
        Message::user_text("Fix the failing parser test in src/parse.rs"),
        schema,
        Message::assistant(
            vec![ContentPart::text("Running the tests.")],
            vec![ToolCall::new(
                "c1",
                "Bash",
                Some(r#"{"command":"cargo test"}"#.into()),
            )],
        ),
        Message::tool_result(
            "c1",
            vec![ContentPart::text("1 failed: parse::tests::empty")],
            None,
        ),
        Message::assistant(vec![ContentPart::text("The empty case panics.")], vec![]),
    ]
}

fn begin(
    service: &mut CompactionService,
    history: &[Message],
    trigger: Trigger,
) -> Result<(BeginRecord, Round), CompactionError> {
    service.begin(BeginInput {
        trigger,
        history,
        loop_idle: true,
        max_tokens: 200_000,
        request_overhead_tokens: 1_000,
        profile_max_output: None,
    })
}

fn auto() -> Trigger {
    Trigger::Auto { turn_id: Some(1) }
}

#[test]
fn a_successful_round_applies_summary_footer_and_rebase() {
    let history = conversation();
    let mut service = CompactionService::new(CompactionConfig::default());
    let (record, mut round) = begin(&mut service, &history, auto()).unwrap();
    assert_eq!(
        record,
        BeginRecord {
            source: CompactSource::Auto,
            instruction: None
        }
    );
    assert!(service.is_running());

    let mut model = ScriptedModel::new(vec![reply("  I am fixing the empty-input panic.  ")]);
    let summary = model.drive(&mut round).unwrap();
    let sent = &model.requests[0].messages;
    assert_eq!(
        sent.len(),
        5,
        "dynamic tool schema stripped, instruction appended"
    );
    assert_eq!(
        sent.last().map(Message::text),
        Some(COMPACTION_INSTRUCTION.to_owned())
    );
    assert_eq!(model.requests[0].max_output_tokens, Some(131_072));

    let todos = [TodoItem {
        title: "make parse(\"\") return Ok".into(),
        status: TodoStatus::Pending,
    }];
    let context = ApplyContext {
        journal_path: "/home/u/.kimi-rs/sessions/w/s/agents/main/wire.jsonl",
        journal_line_count: Some(57),
        todos: &todos,
    };
    let ApplyOutcome::Applied(applied) = service.apply(round, summary, &history, &context) else {
        panic!("expected the compaction to apply");
    };
    assert!(!service.is_running());
    let record = &applied.record;
    assert_eq!(record.summary, "I am fixing the empty-input panic.");
    assert_eq!(record.compacted_count, 5);
    assert_eq!(record.wire_lines, Some(LineRange { start: 1, end: 57 }));
    assert!(
        record
            .context_summary
            .starts_with(COMPACTION_SUMMARY_PREFIX)
    );
    assert!(
        record
            .context_summary
            .contains("\nI am fixing the empty-input panic.\n\n## Context Recovery\n")
    );
    assert!(record.context_summary.contains("lines 1\u{2013}57"));
    assert!(
        record
            .context_summary
            .contains("[pending] make parse(\"\") return Ok")
    );
    assert!(
        record
            .context_summary
            .contains("### Latest user instruction\nIt is the last user message"),
        "the latest instruction is kept verbatim above, so the footer points at it"
    );
    let footer_tokens = record.summary_output_tokens.unwrap() - 40;
    assert!(footer_tokens > 100);
    assert_eq!(
        applied.history.len(),
        3,
        "kept prompt, summary, continuation"
    );
    assert_eq!(applied.history[0], history[0]);
    assert_eq!(
        applied.rebase,
        TokenCountingRecord::Rebased {
            length: 3,
            tokens: record.tokens_after,
            measured: false
        }
    );
    assert_eq!(
        service.wire_ranges().windows(),
        &[LineRange { start: 1, end: 57 }]
    );
    assert_eq!(
        service.check_auto(100, record.tokens_after),
        AutoCheck::NotNeeded
    );
}

#[test]
fn history_changed_by_the_model_cancels_but_a_new_prompt_is_kept() {
    let history = conversation();
    let mut service = CompactionService::new(CompactionConfig::default());
    let context = ApplyContext {
        journal_path: "/j",
        journal_line_count: None,
        todos: &[],
    };
    let summary = Summary {
        text: "S".into(),
        output_tokens: None,
    };

    let (_, round) = begin(&mut service, &history, auto()).unwrap();
    let mut moved_on = history.clone();
    moved_on.push(Message::assistant(vec![ContentPart::text("more")], vec![]));
    assert_eq!(
        service.apply(round, summary.clone(), &moved_on, &context),
        ApplyOutcome::Cancelled
    );

    let (_, round) = begin(&mut service, &history, auto()).unwrap();
    let mut prompted = history.clone();
    prompted.push(Message::user_text("also update the changelog"));
    let ApplyOutcome::Applied(applied) = service.apply(round, summary, &prompted, &context) else {
        panic!("a prompt typed meanwhile must not cancel the compaction");
    };
    assert_eq!(applied.record.compacted_count, 6);
    assert_eq!(applied.record.wire_lines, None, "no flush, no footer");
    assert_eq!(
        applied.history[1],
        Message::user_text("also update the changelog")
    );
}

#[test]
fn overflow_shrinks_three_times_then_fails() {
    let history: Vec<Message> = (0..40)
        .map(|i| Message::user_text(format!("prompt {i} {}", "x".repeat(400))))
        .collect();
    let mut service = CompactionService::new(CompactionConfig::default()).with_max_attempts(10);
    let (_, mut round) = begin(&mut service, &history, auto()).unwrap();
    let mut model = ScriptedModel::new(vec![Err(SummaryFailure::ContextOverflow); 4]);
    assert_eq!(model.drive(&mut round), Err(CompactionError::Overflow));
    let sizes: Vec<usize> = model
        .requests
        .iter()
        .map(|r| r.messages.len() - 1)
        .collect();
    assert_eq!(
        sizes,
        vec![40, 28, 14, 4],
        "ratios 0.7, 0.5, 0.35 of the previous input"
    );
    assert_eq!(round.dropped_count(), 36);
}

#[test]
fn truncated_replies_drop_the_oldest_message_and_filtered_ones_fail_at_once() {
    let history = conversation();
    let mut service = CompactionService::new(CompactionConfig::default());
    let (_, mut round) = begin(&mut service, &history, auto()).unwrap();
    let truncated = Ok(SummaryReply {
        text: "half".into(),
        finish: FinishKind::Truncated,
        output_tokens: None,
    });
    let mut model = ScriptedModel::new(vec![truncated, reply("done")]);
    assert_eq!(
        model.drive(&mut round).map(|s| s.text),
        Ok("done".to_owned())
    );
    // The oldest (the prompt) goes; the schema was stripped, so the assistant call leads.
    assert_eq!(model.requests[1].messages.len(), 4);
    assert_eq!(round.dropped_count(), 1);

    service.fail();
    let (_, mut round) = begin(&mut service, &history, auto()).unwrap();
    let filtered = Ok(SummaryReply {
        text: " ".into(),
        finish: FinishKind::Filtered,
        output_tokens: None,
    });
    let mut model = ScriptedModel::new(vec![filtered]);
    assert_eq!(model.drive(&mut round), Err(CompactionError::EmptyResponse));
    assert_eq!(model.requests.len(), 1);
}

#[test]
fn retryable_errors_back_off_within_the_attempt_budget() {
    let history = conversation();
    let mut service = CompactionService::new(CompactionConfig::default()).with_max_attempts(3);
    let (_, mut round) = begin(&mut service, &history, auto()).unwrap();
    let busy = || Err(SummaryFailure::Retryable("429".into()));
    let mut model = ScriptedModel::new(vec![busy(), busy(), busy()]);
    assert_eq!(
        model.drive(&mut round),
        Err(CompactionError::Failed("429".into()))
    );
    assert_eq!(model.delays, vec![500, 1000]);
    assert_eq!(model.requests.len(), 3);

    service.fail();
    let (_, mut round) = begin(&mut service, &history, auto()).unwrap();
    let mut model = ScriptedModel::new(vec![Err(SummaryFailure::Auth("login".into()))]);
    let error = model.drive(&mut round).unwrap_err();
    assert_eq!(error.code(), "provider.auth_error");
}

#[test]
fn manual_compaction_rules_and_instruction() {
    let history = conversation();
    let mut service = CompactionService::new(CompactionConfig::default());
    let manual = || Trigger::Manual {
        instruction: Some("focus on the parser".into()),
    };
    assert_eq!(
        begin(&mut service, &[], manual()).map(|_| ()),
        Err(CompactionError::EmptyHistory)
    );
    let busy_loop = service.begin(BeginInput {
        trigger: manual(),
        history: &history,
        loop_idle: false,
        max_tokens: 0,
        request_overhead_tokens: 0,
        profile_max_output: None,
    });
    assert_eq!(busy_loop.map(|_| ()), Err(CompactionError::TurnActive));

    let (record, mut round) = begin(&mut service, &history, manual()).unwrap();
    assert_eq!(record.instruction.as_deref(), Some("focus on the parser"));
    assert_eq!(
        begin(&mut service, &history, manual()).map(|_| ()),
        Err(CompactionError::AlreadyRunning)
    );
    let request = round.first_request();
    let text = request
        .messages
        .last()
        .map(Message::text)
        .unwrap_or_default();
    assert!(text.ends_with("\n\nOptional user instruction:\nfocus on the parser\n"));
}

#[test]
fn per_turn_and_overflow_limits() {
    let history = conversation();
    let config = CompactionConfig {
        max_compaction_per_turn: Limit::Finite(1),
        ..CompactionConfig::default()
    };
    let mut service = CompactionService::new(config);
    service.turn_started();
    let (_, _round) = begin(&mut service, &history, auto()).unwrap();
    service.cancel();
    assert_eq!(
        begin(&mut service, &history, auto()).map(|_| ()),
        Err(CompactionError::LimitExceeded(1))
    );
    service.turn_started();
    assert!(begin(&mut service, &history, auto()).is_ok());
    assert_eq!(
        service.check_auto(100_000, 90_000),
        AutoCheck::AlreadyRunning
    );
    assert!(service.should_block(100_000, 90_000));
    assert!(service.normalize_after_restore());

    for _ in 0..3 {
        assert_eq!(service.on_step_overflow(), OverflowDecision::Compact);
    }
    assert_eq!(
        service.on_step_overflow(),
        OverflowDecision::GiveUp(CompactionError::OverflowNotRecovered(3))
    );
    service.step_succeeded();
    assert_eq!(service.on_step_overflow(), OverflowDecision::Compact);
    assert_eq!(service.check_auto(100_000, 49_999), AutoCheck::NotNeeded);
    assert_eq!(service.check_auto(100_000, 50_000), AutoCheck::Start);
}

#[test]
fn the_footer_repeats_an_instruction_that_was_not_kept_whole() {
    let mut service = CompactionService::new(CompactionConfig::default())
        .with_kept_user_policy(KeptUserPolicy::Reference);
    let long = "z".repeat(120_000);
    let history = vec![Message::user_text(long.clone())];
    let (_, round) = begin(&mut service, &history, auto()).unwrap();
    let ApplyOutcome::Applied(applied) = service.apply(
        round,
        Summary {
            text: "S".into(),
            output_tokens: None,
        },
        &history,
        &ApplyContext {
            journal_path: "/j",
            journal_line_count: Some(3),
            todos: &[],
        },
    ) else {
        panic!("expected the compaction to apply");
    };
    assert!(
        applied
            .record
            .context_summary
            .contains(&format!("### Latest user instruction (verbatim)\n{long}"))
    );
}
