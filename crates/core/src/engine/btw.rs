//! Side questions (`/btw`, surface.md §8.4): the conversation so far, a reminder that this is a
//! side question, and the question go to the session's model without tools. The answer comes
//! back as `Event::BtwAnswered`; nothing is journaled or added to the history, and a running
//! turn goes on undisturbed.

use std::sync::Arc;

use futures::StreamExt;
use kimi_context::projector::ProjectionPolicy;
use kimi_llm::{Accumulator, ChatRequest, StallLimits, stream_watched};
use kimi_protocol::Message;
use kimi_protocol::ops::Event;
use tokio_util::sync::CancellationToken;

use super::runtime::Runtime;

/// Put before the question so the model answers from what it already knows.
const SIDE_QUESTION_REMINDER: &str = "<system-reminder>\nThis is a side question from the user, asked while the main task goes on. Answer it briefly from the conversation so far. You cannot use tools here, and this exchange does not become part of the main conversation.\n</system-reminder>";

/// Answer `question` in the background; the answer (or why there is none) arrives as an event.
pub(crate) fn spawn(rt: &Arc<Runtime>, question: String) {
    let question = question.trim().to_owned();
    if question.is_empty() {
        rt.emit(Event::Error {
            message: "/btw needs a question, e.g. `/btw what does this function return?`"
                .to_owned(),
        });
        return;
    }
    let rt = Arc::clone(rt);
    tokio::spawn(async move {
        let (answer, error) = match ask(&rt, &question).await {
            Ok(answer) => (answer, None),
            Err(err) => {
                tracing::warn!("side question failed: {err}");
                (String::new(), Some(err))
            }
        };
        rt.emit(Event::BtwAnswered {
            question,
            answer,
            error,
        });
    });
}

async fn ask(rt: &Runtime, question: &str) -> Result<String, String> {
    let model = rt.config.model.get();
    let mut messages = rt
        .log()
        .history()
        .project(&ProjectionPolicy::default())
        .messages;
    messages.push(Arc::new(Message::user_text(format!(
        "{SIDE_QUESTION_REMINDER}\n{question}"
    ))));
    let request = ChatRequest {
        system: rt.config.system_prompt.get(),
        messages,
        tools: Vec::new(),
        params: model.params,
        cache_key: Some(rt.config.session_id.clone()),
        cancel: CancellationToken::new(),
    };
    let limits = StallLimits::from_policy(&rt.config.retry);
    let failed =
        |err: kimi_llm::LlmError| format!("the side question could not be answered: {err}");
    let mut stream = stream_watched(model.provider.as_ref(), request, limits)
        .await
        .map_err(failed)?;
    let mut acc = Accumulator::new();
    while let Some(delta) = stream.next().await {
        acc.push(delta.map_err(failed)?);
    }
    let text = acc.finish().message.text();
    if text.trim().is_empty() {
        return Err("the model gave an empty answer to the side question; ask again".to_owned());
    }
    Ok(text)
}
