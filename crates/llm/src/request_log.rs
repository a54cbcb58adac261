//! What every model request leaves in the log: provider, model, endpoint path, header *names*
//! (never values: they carry the API key), body size, status, time to the response headers,
//! to the first body chunk and to the first decoded delta (first token), bytes received,
//! duration and how the stream ended. Retries (attempt, wait, reason) are logged where they
//! are decided: the engine's turn loop and [`crate::with_retry`].

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use reqwest::header::HeaderMap;

use crate::config::ResolvedModel;
use crate::delta::StreamDelta;
use crate::error::LlmError;
use crate::provider::DeltaStream;

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// One request, from sending to the end of its body.
pub(crate) struct RequestLog {
    provider: String,
    model: String,
    endpoint: String,
    started: Instant,
}

impl RequestLog {
    pub(crate) fn start(
        model: &ResolvedModel,
        url: &str,
        headers: &HeaderMap,
        body_bytes: usize,
    ) -> RequestLog {
        let endpoint = reqwest::Url::parse(url)
            .map(|u| u.path().to_owned())
            .unwrap_or_else(|_| "(unparsable URL)".to_owned());
        let names: Vec<&str> = headers
            .keys()
            .map(reqwest::header::HeaderName::as_str)
            .collect();
        tracing::info!(
            provider = %model.provider_id,
            model = %model.model,
            endpoint = %endpoint,
            body_bytes,
            headers = ?names,
            "model request sent"
        );
        RequestLog {
            provider: model.provider_id.clone(),
            model: model.model.clone(),
            endpoint,
            started: Instant::now(),
        }
    }

    /// No answer at all (connection refused, DNS, timeout).
    pub(crate) fn not_sent(&self, error: &LlmError) {
        tracing::warn!(
            provider = %self.provider,
            endpoint = %self.endpoint,
            duration_ms = millis(self.started.elapsed()),
            error = %error,
            "model request failed without an answer"
        );
    }

    /// An HTTP error status (the body is the error text, not logged: it may echo input).
    pub(crate) fn refused(&self, status: u16, body_bytes: usize, error: &LlmError) {
        tracing::warn!(
            provider = %self.provider,
            endpoint = %self.endpoint,
            status,
            body_bytes,
            duration_ms = millis(self.started.elapsed()),
            error = %error,
            "model request refused"
        );
    }

    /// A 2xx answer: the raw body is metered as it is read ([`Metered`]) and the decoded
    /// deltas timed ([`Summarised`], which logs the summary when the answer is dropped).
    pub(crate) fn meter<S>(self, status: u16, body: S) -> (Metered<S>, Meter) {
        let headers_ms = millis(self.started.elapsed());
        tracing::debug!(
            provider = %self.provider,
            endpoint = %self.endpoint,
            status,
            headers_ms,
            "model response headers received"
        );
        let stats = Arc::new(Mutex::new(Stats::default()));
        let started = self.started;
        let meter = Meter {
            log: self,
            status,
            headers_ms,
            stats: stats.clone(),
        };
        (
            Metered {
                body,
                started,
                stats,
            },
            meter,
        )
    }
}

#[derive(Default)]
struct Stats {
    bytes: u64,
    first_chunk: Option<Duration>,
    end: Option<&'static str>,
}

fn lock(stats: &Mutex<Stats>) -> MutexGuard<'_, Stats> {
    stats.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The response body, counting bytes and noting when the first chunk came and how it ended.
pub(crate) struct Metered<S> {
    body: S,
    started: Instant,
    stats: Arc<Mutex<Stats>>,
}

impl<S, E> Stream for Metered<S>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
{
    type Item = Result<bytes::Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.body).poll_next(cx);
        if let Poll::Ready(item) = &polled {
            let mut stats = lock(&self.stats);
            match item {
                Some(Ok(chunk)) => {
                    stats.bytes = stats.bytes.saturating_add(chunk.len() as u64);
                    if stats.first_chunk.is_none() {
                        stats.first_chunk = Some(self.started.elapsed());
                    }
                }
                Some(Err(_)) => stats.end = Some("read error"),
                None => stats.end = Some("end of body"),
            }
        }
        polled
    }
}

/// What [`Summarised`] needs to write the request's summary line.
pub(crate) struct Meter {
    log: RequestLog,
    status: u16,
    headers_ms: u64,
    stats: Arc<Mutex<Stats>>,
}

impl Meter {
    /// Wraps the decoded answer; its first delta is the time to first token.
    pub(crate) fn summarise(self, deltas: DeltaStream) -> DeltaStream {
        Box::pin(Summarised {
            deltas,
            meter: self,
            first_delta: None,
            error: None,
        })
    }
}

/// The decoded answer; logs one summary line when dropped (read to the end or abandoned).
struct Summarised {
    deltas: DeltaStream,
    meter: Meter,
    first_delta: Option<Duration>,
    error: Option<String>,
}

impl Stream for Summarised {
    type Item = Result<StreamDelta, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.deltas.as_mut().poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(_))) if self.first_delta.is_none() => {
                self.first_delta = Some(self.meter.log.started.elapsed());
            }
            Poll::Ready(Some(Err(err))) => self.error = Some(err.to_string()),
            _ => {}
        }
        polled
    }
}

impl Drop for Summarised {
    fn drop(&mut self) {
        let meter = &self.meter;
        let log = &meter.log;
        let stats = lock(&meter.stats);
        tracing::info!(
            provider = %log.provider,
            model = %log.model,
            endpoint = %log.endpoint,
            status = meter.status,
            bytes = stats.bytes,
            headers_ms = meter.headers_ms,
            first_chunk_ms = stats.first_chunk.map(millis),
            first_token_ms = self.first_delta.map(millis),
            duration_ms = millis(log.started.elapsed()),
            // "closed by the reader": the decoder saw the end marker, or the turn stopped.
            end = stats.end.unwrap_or("closed by the reader"),
            error = self.error.as_deref(),
            "model response finished"
        );
    }
}
