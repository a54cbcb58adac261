//! Retrying a failed model request (core.md §f.7, §h.10): up to 10 attempts, delay = the
//! server's Retry-After if positive, else min(500 ms × 2^i, 32 s) plus up to 25% jitter.
//! A server that cannot be reached at all (connection refused, DNS failure) gets 4 attempts
//! (about 5 s of waiting) instead: ten attempts would keep a user staring at nothing for 2.5
//! minutes before hearing the URL is wrong.

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
}

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

    /// The delay to actually wait: the error's Retry-After, else backoff plus jitter.
    pub fn delay_for(&self, failed_attempts: u32, error: &LlmError) -> Duration {
        if let Some(server) = error.retry_after() {
            return server;
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
            Err(error) => error,
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
