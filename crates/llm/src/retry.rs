//! Retrying a failed model request (core.md §f.7, §h.10): up to 10 attempts, delay = the
//! server's Retry-After if positive, else min(500 ms × 2^i, 32 s) plus up to 25% jitter.
//! A server that cannot be reached at all (connection refused, DNS failure) gets 4 attempts
//! (about 5 s of waiting) instead: ten attempts would keep a user staring at nothing for 2.5
//! minutes before hearing the URL is wrong.
//!
//! The server's Retry-After is bounded by `[loop_control] max_retry_after_s` (default 300):
//! up to the cap it is honoured; up to [`RETRY_AFTER_FAIL_FACTOR`] times the cap kimi-rs waits
//! the cap and says so in the retry message; beyond that the attempt fails at once with
//! [`LlmError::RetryAfterTooLong`] naming the key — a day-long sleep is a hang to the user.

use std::future::Future;
use std::time::Duration;

use rand::Rng;
use tokio_util::sync::CancellationToken;

use crate::error::LlmError;

#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Total attempts including the first (floored at 1).
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Upper bound of the random extra, as a fraction of the delay.
    pub jitter_ratio: f64,
    /// Attempts for errors where the server could not be reached at all
    /// ([`LlmError::is_unreachable`]); `max_attempts` still caps it.
    pub unreachable_max_attempts: u32,
    /// Longest wait for an attempt's first streamed chunk before the attempt fails (retryably):
    /// `[loop_control] first_token_timeout_s`. Kimi's first tokens can take minutes. Zero means
    /// no limit.
    pub first_token_timeout: Duration,
    /// Longest gap between two chunks once the stream has started:
    /// `[loop_control] stream_idle_timeout_s`. Zero means no limit.
    pub stream_idle_timeout: Duration,
    /// Longest server-requested wait (`Retry-After`) honoured before a retry:
    /// `[loop_control] max_retry_after_s`. Zero means no cap.
    pub max_retry_after: Duration,
}

/// Default of `[loop_control] max_retry_after_s`: five minutes covers real rate-limit windows.
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// A Retry-After above this many times the cap is not waited for at all: the server is
/// telling us to come back much later (hours), and a shortened wait would only meet the same
/// refusal again.
pub const RETRY_AFTER_FAIL_FACTOR: u32 = 4;

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(32),
            jitter_ratio: 0.25,
            unreachable_max_attempts: 4,
            first_token_timeout: Duration::from_secs(300),
            stream_idle_timeout: Duration::from_secs(120),
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
        }
    }
}

impl RetryPolicy {
    /// How many attempts `error` may use in total (at least 1).
    pub fn max_attempts_for(&self, error: &LlmError) -> u32 {
        let max = self.max_attempts.max(1);
        if error.is_unreachable() {
            max.min(self.unreachable_max_attempts.max(1))
        } else {
            max
        }
    }

    /// The delay before retry number `failed_attempts` (1-based) without jitter.
    pub fn backoff(&self, failed_attempts: u32) -> Duration {
        let exp = failed_attempts.saturating_sub(1).min(30);
        self.base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay)
    }

    /// The delay to actually wait: the error's Retry-After (never above the cap), else backoff
    /// plus jitter.
    pub fn delay_for(&self, failed_attempts: u32, error: &LlmError) -> Duration {
        if let Some(server) = error.retry_after() {
            return cap_wait(server, self.max_retry_after);
        }
        let base = self.backoff(failed_attempts);
        let jitter = if self.jitter_ratio > 0.0 {
            rand::rng().random_range(0.0..=self.jitter_ratio)
        } else {
            0.0
        };
        base + base.mul_f64(jitter)
    }
}

/// Applies `[loop_control] max_retry_after_s` to an error carrying a Retry-After (see the
/// module doc for the rule): within the cap it is unchanged; up to
/// [`RETRY_AFTER_FAIL_FACTOR`] × the cap its wait is lowered to the cap and the message says
/// so; beyond that it becomes the non-retryable [`LlmError::RetryAfterTooLong`].
pub fn cap_retry_after(error: LlmError, cap: Duration) -> LlmError {
    let LlmError::Http {
        provider,
        status,
        message,
        retry_after: Some(requested),
        requested_wait: None,
    } = error
    else {
        return error;
    };
    if cap.is_zero() || requested <= cap {
        return LlmError::Http {
            provider,
            status,
            message,
            retry_after: Some(requested),
            requested_wait: None,
        };
    }
    if requested > cap.saturating_mul(RETRY_AFTER_FAIL_FACTOR) {
        return LlmError::RetryAfterTooLong {
            provider,
            status,
            message,
            requested,
            cap,
        };
    }
    LlmError::Http {
        provider,
        status,
        message,
        retry_after: Some(cap),
        requested_wait: Some(requested),
    }
}

fn cap_wait(wait: Duration, cap: Duration) -> Duration {
    if cap.is_zero() { wait } else { wait.min(cap) }
}

/// What a retry looks like, for `turn.step.retrying` events.
#[derive(Debug)]
pub struct RetryEvent<'a> {
    pub failed_attempt: u32,
    pub next_attempt: u32,
    pub max_attempts: u32,
    pub delay: Duration,
    pub error: &'a LlmError,
}

/// Runs `attempt(n)` (n = 1, 2, …) until it succeeds, fails with a non-retryable error, runs
/// out of attempts, or `cancel` fires (→ [`LlmError::Cancelled`], also during the sleep).
/// `on_retry` is called once per retry, before the sleep.
pub async fn with_retry<T, F, Fut>(
    policy: &RetryPolicy,
    cancel: &CancellationToken,
    mut on_retry: impl FnMut(&RetryEvent<'_>),
    mut attempt: F,
) -> Result<T, LlmError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    let mut number = 1;
    loop {
        let result = tokio::select! {
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            result = attempt(number) => result,
        };
        let error = match result {
            Ok(value) => return Ok(value),
            Err(error) => cap_retry_after(error, policy.max_retry_after),
        };
        let max_attempts = policy.max_attempts_for(&error);
        if !error.is_retryable() || number >= max_attempts || cancel.is_cancelled() {
            return Err(error);
        }
        let delay = policy.delay_for(number, &error);
        tracing::warn!(
            attempt = number,
            max_attempts,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "model request failed; retrying"
        );
        on_retry(&RetryEvent {
            failed_attempt: number,
            next_attempt: number + 1,
            max_attempts,
            delay,
            error: &error,
        });
        tokio::select! {
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
            () = tokio::time::sleep(delay) => {}
        }
        number += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn backoff_sequence_matches_the_reference() {
        let policy = RetryPolicy::default();
        let got: Vec<u64> = (1..=9)
            .map(|n| policy.backoff(n).as_millis() as u64)
            .collect();
        assert_eq!(
            got,
            vec![500, 1000, 2000, 4000, 8000, 16000, 32000, 32000, 32000]
        );
        let err = LlmError::Timeout {
            provider: "p".into(),
            detail: "d".into(),
        };
        for n in 1..=9 {
            let d = policy.delay_for(n, &err);
            let base = policy.backoff(n);
            assert!(d >= base && d <= base + base / 4, "{n}: {d:?}");
        }
    }

    fn transient() -> LlmError {
        LlmError::Http {
            provider: "p".into(),
            status: 503,
            message: "busy".into(),
            retry_after: None,
            requested_wait: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_errors_then_gives_up_at_max_attempts() {
        let events = RefCell::new(Vec::new());
        let calls = RefCell::new(0);
        let result: Result<(), _> = with_retry(
            &RetryPolicy::default(),
            &CancellationToken::new(),
            |e| {
                events
                    .borrow_mut()
                    .push((e.failed_attempt, e.next_attempt, e.delay))
            },
            |_| {
                *calls.borrow_mut() += 1;
                async { Err(transient()) }
            },
        )
        .await;
        assert!(matches!(result, Err(LlmError::Http { status: 503, .. })));
        assert_eq!(*calls.borrow(), 10);
        assert_eq!(events.borrow().len(), 9);
        assert_eq!(events.borrow()[0].0, 1);
        assert_eq!(events.borrow()[8].1, 10);
    }

    fn rate_limited(secs: u64) -> LlmError {
        LlmError::Http {
            provider: "p".into(),
            status: 429,
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(secs)),
            requested_wait: None,
        }
    }

    #[test]
    fn retry_after_is_honoured_within_the_cap_lowered_above_it_and_refused_far_above() {
        let cap = Duration::from_secs(300);
        let within = cap_retry_after(rate_limited(120), cap);
        assert_eq!(within.retry_after(), Some(Duration::from_secs(120)));
        assert!(
            !within.to_string().contains("max_retry_after_s"),
            "{within}"
        );

        let lowered = cap_retry_after(rate_limited(1000), cap);
        assert!(lowered.is_retryable());
        assert_eq!(lowered.retry_after(), Some(cap));
        assert!(
            lowered.to_string().contains(
                "server asked to wait 1000 s; waiting 300 s ([loop_control] max_retry_after_s)"
            ),
            "{lowered}"
        );
        // Capping twice keeps the first note (the request's wait, not the lowered one).
        let again = cap_retry_after(lowered, cap);
        assert!(
            again.to_string().contains("asked to wait 1000 s"),
            "{again}"
        );

        let refused = cap_retry_after(rate_limited(86_000), cap);
        assert!(!refused.is_retryable());
        assert_eq!(refused.status(), Some(429));
        let text = refused.to_string();
        assert!(text.contains("asked to wait 86000 s"), "{text}");
        assert!(text.contains("max_retry_after_s = 300 s"), "{text}");

        let uncapped = cap_retry_after(rate_limited(86_000), Duration::ZERO);
        assert_eq!(uncapped.retry_after(), Some(Duration::from_secs(86_000)));
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay_for(1, &rate_limited(86_000)), cap);
    }

    #[tokio::test(start_paused = true)]
    async fn non_retryable_errors_stop_at_once_and_cancel_interrupts_sleep() {
        let mut calls = 0;
        let result: Result<(), _> = with_retry(
            &RetryPolicy::default(),
            &CancellationToken::new(),
            |_| {},
            |_| {
                calls += 1;
                async {
                    Err(LlmError::Http {
                        provider: "p".into(),
                        status: 400,
                        message: "bad".into(),
                        retry_after: None,
                        requested_wait: None,
                    })
                }
            },
        )
        .await;
        assert!(result.is_err());
        assert_eq!(calls, 1);

        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let result: Result<(), _> = with_retry(
            &RetryPolicy::default(),
            &cancel,
            move |_| trigger.cancel(),
            |_| async { Err(transient()) },
        )
        .await;
        assert!(matches!(result, Err(LlmError::Cancelled)));
    }
}
