//! Folding a delta stream into a finished assistant message (core.md §a.1 `mergeInPlace`).

use std::collections::HashMap;

use futures::StreamExt;
use kimi_protocol::{ContentPart, Message, Role, ToolCall};

use crate::delta::{FinishReason, StreamDelta, Usage};
use crate::error::LlmError;
use crate::provider::Provider;
use crate::request::ChatRequest;

/// A finished answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub message: Message,
    pub usage: Option<Usage>,
    pub finish_reason: Option<FinishReason>,
    pub provider_message_id: Option<String>,
}

/// Accumulates deltas. Adjacent text concatenates; adjacent thinking concatenates unless the
/// target already carries a signature (then a new part starts); argument fragments append to
/// the call with the same stream index.
#[derive(Debug, Default)]
pub struct Accumulator {
    content: Vec<ContentPart>,
    calls: Vec<ToolCall>,
    by_index: HashMap<u32, usize>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    message_id: Option<String>,
}

impl Accumulator {
    pub fn new() -> Self {
        Accumulator::default()
    }

    pub fn push(&mut self, delta: StreamDelta) {
        match delta {
            StreamDelta::Text(text) => {
                if let Some(ContentPart::Text { text: last }) = self.content.last_mut() {
                    last.push_str(&text);
                } else {
                    self.content.push(ContentPart::Text { text });
                }
            }
            StreamDelta::Thinking(think) => match self.content.last_mut() {
                Some(ContentPart::Think {
                    think: last,
                    encrypted: None,
                }) => last.push_str(&think),
                _ => self.content.push(ContentPart::Think {
                    think,
                    encrypted: None,
                }),
            },
            StreamDelta::ThinkingSignature(sig) => match self.content.last_mut() {
                Some(ContentPart::Think { encrypted, .. }) if encrypted.is_none() => {
                    *encrypted = Some(sig);
                }
                _ => self.content.push(ContentPart::Think {
                    think: String::new(),
                    encrypted: Some(sig),
                }),
            },
            StreamDelta::ToolCallStart {
                index,
                id,
                name,
                extras,
            } => {
                let mut call = ToolCall::new(id, name, None);
                call.extras = extras;
                self.by_index.insert(index, self.calls.len());
                self.calls.push(call);
            }
            StreamDelta::ToolCallArgs { index, fragment } => {
                // A fragment for an index that never started is kept as an anonymous call so
                // the engine sees (and reports) it instead of it vanishing.
                let slot = match self.by_index.get(&index) {
                    Some(slot) => *slot,
                    None => {
                        self.by_index.insert(index, self.calls.len());
                        self.calls
                            .push(ToolCall::new(String::new(), String::new(), None));
                        self.calls.len() - 1
                    }
                };
                if let Some(call) = self.calls.get_mut(slot) {
                    call.arguments
                        .get_or_insert_with(String::new)
                        .push_str(&fragment);
                }
            }
            StreamDelta::Usage(usage) => self.usage = Some(usage),
            StreamDelta::Finish(reason) => self.finish = Some(reason),
            StreamDelta::MessageId(id) => self.message_id = Some(id),
        }
    }

    pub fn finish_reason(&self) -> Option<&FinishReason> {
        self.finish.as_ref()
    }

    /// The message so far (e.g. to journal a partial answer after an error).
    pub fn snapshot(&self) -> Message {
        let mut message = Message::new(Role::Assistant, self.content.clone());
        message.tool_calls.clone_from(&self.calls);
        message.provider_message_id.clone_from(&self.message_id);
        message
    }

    pub fn finish(self) -> Completion {
        let mut message = Message::new(Role::Assistant, self.content);
        message.tool_calls = self.calls;
        message.provider_message_id.clone_from(&self.message_id);
        Completion {
            message,
            usage: self.usage,
            finish_reason: self.finish,
            provider_message_id: self.message_id,
        }
    }
}

impl Completion {
    /// An answer with no content and no tool calls is an error worth retrying, unless a
    /// filter stopped it (core.md §f.7).
    pub fn check_not_empty(self, provider: &str) -> Result<Completion, LlmError> {
        let empty = self.message.tool_calls.is_empty()
            && self.message.content.iter().all(ContentPart::is_vacuous);
        if empty && self.finish_reason != Some(FinishReason::Filtered) {
            return Err(LlmError::EmptyResponse {
                provider: provider.to_owned(),
                finish: self
                    .finish_reason
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), |r| format!("{r:?}")),
            });
        }
        Ok(self)
    }
}

/// Streams one request to the end and returns the finished message. Any stream error
/// (including a stream that ends without its end marker) and an empty answer are errors.
pub async fn complete(
    provider: &dyn Provider,
    request: ChatRequest,
) -> Result<Completion, LlmError> {
    let mut stream = provider.stream(request).await?;
    let mut acc = Accumulator::new();
    while let Some(item) = stream.next().await {
        acc.push(item?);
    }
    acc.finish().check_not_empty(provider.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn merge_rules_follow_merge_in_place() {
        let mut acc = Accumulator::new();
        for d in [
            StreamDelta::Thinking("a".into()),
            StreamDelta::Thinking("b".into()),
            StreamDelta::ThinkingSignature("s1".into()),
            StreamDelta::Thinking("c".into()),
            StreamDelta::Text("x".into()),
            StreamDelta::Text("y".into()),
            StreamDelta::ToolCallStart {
                index: 3,
                id: "c1".into(),
                name: "Bash".into(),
                extras: None,
            },
            StreamDelta::ToolCallStart {
                index: 5,
                id: "c2".into(),
                name: "Read".into(),
                extras: None,
            },
            StreamDelta::ToolCallArgs {
                index: 5,
                fragment: "{\"p\":".into(),
            },
            StreamDelta::ToolCallArgs {
                index: 3,
                fragment: "{}".into(),
            },
            StreamDelta::ToolCallArgs {
                index: 5,
                fragment: "1}".into(),
            },
            StreamDelta::Finish(FinishReason::ToolCalls),
        ] {
            acc.push(d);
        }
        let done = acc.finish();
        assert_eq!(
            done.message.content,
            vec![
                ContentPart::Think {
                    think: "ab".into(),
                    encrypted: Some("s1".into())
                },
                ContentPart::Think {
                    think: "c".into(),
                    encrypted: None
                },
                ContentPart::text("xy"),
            ]
        );
        assert_eq!(
            done.message.tool_calls,
            vec![
                ToolCall::new("c1", "Bash", Some("{}".into())),
                ToolCall::new("c2", "Read", Some("{\"p\":1}".into())),
            ]
        );
        assert_eq!(done.finish_reason, Some(FinishReason::ToolCalls));
    }
}
