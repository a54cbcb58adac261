//! The engine's side of AskUserQuestion: a [`QuestionHost`] that announces the questions to the
//! front ends as `Event::QuestionRequested` and waits for the matching `Op::Answer` (routed
//! here by the agent's dispatcher) or for the turn's cancellation.
//!
//! The main agent's tool context carries a [`QuestionBroker`]; subagents get none, so their
//! AskUserQuestion answers that the user cannot be asked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use kimi_protocol::ops::Event;
use kimi_tools::ToolContext;
use kimi_tools::builtin::ask::{
    AnswerError, Question, QuestionHost, QuestionOutcome, parse_answers,
};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::records as rec;

/// Why an `Op::Answer` was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRejected {
    #[error("no question {0} is waiting for an answer (already answered or cancelled)")]
    NotPending(String),
    #[error("answer to question {request_id} not accepted: {error}; the question is still waiting")]
    Invalid {
        request_id: String,
        error: AnswerError,
    },
}

struct Waiting {
    questions: Vec<Question>,
    reply: oneshot::Sender<QuestionOutcome>,
}

#[derive(Default)]
struct Inner {
    events: Option<mpsc::UnboundedSender<Event>>,
    pending: HashMap<String, Waiting>,
}

/// Questions waiting for the user, keyed by request id.
#[derive(Default)]
pub struct QuestionBroker {
    inner: Mutex<Inner>,
}

impl QuestionBroker {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A fresh broker as the tool context's question host.
    pub fn host() -> Arc<dyn QuestionHost> {
        Self::new()
    }

    /// The broker behind a tool context, if it has one of ours.
    pub fn of(ctx: &ToolContext) -> Option<Arc<QuestionBroker>> {
        let host: Arc<dyn std::any::Any + Send + Sync> = ctx.questions.clone()?;
        host.downcast::<QuestionBroker>().ok()
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connect the agent's event channel; questions asked before this are unavailable.
    pub fn attach(&self, events: mpsc::UnboundedSender<Event>) {
        self.inner().events = Some(events);
    }

    /// Ids of the questions waiting right now.
    pub fn pending(&self) -> Vec<String> {
        self.inner().pending.keys().cloned().collect()
    }

    /// Deliver the user's answer (see `kimi_tools::builtin::ask::parse_answers` for its
    /// shape). An unreadable answer leaves the question waiting.
    pub fn answer(
        &self,
        request_id: &str,
        answers: &serde_json::Value,
    ) -> Result<(), AnswerRejected> {
        let mut inner = self.inner();
        let Some(waiting) = inner.pending.get(request_id) else {
            return Err(AnswerRejected::NotPending(request_id.to_owned()));
        };
        let outcome = parse_answers(&waiting.questions, answers).map_err(|error| {
            AnswerRejected::Invalid {
                request_id: request_id.to_owned(),
                error,
            }
        })?;
        if let Some(waiting) = inner.pending.remove(request_id) {
            // The asker may have been cancelled a moment ago; then nobody needs the answer.
            let _ = waiting.reply.send(outcome);
        }
        Ok(())
    }
}

/// Removes a question from the pending map however its wait ends.
struct Forget<'a> {
    broker: &'a QuestionBroker,
    id: String,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.broker.inner().pending.remove(&self.id);
    }
}

#[async_trait]
impl QuestionHost for QuestionBroker {
    async fn ask(&self, questions: Vec<Question>, cancel: CancellationToken) -> QuestionOutcome {
        let request_id = rec::new_id("question_");
        let (reply, answer) = oneshot::channel();
        {
            let mut inner = self.inner();
            let Some(events) = inner.events.clone() else {
                return QuestionOutcome::Unavailable;
            };
            let event = Event::QuestionRequested {
                request_id: request_id.clone(),
                questions: json!({ "questions": questions }),
            };
            if events.send(event).is_err() {
                return QuestionOutcome::Unavailable;
            }
            inner
                .pending
                .insert(request_id.clone(), Waiting { questions, reply });
        }
        let _forget = Forget {
            broker: self,
            id: request_id,
        };
        tokio::select! {
            outcome = answer => outcome.unwrap_or(QuestionOutcome::Interrupted),
            () = cancel.cancelled() => QuestionOutcome::Interrupted,
        }
    }
}
