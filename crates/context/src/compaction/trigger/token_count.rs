//! Token counting with measured usage (core.md §h.4): the context size that drives compaction is
//! the provider's measured count at the latest anchor plus an estimate of what came after.
//!
//! State is a list of anchors `{length, tokens, measured}` (history length at the time, tokens
//! at that length). Every change arrives as a [`TokenCountingRecord`] so replaying the journal
//! rebuilds the same state.

use kimi_protocol::Message;

use crate::tokens::estimate_message;

/// Tokens known for the first `length` messages of history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    pub length: usize,
    pub tokens: u64,
    /// Reported by the provider (as opposed to estimated).
    pub measured: bool,
}

/// The durable `token_counting.*` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCountingRecord {
    /// The provider measured `tokens` for the first `length` messages.
    Measured { length: usize, tokens: u64 },
    /// History was cut to `length` messages (undo).
    Truncated { length: usize },
    /// History was replaced (clear, compaction): one anchor remains.
    Rebased {
        length: usize,
        tokens: u64,
        measured: bool,
    },
    /// A turn ended with `tokens` for `length` messages.
    TurnRecorded { length: usize, tokens: u64 },
}

/// Which size a status line shows (`[token_counting] strategy`). Internal decisions always use
/// [`TokenCounter::size`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatusStrategy {
    /// The larger of the size and the last measured count.
    #[default]
    MeasuredPlusEstimated,
    /// Only what the provider measured.
    Measured,
    /// Only the estimator, ignoring measurements.
    Estimated,
}

impl StatusStrategy {
    /// Parse the config/env spelling (`measured+estimated`, `measured`, `estimated`).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "measured+estimated" => Some(StatusStrategy::MeasuredPlusEstimated),
            "measured" => Some(StatusStrategy::Measured),
            "estimated" => Some(StatusStrategy::Estimated),
            _ => None,
        }
    }
}

/// Provider usage of one response, as the token count needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeasuredUsage {
    pub input_other: u64,
    pub input_cache_read: u64,
    pub input_cache_creation: u64,
    pub output: u64,
}

impl MeasuredUsage {
    /// Everything the request and its answer occupy in the window.
    pub fn total(&self) -> u64 {
        self.input_other + self.input_cache_read + self.input_cache_creation + self.output
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenCounter {
    anchors: Vec<Anchor>,
}

fn resolve_index(index: Option<isize>, len: usize, default: usize) -> usize {
    match index {
        None => default,
        Some(i) if i < 0 => len.saturating_sub(i.unsigned_abs()),
        Some(i) => i.unsigned_abs().min(len),
    }
}

impl TokenCounter {
    pub fn anchors(&self) -> &[Anchor] {
        &self.anchors
    }

    /// Apply one record (live or on replay).
    pub fn apply(&mut self, record: TokenCountingRecord) {
        match record {
            TokenCountingRecord::Measured { length, tokens } => {
                self.anchors.retain(|a| a.length < length);
                self.anchors.push(Anchor {
                    length,
                    tokens,
                    measured: true,
                });
            }
            TokenCountingRecord::Truncated { length } => {
                self.anchors.retain(|a| a.length <= length);
            }
            TokenCountingRecord::Rebased {
                length,
                tokens,
                measured,
            } => {
                self.anchors = vec![Anchor {
                    length,
                    tokens,
                    measured,
                }];
            }
            TokenCountingRecord::TurnRecorded { length, tokens } => {
                if !self.anchors.iter().any(|a| a.length == length) {
                    self.anchors.retain(|a| a.length < length);
                    self.anchors.push(Anchor {
                        length,
                        tokens,
                        measured: false,
                    });
                }
            }
        }
    }

    /// The record for a successful response whose request was exactly the first `length`
    /// messages of history (the caller checks that).
    pub fn measured(length: usize, usage: &MeasuredUsage) -> TokenCountingRecord {
        TokenCountingRecord::Measured {
            length,
            tokens: usage.total(),
        }
    }

    /// The record for a turn end: the current size pinned at the current length.
    pub fn turn_recorded(&self, history: &[Message]) -> TokenCountingRecord {
        TokenCountingRecord::TurnRecorded {
            length: history.len(),
            tokens: self.size(history),
        }
    }

    /// Tokens of `history[start..end]`: the latest anchor inside the range (only for ranges
    /// starting at 0) plus the estimate of the messages after it. Negative indices count from
    /// the end.
    pub fn get(&self, history: &[Message], start: Option<isize>, end: Option<isize>) -> u64 {
        let len = history.len();
        let start = resolve_index(start, len, 0);
        let end = resolve_index(end, len, len);
        // An empty range has no messages, but a range from 0 still carries the anchor at 0
        // (e.g. a rebase to an empty history with a known overhead).
        if end < start || (end == start && start != 0) {
            return 0;
        }
        let (base, from) = if start == 0 {
            self.anchors
                .iter()
                .filter(|a| a.length <= end)
                .max_by_key(|a| a.length)
                .map_or((0, 0), |a| (a.tokens, a.length))
        } else {
            (0, start)
        };
        base + history
            .get(from..end)
            .unwrap_or_default()
            .iter()
            .map(estimate_message)
            .sum::<u64>()
    }

    /// The size that drives compaction: whole history.
    pub fn size(&self, history: &[Message]) -> u64 {
        self.get(history, None, None)
    }

    /// The latest measured count, if any.
    pub fn last_measured(&self) -> Option<u64> {
        self.anchors
            .iter()
            .filter(|a| a.measured)
            .max_by_key(|a| a.length)
            .map(|a| a.tokens)
    }

    /// The size a status line shows.
    pub fn status_size(&self, history: &[Message], strategy: StatusStrategy) -> u64 {
        match strategy {
            StatusStrategy::MeasuredPlusEstimated => {
                self.size(history).max(self.last_measured().unwrap_or(0))
            }
            StatusStrategy::Measured => self.last_measured().unwrap_or(0),
            StatusStrategy::Estimated => history.iter().map(estimate_message).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::{ContentPart, Role};

    fn msg(text: &str) -> Message {
        // "user" = 1 token, plus ceil(len/4).
        Message::new(Role::User, vec![ContentPart::text(text)])
    }

    #[test]
    fn size_is_the_latest_anchor_plus_the_estimate_after_it() {
        let history = vec![msg("aaaa"), msg("aaaa"), msg("aaaa")];
        let mut counter = TokenCounter::default();
        assert_eq!(counter.size(&history), 6);
        counter.apply(TokenCountingRecord::Measured {
            length: 2,
            tokens: 100,
        });
        assert_eq!(counter.size(&history), 102);
        assert_eq!(counter.get(&history, Some(1), None), 4);
        assert_eq!(counter.get(&history, None, Some(-1)), 100);
        assert_eq!(counter.get(&history, None, Some(1)), 2);
        counter.apply(TokenCountingRecord::Measured {
            length: 1,
            tokens: 50,
        });
        assert_eq!(
            counter.anchors().len(),
            1,
            "a measurement replaces anchors at >= its length"
        );
        counter.apply(TokenCountingRecord::Truncated { length: 0 });
        assert_eq!(counter.size(&history), 6);
    }

    #[test]
    fn turn_record_does_not_override_a_pinned_anchor_and_status_strategies_differ() {
        let history = vec![msg("aaaa"), msg("aaaa")];
        let mut counter = TokenCounter::default();
        counter.apply(TokenCounter::measured(
            2,
            &MeasuredUsage {
                input_other: 10,
                input_cache_read: 20,
                input_cache_creation: 0,
                output: 5,
            },
        ));
        counter.apply(TokenCountingRecord::TurnRecorded {
            length: 2,
            tokens: 7,
        });
        assert_eq!(counter.size(&history), 35);
        counter.apply(TokenCountingRecord::Rebased {
            length: 2,
            tokens: 3,
            measured: false,
        });
        assert_eq!(
            counter.status_size(&history, StatusStrategy::MeasuredPlusEstimated),
            3
        );
        assert_eq!(counter.status_size(&history, StatusStrategy::Measured), 0);
        assert_eq!(counter.status_size(&history, StatusStrategy::Estimated), 4);
        assert_eq!(
            StatusStrategy::parse("measured"),
            Some(StatusStrategy::Measured)
        );
    }
}
