//! The response envelope `{code, msg, data, request_id}` every JSON endpoint answers with, the
//! business error codes (reference code bands: 400xx validation, 401xx auth, 404xx not found,
//! 409xx conflict, 500xx internal) and the request id each response carries.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

/// Business codes of the reference server that this server can answer with.
pub mod code {
    pub const OK: u32 = 0;
    pub const VALIDATION: u32 = 40001;
    pub const UNAUTHORIZED: u32 = 40101;
    pub const FORBIDDEN_HOST: u32 = 40301;
    /// A WebSocket upgrade from another site's page.
    pub const FORBIDDEN_ORIGIN: u32 = 40302;
    /// A terminal asked for from another machine without `--allow-remote-terminals`.
    pub const FORBIDDEN_REMOTE: u32 = 40303;
    pub const NO_ENDPOINT: u32 = 40400;
    pub const SESSION_NOT_FOUND: u32 = 40401;
    pub const MESSAGE_NOT_FOUND: u32 = 40403;
    pub const APPROVAL_NOT_FOUND: u32 = 40404;
    /// Same code as approvals: the interaction is not pending.
    pub const QUESTION_NOT_FOUND: u32 = 40404;
    pub const DIRECTORY_NOT_FOUND: u32 = 40409;
    pub const TERMINAL_NOT_FOUND: u32 = 40412;
    pub const BUSY: u32 = 40901;
    pub const ALREADY_RESOLVED: u32 = 40902;
    pub const PROMPT_ID_USED: u32 = 40903;
    pub const CONTEXT_BUSY: u32 = 40910;
    pub const CANNOT_UNDO: u32 = 40911;
    /// Input for a terminal whose shell has ended.
    pub const TERMINAL_EXITED: u32 = 40912;
    pub const INTERNAL: u32 = 50001;
    /// The session's environment is not connected (nothing was run on this machine instead).
    pub const ENVIRONMENT_UNAVAILABLE: u32 = 50301;
    /// An MCP server action that failed (the reference's MCP passthrough band).
    pub const MCP_FAILED: u32 = 80001;
}

tokio::task_local! {
    /// The id of the request being answered (set by the request-id middleware).
    pub static REQUEST_ID: String;
}

/// The current request's id, or a fresh one outside a request.
pub fn request_id() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| new_ulid())
}

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A ULID: 48-bit millisecond time and 80 random bits in Crockford base32.
pub fn new_ulid() -> String {
    let ms = u128::from(kimi_core::engine::log::now_ms()) & ((1 << 48) - 1);
    let random: u128 = rand::random::<u128>() & ((1 << 80) - 1);
    let value = (ms << 80) | random;
    (0..26)
        .rev()
        .map(|i| char::from(CROCKFORD[((value >> (i * 5)) & 31) as usize]))
        .collect()
}

/// Whether a client-supplied `X-Request-Id` is a well-formed ULID.
pub fn is_ulid(id: &str) -> bool {
    id.len() == 26
        && id.as_bytes()[0] <= b'7'
        && id
            .bytes()
            .all(|b| CROCKFORD.contains(&b.to_ascii_uppercase()))
}

#[derive(Serialize)]
struct Envelope<'a> {
    code: u32,
    msg: &'a str,
    data: &'a Value,
    request_id: String,
}

/// An enveloped response with an explicit HTTP status.
pub fn envelope(status: StatusCode, code: u32, msg: &str, data: &Value) -> Response {
    let body = Envelope {
        code,
        msg,
        data,
        request_id: request_id(),
    };
    (status, axum::Json(body)).into_response()
}

/// A successful answer: `data` in a `code: 0` envelope.
pub struct Data<T>(pub T);

impl<T: Serialize> IntoResponse for Data<T> {
    fn into_response(self) -> Response {
        match serde_json::to_value(self.0) {
            Ok(data) => envelope(StatusCode::OK, code::OK, "success", &data),
            Err(err) => {
                ApiError::internal(format!("cannot encode the response: {err}")).into_response()
            }
        }
    }
}

/// A business error: HTTP 200 (401/403 for auth) with the code and a message saying what went
/// wrong and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{msg} (code {code})")]
pub struct ApiError {
    pub code: u32,
    pub msg: String,
    pub data: Value,
}

impl ApiError {
    pub fn new(code: u32, msg: impl Into<String>) -> Self {
        ApiError {
            code,
            msg: msg.into(),
            data: Value::Null,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }

    pub fn validation(msg: impl Into<String>) -> Self {
        Self::new(code::VALIDATION, msg)
    }

    pub fn internal(msg: impl Into<String>) -> Self {
        Self::new(code::INTERNAL, msg)
    }

    pub fn session_not_found(id: &str) -> Self {
        Self::new(
            code::SESSION_NOT_FOUND,
            format!(
                "session {id} does not exist: list sessions with GET /api/v1/sessions or create one with POST /api/v1/sessions"
            ),
        )
    }

    pub fn status(&self) -> StatusCode {
        match self.code {
            code::UNAUTHORIZED => StatusCode::UNAUTHORIZED,
            code::FORBIDDEN_HOST | code::FORBIDDEN_ORIGIN | code::FORBIDDEN_REMOTE => {
                StatusCode::FORBIDDEN
            }
            _ => StatusCode::OK,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        envelope(self.status(), self.code, &self.msg, &self.data)
    }
}

pub type ApiResult<T> = Result<Data<T>, ApiError>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    async fn body(response: Response) -> (StatusCode, Value) {
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn envelopes_carry_code_msg_data_and_the_request_id() {
        let (status, value) = REQUEST_ID
            .scope("01JZX4A6E7M8V0R3Q0N2K2M5Q9".to_owned(), async {
                body(Data(serde_json::json!({"ok": true})).into_response()).await
            })
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            value,
            serde_json::json!({"code": 0, "msg": "success", "data": {"ok": true}, "request_id": "01JZX4A6E7M8V0R3Q0N2K2M5Q9"})
        );
        let (status, value) = body(
            ApiError::new(code::ALREADY_RESOLVED, "already resolved")
                .with_data(serde_json::json!({"resolved": false}))
                .into_response(),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(value["code"], 40902);
        assert_eq!(value["data"]["resolved"], false);
        assert!(is_ulid(value["request_id"].as_str().unwrap()));
        let (status, value) = body(ApiError::new(code::UNAUTHORIZED, "no").into_response()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(value["code"], 40101);
    }

    #[test]
    fn ulids_are_well_formed_and_distinct() {
        let a = new_ulid();
        let b = new_ulid();
        assert!(is_ulid(&a) && is_ulid(&b), "{a} {b}");
        assert_ne!(a, b);
        assert!(!is_ulid("not-a-ulid"));
        assert!(!is_ulid("ZZZZZZZZZZZZZZZZZZZZZZZZZZ"));
    }
}
