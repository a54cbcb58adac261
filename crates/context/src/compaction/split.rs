//! Where a compacted prefix may end (core.md §d.4): `can_split_after`, `compute_compact_count`
//! for manual and automatic compaction, and the back-off after an overflow. The service
//! summarises the whole history (like the reference), but these keep the tested contract for a
//! partial-prefix mode and are used to pick shrink points that never cut a tool exchange.

use kimi_protocol::{Message, Role};

use super::trigger::{CompactionConfig, Limit};
use crate::tokens::estimate_message;

/// Who asked for the compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactSource {
    Manual,
    Auto,
}

/// The part of [`CompactionConfig`] the split rules read, plus the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitConfig {
    pub max_tokens: i64,
    pub max_recent_messages: Limit,
    pub max_recent_user_messages: Limit,
    pub max_recent_size_ratio: f64,
    pub min_overflow_reduction_ratio: f64,
}

impl SplitConfig {
    pub fn new(max_tokens: i64, config: &CompactionConfig) -> Self {
        SplitConfig {
            max_tokens,
            max_recent_messages: config.max_recent_messages,
            max_recent_user_messages: config.max_recent_user_messages,
            max_recent_size_ratio: config.max_recent_size_ratio,
            min_overflow_reduction_ratio: config.min_overflow_reduction_ratio,
        }
    }
}

/// May the compacted prefix end at `index` (inclusive)? Never inside a tool exchange, never
/// right after a user message (it would lose its answer's context).
pub fn can_split_after(messages: &[Message], index: usize) -> bool {
    let Some(message) = messages.get(index) else {
        return false;
    };
    match message.role {
        Role::User => return false,
        Role::Assistant if !message.tool_calls.is_empty() => return false,
        Role::Assistant | Role::System | Role::Tool => {}
    }
    if messages
        .get(index + 1)
        .is_some_and(|m| m.role == Role::Tool)
    {
        return false;
    }
    if message.role == Role::Tool {
        // Walk back over the results; the exchange is open if its assistant made more calls.
        let mut results = 0usize;
        for earlier in messages.get(..=index).unwrap_or_default().iter().rev() {
            if earlier.role == Role::Tool {
                results += 1;
                continue;
            }
            return !(earlier.role == Role::Assistant && earlier.tool_calls.len() > results);
        }
    }
    true
}

fn window_fit(
    messages: &[Message],
    count: usize,
    max_tokens: i64,
    size: &impl Fn(usize) -> u64,
) -> usize {
    let Ok(max) = u64::try_from(max_tokens) else {
        return count;
    };
    if max == 0 || count == 0 {
        return count;
    }
    let mut remaining: u64 = (0..count).map(size).sum();
    if remaining <= max {
        return count;
    }
    let mut smallest: Option<usize> = None;
    for n in (1..count).rev() {
        remaining = remaining.saturating_sub(size(n));
        if can_split_after(messages, n - 1) {
            smallest = Some(n);
            if remaining <= max {
                return n;
            }
        }
    }
    smallest.unwrap_or(count)
}

/// How many leading messages to compact, with the default estimator.
pub fn compute_compact_count(
    messages: &[Message],
    source: CompactSource,
    config: &SplitConfig,
) -> usize {
    compute_compact_count_with(messages, source, config, |i| {
        messages.get(i).map_or(0, estimate_message)
    })
}

/// How many leading messages to compact; `size(i)` is the token size of `messages[i]`.
///
/// Manual: the latest possible split. Auto: grow a recent window from the end until one of the
/// budgets (messages, user messages, share of the window) is reached and a split exists; the
/// earliest split seen wins. Either way the prefix is then shrunk to fit the window.
pub fn compute_compact_count_with(
    messages: &[Message],
    source: CompactSource,
    config: &SplitConfig,
    size: impl Fn(usize) -> u64,
) -> usize {
    let len = messages.len();
    let best = match source {
        CompactSource::Manual => (1..len)
            .rev()
            .find(|&i| can_split_after(messages, i))
            .map(|i| i + 1),
        CompactSource::Auto => {
            let size_budget = config.max_tokens as f64 * config.max_recent_size_ratio;
            let mut best = None;
            let mut recent_users = 0u64;
            let mut recent_size = 0u64;
            for r in 1..len {
                let candidate = len - r - 1;
                let newest = len - r;
                if messages.get(newest).is_some_and(|m| m.role == Role::User) {
                    recent_users += 1;
                }
                recent_size += size(newest);
                if can_split_after(messages, candidate) {
                    best = Some(candidate + 1);
                }
                let budget_reached = config.max_recent_messages.reached(r as u64)
                    || config.max_recent_user_messages.reached(recent_users)
                    || recent_size as f64 >= size_budget;
                if budget_reached && best.is_some() {
                    break;
                }
            }
            best
        }
    };
    window_fit(messages, best.unwrap_or(0), config.max_tokens, &size)
}

/// After an overflow, how many leading messages to keep compacting so that at least
/// `min_overflow_reduction_ratio` of the window is removed from the end; the full length when
/// no split point exists.
pub fn reduce_compact_on_overflow(messages: &[Message], config: &SplitConfig) -> usize {
    reduce_compact_on_overflow_with(messages, config, |i| {
        messages.get(i).map_or(0, estimate_message)
    })
}

/// [`reduce_compact_on_overflow`] with an explicit per-message size.
pub fn reduce_compact_on_overflow_with(
    messages: &[Message],
    config: &SplitConfig,
    size: impl Fn(usize) -> u64,
) -> usize {
    let len = messages.len();
    let wanted = (config.max_tokens as f64 * config.min_overflow_reduction_ratio).ceil();
    let min_reduced = if wanted >= 1.0 { wanted as u64 } else { 1 };
    let mut removed = 0u64;
    let mut recorded = None;
    for i in (1..len.saturating_sub(1)).rev() {
        removed += size(i + 1);
        if can_split_after(messages, i) {
            recorded = Some(i + 1);
            if removed >= min_reduced {
                return i + 1;
            }
        }
    }
    recorded.unwrap_or(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::{ContentPart, ToolCall};

    fn seed() -> Vec<Message> {
        let text = |role, s: &str| Message::new(role, vec![ContentPart::text(s)]);
        vec![
            text(Role::User, "old user"),
            text(Role::Assistant, "old answer"),
            text(Role::User, "new user"),
            Message::assistant(
                vec![],
                vec![ToolCall::new("a", "L", None), ToolCall::new("b", "L", None)],
            ),
            Message::tool_result("a", vec![ContentPart::text("ra")], None),
            Message::tool_result("b", vec![ContentPart::text("rb")], None),
            text(Role::Assistant, "final answer"),
        ]
    }

    #[test]
    fn seed_history_compacts_six_or_two_depending_on_recent_budget() {
        let messages = seed();
        let mut config = SplitConfig::new(100_000, &CompactionConfig::default());
        let count = |config: &SplitConfig| {
            compute_compact_count_with(&messages, CompactSource::Auto, config, |_| 10)
        };
        assert_eq!(count(&config), 6);
        config.max_recent_messages = Limit::Finite(5);
        assert_eq!(count(&config), 2);
    }

    #[test]
    fn split_points_never_cut_an_exchange() {
        let messages = seed();
        let allowed: Vec<usize> = (0..8).filter(|&i| can_split_after(&messages, i)).collect();
        assert_eq!(allowed, vec![1, 5, 6]);
    }

    #[test]
    fn overflow_back_off_without_split_points_keeps_everything() {
        let users: Vec<Message> = (0..3)
            .map(|i| Message::user_text(format!("u{i}")))
            .collect();
        let config = SplitConfig::new(1000, &CompactionConfig::default());
        assert_eq!(reduce_compact_on_overflow(&users, &config), 3);
    }
}
