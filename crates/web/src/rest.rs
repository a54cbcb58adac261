//! REST handlers under `/api/v1`: server meta, sessions (create, list, read, status, messages),
//! prompts, session actions (`:abort`, `:undo`, `:compact`) and approvals. Bodies and queries
//! that do not parse are 40001 envelopes, never panics or plain-text rejections.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::Method;
use axum::http::request::Parts;
use kimi_protocol::ContentPart;
use kimi_protocol::host::SessionSummary;
use kimi_protocol::ops::{ApprovalDecision, Op, PermissionMode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, Data, code};
use crate::live::{Live, iso};
use crate::messages;
use crate::server::App;

/// A JSON body; an empty body reads as `{}`.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::validation(format!("cannot read the request body: {e}")))?;
        decode_json(&bytes).map(JsonBody)
    }
}

/// A request body's bytes as `T`; an empty or blank body reads as `{}`. Shared with the fuzz
/// entry points so they decode exactly as the handlers do.
pub(crate) fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
    serde_json::from_slice(text).map_err(|e| {
        ApiError::validation(format!(
            "the request body is not valid: {e}; send a JSON object as documented in server-api.md"
        ))
    })
}

/// Query parameters.
pub struct QueryOf<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryOf<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|q| QueryOf(q.0))
            .map_err(|e| ApiError::validation(format!("the query string is not valid: {e}")))
    }
}

pub async fn healthz() -> Data<Value> {
    Data(json!({"ok": true}))
}

pub async fn meta(State(app): State<Arc<App>>) -> Data<Value> {
    // Each capability is whether this server answers the routes that make it up.
    let serves = |method: Method, path: &str| {
        app.routes
            .iter()
            .any(|(m, p)| *m == method && (*p == path || p.starts_with(&format!("{path}/"))))
    };
    Data(json!({
        "server_version": env!("CARGO_PKG_VERSION"),
        "capabilities": {
            "websocket": serves(Method::GET, "/ws"),
            "approvals": serves(Method::POST, "/sessions/{id}/approvals"),
            "questions": serves(Method::POST, "/sessions/{id}/questions"),
            "rewind": serves(Method::POST, "/sessions/{id}/rewind"),
            "goal": serves(Method::GET, "/sessions/{id}/goal"),
            "openapi": serves(Method::GET, "/openapi.json"),
            "file_upload": serves(Method::POST, "/files"),
            "fs_query": serves(Method::POST, "/workspace"),
            "mcp": serves(Method::GET, "/sessions/{id}/mcp/servers"),
            "tasks": serves(Method::GET, "/sessions/{id}/tasks"),
            "terminal": serves(Method::GET, "/sessions/{id}/terminals"),
        },
        "server_id": app.server_id,
        "started_at": app.started_at,
        "default_cwd": app.default_cwd,
        "open_in_apps": [],
        "dangerous_bypass_auth": false,
        "backend": "v2",
        "experimental_flags": app.experimental_flags.as_ref().map(|read| (read.0)()).unwrap_or_default(),
        "features": [],
    }))
}

/// The reference's session object, from the index and (when loaded) the live session. Facts
/// only a loaded session knows (its model, message count, context size) are `null` for one
/// that is not loaded, never made up.
fn session_object(id: &str, entry: Option<&SessionSummary>, live: Option<&Live>) -> Value {
    let (busy, turn_active, pending, last_reason, last_seq) = match live {
        Some(live) => {
            let busy = live.busy();
            let state = live.state();
            let pending = if !state.pending.is_empty() {
                "approval"
            } else if !state.questions.is_empty() {
                "question"
            } else {
                "none"
            };
            (
                busy,
                state.turn_active,
                pending,
                state.last_turn_reason,
                state.buffer.last_seq(),
            )
        }
        None => (false, false, "none", None, 0),
    };
    let cwd = entry
        .and_then(|e| e.cwd.clone())
        .or_else(|| live.map(|l| l.cwd.clone()))
        .unwrap_or_default();
    let (model, message_count, context_tokens) = match live {
        Some(live) => {
            let runtime = live.handle.runtime();
            let count = runtime.log().history().messages().len();
            (
                json!(runtime.config.model.get().provider.model()),
                json!(count),
                json!(live.state().context_tokens),
            )
        }
        None => (Value::Null, Value::Null, Value::Null),
    };
    json!({
        "id": id,
        "workspace_id": entry.map(|e| e.workspace_id.clone()).or_else(|| live.map(|l| l.workspace_id.clone())).unwrap_or_default(),
        "title": entry.and_then(|e| e.title.clone()).unwrap_or_default(),
        "created_at": entry.map(|e| iso(e.created_at)),
        "updated_at": entry.map(|e| iso(e.updated_at)),
        "archived": entry.is_some_and(|e| e.archived),
        "loaded": live.is_some(),
        "busy": busy,
        "main_turn_active": turn_active,
        "pending_interaction": pending,
        "last_turn_reason": last_reason,
        "metadata": {"cwd": cwd},
        "agent_config": {"model": model},
        "context_tokens": context_tokens,
        "message_count": message_count,
        "last_seq": last_seq,
    })
}

fn describe(app: &App, live: &Live) -> Value {
    session_object(&live.id, app.registry.entry(&live.id).as_ref(), Some(live))
}

#[derive(Deserialize)]
pub struct CreateSession {
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    workspace_id: Option<String>,
}

pub async fn create_session(
    State(app): State<Arc<App>>,
    JsonBody(body): JsonBody<CreateSession>,
) -> ApiResult<Value> {
    let cwd = body
        .metadata
        .as_ref()
        .and_then(|m| m.get("cwd"))
        .and_then(Value::as_str);
    let Some(cwd) = cwd else {
        let hint = if body.workspace_id.is_some() {
            "workspace_id is not supported by kimi-rs web; pass metadata.cwd (an absolute directory) instead"
        } else {
            "metadata.cwd is required: pass the absolute working directory, e.g. {\"metadata\": {\"cwd\": \"/path/to/project\"}}"
        };
        return Err(
            ApiError::validation(hint).with_data(json!({"details": [{"field": "metadata.cwd"}]}))
        );
    };
    // `metadata.environment`: a declared execution environment to bind the session to.
    let environment = match body.metadata.as_ref().and_then(|m| m.get("environment")) {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(_) => {
            return Err(ApiError::validation(
                "metadata.environment must be the id of a declared environment (a string)",
            )
            .with_data(json!({"details": [{"field": "metadata.environment"}]})));
        }
    };
    let live = app.registry.create(PathBuf::from(cwd), environment).await?;
    Ok(Data(describe(&app, &live)))
}

#[derive(Deserialize, Default)]
pub struct ListSessions {
    before_id: Option<String>,
    page_size: Option<u32>,
    include_archive: Option<bool>,
    busy: Option<bool>,
    /// Case-insensitive text searched in the title, working directory and id.
    q: Option<String>,
}

pub async fn list_sessions(
    State(app): State<Arc<App>>,
    QueryOf(query): QueryOf<ListSessions>,
) -> ApiResult<Value> {
    if let Some(size) = query.page_size
        && !(1..=100).contains(&size)
    {
        return Err(ApiError::validation(format!(
            "page_size must be between 1 and 100, got {size}"
        )));
    }
    let mut entries: Vec<SessionSummary> = app.registry.index();
    entries.retain(|e| query.include_archive.unwrap_or(false) || !e.archived);
    if let Some(needle) = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        let needle = needle.to_lowercase();
        entries.retain(|e| {
            [e.title.as_deref(), e.cwd.as_deref(), Some(e.id.as_str())]
                .into_iter()
                .flatten()
                .any(|field| field.to_lowercase().contains(&needle))
        });
    }
    if let Some(before) = &query.before_id {
        let Some(position) = entries.iter().position(|e| &e.id == before) else {
            return Err(ApiError::session_not_found(before));
        };
        entries.drain(..=position);
    }
    let mut items = Vec::new();
    let mut has_more = false;
    for entry in &entries {
        let live = app.registry.loaded(&entry.id);
        let object = session_object(&entry.id, Some(entry), live.as_deref());
        if query.busy.is_some_and(|b| object["busy"] != b) {
            continue;
        }
        if query.page_size.is_some_and(|s| items.len() == s as usize) {
            has_more = true;
            break;
        }
        items.push(object);
    }
    Ok(Data(json!({"items": items, "has_more": has_more})))
}

pub async fn get_session(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult<Value> {
    let entry = app.registry.entry(&id);
    let live = app.registry.loaded(&id);
    if entry.is_none() && live.is_none() {
        return Err(ApiError::session_not_found(&id));
    }
    Ok(Data(session_object(&id, entry.as_ref(), live.as_deref())))
}

fn status(live: &Live) -> Value {
    let runtime = live.handle.runtime();
    let config = &runtime.config;
    let model = config.model.get();
    let context_tokens = live.state().context_tokens;
    let max = model.max_context_tokens;
    let plan = config.plan.as_ref();
    json!({
        "busy": live.busy(),
        "model": model.provider.model(),
        "thinking_level": model.params.thinking,
        "permission": config.permissions.mode(),
        "plan_mode": plan.is_some_and(|p| p.is_active()),
        "plan_file": plan.and_then(|p| p.plan_file()),
        "plan_text": plan.filter(|p| p.is_active()).map(|p| p.plan_text()),
        "swarm_mode": runtime.shared().swarm.is_some(),
        "todos": config.tool_ctx.todos.get(),
        "goal": config.goal.as_ref().and_then(|g| g.snapshot()),
        "context_tokens": context_tokens,
        "max_context_tokens": (max > 0).then_some(max),
        "context_usage": (max > 0).then(|| context_tokens as f64 / max as f64),
    })
}

pub async fn session_status(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> ApiResult<Value> {
    let live = app.registry.get(&id).await?;
    Ok(Data(status(&live)))
}

/// `GET /sessions/{id}/goal`: `{"goal": <snapshot> | null}` (surface.md §9.2).
pub async fn session_goal(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult<Value> {
    let live = app.registry.get(&id).await?;
    let goal = live
        .handle
        .runtime()
        .config
        .goal
        .as_ref()
        .and_then(|g| g.snapshot());
    Ok(Data(json!({ "goal": goal })))
}

fn history_page(live: &Live, query: &messages::Page) -> Result<Value, ApiError> {
    let runtime = live.handle.runtime();
    let log = runtime.log();
    messages::page(&live.id, log.history().messages(), query)
}

pub async fn list_messages(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    QueryOf(query): QueryOf<messages::Page>,
) -> ApiResult<Value> {
    let live = app.registry.get(&id).await?;
    Ok(Data(history_page(&live, &query)?))
}

#[derive(Deserialize)]
pub struct PromptBody {
    pub(crate) content: Vec<Value>,
    #[serde(default)]
    prompt_id: Option<String>,
    #[serde(default)]
    permission_mode: Option<PermissionMode>,
}

pub(crate) fn prompt_parts(content: &[Value]) -> Result<Vec<ContentPart>, ApiError> {
    let mut parts = Vec::new();
    for (i, part) in content.iter().enumerate() {
        match (part["type"].as_str(), part["text"].as_str()) {
            (Some("text"), Some(text)) => parts.push(ContentPart::text(text)),
            (Some("text"), None) => {
                return Err(ApiError::validation(format!(
                    "content[{i}] is a text part without a text string"
                )));
            }
            (kind, _) => {
                return Err(ApiError::validation(format!(
                    "content[{i}] has type {}: kimi-rs web accepts only text parts ({{\"type\": \"text\", \"text\": \"...\"}})",
                    kind.unwrap_or("(none)")
                )));
            }
        }
    }
    if parts
        .iter()
        .all(|p| p.as_text().is_some_and(|t| t.trim().is_empty()))
    {
        return Err(ApiError::validation(
            "the prompt is empty: send at least one non-blank text part in content",
        ));
    }
    Ok(parts)
}

pub async fn submit_prompt(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<PromptBody>,
) -> ApiResult<Value> {
    let input = prompt_parts(&body.content)?;
    let live = app.registry.get(&id).await?;
    let prompt_id = match body.prompt_id {
        Some(pid) if live.state().prompt_ids.contains(&pid) => {
            return Err(ApiError::new(
                code::PROMPT_ID_USED,
                format!("prompt_id {pid} was already used in this session: send a new id or none"),
            )
            .with_data(json!({"aborted": false})));
        }
        Some(pid) => pid,
        None => format!("prompt_{}", uuid::Uuid::new_v4().simple()),
    };
    let op = app
        .registry
        .host()
        .prepare(
            &id,
            Op::Submit {
                input,
                origin: None,
                prompt_id: Some(prompt_id.clone()),
            },
        )
        .map_err(|err| ApiError::validation(err.to_string()))?;
    if let Op::Flow { name, .. } = &op
        && let Some(active) = live.handle.runtime().shared().flow.as_ref()
    {
        return Err(ApiError::new(
            code::CONTEXT_BUSY,
            format!(
                "flow {} is still running (at {}); wait for it to finish or abort it, then start /flow:{name} again",
                active.name, active.node
            ),
        ));
    }
    let running = live.busy();
    if let Some(mode) = body.permission_mode {
        live.handle.send(Op::SetPermissionMode { mode });
    }
    let created_at = crate::events::timestamp();
    let recorded = {
        let mut state = live.state();
        state.prompt_ids.push(prompt_id.clone());
        state.expect_recorded(&prompt_id)
    };
    if !live.handle.send(op) {
        return Err(ApiError::internal(format!(
            "session {id} has shut down: reload it with GET /api/v1/sessions/{id}/status or create a new one"
        )));
    }
    // Acknowledged only once journaled: a crash after this answer does not lose the prompt.
    crate::live::recorded("the prompt", recorded).await?;
    let prompt = json!({
        "prompt_id": prompt_id,
        "user_message_id": Value::Null,
        "status": if running { "queued" } else { "running" },
        "content": body.content,
        "created_at": created_at,
    });
    live.publish("prompt.submitted", prompt.clone());
    Ok(Data(prompt))
}

#[derive(Deserialize, Default)]
pub struct ActionBody {
    #[serde(default)]
    pub(crate) count: Option<i64>,
    #[serde(default)]
    page_size: Option<u32>,
    #[serde(default)]
    instruction: Option<String>,
}

/// `POST /sessions/{id}:{action}`.
pub async fn session_action(
    State(app): State<Arc<App>>,
    Path(tail): Path<String>,
    JsonBody(body): JsonBody<ActionBody>,
) -> ApiResult<Value> {
    let Some((id, action)) = tail.rsplit_once(':') else {
        return Err(ApiError::validation(format!(
            "unsupported action: {tail} names no action; use {tail}:abort, :undo or :compact"
        )));
    };
    if !["abort", "undo", "compact"].contains(&action) {
        return Err(ApiError::validation(format!(
            "unsupported action: {action}; kimi-rs web supports abort, undo and compact"
        )));
    }
    let live = app.registry.get(id).await?;
    match action {
        "abort" => {
            live.handle.send(Op::Cancel { queued: true });
            Ok(Data(json!({"aborted": true})))
        }
        "compact" => {
            if live.busy() {
                return Err(ApiError::new(
                    code::CONTEXT_BUSY,
                    "a turn is running: wait for it to end (or abort it), then compact",
                ));
            }
            let instruction = body.instruction.filter(|i| !i.trim().is_empty());
            live.handle.send(Op::Compact { instruction });
            Ok(Data(json!({})))
        }
        _ => undo(&live, body).await,
    }
}

/// The number of turns an undo body asks for (default 1).
pub(crate) fn undo_count(body: &ActionBody) -> Result<u32, ApiError> {
    let count = body.count.unwrap_or(1);
    u32::try_from(count)
        .ok()
        .filter(|c| *c >= 1)
        .ok_or_else(|| {
            ApiError::validation(format!("count must be a positive integer, got {count}"))
        })
}

/// Send `op` to a session that is idle (else `BUSY`) and wait, within `limit`, for the frame
/// of `kind` that answers it (its payload) or the engine's `error` (its message). `what`
/// names the operation in messages.
pub(crate) async fn ask_idle_session(
    live: &Live,
    op: Op,
    kind: &str,
    what: &str,
    limit: Duration,
) -> Result<Result<Result<Value, String>, tokio::time::error::Elapsed>, ApiError> {
    if live.busy() {
        return Err(ApiError::new(
            code::BUSY,
            "a turn is active or a compaction is running: wait for it to finish, then retry",
        ));
    }
    let mut events = live.subscribe(None).live;
    live.handle.send(op);
    Ok(tokio::time::timeout(limit, async {
        loop {
            match events.recv().await {
                Ok(frame) if frame.kind == kind => return Ok(frame.payload.clone()),
                Ok(frame) if frame.kind == "error" => {
                    return Err(frame.payload["message"]
                        .as_str()
                        .map_or_else(|| format!("{what} failed"), str::to_owned));
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    return Err("the session shut down".to_owned());
                }
            }
        }
    })
    .await)
}

async fn undo(live: &Live, body: ActionBody) -> ApiResult<Value> {
    let count = undo_count(&body)?;
    let outcome = ask_idle_session(
        live,
        Op::Undo { count },
        "context.undone",
        "undo",
        Duration::from_secs(30),
    )
    .await?;
    match outcome {
        Ok(Ok(_)) => {}
        Ok(Err(message)) => {
            return Err(ApiError::new(
                code::CANNOT_UNDO,
                format!("cannot undo {count} turn(s): {message}"),
            )
            .with_data(json!({"reason": message, "requestedCount": count})));
        }
        Err(_) => {
            return Err(ApiError::internal(
                "the session did not answer the undo in 30 s; retry",
            ));
        }
    }
    let page = messages::Page {
        page_size: Some(body.page_size.unwrap_or(50)),
        ..messages::Page::default()
    };
    Ok(Data(
        json!({"messages": history_page(live, &page)?, "status": status(live)}),
    ))
}

#[derive(Deserialize, Default)]
pub struct ApprovalQuery {
    status: Option<String>,
}

pub async fn list_approvals(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    QueryOf(query): QueryOf<ApprovalQuery>,
) -> ApiResult<Value> {
    if query.status.as_deref() != Some("pending") {
        return Err(ApiError::validation(
            "status=pending is required: GET /api/v1/sessions/{id}/approvals?status=pending",
        ));
    }
    let live = app.registry.get(&id).await?;
    let items: Vec<Value> = live.state().pending.iter().map(|a| a.item(&id)).collect();
    Ok(Data(json!({"items": items})))
}

#[derive(Deserialize)]
pub struct Resolution {
    decision: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    feedback: Option<String>,
    #[serde(default)]
    selected_label: Option<String>,
}

pub async fn resolve_approval(
    State(app): State<Arc<App>>,
    Path((id, approval_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<Resolution>,
) -> ApiResult<Value> {
    let decision = approval_decision(body)?;
    let live = app.registry.get(&id).await?;
    let (resolved_at, recorded) = live.resolve(&approval_id, decision)?;
    crate::live::recorded(&format!("approval {approval_id}"), recorded).await?;
    Ok(Data(json!({"resolved": true, "resolved_at": resolved_at})))
}

/// The decision an approval body asks for.
pub(crate) fn approval_decision(body: Resolution) -> Result<ApprovalDecision, ApiError> {
    let feedback = body.feedback.filter(|f| !f.trim().is_empty());
    Ok(
        match (body.decision.as_str(), body.scope.as_deref(), feedback) {
            ("approved", None, _) if body.selected_label.is_some() => {
                ApprovalDecision::ApproveOption {
                    label: body.selected_label.unwrap_or_default(),
                }
            }
            ("approved", Some("session"), _) => ApprovalDecision::ApproveForSession,
            ("approved", None, _) => ApprovalDecision::ApproveOnce,
            ("approved", Some(other), _) => {
                return Err(ApiError::validation(format!(
                    "unknown scope {other}: the only scope is \"session\" (or leave it out)"
                )));
            }
            ("rejected" | "cancelled", _, Some(feedback)) => {
                ApprovalDecision::RejectWithFeedback { feedback }
            }
            ("rejected" | "cancelled", _, None) => ApprovalDecision::Reject,
            (other, _, _) => {
                return Err(ApiError::validation(format!(
                    "unknown decision {other}: use approved, rejected or cancelled"
                )));
            }
        },
    )
}

pub async fn no_endpoint(request: Request) -> ApiError {
    ApiError::new(
        code::NO_ENDPOINT,
        format!(
            "no endpoint {} {}: see docs/en/reference/server-api.md for what kimi-rs web serves",
            request.method(),
            request.uri().path()
        ),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn prompts_take_non_blank_text_parts_only() {
        let ok = prompt_parts(&[json!({"type": "text", "text": "hi"})]).unwrap();
        assert_eq!(ok, vec![ContentPart::text("hi")]);
        for bad in [
            json!([]),
            json!([{"type": "text", "text": "  "}]),
            json!([{"type": "image", "source": {}}]),
            json!([{"type": "text"}]),
            json!(["hi"]),
        ] {
            let err = prompt_parts(bad.as_array().unwrap()).unwrap_err();
            assert_eq!(err.code, 40001, "{bad}");
        }
    }
}
