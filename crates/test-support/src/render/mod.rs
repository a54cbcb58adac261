//! Renders a scripted answer as the bytes a real provider would send.

mod anthropic;
mod gemini;
mod openai_chat;
mod responses;

use std::time::Duration;

use kimi_llm::FinishReason;
use kimi_llm::scripted::ScriptEvent;
use serde_json::Value;

/// The wire format a request path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    OpenAiChat,
    Responses,
    Anthropic,
    Gemini,
}

impl WireFormat {
    /// Chosen by endpoint path, so one server serves every provider.
    pub fn from_path(path: &str) -> Option<Self> {
        let path = path.split('?').next().unwrap_or(path);
        if path.ends_with("/chat/completions") {
            Some(WireFormat::OpenAiChat)
        } else if path.ends_with("/responses") {
            Some(WireFormat::Responses)
        } else if path.ends_with("/messages") {
            Some(WireFormat::Anthropic)
        } else if path.contains(":streamGenerateContent") {
            Some(WireFormat::Gemini)
        } else {
            None
        }
    }
}

/// A piece of the response body.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Bytes(Vec<u8>),
    Delay(Duration),
    /// Abort the connection (no clean end of the chunked body).
    Disconnect,
}

/// Renders `events` in `format`; `chunk_size` re-cuts the bytes into pieces of that size.
pub fn render(format: WireFormat, events: &[ScriptEvent], chunk_size: Option<usize>) -> Vec<Frame> {
    let frames = match format {
        WireFormat::OpenAiChat => openai_chat::render(events),
        WireFormat::Responses => responses::render(events),
        WireFormat::Anthropic => anthropic::render(events),
        WireFormat::Gemini => gemini::render(events),
    };
    match chunk_size {
        Some(size) if size > 0 => rechunk(frames, size),
        Some(_) | None => frames,
    }
}

fn rechunk(frames: Vec<Frame>, size: usize) -> Vec<Frame> {
    let mut out = Vec::new();
    for frame in frames {
        match frame {
            Frame::Bytes(bytes) => out.extend(bytes.chunks(size).map(|c| Frame::Bytes(c.to_vec()))),
            other @ (Frame::Delay(_) | Frame::Disconnect) => out.push(other),
        }
    }
    out
}

/// `data: <json>\n\n`, optionally preceded by `event: <name>`.
pub(crate) fn sse(event: Option<&str>, data: &Value, line_end: &str) -> Frame {
    let mut text = String::new();
    if let Some(name) = event {
        text.push_str("event: ");
        text.push_str(name);
        text.push_str(line_end);
    }
    text.push_str("data: ");
    text.push_str(&data.to_string());
    text.push_str(line_end);
    text.push_str(line_end);
    Frame::Bytes(text.into_bytes())
}

/// The frames every format renders the same way; `None` means "format-specific".
pub(crate) fn common_frame(event: &ScriptEvent) -> Option<Frame> {
    match event {
        ScriptEvent::Delay { ms } => Some(Frame::Delay(Duration::from_millis(*ms))),
        ScriptEvent::Disconnect => Some(Frame::Disconnect),
        ScriptEvent::Malformed { raw } => Some(Frame::Bytes(raw.clone().into_bytes())),
        ScriptEvent::Text { .. }
        | ScriptEvent::Thinking { .. }
        | ScriptEvent::ThinkingSignature { .. }
        | ScriptEvent::ToolCallStart { .. }
        | ScriptEvent::ToolCallArgs { .. }
        | ScriptEvent::Usage { .. }
        | ScriptEvent::Finish { .. }
        | ScriptEvent::MessageId { .. }
        | ScriptEvent::StreamError { .. } => None,
    }
}

pub(crate) fn message_id(events: &[ScriptEvent], default: &str) -> String {
    events
        .iter()
        .find_map(|e| match e {
            ScriptEvent::MessageId { id } => Some(id.clone()),
            _ => None,
        })
        .unwrap_or_else(|| default.to_owned())
}

pub(crate) fn openai_finish(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop => "stop".to_owned(),
        FinishReason::ToolCalls => "tool_calls".to_owned(),
        FinishReason::Length => "length".to_owned(),
        FinishReason::Filtered => "content_filter".to_owned(),
        FinishReason::Other(other) => other.clone(),
    }
}
