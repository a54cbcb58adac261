//! Property tests of compaction planning over random histories: split points never cut a tool
//! exchange, the token count adds the estimate after the latest anchor, and the apply-time check
//! accepts exactly the changes a summary covers.

use kimi_context::compaction::service::history_safe_to_compact;
use kimi_context::compaction::split::{
    CompactSource, SplitConfig, can_split_after, compute_compact_count_with,
    reduce_compact_on_overflow_with,
};
use kimi_context::compaction::trigger::token_count::{TokenCounter, TokenCountingRecord};
use kimi_context::compaction::trigger::{CompactionConfig, Limit};
use kimi_context::tokens::estimate_message;
use kimi_protocol::{ContentPart, Message, Origin, Role, ToolCall};
use proptest::prelude::*;

/// A plausible history: turns of prompt, exchanges with 0–3 calls (results sometimes missing),
/// answers, and reminders.
fn history() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec((0u8..5, 0usize..4, "[a-z ]{0,30}"), 0..30).prop_map(|steps| {
        let mut out = Vec::new();
        for (n, (kind, calls, text)) in steps.into_iter().enumerate() {
            match kind {
                0 => out.push(Message::user_text(text)),
                1 => {
                    let ids: Vec<String> = (0..calls).map(|c| format!("c{n}_{c}")).collect();
                    out.push(Message::assistant(
                        vec![ContentPart::text(text)],
                        ids.iter()
                            .map(|id| ToolCall::new(id.clone(), "Read", None))
                            .collect(),
                    ));
                    for id in ids.iter().skip(usize::from(n % 3 == 0)) {
                        out.push(Message::tool_result(
                            id.clone(),
                            vec![ContentPart::text("r")],
                            None,
                        ));
                    }
                }
                2 => {
                    let mut reminder = Message::user_text(text);
                    reminder.origin = Some(Origin::injection("reminder"));
                    out.push(reminder);
                }
                3 => out.push(Message::new(Role::System, vec![ContentPart::text(text)])),
                _ => out.push(Message::assistant(vec![ContentPart::text(text)], vec![])),
            }
        }
        out
    })
}

fn config(max_tokens: i64, recent: u64) -> SplitConfig {
    let mut config = SplitConfig::new(max_tokens, &CompactionConfig::default());
    config.max_recent_messages = Limit::Finite(recent);
    config
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn split_points_never_separate_calls_from_results(
        messages in history(),
        max in 1i64..400,
        recent in 1u64..8,
    ) {
        for i in 0..messages.len() {
            if can_split_after(&messages, i) {
                let next = messages.get(i + 1);
                prop_assert!(next.is_none_or(|m| m.role != Role::Tool));
                prop_assert!(messages[i].role != Role::User);
            }
        }
        let size = |i: usize| messages.get(i).map_or(0, estimate_message);
        for source in [CompactSource::Auto, CompactSource::Manual] {
            let k = compute_compact_count_with(&messages, source, &config(max, recent), size);
            prop_assert!(k <= messages.len());
            prop_assert!(k == 0 || can_split_after(&messages, k - 1), "{source:?} cut at {k}");
        }
        let k = reduce_compact_on_overflow_with(&messages, &config(max, recent), size);
        prop_assert!(k == messages.len() || can_split_after(&messages, k - 1));
    }

    #[test]
    fn size_is_anchor_plus_estimate_after_it(messages in history(), cut in 0usize..40, tokens in 0u64..100_000) {
        let length = cut.min(messages.len());
        let mut counter = TokenCounter::default();
        counter.apply(TokenCountingRecord::Measured { length, tokens });
        let after: u64 = messages[length..].iter().map(estimate_message).sum();
        prop_assert_eq!(counter.size(&messages), tokens + after);
        counter.apply(TokenCountingRecord::Truncated { length: length.saturating_sub(1) });
        if length > 0 {
            let all: u64 = messages.iter().map(estimate_message).sum();
            prop_assert_eq!(counter.size(&messages), all);
        }
    }

    #[test]
    fn apply_check_accepts_new_prompts_and_rejects_other_changes(
        messages in history(),
        prompts in prop::collection::vec("[a-z]{1,8}", 0..3),
    ) {
        let mut grown = messages.clone();
        grown.extend(prompts.iter().map(Message::user_text));
        prop_assert!(history_safe_to_compact(&grown, &messages));
        let mut answered = grown.clone();
        answered.push(Message::assistant(vec![ContentPart::text("more")], vec![]));
        prop_assert!(!history_safe_to_compact(&answered, &messages));
        if !messages.is_empty() && let Some(first) = grown.first_mut() {
            first.content.push(ContentPart::text("edited"));
            prop_assert!(!history_safe_to_compact(&grown, &messages));
        }
    }
}
