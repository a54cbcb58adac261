//! Classified provider errors (core.md §b.8, §d.9, §f.7): what went wrong, whether a retry can
//! help, and which ones tell the engine to compact or escalate the projection policy.

use std::time::Duration;

use crate::config::KeySource;

/// What the engine should do about an error, independent of the provider that raised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Transient: retry with backoff.
    Transient,
    /// The context window was exceeded: compact, then retry (§d.9).
    ContextOverflow,
    /// The request body was too large (413): degrade, then strip media (§b.8 rule 1).
    RequestTooLarge,
    /// An image was rejected: strip media (§b.8 rule 2).
    ImageFormat,
    /// Message structure rejected (pairing, alternation, empty blocks): strict projection (§b.8 rule 3).
    StructureRejected,
    /// Credentials missing or refused.
    Auth,
    /// Quota or billing exhausted; waiting will not help.
    QuotaExhausted,
    /// Any other refusal of the request.
    BadRequest,
    /// The caller cancelled.
    Cancelled,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error(
        "could not reach {provider} at {url}: {detail}. Check the network, proxy variables (HTTPS_PROXY/ALL_PROXY/NO_PROXY) and the provider's base_url"
    )]
    Connection {
        provider: String,
        url: String,
        detail: String,
    },
    #[error(
        "{provider} did not answer in time: {detail}. The request will be retried; if it keeps happening check the network or the provider's status"
    )]
    Timeout { provider: String, detail: String },
    #[error(
        "{provider} rejected the API key (HTTP {status}): {message}. The key came from {key_source}; fix or replace it there"
    )]
    Auth {
        provider: String,
        status: u16,
        message: String,
        key_source: KeySource,
    },
    #[error(
        "{provider} quota exhausted (HTTP {status}): {message}. Top up the account or switch model; retrying will not help"
    )]
    QuotaExhausted {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("the conversation exceeds {provider}'s context window (HTTP {status}): {message}")]
    ContextOverflow {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider} rejected the request as too large (HTTP 413): {message}")]
    RequestTooLarge { provider: String, message: String },
    #[error("{provider} rejected an image in the request (HTTP {status}): {message}")]
    ImageFormat {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider} rejected the message structure (HTTP {status}): {message}")]
    StructureRejected {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider} answered HTTP {status}: {message}{}", capped_note(*retry_after, *requested_wait))]
    Http {
        provider: String,
        status: u16,
        message: String,
        /// The wait before the retry: the server's `Retry-After`, lowered to
        /// `[loop_control] max_retry_after_s` when it asked for more.
        retry_after: Option<Duration>,
        /// What the server asked for when `retry_after` was lowered to the cap (said in the
        /// message so a shortened wait is never silent).
        requested_wait: Option<Duration>,
    },
    /// The server asked to wait far longer than `[loop_control] max_retry_after_s` allows
    /// (more than [`RETRY_AFTER_FAIL_FACTOR`](crate::retry::RETRY_AFTER_FAIL_FACTOR) times it):
    /// the attempt fails at once instead of sleeping for hours. Not retryable.
    #[error(
        "{provider} answered HTTP {status} ({message}) and asked to wait {}, far more than [loop_control] max_retry_after_s = {} allows; not retrying. Try again later, or raise max_retry_after_s in config.toml (env KIMI_LOOP_MAX_RETRY_AFTER_S) to let kimi-rs wait that long",
        format_wait(*requested), format_wait(*cap)
    )]
    RetryAfterTooLong {
        provider: String,
        status: u16,
        message: String,
        requested: Duration,
        cap: Duration,
    },
    /// One answer grew past [`MAX_RESPONSE_BYTES`](crate::MAX_RESPONSE_BYTES) (text, thinking
    /// and tool-call arguments together): the stream is cut. Not retryable — the same request
    /// would most likely run away again and cost as much.
    #[error(
        "the {provider} answer exceeded {} MiB (text, thinking and tool-call arguments); the stream was cut and the request is not retried. Ask for a shorter answer or split the task",
        limit_bytes / (1024 * 1024)
    )]
    ResponseTooLarge {
        provider: String,
        limit_bytes: usize,
    },
    /// One answer asked for more than
    /// [`MAX_TOOL_CALLS_PER_RESPONSE`](crate::MAX_TOOL_CALLS_PER_RESPONSE) tool calls: the
    /// stream is cut and none of its calls runs. Not retryable (the model would likely repeat it).
    #[error(
        "the {provider} answer asked for more than {limit} tool calls in one response; the stream was cut, none of them ran and the request is not retried. Ask the model to work in smaller batches"
    )]
    TooManyToolCalls { provider: String, limit: usize },
    /// An error event inside an otherwise healthy stream (e.g. Anthropic `overloaded_error`).
    #[error("{provider} reported an error mid-stream ({code}): {message}")]
    StreamError {
        provider: String,
        code: String,
        message: String,
    },
    #[error(
        "the {provider} stream broke before the answer was complete: {detail}. The partial answer was discarded; the request can be retried"
    )]
    StreamInterrupted { provider: String, detail: String },
    #[error("{provider} sent a malformed stream event: {detail}")]
    MalformedStream { provider: String, detail: String },
    /// The answer stopped arriving: nothing before the first-token timeout, or a gap longer
    /// than the stream-idle timeout (retryable; the partial answer is discarded).
    #[error("{}", stall_message(provider, *waited, *first_token))]
    StreamStalled {
        provider: String,
        waited: Duration,
        /// Nothing had arrived yet (the first-token timeout fired, not the idle one).
        first_token: bool,
    },
    /// The answer finished with neither content nor tool calls (retryable, §f.7).
    #[error(
        "{provider} returned an empty answer (finish reason: {finish}); the request can be retried"
    )]
    EmptyResponse { provider: String, finish: String },
    #[error("the request was cancelled")]
    Cancelled,
    #[error("could not build the {provider} request: {detail}")]
    InvalidRequest { provider: String, detail: String },
    /// The provider authenticates with an account login (OAuth) that is missing, expired
    /// beyond refresh, or was revoked: only logging in again helps, so it is not retried.
    #[error("{provider}: {message}")]
    LoginRequired { provider: String, message: String },
}

/// Statuses worth retrying (§h.10).
const RETRYABLE_STATUSES: [u16; 8] = [408, 409, 429, 500, 502, 503, 504, 529];

impl LlmError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            LlmError::Connection { .. }
            | LlmError::Timeout { .. }
            | LlmError::StreamInterrupted { .. }
            | LlmError::MalformedStream { .. }
            | LlmError::StreamError { .. }
            | LlmError::StreamStalled { .. }
            | LlmError::EmptyResponse { .. } => ErrorKind::Transient,
            LlmError::Auth { .. } | LlmError::LoginRequired { .. } => ErrorKind::Auth,
            LlmError::QuotaExhausted { .. } => ErrorKind::QuotaExhausted,
            LlmError::ContextOverflow { .. } => ErrorKind::ContextOverflow,
            LlmError::RequestTooLarge { .. } => ErrorKind::RequestTooLarge,
            LlmError::ImageFormat { .. } => ErrorKind::ImageFormat,
            LlmError::StructureRejected { .. } => ErrorKind::StructureRejected,
            LlmError::Http { status, .. } => {
                if RETRYABLE_STATUSES.contains(status) {
                    ErrorKind::Transient
                } else {
                    ErrorKind::BadRequest
                }
            }
            LlmError::Cancelled => ErrorKind::Cancelled,
            LlmError::InvalidRequest { .. }
            | LlmError::RetryAfterTooLong { .. }
            | LlmError::ResponseTooLarge { .. }
            | LlmError::TooManyToolCalls { .. } => ErrorKind::BadRequest,
        }
    }

    pub fn is_retryable(&self) -> bool {
        self.kind() == ErrorKind::Transient
    }

    /// The server could not be reached at all (connection refused, DNS lookup failed, no
    /// route): retrying helps only if it comes back within seconds, so these get the smaller
    /// [`RetryPolicy::unreachable_max_attempts`](crate::RetryPolicy) budget.
    pub fn is_unreachable(&self) -> bool {
        let LlmError::Connection { detail, .. } = self else {
            return false;
        };
        let detail = detail.to_lowercase();
        contains_any(&detail, UNREACHABLE_PATTERNS)
    }

    /// The server's requested wait (`Retry-After` / `retry-after-ms`), when it gave one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Http { retry_after, .. } => *retry_after,
            LlmError::Connection { .. }
            | LlmError::Timeout { .. }
            | LlmError::Auth { .. }
            | LlmError::QuotaExhausted { .. }
            | LlmError::ContextOverflow { .. }
            | LlmError::RequestTooLarge { .. }
            | LlmError::ImageFormat { .. }
            | LlmError::StructureRejected { .. }
            | LlmError::StreamError { .. }
            | LlmError::StreamInterrupted { .. }
            | LlmError::MalformedStream { .. }
            | LlmError::StreamStalled { .. }
            | LlmError::EmptyResponse { .. }
            | LlmError::Cancelled
            | LlmError::InvalidRequest { .. }
            | LlmError::RetryAfterTooLong { .. }
            | LlmError::ResponseTooLarge { .. }
            | LlmError::TooManyToolCalls { .. }
            | LlmError::LoginRequired { .. } => None,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            LlmError::Auth { status, .. }
            | LlmError::QuotaExhausted { status, .. }
            | LlmError::ContextOverflow { status, .. }
            | LlmError::ImageFormat { status, .. }
            | LlmError::StructureRejected { status, .. }
            | LlmError::Http { status, .. }
            | LlmError::RetryAfterTooLong { status, .. } => Some(*status),
            LlmError::RequestTooLarge { .. } => Some(413),
            LlmError::Connection { .. }
            | LlmError::Timeout { .. }
            | LlmError::StreamError { .. }
            | LlmError::StreamInterrupted { .. }
            | LlmError::MalformedStream { .. }
            | LlmError::StreamStalled { .. }
            | LlmError::EmptyResponse { .. }
            | LlmError::Cancelled
            | LlmError::InvalidRequest { .. }
            | LlmError::ResponseTooLarge { .. }
            | LlmError::TooManyToolCalls { .. }
            | LlmError::LoginRequired { .. } => None,
        }
    }

    /// A short stable name for events (`turn.step.retrying.errorName`).
    pub fn name(&self) -> &'static str {
        match self {
            LlmError::Connection { .. } => "connection_error",
            LlmError::Timeout { .. } => "timeout",
            LlmError::Auth { .. } => "auth_error",
            LlmError::QuotaExhausted { .. } => "quota_exhausted",
            LlmError::ContextOverflow { .. } => "context_overflow",
            LlmError::RequestTooLarge { .. } => "request_too_large",
            LlmError::ImageFormat { .. } => "image_format",
            LlmError::StructureRejected { .. } => "structure_rejected",
            LlmError::Http { .. } => "http_error",
            LlmError::StreamError { .. } => "stream_error",
            LlmError::StreamInterrupted { .. } => "stream_interrupted",
            LlmError::MalformedStream { .. } => "malformed_stream",
            LlmError::StreamStalled { .. } => "stream_stalled",
            LlmError::EmptyResponse { .. } => "empty_response",
            LlmError::Cancelled => "cancelled",
            LlmError::InvalidRequest { .. } => "invalid_request",
            LlmError::RetryAfterTooLong { .. } => "retry_after_too_long",
            LlmError::ResponseTooLarge { .. } => "response_too_large",
            LlmError::TooManyToolCalls { .. } => "too_many_tool_calls",
            LlmError::LoginRequired { .. } => "login_required",
        }
    }
}

/// How reqwest/hyper/the OS word a connection that was never established.
const UNREACHABLE_PATTERNS: &[&str] = &[
    "connection refused",
    "tcp connect error",
    "dns error",
    "failed to lookup address",
    "name or service not known",
    "nodename nor servname",
    "no route to host",
    "network is unreachable",
];

/// `3 s`, `1.5 s`, `250 ms`: how long a stalled stream was waited for.
pub(crate) fn format_wait(waited: Duration) -> String {
    let ms = waited.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", waited.as_secs_f64())
    }
}

/// `; server asked to wait 600 s; waiting 300 s ([loop_control] max_retry_after_s)` when the
/// server's wait was lowered to the cap, else nothing.
fn capped_note(waiting: Option<Duration>, requested: Option<Duration>) -> String {
    match (waiting, requested) {
        (Some(waiting), Some(requested)) => format!(
            "; server asked to wait {}; waiting {} ([loop_control] max_retry_after_s)",
            format_wait(requested),
            format_wait(waiting)
        ),
        _ => String::new(),
    }
}

fn stall_message(provider: &str, waited: Duration, first_token: bool) -> String {
    let wait = format_wait(waited);
    if first_token {
        format!(
            "the {provider} stream stalled: no first token after {wait}. The request will be retried; if the model needs longer, raise [loop_control] first_token_timeout_s in config.toml"
        )
    } else {
        format!(
            "the {provider} stream stalled: no data for {wait}. The partial answer was discarded and the request will be retried; if the model pauses longer, raise [loop_control] stream_idle_timeout_s in config.toml"
        )
    }
}

/// Context-window overflow phrasings of OpenAI, Kimi/Moonshot, Anthropic, Gemini and the
/// common OpenAI-compatible servers (vLLM, llama.cpp, Ollama).
const OVERFLOW_PATTERNS: &[&str] = &[
    "context length",
    "context_length_exceeded",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "exceeded model token limit",
    "exceeds the maximum number of tokens",
    "reduce the length",
    "tokens exceed",
    "exceed context limit",
    "exceeds the context",
    "context size",
    "input too long",
];

const STRUCTURE_PATTERNS: &[&str] = &[
    "tool_use",
    "tool_result",
    "tool_call_id",
    "tool_calls",
    "roles must alternate",
    "first message must use the user role",
    "text content blocks must be non-empty",
    "must contain non-whitespace",
    "must not be empty",
    "function response parts",
    "function call turn",
];

const IMAGE_PATTERNS: &[&str] = &[
    "image format",
    "invalid image",
    "unsupported image",
    "could not process image",
    "image data",
    "invalid base64",
    "image_parse_error",
    "media type",
];

const QUOTA_PATTERNS: &[&str] = &[
    "insufficient_quota",
    "exceeded_current_quota",
    "exceeded your current quota",
    "quota exhausted",
    "quota_exhausted",
    "insufficient balance",
    "suspended due to insufficient",
    "billing",
];

fn contains_any(haystack: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| haystack.contains(n))
}

/// Everything a classifier needs to know about a failed HTTP response.
pub(crate) struct HttpFailure<'a> {
    pub provider: &'a str,
    pub status: u16,
    pub body: &'a str,
    pub retry_after: Option<Duration>,
    pub key_source: &'a KeySource,
}

/// Turns a non-2xx response into a classified error. The order matters: overflow is checked
/// before structure and image errors because §b.8 excludes it from both.
pub(crate) fn classify_http(failure: HttpFailure<'_>) -> LlmError {
    let HttpFailure {
        provider,
        status,
        body,
        retry_after,
        key_source,
    } = failure;
    let message = error_message(body);
    let lower = format!("{message} {body}").to_lowercase();
    let provider = provider.to_owned();
    if status == 401 || status == 403 {
        return LlmError::Auth {
            provider,
            status,
            message,
            key_source: key_source.clone(),
        };
    }
    if (status == 429 || status == 402 || status == 403) && contains_any(&lower, QUOTA_PATTERNS) {
        return LlmError::QuotaExhausted {
            provider,
            status,
            message,
        };
    }
    if matches!(status, 400 | 413 | 422) && contains_any(&lower, OVERFLOW_PATTERNS) {
        return LlmError::ContextOverflow {
            provider,
            status,
            message,
        };
    }
    if status == 413 {
        return LlmError::RequestTooLarge { provider, message };
    }
    if status == 400 && lower.contains("image") && contains_any(&lower, IMAGE_PATTERNS) {
        return LlmError::ImageFormat {
            provider,
            status,
            message,
        };
    }
    if matches!(status, 400 | 422) && contains_any(&lower, STRUCTURE_PATTERNS) {
        return LlmError::StructureRejected {
            provider,
            status,
            message,
        };
    }
    LlmError::Http {
        provider,
        status,
        message,
        retry_after,
        requested_wait: None,
    }
}

/// Classifies an error event that arrived inside a 200 stream (no status available).
pub(crate) fn classify_stream_error(provider: &str, code: &str, message: &str) -> LlmError {
    let lower = format!("{code} {message}").to_lowercase();
    let provider = provider.to_owned();
    if contains_any(&lower, OVERFLOW_PATTERNS) {
        return LlmError::ContextOverflow {
            provider,
            status: 400,
            message: message.to_owned(),
        };
    }
    if contains_any(&lower, QUOTA_PATTERNS) {
        return LlmError::QuotaExhausted {
            provider,
            status: 429,
            message: message.to_owned(),
        };
    }
    LlmError::StreamError {
        provider,
        code: code.to_owned(),
        message: message.to_owned(),
    }
}

/// The human part of an error body: `error.message`, `message`, `error` as a string, or the
/// body itself (trimmed) when it is not JSON.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        let v = match v {
            serde_json::Value::Array(items) => items.first()?,
            other => other,
        };
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("detail"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    });
    match from_json {
        Some(text) => text,
        None => {
            let trimmed = body.trim();
            if trimmed.is_empty() {
                "(empty body)".to_owned()
            } else {
                trimmed.chars().take(500).collect()
            }
        }
    }
}

/// `retry-after-ms` (OpenAI) wins over `Retry-After` (seconds, fractions allowed). Zero or
/// unparsable values mean "no hint" (§f.7: only a positive value counts).
pub(crate) fn parse_retry_after(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms > 0.0
        && ms.is_finite()
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let secs = retry_after.and_then(|v| v.trim().parse::<f64>().ok())?;
    (secs > 0.0 && secs.is_finite() && secs < 86_400.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(status: u16, body: &str) -> LlmError {
        classify_http(HttpFailure {
            provider: "p",
            status,
            body,
            retry_after: None,
            key_source: &KeySource::Unknown,
        })
    }

    #[test]
    fn overflow_messages_of_each_provider_are_recognised() {
        for (status, body) in [
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens","code":"context_length_exceeded"}}"#,
            ),
            (
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
            ),
            (
                400,
                r#"{"error":{"message":"Invalid request: Your request exceeded model token limit: 262144","type":"invalid_request_error"}}"#,
            ),
        ] {
            assert_eq!(
                classify(status, body).kind(),
                ErrorKind::ContextOverflow,
                "{body}"
            );
        }
    }

    #[test]
    fn statuses_and_patterns_classify() {
        assert_eq!(classify(429, "slow down").kind(), ErrorKind::Transient);
        assert_eq!(
            classify(429, r#"{"error":{"type":"exceeded_current_quota_error","message":"Your account quota exhausted"}}"#).kind(),
            ErrorKind::QuotaExhausted
        );
        assert_eq!(
            classify(413, "request entity too large").kind(),
            ErrorKind::RequestTooLarge
        );
        assert_eq!(
            classify(400, r#"{"error":{"message":"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after"}}"#).kind(),
            ErrorKind::StructureRejected
        );
        assert_eq!(
            classify(
                400,
                r#"{"error":{"message":"Invalid image format: image/bmp"}}"#
            )
            .kind(),
            ErrorKind::ImageFormat
        );
        assert_eq!(classify(400, "nope").kind(), ErrorKind::BadRequest);
        for s in [408, 409, 500, 502, 503, 504, 529] {
            assert!(classify(s, "x").is_retryable(), "{s}");
        }
        assert!(!classify(404, "x").is_retryable());
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(
            parse_retry_after(None, Some("2")),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after(Some("150"), Some("2")),
            Some(Duration::from_millis(150))
        );
        assert_eq!(parse_retry_after(None, Some("0")), None);
        assert_eq!(parse_retry_after(None, Some("soon")), None);
    }
}
