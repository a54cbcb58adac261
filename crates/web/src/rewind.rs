//! `POST /api/v1/sessions/{id}/rewind`: the engine's `Op::Rewind` over REST (issue #17). Body
//! `{"turns": 1, "scope": "both" | "files" | "conversation", "force": false}` (all optional);
//! the answer is the engine's rewind report. Files changed outside the agent stop the rewind
//! (code 40912, the report names them) unless `force` is true.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use kimi_protocol::checkpoint::{RewindReport, RewindScope};
use kimi_protocol::ops::Op;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, Data, code};
use crate::rest::{JsonBody, ask_idle_session};
use crate::server::App;

/// The rewind met files changed outside the agent.
pub const REWIND_CONFLICT: u32 = 40912;

#[derive(Deserialize, Default)]
pub struct RewindBody {
    #[serde(default)]
    turns: Option<i64>,
    #[serde(default)]
    scope: Option<RewindScope>,
    #[serde(default)]
    force: bool,
}

pub async fn rewind(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RewindBody>,
) -> ApiResult<Value> {
    let turns = body.turns.unwrap_or(1);
    let turns = u32::try_from(turns)
        .ok()
        .filter(|t| *t >= 1)
        .ok_or_else(|| {
            ApiError::validation(format!("turns must be a positive integer, got {turns}"))
        })?;
    let live = app.registry.get(&id).await?;
    let op = Op::Rewind {
        turns,
        scope: body.scope.unwrap_or_default(),
        force: body.force,
    };
    // The engine answers with one `rewind.done` (or an `error`); a rewind of a big tree may
    // take a while, so the wait is generous but bounded.
    let outcome = ask_idle_session(&live, op, "rewind.done", "rewind", Duration::from_secs(120))
        .await?
        .map(|answer| {
            answer.and_then(|payload| {
                serde_json::from_value::<RewindReport>(payload["report"].clone())
                    .map_err(|e| format!("unreadable rewind report: {e}"))
            })
        });
    match outcome {
        Ok(Ok(report)) if !report.applied => {
            let paths: Vec<&str> = report.conflicts.iter().map(|c| c.path.as_str()).collect();
            Err(ApiError::new(
                REWIND_CONFLICT,
                format!(
                    "nothing was rewound: these files changed outside the agent since its checkpoint: {}; send force: true to overwrite them",
                    paths.join(", ")
                ),
            )
            .with_data(json!({ "report": report })))
        }
        Ok(Ok(report)) => Ok(Data(json!({ "report": report }))),
        Ok(Err(message)) => Err(ApiError::new(
            code::CANNOT_UNDO,
            format!("cannot rewind {turns} turn(s): {message}"),
        )
        .with_data(json!({"reason": message, "requestedCount": turns}))),
        Err(_) => Err(ApiError::internal(
            "the session did not answer the rewind in 120 s; retry",
        )),
    }
}
