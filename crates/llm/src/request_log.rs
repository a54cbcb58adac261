//! What every model request leaves in the log: provider, model, endpoint path, header *names*
//! (never values: they carry the API key), body size, status, time to the response headers and
//! to the first body chunk, bytes received, duration and how the stream ended. Retries are
//! logged by [`crate::retry`] with their attempt number and reason.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use reqwest::header::HeaderMap;

use crate::config::ResolvedModel;
use crate::error::LlmError;

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

    /// A 2xx answer: the body is metered as it is read and summarised when it ends.
    pub(crate) fn meter<S>(self, status: u16, body: S) -> Metered<S> {
        let headers_ms = millis(self.started.elapsed());
        tracing::debug!(
            provider = %self.provider,
            endpoint = %self.endpoint,
            status,
            headers_ms,
            "model response headers received"
        );
        Metered {
            body,
            log: self,
            status,
            headers_ms,
            bytes: 0,
            first_chunk: None,
            end: None,
        }
    }
}

/// A response body that counts what passes through and logs one summary line when dropped.
pub(crate) struct Metered<S> {
    body: S,
    log: RequestLog,
    status: u16,
    headers_ms: u64,
    bytes: u64,
    first_chunk: Option<Duration>,
    end: Option<&'static str>,
}

impl<S, E> Stream for Metered<S>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
{
    type Item = Result<bytes::Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.body).poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(chunk))) => {
                self.bytes = self.bytes.saturating_add(chunk.len() as u64);
                if self.first_chunk.is_none() {
                    self.first_chunk = Some(self.log.started.elapsed());
                }
            }
            Poll::Ready(Some(Err(_))) => self.end = Some("read error"),
            Poll::Ready(None) => self.end = Some("end of body"),
            Poll::Pending => {}
        }
        polled
    }
}

impl<S> Drop for Metered<S> {
    fn drop(&mut self) {
        let log = &self.log;
        tracing::info!(
            provider = %log.provider,
            model = %log.model,
            endpoint = %log.endpoint,
            status = self.status,
            bytes = self.bytes,
            headers_ms = self.headers_ms,
            first_chunk_ms = self.first_chunk.map(millis),
            duration_ms = millis(log.started.elapsed()),
            // "closed by the reader": the decoder saw the end marker, or the turn stopped.
            end = self.end.unwrap_or("closed by the reader"),
            "model response finished"
        );
    }
}
