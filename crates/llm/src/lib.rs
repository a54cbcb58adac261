//! Provider trait, streaming wire formats (OpenAI Chat, Kimi, OpenAI Responses, Anthropic,
//! Gemini/Vertex), SSE parsing, error classification, retries, model config and a scripted
//! in-process provider.
//!
//! The flow is: [`config::resolve_model`] → [`build_provider`] → [`Provider::stream`] with a
//! [`ChatRequest`] → a stream of [`StreamDelta`]s → [`Accumulator`] (or [`complete`]) → a
//! finished assistant message. [`with_retry`] wraps one attempt with the §h.10 backoff;
//! [`stream_watched`] bounds the wait for the first token and between tokens.

mod accumulate;
mod anthropic;
pub mod config;
mod delta;
mod error;
mod gemini;
mod http;
mod openai_chat;
mod openai_responses;
mod provider;
mod request;
mod request_log;
mod retry;
pub mod scripted;
pub mod sse;
mod stall;
mod wire_util;

pub use accumulate::{Accumulator, Completion, complete};
pub use config::{ConfigError, KeySource, KimiTuning, LlmConfig, ProviderType, ResolvedModel};
pub use delta::{FinishReason, StreamDelta, Usage};
pub use error::{ErrorKind, LlmError};
pub use http::decode_sse;
pub use provider::{DeltaStream, Provider, build_provider};
pub use request::{ChatRequest, ModelParams, ThinkingEffort};
pub use retry::{
    DEFAULT_MAX_RETRY_AFTER, RETRY_AFTER_FAIL_FACTOR, RetryEvent, RetryPolicy, cap_retry_after,
    with_retry,
};
pub use stall::{MAX_RESPONSE_BYTES, MAX_TOOL_CALLS_PER_RESPONSE, StallLimits, stream_watched};

/// Body builders, exposed for the request-overhead benchmark and for tests that assert the
/// exact JSON a provider would send. Not part of the engine's API.
pub mod wire {
    pub use crate::anthropic::build_body as anthropic_body;
    pub use crate::gemini::build_body as gemini_body;
    pub use crate::openai_chat::build_body as openai_chat_body;
    pub use crate::openai_responses::build_body as openai_responses_body;
}
