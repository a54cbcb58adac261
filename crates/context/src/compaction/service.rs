//! The compaction service as a pure state machine (core.md §d.3, §d.6–§d.10, core-2.1.md §3).
//!
//! It performs no I/O: the engine asks it whether to compact, gets a [`SummaryRequest`] to send
//! through its provider, feeds back the reply or a classified error, and finally asks it to
//! apply the summary to the *current* history. Every step returns the data of the journal
//! records to write (`full_compaction.begin/complete/cancel`, `context.apply_compaction`,
//! `token_counting.rebased`); the apply record holds the summary and the replaced journal line
//! range, never a copy of history.

mod request;

use kimi_protocol::{Message, Role};

use super::footer::{
    FooterInput, LatestInstruction, LineRange, TodoItem, WireRanges, render_recovery_footer,
};
use super::handoff::{
    self, HeuristicEstimate, KeptUserPolicy, ShapeInput, build_compaction_summary_text,
    is_real_user_input,
};
use super::split::CompactSource;
use super::trigger::token_count::TokenCountingRecord;
use super::trigger::{CompactionConfig, Limit};
use crate::tokens::{estimate_message, estimate_messages, estimate_text};

pub use request::{
    COMPACTION_INSTRUCTION, instruction_message, pre_trim_budget, strip_dynamic_tool_context,
    summary_output_cap,
};

/// Shrink ratios for a summary request that overflowed, one per shrink.
pub const OVERFLOW_SHRINK_RATIOS: [f64; 3] = [0.7, 0.5, 0.35];
/// Summary requests per compaction (`loop_control.compaction_max_attempts`).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// First retry delay of a retryable summary-request error; doubles per retry.
pub const RETRY_BASE_DELAY_MS: u64 = 500;
/// Upper bound of a retry delay.
pub const RETRY_MAX_DELAY_MS: u64 = 32_000;

/// Why a compaction could not start, or failed. Messages say what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompactionError {
    #[error("No messages to compact in current history.")]
    EmptyHistory,
    #[error("Cannot compact while a turn is active. Wait for it to finish, then retry.")]
    TurnActive,
    #[error("A compaction is already running. Wait for it to finish, then retry.")]
    AlreadyRunning,
    #[error("Compaction limit exceeded ({0})")]
    LimitExceeded(u64),
    #[error("Compaction failed to bring the context under the model window after {0} attempts.")]
    OverflowNotRecovered(u32),
    #[error("Compaction response was truncated before producing a complete summary.")]
    Truncated,
    #[error(
        "The model returned an empty compaction summary. Retry /compact, or start a new session if it keeps happening."
    )]
    EmptyResponse,
    #[error(
        "The compaction request still exceeds the model's context window after shrinking it. Start a new session or switch to a model with a larger window."
    )]
    Overflow,
    #[error("Compaction failed: {0}")]
    Failed(String),
    /// Credential problems pass through unchanged so the front end can prompt a login.
    #[error("{0}")]
    Auth(String),
    #[error("Compaction was cancelled.")]
    Aborted,
}

impl CompactionError {
    /// The reference's error code for this failure.
    pub fn code(&self) -> &'static str {
        match self {
            CompactionError::EmptyHistory
            | CompactionError::TurnActive
            | CompactionError::AlreadyRunning => "compaction.unable",
            CompactionError::LimitExceeded(_) | CompactionError::OverflowNotRecovered(_) => {
                "context.overflow"
            }
            CompactionError::Truncated
            | CompactionError::EmptyResponse
            | CompactionError::Overflow
            | CompactionError::Failed(_) => "compaction.failed",
            CompactionError::Auth(_) => "provider.auth_error",
            CompactionError::Aborted => "aborted",
        }
    }
}

/// Who started a compaction and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    /// `/compact [instruction]`.
    Manual { instruction: Option<String> },
    /// The trigger rule, before or after a step of `turn_id`.
    Auto { turn_id: Option<u64> },
}

impl Trigger {
    pub fn source(&self) -> CompactSource {
        match self {
            Trigger::Manual { .. } => CompactSource::Manual,
            Trigger::Auto { .. } => CompactSource::Auto,
        }
    }

    fn instruction(&self) -> Option<&str> {
        match self {
            Trigger::Manual { instruction } => instruction.as_deref(),
            Trigger::Auto { .. } => None,
        }
    }
}

/// Data of `full_compaction.begin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeginRecord {
    pub source: CompactSource,
    pub instruction: Option<String>,
}

/// What `begin` needs to know about the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct BeginInput<'a> {
    pub trigger: Trigger,
    pub history: &'a [Message],
    /// False while a turn runs; manual compaction needs an idle loop.
    pub loop_idle: bool,
    /// Effective window of the model (≤ 0: unknown).
    pub max_tokens: i64,
    /// System prompt + non-deferred tool schemas, in tokens.
    pub request_overhead_tokens: u64,
    /// The profile's output cap, if any.
    pub profile_max_output: Option<u64>,
}

/// One summary request to send through the normal requester (projection repairs apply).
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRequest {
    pub messages: Vec<Message>,
    pub max_output_tokens: Option<u64>,
    /// Estimate of the request (overhead included); the engine records the observed window
    /// from it when the provider reports an overflow.
    pub estimated_tokens: u64,
    /// 1-based number of this attempt.
    pub attempt: u32,
}

/// How the reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishKind {
    Completed,
    Truncated,
    Filtered,
}

/// The model's reply to a summary request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryReply {
    /// Concatenated text parts of the reply.
    pub text: String,
    pub finish: FinishKind,
    pub output_tokens: Option<u64>,
}

/// A failed summary request, classified by the llm layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryFailure {
    ContextOverflow,
    /// Worth retrying after a delay (rate limits, 5xx, network).
    Retryable(String),
    Auth(String),
    Aborted,
    Fatal(String),
}

/// What the engine does next in a round.
#[derive(Debug, Clone, PartialEq)]
pub enum RoundStep {
    Send(SummaryRequest),
    /// Wait, then send (abortable).
    SendAfter {
        delay_ms: u64,
        request: SummaryRequest,
    },
    /// The summary is ready; call [`CompactionService::apply`].
    Ready(Summary),
    /// Give up; call [`CompactionService::fail`].
    Failed(CompactionError),
}

/// A finished summary, still to be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub text: String,
    pub output_tokens: Option<u64>,
}

/// One compaction in flight: the snapshot it summarises and the retry bookkeeping.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    trigger: Trigger,
    original: Vec<Message>,
    for_model: Vec<Message>,
    instruction: Message,
    overhead: u64,
    output_cap: Option<u64>,
    tokens_before: u64,
    max_attempts: u32,
    attempts: u32,
    shrinks: usize,
    retries: u32,
    dropped: u64,
}

impl Round {
    pub fn trigger(&self) -> &Trigger {
        &self.trigger
    }

    /// Messages of the original history left out of the summary input so far.
    pub fn dropped_count(&self) -> u64 {
        self.dropped
    }

    fn request(&mut self) -> SummaryRequest {
        self.attempts += 1;
        let mut messages = Vec::with_capacity(self.for_model.len() + 1);
        messages.extend(self.for_model.iter().cloned());
        messages.push(self.instruction.clone());
        let estimated_tokens = self.overhead + estimate_messages(&messages);
        SummaryRequest {
            messages,
            max_output_tokens: self.output_cap,
            estimated_tokens,
            attempt: self.attempts,
        }
    }

    fn next(&mut self, on_budget_exhausted: CompactionError) -> RoundStep {
        if self.attempts >= self.max_attempts {
            return RoundStep::Failed(on_budget_exhausted);
        }
        RoundStep::Send(self.request())
    }

    /// The first request of the round.
    pub fn first_request(&mut self) -> SummaryRequest {
        self.request()
    }

    /// Feed the model's reply.
    pub fn on_reply(&mut self, reply: SummaryReply) -> RoundStep {
        let text = reply.text.trim();
        let problem = match reply.finish {
            FinishKind::Truncated => Some(CompactionError::Truncated),
            FinishKind::Completed | FinishKind::Filtered if text.is_empty() => {
                Some(CompactionError::EmptyResponse)
            }
            FinishKind::Completed | FinishKind::Filtered => None,
        };
        let Some(error) = problem else {
            return RoundStep::Ready(Summary {
                text: text.to_owned(),
                output_tokens: reply.output_tokens,
            });
        };
        // A filtered reply will be filtered again; a truncated or empty one may fit once the
        // oldest material is gone.
        if reply.finish == FinishKind::Filtered || self.for_model.len() <= 1 {
            return RoundStep::Failed(error);
        }
        self.dropped += request::drop_oldest(&mut self.for_model) as u64;
        self.next(error)
    }

    /// Feed a failed request.
    pub fn on_failure(&mut self, failure: SummaryFailure) -> RoundStep {
        match failure {
            SummaryFailure::Aborted => RoundStep::Failed(CompactionError::Aborted),
            SummaryFailure::Auth(message) => RoundStep::Failed(CompactionError::Auth(message)),
            SummaryFailure::Fatal(message) => RoundStep::Failed(CompactionError::Failed(message)),
            SummaryFailure::ContextOverflow => {
                let Some(ratio) = OVERFLOW_SHRINK_RATIOS.get(self.shrinks).copied() else {
                    return RoundStep::Failed(CompactionError::Overflow);
                };
                if self.for_model.len() <= 1 {
                    return RoundStep::Failed(CompactionError::Overflow);
                }
                self.shrinks += 1;
                let total = estimate_messages(&self.for_model);
                let budget = (total as f64 * ratio).floor() as u64;
                self.dropped +=
                    request::keep_recent_within_budget(&mut self.for_model, budget) as u64;
                self.retries = 0;
                if self.for_model.is_empty() {
                    return RoundStep::Failed(CompactionError::Overflow);
                }
                self.next(CompactionError::Overflow)
            }
            SummaryFailure::Retryable(message) => {
                if self.attempts >= self.max_attempts {
                    return RoundStep::Failed(CompactionError::Failed(message));
                }
                let delay_ms = RETRY_BASE_DELAY_MS
                    .saturating_mul(1u64 << self.retries.min(16))
                    .min(RETRY_MAX_DELAY_MS);
                self.retries += 1;
                RoundStep::SendAfter {
                    delay_ms,
                    request: self.request(),
                }
            }
        }
    }
}

/// Should the engine start a compaction now?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoCheck {
    AlreadyRunning,
    NotNeeded,
    Start,
}

/// What to do about a step that failed with a context overflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverflowDecision {
    /// Compact (auto), then retry the step.
    Compact,
    GiveUp(CompactionError),
}

/// Where the journal stands when a summary is applied, and the current task to carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyContext<'a> {
    /// Absolute path of the agent's `wire.jsonl`.
    pub journal_path: &'a str,
    /// Lines in the journal after a flush; `None` when the flush failed (no footer then).
    pub journal_line_count: Option<u64>,
    pub todos: &'a [TodoItem],
}

/// Data of `context.apply_compaction`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyCompactionRecord {
    pub summary: String,
    pub context_summary: String,
    pub compacted_count: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub summary_output_tokens: Option<u64>,
    pub kept_user_message_count: usize,
    pub kept_head_user_message_count: Option<usize>,
    pub dropped_count: Option<u64>,
    /// The journal lines the summary replaced (the recovery footer points at them).
    pub wire_lines: Option<LineRange>,
}

/// A compaction that was applied: records to write, in order, and the new history.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub record: ApplyCompactionRecord,
    pub rebase: TokenCountingRecord,
    pub history: Vec<Message>,
}

/// Result of applying a summary.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyOutcome {
    /// Write `context.apply_compaction`, `token_counting.rebased`, `full_compaction.complete`.
    Applied(Box<Applied>),
    /// History changed in a way the summary does not cover: write `full_compaction.cancel`.
    Cancelled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Running,
}

/// Per-agent compaction state: phase, per-turn counters, recorded journal windows.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionService {
    config: CompactionConfig,
    max_attempts: u32,
    kept_user_policy: KeptUserPolicy,
    phase: Phase,
    compactions_in_turn: u64,
    last_compacted_tokens: Option<u64>,
    consecutive_overflows: u32,
    wire_ranges: WireRanges,
}

impl CompactionService {
    pub fn new(config: CompactionConfig) -> Self {
        CompactionService {
            config,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            kept_user_policy: KeptUserPolicy::default(),
            phase: Phase::Idle,
            compactions_in_turn: 0,
            last_compacted_tokens: None,
            consecutive_overflows: 0,
            wire_ranges: WireRanges::default(),
        }
    }

    /// `loop_control.compaction_max_attempts` (at least 1).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    pub fn with_kept_user_policy(mut self, policy: KeptUserPolicy) -> Self {
        self.kept_user_policy = policy;
        self
    }

    pub fn config(&self) -> &CompactionConfig {
        &self.config
    }

    pub fn is_running(&self) -> bool {
        self.phase == Phase::Running
    }

    pub fn wire_ranges(&self) -> &WireRanges {
        &self.wire_ranges
    }

    /// Replay: a `context.apply_compaction` that carried `wireLines`.
    pub fn replay_applied(&mut self, wire_lines: Option<LineRange>) {
        if let Some(range) = wire_lines {
            self.wire_ranges.record(range);
        }
    }

    /// Replay or live: a `context.clear` on journal line `line`.
    pub fn on_context_clear(&mut self, line: u64) {
        self.wire_ranges.clear(line);
    }

    /// Restore found a compaction left running: it is cancelled (write `full_compaction.cancel`).
    pub fn normalize_after_restore(&mut self) -> bool {
        let was_running = self.is_running();
        self.phase = Phase::Idle;
        was_running
    }

    /// Per-turn counters reset at every turn start.
    pub fn turn_started(&mut self) {
        self.compactions_in_turn = 0;
        self.last_compacted_tokens = None;
        self.consecutive_overflows = 0;
    }

    /// A step succeeded: overflow recovery starts counting again.
    pub fn step_succeeded(&mut self) {
        self.consecutive_overflows = 0;
    }

    /// Should an automatic compaction start (before a step, or after one when the trigger
    /// ratio is below the block ratio)?
    pub fn check_auto(&self, max_tokens: i64, used_tokens: u64) -> AutoCheck {
        if self.is_running() {
            return AutoCheck::AlreadyRunning;
        }
        // No re-compaction until the context grows past its post-compaction size.
        if self
            .last_compacted_tokens
            .is_some_and(|after| used_tokens <= after)
        {
            return AutoCheck::NotNeeded;
        }
        if self.config.should_compact(max_tokens, used_tokens) {
            AutoCheck::Start
        } else {
            AutoCheck::NotNeeded
        }
    }

    /// Must the next step wait for the running compaction?
    pub fn should_block(&self, max_tokens: i64, used_tokens: u64) -> bool {
        self.is_running() && self.config.should_block(max_tokens, used_tokens)
    }

    /// A step failed with a context overflow: compact and retry, at most
    /// `max_overflow_compaction_attempts` times in a row.
    pub fn on_step_overflow(&mut self) -> OverflowDecision {
        self.consecutive_overflows += 1;
        let limit = self.config.max_overflow_compaction_attempts;
        if self.consecutive_overflows > limit {
            return OverflowDecision::GiveUp(CompactionError::OverflowNotRecovered(limit));
        }
        OverflowDecision::Compact
    }

    /// Start a compaction: the `full_compaction.begin` data and the round to drive.
    pub fn begin(
        &mut self,
        input: BeginInput<'_>,
    ) -> Result<(BeginRecord, Round), CompactionError> {
        if self.is_running() {
            return Err(CompactionError::AlreadyRunning);
        }
        if input.history.is_empty() {
            return Err(CompactionError::EmptyHistory);
        }
        match &input.trigger {
            Trigger::Manual { .. } => {
                if !input.loop_idle {
                    return Err(CompactionError::TurnActive);
                }
                self.compactions_in_turn = 0;
            }
            Trigger::Auto { .. } => {
                if let Limit::Finite(max) = self.config.max_compaction_per_turn
                    && self.compactions_in_turn >= max
                {
                    return Err(CompactionError::LimitExceeded(max));
                }
                self.compactions_in_turn += 1;
            }
        }
        self.phase = Phase::Running;

        let output_cap = summary_output_cap(input.profile_max_output, input.max_tokens);
        let instruction = instruction_message(input.trigger.instruction());
        let mut for_model = strip_dynamic_tool_context(input.history);
        let mut dropped = 0u64;
        if let Some(budget) =
            pre_trim_budget(input.max_tokens, output_cap, input.request_overhead_tokens)
        {
            let size = estimate_messages(&for_model) + estimate_message(&instruction);
            if size > budget {
                dropped += request::keep_recent_within_budget(&mut for_model, budget) as u64;
            }
        }
        let record = BeginRecord {
            source: input.trigger.source(),
            instruction: input.trigger.instruction().map(str::to_owned),
        };
        let round = Round {
            trigger: input.trigger,
            original: input.history.to_vec(),
            for_model,
            instruction,
            overhead: input.request_overhead_tokens,
            output_cap,
            tokens_before: input.request_overhead_tokens + estimate_messages(input.history),
            max_attempts: self.max_attempts,
            attempts: 0,
            shrinks: 0,
            retries: 0,
            dropped,
        };
        Ok((record, round))
    }

    /// The round failed: back to idle. The engine reports `error` (and fails a blocked turn).
    pub fn fail(&mut self) {
        self.phase = Phase::Idle;
    }

    /// The round was cancelled (user abort, disposal): write `full_compaction.cancel`.
    pub fn cancel(&mut self) {
        self.phase = Phase::Idle;
    }

    /// Apply a finished summary to the current history, unless history changed in a way the
    /// summary does not cover (then the compaction is cancelled, not failed).
    pub fn apply(
        &mut self,
        round: Round,
        summary: Summary,
        current: &[Message],
        context: &ApplyContext<'_>,
    ) -> ApplyOutcome {
        self.phase = Phase::Idle;
        if !history_safe_to_compact(current, &round.original) {
            return ApplyOutcome::Cancelled;
        }
        let wire_lines = context
            .journal_line_count
            .and_then(|count| self.wire_ranges.capture(count));
        let base = ShapeInput {
            summary: summary.text.clone(),
            context_summary: Some(build_compaction_summary_text(&summary.text, None)),
            compacted_count: current.len(),
            tokens_before: round.tokens_before,
            summary_output_tokens: summary.output_tokens,
            request_overhead_tokens: Some(round.overhead),
            dropped_count: (round.dropped > 0).then_some(round.dropped),
            has_continuation: true,
            ..ShapeInput::default()
        };
        let policy = self.kept_user_policy;
        let mut shape = handoff::build_compaction_shape(current, &base, &HeuristicEstimate, policy);
        let mut summary_output_tokens = summary.output_tokens;
        // The footer is added to the summary; the current task is carried even without a range.
        let footer = render_recovery_footer(&FooterInput {
            journal_path: context.journal_path,
            earlier_windows: self.wire_ranges.windows(),
            window: wire_lines,
            latest_instruction: latest_instruction(current, &shape.messages),
            todos: context.todos,
        });
        if let Some(footer) = footer {
            summary_output_tokens = summary.output_tokens.map(|t| t + estimate_text(&footer));
            let with_footer = ShapeInput {
                summary_output_tokens,
                recovery_footer: Some(footer),
                ..base
            };
            shape =
                handoff::build_compaction_shape(current, &with_footer, &HeuristicEstimate, policy);
        }
        if let Some(range) = wire_lines {
            self.wire_ranges.record(range);
        }
        self.last_compacted_tokens = Some(shape.tokens_after);
        let record = ApplyCompactionRecord {
            summary: shape.summary,
            context_summary: shape.context_summary,
            compacted_count: shape.compacted_count,
            tokens_before: shape.tokens_before,
            tokens_after: shape.tokens_after,
            summary_output_tokens,
            kept_user_message_count: shape.kept_user_message_count,
            kept_head_user_message_count: shape.kept_head_user_message_count,
            dropped_count: shape.dropped_count,
            wire_lines,
        };
        let rebase = TokenCountingRecord::Rebased {
            length: shape.messages.len(),
            tokens: shape.tokens_after,
            measured: false,
        };
        ApplyOutcome::Applied(Box::new(Applied {
            record,
            rebase,
            history: shape.messages,
        }))
    }
}

/// Safe to apply iff `current` still starts with exactly `original` and everything appended
/// since is real user input (a prompt typed meanwhile is kept among the user messages).
pub fn history_safe_to_compact(current: &[Message], original: &[Message]) -> bool {
    current.len() >= original.len()
        && current.get(..original.len()) == Some(original)
        && current
            .get(original.len()..)
            .unwrap_or_default()
            .iter()
            .all(is_real_user_input)
}

/// The latest real user instruction, and whether the new history already keeps it whole.
fn latest_instruction(current: &[Message], kept: &[Message]) -> Option<LatestInstruction> {
    let latest = current.iter().rev().find(|m| {
        m.role == Role::User
            && is_real_user_input(m)
            && !m
                .origin
                .as_ref()
                .is_some_and(kimi_protocol::Origin::is_compaction_summary)
    })?;
    if kept.iter().any(|k| k.content == latest.content) {
        return Some(LatestInstruction::KeptAbove);
    }
    let text = latest.text();
    (!text.trim().is_empty()).then_some(LatestInstruction::Verbatim(text))
}

#[cfg(test)]
mod tests;
