//! Reading one model response for a step: the request goes out with the stall limits of the
//! retry policy (no first token / no data for too long fails the attempt, retryably), deltas
//! reach the front ends as they come; and tools still on their way (MCP servers connecting in
//! the background) are waited for only when the model calls one of them.

use futures::StreamExt;
use kimi_llm::{Accumulator, ChatRequest, LlmError, StallLimits, StreamDelta, stream_watched};
use kimi_protocol::ops::Event;
use tokio_util::sync::CancellationToken;

use super::runtime::Runtime;

/// How long the first request of a launch waits for tools still on their way (MCP servers).
pub(super) const LATE_TOOLS_GRACE: std::time::Duration = std::time::Duration::from_millis(30);

/// A call to a tool whose source is still loading (an MCP server connecting, e.g. one the
/// model knows from a resumed session) waits for it rather than failing as unknown; the wait
/// ends when the source is ready or has failed (its start-up timeout bounds it) or on cancel.
pub(super) async fn wait_for_late_tools(
    rt: &Runtime,
    calls: &[kimi_protocol::ToolCall],
    cancel: &CancellationToken,
) {
    let Some(late) = rt.config.tools.late() else {
        return;
    };
    for call in calls {
        if rt.config.tools.get(&call.name).is_some() {
            continue;
        }
        tokio::select! {
            () = late.wait_for(&call.name) => {}
            () = cancel.cancelled() => return,
        }
    }
}

/// Read one response; deltas go to the front ends as they come.
pub(super) async fn stream_once(
    rt: &Runtime,
    request: ChatRequest,
    acc: &mut Accumulator,
    cancel: &CancellationToken,
) -> Result<(), LlmError> {
    // A server that stops sending fails the attempt (retryably) instead of hanging the turn.
    let limits = StallLimits::from_policy(&rt.config.retry);
    // The model of this request: a switch while it streams applies from the next one.
    let provider = rt.config.model.get().provider;
    let mut stream = tokio::select! {
        stream = stream_watched(provider.as_ref(), request, limits) => stream?,
        () = cancel.cancelled() => return Err(LlmError::Cancelled),
    };
    loop {
        let next = tokio::select! {
            next = stream.next() => next,
            () = cancel.cancelled() => return Err(LlmError::Cancelled),
        };
        match next {
            None => return Ok(()),
            Some(Err(err)) => return Err(err),
            Some(Ok(delta)) => {
                match &delta {
                    StreamDelta::Text(text) => {
                        rt.emit(Event::AssistantDelta { text: text.clone() })
                    }
                    StreamDelta::Thinking(text) => {
                        rt.emit(Event::ThinkingDelta { text: text.clone() })
                    }
                    StreamDelta::ThinkingSignature(_)
                    | StreamDelta::ToolCallStart { .. }
                    | StreamDelta::ToolCallArgs { .. }
                    | StreamDelta::Usage(_)
                    | StreamDelta::Finish(_)
                    | StreamDelta::MessageId(_) => {}
                }
                acc.push(delta);
            }
        }
    }
}
