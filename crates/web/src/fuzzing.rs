//! Decoding entry points for the fuzz harness (`crates/fuzz`): each JSON request body and
//! query string the REST API accepts, run through the decoding and validation its handler does
//! before it touches a session. No server, session or network is involved. Not a stable API.

use kimi_protocol::{ContentPart, Message};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::questions::{AnswerBody, QuestionQuery};
use crate::rest::{
    ActionBody, CreateSession, ListSessions, PromptBody, Resolution, approval_decision,
    decode_json, prompt_parts, undo_count,
};

/// Which request input the bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// `POST /sessions`.
    CreateSession,
    /// `POST /sessions/{id}/prompts`.
    Prompt,
    /// `POST /sessions/{id}:{abort|undo|compact}`.
    Action,
    /// `POST /sessions/{id}/questions/{qid}`.
    Answer,
    /// `POST /sessions/{id}/approvals/{aid}`.
    Approval,
    /// The query string of `GET /sessions`.
    ListQuery,
    /// The query string of `GET /sessions/{id}/messages`, paged over a small fixed history.
    MessagesQuery,
    /// The query string of `GET /sessions/{id}/questions`.
    QuestionsQuery,
}

impl Input {
    pub const ALL: [Input; 8] = [
        Input::CreateSession,
        Input::Prompt,
        Input::Action,
        Input::Answer,
        Input::Approval,
        Input::ListQuery,
        Input::MessagesQuery,
        Input::QuestionsQuery,
    ];
}

fn query<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    // The handlers read the query from the request URI; an input that cannot be part of one
    // never reaches them.
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    let uri: axum::http::Uri = format!("/q?{text}").parse().map_err(|e| format!("{e}"))?;
    axum::extract::Query::<T>::try_from_uri(&uri)
        .map(|q| q.0)
        .map_err(|e| e.to_string())
}

fn msg(err: ApiError) -> String {
    err.msg
}

/// Decode and validate `bytes` as `input`; the error is the message a client would get.
pub fn decode(input: Input, bytes: &[u8]) -> Result<(), String> {
    match input {
        Input::CreateSession => decode_json::<CreateSession>(bytes).map(drop).map_err(msg),
        Input::Prompt => {
            let body: PromptBody = decode_json(bytes).map_err(msg)?;
            prompt_parts(&body.content).map(drop).map_err(msg)
        }
        Input::Action => {
            let body: ActionBody = decode_json(bytes).map_err(msg)?;
            undo_count(&body).map(drop).map_err(msg)
        }
        Input::Answer => decode_json::<AnswerBody>(bytes).map(drop).map_err(msg),
        Input::Approval => {
            let body: Resolution = decode_json(bytes).map_err(msg)?;
            approval_decision(body).map(drop).map_err(msg)
        }
        Input::ListQuery => query::<ListSessions>(bytes).map(drop),
        Input::MessagesQuery => {
            let page: crate::messages::Page = query(bytes)?;
            let history = [
                Message::user_text("hello"),
                Message::assistant(vec![ContentPart::text("hi")], Vec::new()),
            ];
            crate::messages::page("s", &history, &page)
                .map(drop)
                .map_err(msg)
        }
        Input::QuestionsQuery => query::<QuestionQuery>(bytes).map(drop),
    }
}
