//! AskUserQuestion over REST: pending questions of a session (`GET …/questions?status=pending`),
//! answering one (`POST …/questions/{qid}` with an `answers` map) and dismissing it
//! (`POST …/questions/{qid}:dismiss`). Answers are checked against the questions with the
//! engine's own parser before they are sent, so a bad body is a 40001, not a silent no-op.

use std::sync::Arc;

use axum::extract::{Path, State};
use kimi_protocol::ops::Op;
use kimi_protocol::question::{Answers, QuestionSet};
use kimi_tools::builtin::ask::{Question, parse_answers};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult, Data, code};
use crate::events;
use crate::live::{Live, iso, remember};
use crate::rest::{JsonBody, QueryOf};
use crate::server::App;

/// One question request waiting for the user.
#[derive(Debug, Clone)]
pub struct PendingQuestion {
    pub request_id: String,
    /// The questions as the engine announced them.
    pub questions: QuestionSet,
    pub turn_id: Option<u64>,
    pub created_ms: u64,
}

impl PendingQuestion {
    fn asked(&self) -> &[Question] {
        &self.questions.questions
    }

    /// The reference's question item: questions get ids `q<index>`, options their labels.
    pub fn item(&self, session_id: &str) -> Value {
        let questions: Vec<Value> = self
            .asked()
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let options: Vec<Value> = q
                    .options
                    .iter()
                    .map(|o| json!({"id": o.label, "label": o.label, "description": o.description}))
                    .collect();
                json!({
                    "id": format!("q{i}"),
                    "question": q.question,
                    "header": q.header,
                    "options": options,
                    "multi_select": q.multi_select,
                })
            })
            .collect();
        json!({
            "question_id": self.request_id,
            "request_id": self.request_id,
            "session_id": session_id,
            "turn_id": self.turn_id,
            "questions": questions,
            "created_at": iso(self.created_ms),
        })
    }
}

impl Live {
    /// Answer (or, with `answers: None`, dismiss) a pending question; returns when it was resolved.
    pub fn answer_question(
        &self,
        question_id: &str,
        answers: Option<Map<String, Value>>,
        extra: Map<String, Value>,
    ) -> Result<(String, tokio::sync::oneshot::Receiver<()>), ApiError> {
        let mut state = self.state();
        let Some(index) = state
            .questions
            .iter()
            .position(|q| q.request_id == question_id)
        else {
            if state.resolved.iter().any(|id| id == question_id) {
                return Err(ApiError::new(
                    code::ALREADY_RESOLVED,
                    format!(
                        "question {question_id} was already answered or dismissed; nothing to do"
                    ),
                )
                .with_data(json!({"resolved": false})));
            }
            return Err(ApiError::new(
                code::QUESTION_NOT_FOUND,
                format!(
                    "no pending question {question_id} in session {}: list them with GET /api/v1/sessions/{}/questions?status=pending",
                    self.id, self.id
                ),
            ));
        };
        let payload = match &answers {
            Some(map) => {
                let mut payload = extra;
                payload.insert("answers".to_owned(), Value::Object(map.clone()));
                Value::Object(payload)
            }
            None => json!({"dismissed": true}),
        };
        let payload =
            Answers::from_json(&payload).map_err(|err| ApiError::validation(err.to_string()))?;
        parse_answers(state.questions[index].asked(), &payload)
            .map_err(|err| ApiError::validation(err.to_string()))?;
        state.questions.remove(index);
        remember(&mut state.resolved, question_id);
        let recorded = state.expect_recorded(question_id);
        self.handle.send(Op::Answer {
            request_id: question_id.to_owned(),
            answers: payload,
        });
        let resolved_at = events::timestamp();
        let (kind, mut body) = match answers {
            Some(map) => ("event.question.answered", json!({"answers": map})),
            None => ("event.question.dismissed", json!({})),
        };
        body["question_id"] = json!(question_id);
        body["resolved_at"] = json!(resolved_at);
        self.publish_locked(&mut state, kind, body, false, None);
        Ok((resolved_at, recorded))
    }
}

#[derive(Deserialize, Default)]
pub struct QuestionQuery {
    status: Option<String>,
}

pub async fn list_questions(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    QueryOf(query): QueryOf<QuestionQuery>,
) -> ApiResult<Value> {
    if query.status.as_deref() != Some("pending") {
        return Err(ApiError::validation(
            "status=pending is required: GET /api/v1/sessions/{id}/questions?status=pending",
        ));
    }
    let live = app.registry.get(&id).await?;
    let items: Vec<Value> = live.state().questions.iter().map(|q| q.item(&id)).collect();
    Ok(Data(json!({"items": items})))
}

#[derive(Deserialize, Default)]
pub struct AnswerBody {
    #[serde(default)]
    answers: Option<Map<String, Value>>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

/// `POST /sessions/{id}/questions/{qid}` answers; `…/{qid}:dismiss` dismisses.
pub async fn answer_question(
    State(app): State<Arc<App>>,
    Path((id, tail)): Path<(String, String)>,
    JsonBody(body): JsonBody<AnswerBody>,
) -> ApiResult<Value> {
    let (question_id, answers) = match tail.rsplit_once(':') {
        Some((qid, "dismiss")) => (qid, None),
        Some((_, action)) => {
            return Err(ApiError::validation(format!(
                "unsupported action: {action}; questions support only :dismiss"
            )));
        }
        None => match body.answers {
            Some(map) => (tail.as_str(), Some(map)),
            None => {
                return Err(ApiError::validation(
                    "answers is required: {\"answers\": {\"<question or q<index>>\": {\"kind\": \"single\", \"option_id\": \"<label>\"}}} (or POST …/questions/{qid}:dismiss)",
                ));
            }
        },
    };
    let mut extra = Map::new();
    if let Some(method) = body.method {
        extra.insert("method".to_owned(), Value::String(method));
    }
    if let Some(note) = body.note {
        extra.insert("note".to_owned(), Value::String(note));
    }
    let live = app.registry.get(&id).await?;
    let (resolved_at, recorded) = live.answer_question(question_id, answers, extra)?;
    crate::live::recorded(&format!("the answer to question {question_id}"), recorded).await?;
    Ok(Data(json!({"resolved": true, "resolved_at": resolved_at})))
}
