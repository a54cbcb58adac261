//! The units a provider stream yields: text, thinking, tool-call fragments, usage, finish.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Token usage of one response. `input_other` excludes cache reads and cache writes, so the
/// total input is the sum of the three input fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_other: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub input_cache_read: u64,
    #[serde(default)]
    pub input_cache_creation: u64,
}

impl Usage {
    pub fn input_total(&self) -> u64 {
        self.input_other + self.input_cache_read + self.input_cache_creation
    }
}

/// Why the model stopped, normalised across wire formats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the answer.
    Stop,
    /// The model wants tool results.
    ToolCalls,
    /// The output budget ran out; the answer is truncated.
    Length,
    /// A safety/content filter stopped the answer (the engine fails the turn).
    Filtered,
    /// Any other provider value, kept verbatim.
    Other(String),
}

/// One streamed piece of an assistant answer.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    Text(String),
    Thinking(String),
    /// A signature (Anthropic `signature`, Responses `encrypted_content`, Gemini
    /// `thoughtSignature`) for the thinking streamed so far.
    ThinkingSignature(String),
    /// A tool call begins. `index` is the provider's stream index (unique within a response);
    /// `extras` is provider data that must be sent back with the call (Gemini signatures).
    ToolCallStart {
        index: u32,
        id: String,
        name: String,
        extras: Option<Value>,
    },
    /// A fragment of the JSON arguments of the call with stream index `index`.
    ToolCallArgs {
        index: u32,
        fragment: String,
    },
    /// Usage so far; later values replace earlier ones.
    Usage(Usage),
    Finish(FinishReason),
    /// The provider's id for this response (`chatcmpl-…`, `msg_…`, `resp_…`).
    MessageId(String),
}
