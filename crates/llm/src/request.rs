//! What the engine asks a provider for: one projected conversation plus model parameters.

use std::sync::Arc;

use kimi_protocol::{Message, ToolSchema};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// Thinking effort values of surface.md §5.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingEffort {
    Off,
    On,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl ThinkingEffort {
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "off" | "false" | "none" | "disabled" => ThinkingEffort::Off,
            "on" | "true" | "enabled" => ThinkingEffort::On,
            "low" => ThinkingEffort::Low,
            "medium" => ThinkingEffort::Medium,
            "high" => ThinkingEffort::High,
            "xhigh" => ThinkingEffort::Xhigh,
            "max" => ThinkingEffort::Max,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingEffort::Off => "off",
            ThinkingEffort::On => "on",
            ThinkingEffort::Low => "low",
            ThinkingEffort::Medium => "medium",
            ThinkingEffort::High => "high",
            ThinkingEffort::Xhigh => "xhigh",
            ThinkingEffort::Max => "max",
        }
    }

    /// Token budget for budget-style thinking (Anthropic, Gemini 2.x): low 1024, medium 4096,
    /// high/on 32000 (surface.md §5.1).
    pub fn budget_tokens(self) -> u32 {
        match self {
            ThinkingEffort::Off => 0,
            ThinkingEffort::Low => 1024,
            ThinkingEffort::Medium => 4096,
            ThinkingEffort::On
            | ThinkingEffort::High
            | ThinkingEffort::Xhigh
            | ThinkingEffort::Max => 32_000,
        }
    }
}

/// Sampling and budget parameters of one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelParams {
    /// Completion budget (§h.5); `None` lets the provider pick its default.
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    /// `None` = do not mention thinking in the request at all.
    pub thinking: Option<ThinkingEffort>,
    /// Explicit thinking token budget, overriding the effort's default budget.
    pub thinking_budget: Option<u32>,
}

/// One model request. `messages` are already projected (wire messages, no system message);
/// the system prompt travels separately because every wire format places it differently.
/// Messages are shared (`Arc`) so that a long conversation's request reuses the messages the
/// engine's projection cache holds instead of copying them every step.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Arc<Message>>,
    pub tools: Vec<ToolSchema>,
    pub params: ModelParams,
    /// The session id; Kimi sends it as `prompt_cache_key`, others ignore it (§5.4).
    pub cache_key: Option<String>,
    /// Cancelling stops the HTTP request and ends the stream with [`crate::LlmError::Cancelled`].
    pub cancel: CancellationToken,
}

impl ChatRequest {
    pub fn new(system: impl Into<String>, messages: Vec<Message>) -> Self {
        ChatRequest {
            system: system.into(),
            messages: messages.into_iter().map(Arc::new).collect(),
            ..ChatRequest::default()
        }
    }
}
