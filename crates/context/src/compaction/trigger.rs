//! When to compact (core.md §d.3): the trigger and block rules, the per-model runtime
//! derivation of the ratios, the observed-window safety after an overflow, and the token count
//! those rules read (§h.4, in [`token_count`]).

pub mod token_count;

/// How many of something may happen; `Unlimited` is the reference's `Infinity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Finite(u64),
    Unlimited,
}

impl Limit {
    /// True once `count` has reached the limit.
    pub fn reached(self, count: u64) -> bool {
        match self {
            Limit::Finite(max) => count >= max,
            Limit::Unlimited => false,
        }
    }
}

/// Default trigger ratio of the window.
pub const DEFAULT_TRIGGER_RATIO: f64 = 0.85;
/// Default (and minimum) block ratio.
pub const DEFAULT_BLOCK_RATIO: f64 = 0.85;
/// Tokens kept free for the next request; the reserve rule fires when less than this is left.
pub const DEFAULT_RESERVED_CONTEXT_SIZE: u64 = 50_000;
/// Consecutive overflow compactions of one turn before the step fails.
pub const DEFAULT_MAX_OVERFLOW_COMPACTION_ATTEMPTS: u32 = 3;
/// Range a per-model trigger ratio must lie in to be used.
pub const TRIGGER_RATIO_RANGE: std::ops::RangeInclusive<f64> = 0.5..=0.99;
/// Share of a rejected request's estimate assumed to fit after a context overflow.
pub const OBSERVED_WINDOW_SAFETY: f64 = 0.85;

/// The compaction strategy's settings (`DEFAULT_COMPACTION_CONFIG`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionConfig {
    pub trigger_ratio: f64,
    pub block_ratio: f64,
    pub reserved_context_size: u64,
    pub max_compaction_per_turn: Limit,
    pub max_overflow_compaction_attempts: u32,
    pub max_recent_messages: Limit,
    pub max_recent_user_messages: Limit,
    pub max_recent_size_ratio: f64,
    pub min_overflow_reduction_ratio: f64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            trigger_ratio: DEFAULT_TRIGGER_RATIO,
            block_ratio: DEFAULT_BLOCK_RATIO,
            reserved_context_size: DEFAULT_RESERVED_CONTEXT_SIZE,
            max_compaction_per_turn: Limit::Unlimited,
            max_overflow_compaction_attempts: DEFAULT_MAX_OVERFLOW_COMPACTION_ATTEMPTS,
            max_recent_messages: Limit::Finite(4),
            max_recent_user_messages: Limit::Unlimited,
            max_recent_size_ratio: 0.2,
            min_overflow_reduction_ratio: 0.05,
        }
    }
}

impl CompactionConfig {
    /// The reserve rule: fewer than `reserved` tokens are left. A reserve that is not smaller
    /// than the window is ignored (it would fire on an empty context).
    fn reserve_rule(&self, max_tokens: i64, used_tokens: u64) -> bool {
        let reserved = self.reserved_context_size;
        let Ok(max) = u64::try_from(max_tokens) else {
            return false;
        };
        reserved > 0 && reserved < max && used_tokens.saturating_add(reserved) >= max
    }

    fn ratio_rule(ratio: f64, max_tokens: i64, used_tokens: u64) -> bool {
        // Token counts stay far below 2^53, so the f64 comparison is exact enough.
        used_tokens as f64 >= max_tokens as f64 * ratio
    }

    /// Start a compaction now? (`used >= max × trigger` or the reserve rule; never for a window
    /// that is unknown or non-positive.)
    pub fn should_compact(&self, max_tokens: i64, used_tokens: u64) -> bool {
        max_tokens > 0
            && (Self::ratio_rule(self.trigger_ratio, max_tokens, used_tokens)
                || self.reserve_rule(max_tokens, used_tokens))
    }

    /// Must the next step wait for the running compaction?
    pub fn should_block(&self, max_tokens: i64, used_tokens: u64) -> bool {
        max_tokens > 0
            && (Self::ratio_rule(self.block_ratio, max_tokens, used_tokens)
                || self.reserve_rule(max_tokens, used_tokens))
    }
}

/// The per-model `loop_control` settings that shape compaction.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModelLoopControl {
    pub compaction_trigger_ratio: Option<f64>,
    pub reserved_context_size: Option<u64>,
}

/// Compaction settings for a model at runtime, plus whether to check after each step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuntimeCompaction {
    pub config: CompactionConfig,
    /// Only a trigger below the block ratio starts compaction in the background after a step.
    pub check_after_step: bool,
}

/// Fold a model's `loop_control` into the strategy (`RuntimeCompactionStrategy`): the block
/// ratio is never below 0.85, and a trigger ratio outside 0.5–0.99 is ignored.
pub fn runtime_compaction(model: &ModelLoopControl) -> RuntimeCompaction {
    let trigger_ratio = model
        .compaction_trigger_ratio
        .filter(|r| TRIGGER_RATIO_RANGE.contains(r))
        .unwrap_or(DEFAULT_TRIGGER_RATIO);
    let block_ratio = trigger_ratio.max(DEFAULT_BLOCK_RATIO);
    let config = CompactionConfig {
        trigger_ratio,
        block_ratio,
        reserved_context_size: model
            .reserved_context_size
            .unwrap_or(DEFAULT_RESERVED_CONTEXT_SIZE),
        ..CompactionConfig::default()
    };
    RuntimeCompaction {
        config,
        check_after_step: trigger_ratio != block_ratio,
    }
}

/// A model's effective window: the configured one, lowered to what a provider rejection showed
/// actually fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveWindow {
    pub configured: i64,
    pub observed: Option<i64>,
}

impl EffectiveWindow {
    pub fn new(configured: i64) -> Self {
        EffectiveWindow {
            configured,
            observed: None,
        }
    }

    pub fn max_tokens(&self) -> i64 {
        match self.observed {
            Some(observed) if self.configured > 0 => self.configured.min(observed),
            Some(observed) => observed,
            None => self.configured,
        }
    }

    /// After a context overflow of a request estimated at `request_tokens`, assume 85% of it
    /// fits, if that is below the current effective window (or no window is known).
    pub fn record_overflow(&mut self, request_tokens: u64) {
        let fits = (request_tokens as f64 * OBSERVED_WINDOW_SAFETY).floor() as i64;
        let fits = fits.max(1);
        let current = self.max_tokens();
        if current <= 0 || fits < current {
            self.observed = Some(fits);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_rule_fires_before_the_ratio_on_mid_size_windows() {
        let config = CompactionConfig::default();
        assert!(!config.should_compact(100_000, 49_999));
        assert!(config.should_compact(100_000, 50_000));
        assert!(!config.should_compact(32_000, 27_199));
        assert!(config.should_block(32_000, 27_200));
        assert!(!config.should_compact(0, u64::MAX));
        assert!(!config.should_block(-5, 10));
    }

    #[test]
    fn runtime_derivation_raises_block_and_enables_after_step_checks() {
        let low = runtime_compaction(&ModelLoopControl {
            compaction_trigger_ratio: Some(0.6),
            reserved_context_size: Some(0),
        });
        assert_eq!(low.config.block_ratio, 0.85);
        assert!(low.check_after_step);
        let invalid = runtime_compaction(&ModelLoopControl {
            compaction_trigger_ratio: Some(1.5),
            reserved_context_size: None,
        });
        assert_eq!(invalid.config.trigger_ratio, DEFAULT_TRIGGER_RATIO);
        assert!(!invalid.check_after_step);
    }

    #[test]
    fn observed_window_only_ever_lowers_the_effective_window() {
        let mut window = EffectiveWindow::new(100_000);
        window.record_overflow(200_000);
        assert_eq!(window.max_tokens(), 100_000);
        window.record_overflow(80_000);
        assert_eq!(window.max_tokens(), 68_000);
        let mut unknown = EffectiveWindow::new(0);
        unknown.record_overflow(0);
        assert_eq!(unknown.max_tokens(), 1);
    }
}
