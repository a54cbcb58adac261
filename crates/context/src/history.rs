//! The agent's one history (design.md principle 1): the messages plus the fold state, changed
//! only by the operations the journal records — append, loop event, clear, undo, compaction —
//! so that replaying an agent's records rebuilds exactly what the live agent had.

use kimi_protocol::record::{ApplyCompaction, CompactionSummary, Record, RecordPayload};
use kimi_protocol::{LoopEvent, Message};
use serde_json::Value;

use crate::compaction::handoff::{
    CompactionShape, HeuristicEstimate, KeptUserPolicy, ShapeInput, TokenEstimate,
    build_compaction_shape,
};
use crate::fold::{Change, FoldState};
use crate::projector::{ProjectionCache, ProjectionPolicy, SharedProjection};
use crate::tokens::EstimateCache;
use crate::undo::{UndoCut, UndoUnavailable, precheck_undo};

/// Layout choices that live compaction and replay must share, or a resumed agent would see a
/// different history than the one that wrote the journal. The default matches what
/// `compaction::service` builds live: the latest instruction kept verbatim and the 2.1
/// continuation reminder after the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryConfig {
    pub kept_user_policy: KeptUserPolicy,
    /// Append the 2.1 "continue the work" reminder after a compaction summary.
    pub compaction_continuation: bool,
}

impl HistoryConfig {
    /// Kimi Code's layout at the spec snapshot (core.md §d.5): reference truncation of kept
    /// user messages and no continuation reminder. The conformance cases are written for it.
    pub const REFERENCE_SNAPSHOT: HistoryConfig = HistoryConfig {
        kept_user_policy: KeptUserPolicy::Reference,
        compaction_continuation: false,
    };
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            kept_user_policy: KeptUserPolicy::KeepLatestVerbatim,
            compaction_continuation: true,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    messages: Vec<Message>,
    fold: FoldState,
    config: HistoryConfig,
    estimates: EstimateCache,
    projection: ProjectionCache,
}

/// Why a context record was not applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SkipReason {
    #[error("record belongs to agent {0:?}, not this one")]
    OtherAgent(String),
    #[error(
        "record could not be read ({0}); it was skipped, the rest of the journal still applies"
    )]
    Malformed(String),
    #[error("unknown context record type; a newer kimi-rs may have written it")]
    UnknownContextRecord,
    #[error("undo count {0} is not a positive safe integer; the record was ignored")]
    InvalidUndoCount(Value),
    #[error("undo could not apply to this history ({0}); the record was ignored")]
    UndoNotApplicable(UndoUnavailable),
}

/// A record replay passed over, with its position in the input.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedRecord {
    pub index: usize,
    pub record_type: String,
    pub reason: SkipReason,
}

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
    /// Context records folded into history.
    pub applied: usize,
    /// Records that belong to other state (turns, usage, permissions, branch edges, …).
    pub ignored: usize,
    pub skipped: Vec<SkippedRecord>,
}

/// The effect of one record.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordOutcome {
    Applied(Option<Change>),
    /// Not a context record.
    Ignored,
    Skipped(SkipReason),
}

impl History {
    pub fn new(config: HistoryConfig) -> Self {
        History {
            config,
            ..History::default()
        }
    }

    /// Adopt messages this fold did not produce (a fork seed, an import): the fold state is
    /// recovered from them (core.md §a.5 rule 9).
    pub fn from_messages(messages: Vec<Message>, config: HistoryConfig) -> Self {
        History {
            fold: FoldState::recover(&messages),
            messages,
            config,
            estimates: EstimateCache::default(),
            projection: ProjectionCache::default(),
        }
    }

    /// Rebuild an agent's history from its journal records (after migration). When the journal
    /// has undo branches, pass the restorable chain the store computed; a `context.undo` left in
    /// the chain is a legacy one and is applied as such.
    pub fn restore(
        records: impl IntoIterator<Item = Record>,
        agent_id: &str,
        config: HistoryConfig,
    ) -> (History, ReplayReport) {
        let mut history = History::new(config);
        let report = history.replay(records, agent_id);
        (history, report)
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    pub fn config(&self) -> HistoryConfig {
        self.config
    }

    /// Pending calls, held messages and the open step.
    pub fn fold_state(&self) -> &FoldState {
        &self.fold
    }

    /// The token estimate of every message (the same as
    /// [`crate::tokens::estimate_messages`] over [`History::messages`]), at the cost of the
    /// messages changed since it was last asked for.
    pub fn estimated_tokens(&self) -> u64 {
        self.estimates.total(&self.messages)
    }

    /// The projection of [`History::messages`] under `policy` (the same as
    /// [`crate::projector::project_with`]), with shared messages; the default policy costs only
    /// the messages changed since it was last asked for.
    pub fn project(&self, policy: &ProjectionPolicy) -> SharedProjection {
        self.projection.project_with(&self.messages, policy)
    }

    pub fn append_message(&mut self, message: Message) -> Option<Change> {
        let change = self.fold.append_message(&mut self.messages, message);
        self.changed(change)
    }

    pub fn apply_loop_event(&mut self, event: LoopEvent) -> Option<Change> {
        let change = self.fold.apply_event(&mut self.messages, event);
        self.changed(change)
    }

    fn changed(&mut self, change: Option<Change>) -> Option<Change> {
        if let Some(change) = change {
            self.estimates.invalidate(change.from);
            self.projection.invalidate(change.from);
        }
        change
    }

    /// `context.clear`: empty history, fresh fold (held messages go too).
    pub fn clear(&mut self) -> Option<Change> {
        let had_content = !self.messages.is_empty();
        self.messages.clear();
        self.estimates.invalidate(0);
        self.projection.invalidate(0);
        self.fold = FoldState::default();
        had_content.then_some(Change { from: 0 })
    }

    pub fn precheck_undo(&self, count: u64) -> Result<UndoCut, UndoUnavailable> {
        precheck_undo(&self.messages, count)
    }

    /// `context.undo`: cut history back to before the `count`-th last user turn, or change
    /// nothing and say why.
    pub fn undo(&mut self, count: u64) -> Result<UndoCut, UndoUnavailable> {
        let cut = precheck_undo(&self.messages, count)?;
        if let Some(index) = cut.cut_index {
            self.replace_messages(index, Vec::new());
        }
        Ok(cut)
    }

    /// Apply a compaction to the whole current history. The layout (kept-user policy,
    /// continuation) comes from this history's config, whatever `input` says, so live
    /// application and replay of the `context.apply_compaction` record written from the
    /// returned shape agree. The engine should apply compactions here (or through
    /// [`History::apply_compaction_record`]) rather than adopt a separately built history.
    pub fn apply_compaction(
        &mut self,
        input: &ShapeInput,
        estimate: &dyn TokenEstimate,
    ) -> CompactionShape {
        let mut input = input.clone();
        input.has_continuation = self.config.compaction_continuation && !input.legacy_tail;
        let shape = build_compaction_shape(
            &self.messages,
            &input,
            estimate,
            self.config.kept_user_policy,
        );
        self.replace_messages(0, shape.messages.clone());
        shape
    }

    /// Apply a `context.apply_compaction` record in any of its three shapes.
    pub fn apply_compaction_record(
        &mut self,
        record: &ApplyCompaction,
    ) -> Result<CompactionShape, SkipReason> {
        let input = shape_input_from_record(record)?;
        Ok(self.apply_compaction(&input, &HeuristicEstimate))
    }

    /// Keep `messages[..keep]`, append `tail`, and recover the fold from the result.
    fn replace_messages(&mut self, keep: usize, tail: Vec<Message>) {
        self.messages.truncate(keep);
        self.messages.extend(tail);
        self.estimates.invalidate(keep);
        self.projection.invalidate(keep);
        self.fold = FoldState::recover(&self.messages);
    }

    /// Apply one journal record silently (no events, no I/O). Records of other agents and
    /// records that cannot apply are skipped with a reason; nothing here panics.
    pub fn apply_record(&mut self, record: Record, agent_id: &str) -> RecordOutcome {
        let foreign = record
            .payload
            .agent_id()
            .filter(|owner| *owner != agent_id)
            .map(str::to_owned);
        let op = match record.payload {
            RecordPayload::AppendMessage(r) => ContextOp::Append(r.message),
            RecordPayload::AppendLoopEvent(r) => ContextOp::Event(r.event),
            RecordPayload::ContextClear(_) => ContextOp::Clear,
            RecordPayload::ApplyCompaction(r) => ContextOp::Compaction(r),
            RecordPayload::ContextUndo(r) => ContextOp::Undo(r.valid_count().ok_or(r.count)),
            RecordPayload::Other(map) => {
                let unknown_context = map
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.starts_with("context."));
                return if unknown_context {
                    RecordOutcome::Skipped(SkipReason::UnknownContextRecord)
                } else {
                    RecordOutcome::Ignored
                };
            }
            // Owned by other state: the turn clock, compaction phase, usage, branches, …
            RecordPayload::Metadata(_)
            | RecordPayload::ContextUndone(_)
            | RecordPayload::AgentSwitched(_)
            | RecordPayload::TurnPrompt(_)
            | RecordPayload::TurnSteer(_)
            | RecordPayload::TurnCancel(_)
            | RecordPayload::TurnEnded(_)
            | RecordPayload::FullCompactionBegin(_)
            | RecordPayload::FullCompactionComplete(_)
            | RecordPayload::FullCompactionCancel(_)
            | RecordPayload::PromptAccepted(_)
            | RecordPayload::PromptCompleted(_)
            | RecordPayload::PromptAborted(_)
            | RecordPayload::PromptSteered(_)
            | RecordPayload::TokenMeasured(_)
            | RecordPayload::TokenTruncated(_)
            | RecordPayload::TokenRebased(_)
            | RecordPayload::TokenTurnRecorded(_)
            | RecordPayload::UsageRecord(_)
            | RecordPayload::PermissionSetMode(_)
            | RecordPayload::ApprovalResult(_)
            | RecordPayload::InteractionRequest(_)
            | RecordPayload::InteractionResolved(_)
            | RecordPayload::TaskStarted(_)
            | RecordPayload::TaskTerminated(_)
            | RecordPayload::Forked(_)
            // Ours: plan mode, queue, profile, cron and todos are folded by the engine.
            | RecordPayload::PlanMode(_)
            | RecordPayload::GoalCreate(_)
            | RecordPayload::GoalUpdate(_)
            | RecordPayload::GoalClear(_)
            | RecordPayload::PromptQueued(_)
            | RecordPayload::PromptSteer(_)
            | RecordPayload::ProfileBind(_)
            | RecordPayload::EnvironmentBind(_)
            | RecordPayload::CronAdd(_)
            | RecordPayload::CronDelete(_)
            | RecordPayload::CronCursor(_)
            | RecordPayload::TodoSet(_)
            | RecordPayload::CheckpointStep(_)
            | RecordPayload::CheckpointRewind(_)
            | RecordPayload::ModelSet(_)
            | RecordPayload::FlowUpdate(_) => return RecordOutcome::Ignored,
        };
        if let Some(owner) = foreign {
            return RecordOutcome::Skipped(SkipReason::OtherAgent(owner));
        }
        match op {
            ContextOp::Append(message) => RecordOutcome::Applied(self.append_message(message)),
            ContextOp::Event(event) => RecordOutcome::Applied(self.apply_loop_event(event)),
            ContextOp::Clear => RecordOutcome::Applied(self.clear()),
            ContextOp::Compaction(r) => match self.apply_compaction_record(&r) {
                Ok(_) => RecordOutcome::Applied(Some(Change { from: 0 })),
                Err(reason) => RecordOutcome::Skipped(reason),
            },
            ContextOp::Undo(Err(count)) => {
                RecordOutcome::Skipped(SkipReason::InvalidUndoCount(count))
            }
            ContextOp::Undo(Ok(count)) => match self.undo(count) {
                Ok(cut) => RecordOutcome::Applied(cut.cut_index.map(|from| Change { from })),
                Err(why) => RecordOutcome::Skipped(SkipReason::UndoNotApplicable(why)),
            },
        }
    }

    /// Apply records in order; see [`History::apply_record`].
    pub fn replay(
        &mut self,
        records: impl IntoIterator<Item = Record>,
        agent_id: &str,
    ) -> ReplayReport {
        let mut report = ReplayReport::default();
        for (index, record) in records.into_iter().enumerate() {
            let record_type = record.type_name().to_owned();
            match self.apply_record(record, agent_id) {
                RecordOutcome::Applied(_) => report.applied += 1,
                RecordOutcome::Ignored => report.ignored += 1,
                RecordOutcome::Skipped(reason) => report.skipped.push(SkippedRecord {
                    index,
                    record_type,
                    reason,
                }),
            }
        }
        report
    }

    /// [`History::replay`] over raw JSON values; values that are not records are skipped and
    /// reported instead of failing the replay.
    pub fn replay_values(
        &mut self,
        values: impl IntoIterator<Item = Value>,
        agent_id: &str,
    ) -> ReplayReport {
        let mut report = ReplayReport::default();
        for (index, value) in values.into_iter().enumerate() {
            let record_type = value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let outcome = match Record::from_value(value) {
                Ok(record) => self.apply_record(record, agent_id),
                Err(err) => RecordOutcome::Skipped(SkipReason::Malformed(err.to_string())),
            };
            match outcome {
                RecordOutcome::Applied(_) => report.applied += 1,
                RecordOutcome::Ignored => report.ignored += 1,
                RecordOutcome::Skipped(reason) => report.skipped.push(SkippedRecord {
                    index,
                    record_type,
                    reason,
                }),
            }
        }
        report
    }
}

/// A record that changes history, once its payload is known to be one.
enum ContextOp {
    Append(Message),
    Event(LoopEvent),
    Clear,
    Compaction(ApplyCompaction),
    /// The count, or the invalid value the record carried.
    Undo(Result<u64, Value>),
}

/// Read the three record shapes (core.md §g.3): a string `summary`, a string `contextSummary`,
/// or the legacy whole-message `summary` with `count`. A record without `keptUserMessageCount`
/// predates the kept-users layout and replays as `[summary, …history[compactedCount..]]`.
pub fn shape_input_from_record(record: &ApplyCompaction) -> Result<ShapeInput, SkipReason> {
    let missing =
        |what: &str| SkipReason::Malformed(format!("context.apply_compaction has no {what}"));
    let (summary, legacy_summary_message) = match &record.summary {
        Some(CompactionSummary::Text(text)) => (text.clone(), None),
        Some(CompactionSummary::Message(message)) => {
            let text = record
                .context_summary
                .clone()
                .unwrap_or_else(|| message.text());
            (text, Some((**message).clone()))
        }
        None => (
            record
                .context_summary
                .clone()
                .ok_or_else(|| missing("summary"))?,
            None,
        ),
    };
    let compacted_count = record
        .replaced_count()
        .ok_or_else(|| missing("compactedCount"))?;
    let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Ok(ShapeInput {
        summary,
        legacy_summary_message,
        context_summary: record.context_summary.clone(),
        compacted_count: as_usize(compacted_count),
        tokens_before: record.tokens_before.unwrap_or(0),
        tokens_after: record.tokens_after,
        summary_output_tokens: record.summary_output_tokens,
        request_overhead_tokens: None,
        kept_user_message_count: record.kept_user_message_count.map(as_usize),
        kept_head_user_message_count: record.kept_head_user_message_count.map(as_usize),
        dropped_count: record.dropped_count,
        has_continuation: false,
        legacy_tail: match &record.legacy_tail {
            Some(Value::Bool(flag)) => *flag,
            Some(_) | None => record.kept_user_message_count.is_none(),
        },
        recovery_footer: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::estimate_messages;
    use kimi_protocol::{ContentPart, Origin, Role};
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::json;

    fn rec(v: Value) -> Record {
        Record::from_value(v).unwrap()
    }

    fn user_rec(text: &str) -> Value {
        json!({"type": "context.append_message", "agentId": "main", "message": {"role": "user", "content": text, "origin": "user"}})
    }

    fn event_rec(event: Value) -> Value {
        json!({"type": "context.append_loop_event", "agentId": "main", "event": event})
    }

    #[test]
    fn other_agents_garbage_and_unknown_context_records_are_reported_not_applied() {
        let mut h = History::default();
        let report = h.replay_values(
            [
                user_rec("mine"),
                json!({"type": "context.append_message", "agentId": "agent-1", "message": {"role": "user", "content": "theirs"}}),
                json!("garbage"),
                json!({"type": "context.append_message", "agentId": "main"}),
                json!({"type": "context.teleport", "agentId": "main"}),
                json!({"type": "turn.prompt", "agentId": "main", "input": "x", "origin": "user"}),
                json!({"type": "context.undo", "agentId": "main", "count": 0}),
                json!({"type": "context.undo", "agentId": "main", "count": 5}),
            ],
            "main",
        );
        assert_eq!(h.messages(), [Message::user_text("mine")]);
        assert_eq!((report.applied, report.ignored), (1, 1));
        let reasons: Vec<(usize, &str)> = report
            .skipped
            .iter()
            .map(|s| (s.index, s.record_type.as_str()))
            .collect();
        assert_eq!(
            reasons,
            [
                (1, "context.append_message"),
                (2, ""),
                (3, "context.append_message"),
                (4, "context.teleport"),
                (6, "context.undo"),
                (7, "context.undo"),
            ]
        );
        assert!(matches!(
            report.skipped[5].reason,
            SkipReason::UndoNotApplicable(UndoUnavailable::Insufficient { .. })
        ));
    }

    #[test]
    fn a_missing_agent_id_means_this_agent() {
        let mut h = History::default();
        h.replay_values([json!({"type": "context.append_message", "message": {"role": "user", "content": "x"}})], "main");
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn undo_during_an_open_step_recovers_the_fold() {
        let mut h = History::default();
        h.replay_values(
            [
                user_rec("one"),
                event_rec(json!({"type": "step.begin", "uuid": "s1"})),
                event_rec(json!({"type": "tool.call", "stepUuid": "s1", "toolCallId": "c1", "name": "T", "args": {}})),
                user_rec("held"),
            ],
            "main",
        );
        assert_eq!(h.fold_state().deferred().len(), 1);
        assert_eq!(h.undo(1).map(|c| c.cut_index), Ok(Some(0)));
        assert!(h.is_empty());
        assert!(h.fold_state().pending_tool_calls().is_empty());
        assert!(h.fold_state().deferred().is_empty());
    }

    #[test]
    fn compaction_replays_with_the_configured_continuation() {
        let compaction = [
            user_rec("u1"),
            json!({"type": "context.apply_compaction", "agentId": "main", "summary": "S", "compactedCount": 1, "tokensBefore": 3, "keptUserMessageCount": 1}),
        ];
        let mut snapshot = History::new(HistoryConfig::REFERENCE_SNAPSHOT);
        snapshot.replay_values(compaction, "main");
        assert_eq!(snapshot.len(), 2, "no continuation in the snapshot layout");
        let config = HistoryConfig::default();
        let (h, _) = History::restore(
            [
                rec(user_rec("u1")),
                rec(
                    json!({"type": "context.apply_compaction", "agentId": "main", "summary": "S", "compactedCount": 1, "tokensBefore": 3, "keptUserMessageCount": 1}),
                ),
            ],
            "main",
            config,
        );
        let kinds: Vec<&str> = h
            .messages()
            .iter()
            .filter_map(|m| m.origin.as_ref())
            .map(Origin::kind)
            .collect();
        assert_eq!(kinds, ["user", "compaction_summary", "injection"]);
    }

    #[test]
    fn live_compaction_and_replay_of_its_record_agree() {
        use crate::compaction::handoff::build_compaction_summary_text;
        let mut prefix = vec![user_rec(&"a".repeat(50_000)), user_rec(&"b".repeat(50_000))];
        prefix.push(event_rec(json!({"type": "step.begin", "uuid": "s"})));
        prefix.push(event_rec(json!({"type": "content.part", "stepUuid": "s", "part": {"type": "text", "text": "done"}})));
        prefix.push(event_rec(json!({"type": "step.end", "uuid": "s"})));
        prefix.push(user_rec(&"c".repeat(90_000)));
        let mut live = History::default();
        live.replay_values(prefix.clone(), "main");
        let shape = live.apply_compaction(
            &ShapeInput {
                summary: "notes".into(),
                context_summary: Some(build_compaction_summary_text(
                    "notes",
                    Some("## Context Recovery"),
                )),
                compacted_count: live.len(),
                tokens_before: 40_000,
                ..ShapeInput::default()
            },
            &HeuristicEstimate,
        );
        let mut journal = prefix;
        journal.push(json!({
            "type": "context.apply_compaction", "agentId": "main",
            "summary": shape.summary, "contextSummary": shape.context_summary,
            "compactedCount": shape.compacted_count, "tokensBefore": shape.tokens_before,
            "tokensAfter": shape.tokens_after, "keptUserMessageCount": shape.kept_user_message_count,
            "keptHeadUserMessageCount": shape.kept_head_user_message_count,
        }));
        let mut replayed = History::default();
        let report = replayed.replay_values(journal, "main");
        assert!(report.skipped.is_empty(), "{report:?}");
        assert_eq!(replayed, live);
        // The latest instruction (22,501 tokens, over the tail budget) survived whole.
        assert_eq!(
            live.messages()
                .iter()
                .filter(|m| m.text() == "c".repeat(90_000))
                .count(),
            1
        );
    }

    #[test]
    fn a_compaction_record_without_a_count_is_skipped() {
        let mut h = History::default();
        let report = h.replay_values(
            [
                user_rec("u"),
                json!({"type": "context.apply_compaction", "agentId": "main", "summary": "S"}),
            ],
            "main",
        );
        assert_eq!(h.messages(), [Message::user_text("u")]);
        assert_eq!(report.skipped.len(), 1);
    }

    /// Random journals: user prompts, injections, steps with calls and results, clears.
    fn journal() -> impl Strategy<Value = Vec<Value>> {
        let step = (0u8..3, any::<bool>(), 0u8..3)
            .prop_map(|(calls, answer, reason)| (calls, answer, reason));
        let item = prop_oneof![
            4 => Just(0u8).prop_map(|_| vec![user_rec("u")]),
            1 => Just(0u8).prop_map(|_| vec![json!({"type": "context.append_message", "agentId": "main", "message": {"role": "user", "content": "r", "origin": {"kind": "injection", "variant": "v"}}})]),
            4 => step.prop_map(|(calls, answer, reason)| {
                let mut out = vec![event_rec(json!({"type": "step.begin", "uuid": "s"}))];
                out.push(event_rec(json!({"type": "content.part", "stepUuid": "s", "part": {"type": "text", "text": "t"}})));
                for c in 0..calls {
                    out.push(event_rec(json!({"type": "tool.call", "stepUuid": "s", "toolCallId": format!("c{c}"), "name": "T", "args": {"n": c}})));
                }
                if answer {
                    for c in 0..calls {
                        out.push(event_rec(json!({"type": "tool.result", "toolCallId": format!("c{c}"), "result": {"output": "ok"}})));
                    }
                }
                let finish = ["stop", "interrupted", "error"][reason as usize];
                out.push(event_rec(json!({"type": "step.end", "uuid": "s", "finishReason": finish})));
                out
            }),
            1 => Just(0u8).prop_map(|_| vec![json!({"type": "context.clear", "agentId": "main"})]),
        ];
        prop::collection::vec(item, 0..12).prop_map(|v| v.into_iter().flatten().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn replaying_the_same_records_twice_gives_the_same_history(records in journal()) {
            let mut a = History::default();
            let mut b = History::default();
            let ra = a.replay_values(records.clone(), "main");
            let rb = b.replay_values(records, "main");
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(ra, rb);
        }

        #[test]
        fn the_cached_token_estimate_matches_a_full_count_after_every_record(
            records in journal(),
            count in 1u64..4,
        ) {
            let mut h = History::default();
            for record in records {
                h.replay_values([record], "main");
                // Asked after every record, so a stale entry would survive into the next one.
                prop_assert_eq!(h.estimated_tokens(), estimate_messages(h.messages()));
            }
            let _ = h.undo(count);
            prop_assert_eq!(h.estimated_tokens(), estimate_messages(h.messages()));
            let copy = h.clone();
            prop_assert_eq!(copy.estimated_tokens(), estimate_messages(copy.messages()));
        }

        #[test]
        fn the_cached_projection_matches_a_full_projection_after_every_record(
            records in journal(),
            count in 1u64..4,
        ) {
            let normal = crate::projector::ProjectionPolicy::default();
            let check = |h: &History| -> Result<(), TestCaseError> {
                let full = crate::projector::project(h.messages());
                let shared = h.project(&normal);
                prop_assert_eq!(shared.to_messages(), full.messages);
                prop_assert_eq!(shared.anomalies, full.anomalies);
                Ok(())
            };
            let mut h = History::default();
            for record in records {
                h.replay_values([record], "main");
                // Asked after every record (steps open, stream, settle), so a stale head would
                // show in the next request.
                check(&h)?;
            }
            let _ = h.undo(count);
            check(&h)?;
            check(&h.clone())?;
        }

        #[test]
        fn undo_then_replay_equals_the_cut(records in journal(), count in 1u64..4) {
            let mut live = History::default();
            live.replay_values(records.clone(), "main");
            let before = live.messages().to_vec();
            match live.undo(count) {
                Ok(cut) => {
                    let index = cut.cut_index.unwrap_or(usize::MAX);
                    prop_assert_eq!(live.messages(), &before[..index]);
                    prop_assert_eq!(&before[index].role, &Role::User);
                }
                Err(_) => prop_assert_eq!(live.messages(), &before[..]),
            }
            let mut with_record = records;
            with_record.push(json!({"type": "context.undo", "agentId": "main", "count": count}));
            let mut replayed = History::default();
            replayed.replay_values(with_record, "main");
            prop_assert_eq!(live.messages(), replayed.messages());
        }
    }

    #[test]
    fn tool_output_parts_are_kept_as_parts() {
        let mut h = History::default();
        h.replay_values(
            [
                event_rec(json!({"type": "step.begin", "uuid": "s"})),
                event_rec(json!({"type": "tool.call", "stepUuid": "s", "toolCallId": "c", "name": "T"})),
                event_rec(json!({"type": "tool.result", "toolCallId": "c", "result": {"output": [{"type": "text", "text": "a"}, {"type": "image_url", "imageUrl": {"url": "u"}}]}})),
            ],
            "main",
        );
        assert_eq!(h.messages()[1].content.len(), 2);
        assert_eq!(h.messages()[1].content[0], ContentPart::text("a"));
    }
}
