//! Scripts of model answers and an in-process provider that plays them. The same script type
//! drives the loopback HTTP server of `kimi-test-support` (which renders it in each real wire
//! format) and the offline `--demo` run.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::KeySource;
use crate::delta::{FinishReason, StreamDelta, Usage};
use crate::error::{
    HttpFailure, LlmError, classify_http, classify_stream_error, parse_retry_after,
};
use crate::provider::{DeltaStream, Provider};
use crate::request::ChatRequest;

/// One step of a scripted answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ScriptEvent {
    Text {
        text: String,
    },
    Thinking {
        text: String,
    },
    ThinkingSignature {
        signature: String,
    },
    ToolCallStart {
        index: u32,
        id: String,
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extras: Option<Value>,
    },
    ToolCallArgs {
        index: u32,
        fragment: String,
    },
    Usage {
        usage: Usage,
    },
    Finish {
        reason: FinishReason,
    },
    MessageId {
        id: String,
    },
    /// Pause before the next event (for timeout and cancellation tests).
    Delay {
        ms: u64,
    },
    /// An error event inside the stream (e.g. Anthropic `overloaded_error`).
    StreamError {
        code: String,
        message: String,
    },
    /// Drop the connection here, mid-answer.
    Disconnect,
    /// Raw bytes sent as-is (the HTTP server writes them verbatim; in-process they are a
    /// malformed-stream error).
    Malformed {
        raw: String,
    },
}

/// One scripted answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ScriptTurn {
    Reply {
        events: Vec<ScriptEvent>,
        /// HTTP server only: write the body in pieces of this many bytes (splitting events,
        /// lines and UTF-8 characters at arbitrary points).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chunk_size: Option<usize>,
    },
    Error {
        status: u16,
        body: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
    },
}

impl ScriptEvent {
    pub fn text(text: impl Into<String>) -> Self {
        ScriptEvent::Text { text: text.into() }
    }

    pub fn thinking(text: impl Into<String>) -> Self {
        ScriptEvent::Thinking { text: text.into() }
    }

    /// The server goes quiet for an hour, connection open (a stalled stream: placed after a
    /// first chunk, only the client's stream-idle timeout ends the wait).
    pub fn stall() -> Self {
        ScriptEvent::Delay { ms: 3_600_000 }
    }

    pub fn finish(reason: FinishReason) -> Self {
        ScriptEvent::Finish { reason }
    }

    pub fn usage(input_other: u64, output: u64) -> Self {
        ScriptEvent::Usage {
            usage: Usage {
                input_other,
                output,
                ..Usage::default()
            },
        }
    }

    /// A complete tool call whose JSON `arguments` arrive in `pieces` roughly equal fragments
    /// (split on character boundaries).
    pub fn tool_call(
        index: u32,
        id: &str,
        name: &str,
        arguments: &str,
        pieces: usize,
    ) -> Vec<ScriptEvent> {
        let mut events = vec![ScriptEvent::ToolCallStart {
            index,
            id: id.to_owned(),
            name: name.to_owned(),
            extras: None,
        }];
        let chars: Vec<char> = arguments.chars().collect();
        let size = chars.len().div_ceil(pieces.max(1)).max(1);
        for chunk in chars.chunks(size) {
            events.push(ScriptEvent::ToolCallArgs {
                index,
                fragment: chunk.iter().collect(),
            });
        }
        events
    }
}

impl ScriptTurn {
    pub fn reply(events: Vec<ScriptEvent>) -> Self {
        ScriptTurn::Reply {
            events,
            chunk_size: None,
        }
    }

    /// A plain text answer with usage and a `stop` finish.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptTurn::reply(vec![
            ScriptEvent::text(text),
            ScriptEvent::usage(10, 5),
            ScriptEvent::finish(FinishReason::Stop),
        ])
    }

    /// Tool calls `(id, name, arguments)` in one answer, finishing with `tool_calls`.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Self {
        let mut events = Vec::new();
        for (index, (id, name, args)) in (0u32..).zip(calls) {
            events.extend(ScriptEvent::tool_call(index, id, name, args, 1));
        }
        events.push(ScriptEvent::usage(10, 5));
        events.push(ScriptEvent::finish(FinishReason::ToolCalls));
        ScriptTurn::reply(events)
    }

    pub fn error(status: u16, body: impl Into<String>) -> Self {
        ScriptTurn::Error {
            status,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    pub fn with_chunk_size(self, size: usize) -> Self {
        match self {
            ScriptTurn::Reply { events, .. } => ScriptTurn::Reply {
                events,
                chunk_size: Some(size),
            },
            other @ ScriptTurn::Error { .. } => other,
        }
    }
}

/// The error a scripted HTTP error turn stands for, classified like a real response.
pub fn error_for(
    provider: &str,
    status: u16,
    body: &str,
    headers: &[(String, String)],
    key_source: &KeySource,
) -> LlmError {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    classify_http(HttpFailure {
        provider,
        status,
        body,
        retry_after: parse_retry_after(header("retry-after-ms"), header("retry-after")),
        key_source,
    })
}

/// Plays a script in process, one turn per request, recording every request.
pub struct ScriptedProvider {
    name: String,
    model: String,
    turns: Mutex<VecDeque<ScriptTurn>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl ScriptedProvider {
    pub fn new(turns: Vec<ScriptTurn>) -> Self {
        ScriptedProvider {
            name: "scripted".to_owned(),
            model: "scripted-model".to_owned(),
            turns: Mutex::new(turns.into()),
            requests: Mutex::new(Vec::new()),
        }
    }

    pub fn push(&self, turn: ScriptTurn) {
        if let Ok(mut turns) = self.turns.lock() {
            turns.push_back(turn);
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    pub fn remaining(&self) -> usize {
        self.turns.lock().map(|t| t.len()).unwrap_or(0)
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn stream(&self, request: ChatRequest) -> Result<DeltaStream, LlmError> {
        let cancel = request.cancel.clone();
        let number = {
            let mut requests = self.requests.lock().map_err(|_| poisoned(&self.name))?;
            requests.push(request);
            requests.len()
        };
        let turn = self
            .turns
            .lock()
            .map_err(|_| poisoned(&self.name))?
            .pop_front();
        let events = match turn {
            None => {
                return Err(LlmError::InvalidRequest {
                    provider: self.name.clone(),
                    detail: format!(
                        "the script has no answer left for request {number}; add more turns to the script"
                    ),
                });
            }
            Some(ScriptTurn::Error {
                status,
                body,
                headers,
            }) => {
                return Err(error_for(
                    &self.name,
                    status,
                    &body,
                    &headers,
                    &KeySource::Scripted,
                ));
            }
            Some(ScriptTurn::Reply { events, .. }) => events,
        };
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        let provider = self.name.clone();
        let state = (VecDeque::from(events), false, false);
        Ok(Box::pin(futures::stream::unfold(
            state,
            move |(mut events, mut finished, done)| {
                let provider = provider.clone();
                let cancel = cancel.clone();
                async move {
                    if done {
                        return None;
                    }
                    loop {
                        if cancel.is_cancelled() {
                            return Some((Err(LlmError::Cancelled), (events, finished, true)));
                        }
                        let Some(event) = events.pop_front() else {
                            if finished {
                                return None;
                            }
                            let err = LlmError::StreamInterrupted {
                                provider,
                                detail: "the scripted answer ended without a finish".to_owned(),
                            };
                            return Some((Err(err), (events, finished, true)));
                        };
                        let delta = match event {
                            ScriptEvent::Text { text } => StreamDelta::Text(text),
                            ScriptEvent::Thinking { text } => StreamDelta::Thinking(text),
                            ScriptEvent::ThinkingSignature { signature } => {
                                StreamDelta::ThinkingSignature(signature)
                            }
                            ScriptEvent::ToolCallStart {
                                index,
                                id,
                                name,
                                extras,
                            } => StreamDelta::ToolCallStart {
                                index,
                                id,
                                name,
                                extras,
                            },
                            ScriptEvent::ToolCallArgs { index, fragment } => {
                                StreamDelta::ToolCallArgs { index, fragment }
                            }
                            ScriptEvent::Usage { usage } => StreamDelta::Usage(usage),
                            ScriptEvent::Finish { reason } => {
                                finished = true;
                                StreamDelta::Finish(reason)
                            }
                            ScriptEvent::MessageId { id } => StreamDelta::MessageId(id),
                            ScriptEvent::Delay { ms } => {
                                tokio::select! {
                                    () = cancel.cancelled() => {}
                                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                                }
                                continue;
                            }
                            ScriptEvent::StreamError { code, message } => {
                                let err = classify_stream_error(&provider, &code, &message);
                                return Some((Err(err), (events, finished, true)));
                            }
                            ScriptEvent::Disconnect => {
                                let err = LlmError::StreamInterrupted {
                                    provider,
                                    detail: "the scripted connection dropped mid-answer".to_owned(),
                                };
                                return Some((Err(err), (events, finished, true)));
                            }
                            ScriptEvent::Malformed { raw } => {
                                let err = LlmError::MalformedStream {
                                    provider,
                                    detail: format!("scripted malformed data `{raw}`"),
                                };
                                return Some((Err(err), (events, finished, true)));
                            }
                        };
                        return Some((Ok(delta), (events, finished, false)));
                    }
                }
            },
        )))
    }
}

fn poisoned(provider: &str) -> LlmError {
    LlmError::InvalidRequest {
        provider: provider.to_owned(),
        detail: "the scripted provider's state was poisoned by a panicking test".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accumulate::complete;
    use kimi_protocol::{ContentPart, ToolCall};

    #[tokio::test]
    async fn plays_turns_in_order_and_records_requests() {
        let provider = ScriptedProvider::new(vec![
            ScriptTurn::tool_calls(&[("c1", "Bash", r#"{"command":"ls"}"#)]),
            ScriptTurn::text("done"),
            ScriptTurn::error(429, r#"{"error":{"message":"slow"}}"#),
        ]);
        let first = complete(&provider, ChatRequest::new("sys", Vec::new()))
            .await
            .unwrap();
        assert_eq!(
            first.message.tool_calls,
            vec![ToolCall::new(
                "c1",
                "Bash",
                Some(r#"{"command":"ls"}"#.into())
            )]
        );
        assert_eq!(first.finish_reason, Some(FinishReason::ToolCalls));
        let second = complete(&provider, ChatRequest::new("sys", Vec::new()))
            .await
            .unwrap();
        assert_eq!(second.message.content, vec![ContentPart::text("done")]);
        let third = complete(&provider, ChatRequest::new("sys", Vec::new()))
            .await
            .unwrap_err();
        assert!(third.is_retryable());
        assert_eq!(provider.requests().len(), 3);
        let none = complete(&provider, ChatRequest::new("sys", Vec::new()))
            .await
            .unwrap_err();
        assert!(none.to_string().contains("no answer left"), "{none}");
    }

    #[tokio::test]
    async fn disconnect_and_missing_finish_are_interruptions() {
        let provider = ScriptedProvider::new(vec![
            ScriptTurn::reply(vec![ScriptEvent::text("par"), ScriptEvent::Disconnect]),
            ScriptTurn::reply(vec![ScriptEvent::text("short")]),
        ]);
        for _ in 0..2 {
            let err = complete(&provider, ChatRequest::new("", Vec::new()))
                .await
                .unwrap_err();
            assert!(matches!(err, LlmError::StreamInterrupted { .. }), "{err}");
        }
    }

    #[test]
    fn script_round_trips_through_json() {
        let turn = ScriptTurn::tool_calls(&[("a", "Read", "{}")]);
        let text = serde_json::to_string(&turn).unwrap();
        let back: ScriptTurn = serde_json::from_str(&text).unwrap();
        assert_eq!(back, turn);
    }
}
