//! Bounding how long an answer may keep us waiting: an attempt that sends nothing before the
//! first-token timeout, or goes quiet for longer than the stream-idle timeout once started,
//! fails with [`LlmError::StreamStalled`] (retryable) instead of hanging the turn forever.
//! Counted on decoded deltas, so keep-alive comments do not keep a dead answer alive.

use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use crate::error::LlmError;
use crate::provider::{DeltaStream, Provider};
use crate::request::ChatRequest;
use crate::retry::RetryPolicy;

/// The two limits of one attempt; `None` = no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallLimits {
    /// From sending the request to the first delta (headers included).
    pub first_token: Option<Duration>,
    /// Between two deltas once the first has arrived.
    pub idle: Option<Duration>,
}

impl StallLimits {
    /// The policy's timeouts; zero means no limit.
    pub fn from_policy(policy: &RetryPolicy) -> StallLimits {
        let limit = |d: Duration| (!d.is_zero()).then_some(d);
        StallLimits {
            first_token: limit(policy.first_token_timeout),
            idle: limit(policy.stream_idle_timeout),
        }
    }
}

struct Watch {
    inner: DeltaStream,
    provider: String,
    limits: StallLimits,
    /// When the first-token limit runs out (counted from the request).
    first_deadline: Option<Instant>,
    started: bool,
    done: bool,
}

fn stalled(provider: &str, waited: Duration, first_token: bool) -> LlmError {
    LlmError::StreamStalled {
        provider: provider.to_owned(),
        waited,
        first_token,
    }
}

/// `provider.stream(request)` with `limits` enforced on the call and on every item.
pub async fn stream_watched(
    provider: &dyn Provider,
    request: ChatRequest,
    limits: StallLimits,
) -> Result<DeltaStream, LlmError> {
    let name = provider.name().to_owned();
    let first_deadline = limits.first_token.map(|d| Instant::now() + d);
    let inner = match (first_deadline, limits.first_token) {
        (Some(at), Some(limit)) => tokio::time::timeout_at(at, provider.stream(request))
            .await
            .map_err(|_| stalled(&name, limit, true))??,
        _ => provider.stream(request).await?,
    };
    let watch = Watch {
        inner,
        provider: name,
        limits,
        first_deadline,
        started: false,
        done: false,
    };
    Ok(Box::pin(futures::stream::unfold(watch, next_item)))
}

async fn next_item(mut w: Watch) -> Option<(Result<crate::delta::StreamDelta, LlmError>, Watch)> {
    if w.done {
        return None;
    }
    let (deadline, limit, first) = if w.started {
        let idle = w.limits.idle;
        (idle.map(|d| Instant::now() + d), idle, false)
    } else {
        (w.first_deadline, w.limits.first_token, true)
    };
    let item = match (deadline, limit) {
        (Some(at), Some(limit)) => match tokio::time::timeout_at(at, w.inner.next()).await {
            Ok(item) => item,
            Err(_) => {
                w.done = true;
                let err = stalled(&w.provider, limit, first);
                return Some((Err(err), w));
            }
        },
        _ => w.inner.next().await,
    }?;
    w.started = true;
    Some((item, w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::{ScriptEvent, ScriptTurn, ScriptedProvider};

    fn request() -> ChatRequest {
        ChatRequest::new("", Vec::new())
    }

    async fn collect(turn: ScriptTurn, limits: StallLimits) -> Vec<Result<String, String>> {
        let provider = ScriptedProvider::new(vec![turn]);
        let stream = match stream_watched(&provider, request(), limits).await {
            Ok(stream) => stream,
            Err(err) => return vec![Err(err.to_string())],
        };
        stream
            .map(|item| item.map(|d| format!("{d:?}")).map_err(|e| e.to_string()))
            .collect()
            .await
    }

    const LIMITS: StallLimits = StallLimits {
        first_token: Some(Duration::from_secs(3)),
        idle: Some(Duration::from_secs(2)),
    };

    #[tokio::test(start_paused = true)]
    async fn a_gap_after_the_first_delta_is_an_idle_stall() {
        let turn = ScriptTurn::Reply {
            events: vec![
                ScriptEvent::text("hel"),
                ScriptEvent::Delay { ms: 10_000 },
                ScriptEvent::text("lo"),
            ],
            chunk_size: None,
        };
        let items = collect(turn, LIMITS).await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert!(items[0].is_ok());
        let err = items[1].as_ref().unwrap_err();
        assert!(err.contains("no data for 2 s"), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn silence_before_the_first_delta_is_a_first_token_stall() {
        let turn = ScriptTurn::Reply {
            events: vec![ScriptEvent::Delay { ms: 10_000 }, ScriptEvent::text("late")],
            chunk_size: None,
        };
        let items = collect(turn, LIMITS).await;
        assert_eq!(items.len(), 1, "{items:?}");
        let err = items[0].as_ref().unwrap_err();
        assert!(err.contains("no first token after 3 s"), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn slow_but_steady_streams_and_unlimited_policies_pass() {
        let steady = ScriptTurn::Reply {
            events: vec![
                ScriptEvent::Delay { ms: 2_500 },
                ScriptEvent::text("a"),
                ScriptEvent::Delay { ms: 1_500 },
                ScriptEvent::text("b"),
                ScriptEvent::finish(crate::FinishReason::Stop),
            ],
            chunk_size: None,
        };
        let items = collect(steady.clone(), LIMITS).await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
        let unlimited = StallLimits::from_policy(&RetryPolicy {
            first_token_timeout: Duration::ZERO,
            stream_idle_timeout: Duration::ZERO,
            ..RetryPolicy::default()
        });
        assert_eq!(
            unlimited,
            StallLimits {
                first_token: None,
                idle: None
            }
        );
        let items = collect(steady, unlimited).await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
    }
}
