//! Bounding one attempt: an answer that sends nothing before the first-token timeout, or
//! makes no progress for longer than the stream-idle timeout once started, fails with
//! [`LlmError::StreamStalled`] (retryable) instead of hanging the turn forever; an answer that
//! grows past [`MAX_RESPONSE_BYTES`] or asks for more than [`MAX_TOOL_CALLS_PER_RESPONSE`]
//! calls is cut (not retryable); a Retry-After on a refused request is capped
//! ([`cap_retry_after`]). Only content counts as progress — keep-alive comments, pings,
//! usage-only chunks and ids never reset the timers, so a server that keeps the connection
//! warm without answering still fails the attempt.

use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use crate::delta::StreamDelta;
use crate::error::LlmError;
use crate::provider::{DeltaStream, Provider};
use crate::request::ChatRequest;
use crate::retry::{RetryPolicy, cap_retry_after};

/// Largest answer kept in memory: text, thinking, signatures and tool-call arguments of one
/// response together. Far above any real answer (a 200k-token output is about 1 MiB), low
/// enough that a server streaming forever cannot exhaust memory.
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Most tool calls accepted in one response. Real models ask for a handful in parallel; a
/// response asking for thousands is runaway generation, and running them all would exhaust
/// the machine.
pub const MAX_TOOL_CALLS_PER_RESPONSE: usize = 128;

/// The limits of one attempt; `None` = no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StallLimits {
    /// From sending the request to the first content delta (headers included).
    pub first_token: Option<Duration>,
    /// Between two content deltas once the first has arrived.
    pub idle: Option<Duration>,
    /// `[loop_control] max_retry_after_s` (zero = no cap), applied to a refused request.
    pub max_retry_after: Duration,
    /// Bytes of content one answer may carry ([`MAX_RESPONSE_BYTES`]).
    pub max_response_bytes: usize,
    /// Tool calls one answer may ask for ([`MAX_TOOL_CALLS_PER_RESPONSE`]).
    pub max_tool_calls: usize,
}

impl StallLimits {
    /// The policy's timeouts (zero means no limit) and the built-in size bounds.
    pub fn from_policy(policy: &RetryPolicy) -> StallLimits {
        let limit = |d: Duration| (!d.is_zero()).then_some(d);
        StallLimits {
            first_token: limit(policy.first_token_timeout),
            idle: limit(policy.stream_idle_timeout),
            max_retry_after: policy.max_retry_after,
            max_response_bytes: MAX_RESPONSE_BYTES,
            max_tool_calls: MAX_TOOL_CALLS_PER_RESPONSE,
        }
    }
}

struct Watch {
    inner: DeltaStream,
    provider: String,
    limits: StallLimits,
    /// When the current wait runs out: the first-token deadline (counted from the request)
    /// until content arrives, then the idle deadline from the latest content delta.
    deadline: Option<Instant>,
    started: bool,
    bytes: usize,
    tool_calls: usize,
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
    let opened = match (first_deadline, limits.first_token) {
        (Some(at), Some(limit)) => tokio::time::timeout_at(at, provider.stream(request))
            .await
            .map_err(|_| stalled(&name, limit, true))?,
        _ => provider.stream(request).await,
    };
    let inner = opened.map_err(|err| cap_retry_after(err, limits.max_retry_after))?;
    let watch = Watch {
        inner,
        provider: name,
        limits,
        deadline: first_deadline,
        started: false,
        bytes: 0,
        tool_calls: 0,
        done: false,
    };
    Ok(Box::pin(futures::stream::unfold(watch, next_item)))
}

/// The content bytes a delta adds to the answer, and whether it is progress (content that
/// resets the stall timers). Usage, ids and finish markers are bookkeeping, not progress.
fn weigh(delta: &StreamDelta) -> (usize, bool) {
    match delta {
        StreamDelta::Text(text) | StreamDelta::Thinking(text) => (text.len(), !text.is_empty()),
        StreamDelta::ThinkingSignature(sig) => (sig.len(), true),
        StreamDelta::ToolCallStart { id, name, .. } => (id.len() + name.len(), true),
        StreamDelta::ToolCallArgs { fragment, .. } => (fragment.len(), !fragment.is_empty()),
        StreamDelta::Finish(_) => (0, true),
        StreamDelta::Usage(_) | StreamDelta::MessageId(_) => (0, false),
    }
}

impl Watch {
    /// Ends the attempt with `err`; the connection is dropped at once so the server stops.
    fn cut(mut self, err: LlmError) -> Option<(Result<StreamDelta, LlmError>, Watch)> {
        self.done = true;
        self.inner = Box::pin(futures::stream::empty());
        Some((Err(err), self))
    }

    /// Checks the size bounds for `delta`; `Some(error)` when it breaks one.
    fn over_limit(&mut self, delta: &StreamDelta) -> Option<LlmError> {
        let (bytes, _) = weigh(delta);
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.limits.max_response_bytes {
            return Some(LlmError::ResponseTooLarge {
                provider: self.provider.clone(),
                limit_bytes: self.limits.max_response_bytes,
            });
        }
        if matches!(delta, StreamDelta::ToolCallStart { .. }) {
            self.tool_calls += 1;
            if self.tool_calls > self.limits.max_tool_calls {
                return Some(LlmError::TooManyToolCalls {
                    provider: self.provider.clone(),
                    limit: self.limits.max_tool_calls,
                });
            }
        }
        None
    }
}

async fn next_item(mut w: Watch) -> Option<(Result<StreamDelta, LlmError>, Watch)> {
    if w.done {
        return None;
    }
    let (limit, first) = if w.started {
        (w.limits.idle, false)
    } else {
        (w.limits.first_token, true)
    };
    let item = match (w.deadline, limit) {
        (Some(at), Some(limit)) => match tokio::time::timeout_at(at, w.inner.next()).await {
            Ok(item) => item,
            Err(_) => {
                let err = stalled(&w.provider, limit, first);
                return w.cut(err);
            }
        },
        _ => w.inner.next().await,
    }?;
    let delta = match item {
        Ok(delta) => delta,
        Err(err) => return Some((Err(err), w)),
    };
    if let Some(err) = w.over_limit(&delta) {
        return w.cut(err);
    }
    if weigh(&delta).1 {
        w.started = true;
        w.deadline = w.limits.idle.map(|d| Instant::now() + d);
    }
    Some((Ok(delta), w))
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
        max_retry_after: Duration::ZERO,
        max_response_bytes: MAX_RESPONSE_BYTES,
        max_tool_calls: MAX_TOOL_CALLS_PER_RESPONSE,
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
        assert_eq!((unlimited.first_token, unlimited.idle), (None, None));
        let items = collect(steady, unlimited).await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn usage_and_ids_without_content_do_not_keep_a_stream_alive() {
        let mut events = vec![ScriptEvent::MessageId { id: "m".into() }];
        for _ in 0..100 {
            events.push(ScriptEvent::usage(1, 0));
            events.push(ScriptEvent::Delay { ms: 100 });
        }
        events.push(ScriptEvent::text("too late"));
        let items = collect(
            ScriptTurn::Reply {
                events,
                chunk_size: None,
            },
            LIMITS,
        )
        .await;
        let err = items.last().and_then(|i| i.as_ref().err());
        assert!(
            err.is_some_and(|e| e.contains("no first token after 3 s")),
            "{items:?}"
        );
        assert!(
            !items
                .iter()
                .any(|i| i.as_ref().is_ok_and(|d| d.contains("too late")))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_over_the_size_bound_is_cut_and_not_retryable() {
        let limits = StallLimits {
            max_response_bytes: 1000,
            ..LIMITS
        };
        let events = (0..50)
            .map(|_| ScriptEvent::text("x".repeat(100)))
            .collect();
        let provider = ScriptedProvider::new(vec![ScriptTurn::Reply {
            events,
            chunk_size: None,
        }]);
        let stream = stream_watched(&provider, request(), limits).await.unwrap();
        let items: Vec<_> = stream.collect().await;
        assert_eq!(
            items.len(),
            11,
            "10 deltas within the bound, then the error"
        );
        let err = items[10].as_ref().unwrap_err();
        assert!(matches!(err, LlmError::ResponseTooLarge { .. }), "{err}");
        assert!(!err.is_retryable());
        assert!(err.to_string().contains("the stream was cut"), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn more_tool_calls_than_the_bound_cut_the_answer() {
        let limits = StallLimits {
            max_tool_calls: 3,
            ..LIMITS
        };
        let events = (0..10)
            .flat_map(|i| ScriptEvent::tool_call(i, &format!("c{i}"), "Read", "{}", 1))
            .collect();
        let provider = ScriptedProvider::new(vec![ScriptTurn::Reply {
            events,
            chunk_size: None,
        }]);
        let stream = stream_watched(&provider, request(), limits).await.unwrap();
        let items: Vec<_> = stream.collect().await;
        let starts = items
            .iter()
            .filter(|i| matches!(i, Ok(StreamDelta::ToolCallStart { .. })))
            .count();
        assert_eq!(starts, 3);
        let err = items.last().unwrap().as_ref().unwrap_err();
        assert!(
            matches!(err, LlmError::TooManyToolCalls { limit: 3, .. }),
            "{err}"
        );
        assert!(!err.is_retryable());
    }
}
