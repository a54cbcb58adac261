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
use kimi_protocol::question::{Answers, QuestionSet};
use kimi_tools::ToolContext;
use kimi_tools::builtin::ask::{
    AnswerError, Question, QuestionHost, QuestionOutcome, outcome_text, parse_answers,
};
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

/// An accepted answer as the AskUserQuestion result it becomes, with the questions it answers
/// (what a resumed session matches the unanswered call by).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub questions: Vec<String>,
    pub text: String,
    pub is_error: bool,
}

struct Waiting {
    questions: Vec<Question>,
    reply: oneshot::Sender<QuestionOutcome>,
}

/// Questions waiting for the user, keyed by request id; announced on the agent's event channel,
/// which the broker is given when it is made (see `FrontLink`).
pub struct QuestionBroker {
    events: mpsc::UnboundedSender<Event>,
    pending: Mutex<HashMap<String, Waiting>>,
}

impl QuestionBroker {
    pub fn new(events: mpsc::UnboundedSender<Event>) -> Arc<Self> {
        Arc::new(QuestionBroker {
            events,
            pending: Mutex::new(HashMap::new()),
        })
    }

    /// A fresh broker announcing on `events`, as the tool context's question host.
    pub fn host(events: mpsc::UnboundedSender<Event>) -> Arc<dyn QuestionHost> {
        Self::new(events)
    }

    /// The broker behind a tool context, if it has one of ours.
    pub fn of(ctx: &ToolContext) -> Option<Arc<QuestionBroker>> {
        let host: Arc<dyn std::any::Any + Send + Sync> = ctx.questions.clone()?;
        host.downcast::<QuestionBroker>().ok()
    }

    fn pending_map(&self) -> MutexGuard<'_, HashMap<String, Waiting>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ids of the questions waiting right now.
    pub fn pending(&self) -> Vec<String> {
        self.pending_map().keys().cloned().collect()
    }

    /// Deliver the user's answer (matched to the questions by
    /// `kimi_tools::builtin::ask::parse_answers`). An answer that fits no question leaves the
    /// question waiting.
    /// `before_delivery` gets the answer as the tool result it becomes, before the asking tool
    /// sees it: the dispatcher journals it there, so an answer is durable before anything acts
    /// on it (and a session resumed after a crash in between still delivers it).
    pub fn answer(
        &self,
        request_id: &str,
        answers: &Answers,
        before_delivery: impl FnOnce(Resolution),
    ) -> Result<(), AnswerRejected> {
        let mut pending = self.pending_map();
        let Some(waiting) = pending.get(request_id) else {
            return Err(AnswerRejected::NotPending(request_id.to_owned()));
        };
        let outcome = parse_answers(&waiting.questions, answers).map_err(|error| {
            AnswerRejected::Invalid {
                request_id: request_id.to_owned(),
                error,
            }
        })?;
        let (text, is_error) = outcome_text(&outcome);
        before_delivery(Resolution {
            questions: waiting
                .questions
                .iter()
                .map(|q| q.question.clone())
                .collect(),
            text,
            is_error,
        });
        if let Some(waiting) = pending.remove(request_id) {
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
        self.broker.pending_map().remove(&self.id);
    }
}

#[async_trait]
impl QuestionHost for QuestionBroker {
    async fn ask(&self, questions: Vec<Question>, cancel: CancellationToken) -> QuestionOutcome {
        let request_id = rec::new_id("question_");
        let (reply, answer) = oneshot::channel();
        {
            let mut pending = self.pending_map();
            let event = Event::QuestionRequested {
                request_id: request_id.clone(),
                questions: QuestionSet {
                    questions: questions.clone(),
                },
            };
            // Nobody reads the agent's events any more: no front end can answer.
            if self.events.send(event).is_err() {
                return QuestionOutcome::Unavailable;
            }
            pending.insert(request_id.clone(), Waiting { questions, reply });
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
