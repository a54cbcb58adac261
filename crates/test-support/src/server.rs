//! The loopback HTTP server: one scripted turn per request, in the wire format the request's
//! path asks for, with every request recorded.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use kimi_llm::scripted::ScriptTurn;
use kimi_llm::{ProviderType, ResolvedModel};
use serde_json::Value;

use crate::pairing::check_tool_pairing;
use crate::render::{Frame, WireFormat, render};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Value::Null` when it was not JSON; see `raw_body`).
    pub body: Value,
    pub raw_body: String,
    /// When the request arrived (for per-step overhead measurements).
    pub received_at: std::time::Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A scripted turn, optionally reserved for requests whose body contains a marker (so that
/// concurrent agents — a main agent and a background subagent — each get their own script).
type Queued = (Option<String>, ScriptTurn);

#[derive(Default)]
struct Shared {
    turns: Mutex<VecDeque<Queued>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Fixed answers (path without query → status, body) served before any wire format:
    /// the non-chat endpoints of an API (a model list, usage) next to its chat endpoint.
    routes: Mutex<Vec<(String, u16, String)>>,
    /// Keep the bodies of only this many latest requests (older ones keep their metadata):
    /// a long benchmark measures the engine, not this server's memory.
    keep_bodies: Mutex<Option<usize>>,
}

/// A scripted provider endpoint on `127.0.0.1:<random port>`. Dropping it stops the server.
pub struct ScriptServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptServer {
    pub async fn start(turns: Vec<ScriptTurn>) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            turns: Mutex::new(turns.into_iter().map(|t| (None, t)).collect()),
            ..Shared::default()
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            // A serve error ends the task; the test then sees connection errors, which is
            // the honest signal.
            let _ = axum::serve(listener, app).await;
        });
        Ok(ScriptServer { addr, shared, task })
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A model pointed at this server, with the base-URL convention of each provider type
    /// (`…/v1` for OpenAI-style APIs, the host root for Anthropic and Google).
    pub fn model(&self, provider_type: ProviderType, model: &str) -> ResolvedModel {
        let base = match provider_type {
            ProviderType::Kimi | ProviderType::OpenAi | ProviderType::OpenAiResponses => {
                format!("{}/v1", self.base_url())
            }
            ProviderType::Anthropic | ProviderType::GoogleGenAi | ProviderType::VertexAi => {
                self.base_url()
            }
        };
        crate::test_model(provider_type, &base, model)
    }

    pub fn push(&self, turn: ScriptTurn) {
        if let Ok(mut turns) = self.shared.turns.lock() {
            turns.push_back((None, turn));
        }
    }

    /// Queue a turn served only to a request whose body contains `marker`. A request takes
    /// the first turn reserved for a marker it contains, otherwise the first unreserved one.
    pub fn push_for(&self, marker: impl Into<String>, turn: ScriptTurn) {
        if let Ok(mut turns) = self.shared.turns.lock() {
            turns.push_back((Some(marker.into()), turn));
        }
    }

    /// Answer every request to `path` (query ignored) with `status` and `body` (JSON; a JSON
    /// string is sent as plain text); a later call for the same path replaces the answer.
    pub fn route(&self, path: &str, status: u16, body: &Value) {
        let text = match body {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        if let Ok(mut routes) = self.shared.routes.lock() {
            routes.retain(|(p, _, _)| p != path);
            routes.push((path.to_owned(), status, text));
        }
    }

    /// From now on, drop the bodies of all but the `n` latest requests.
    pub fn keep_bodies_of_last(&self, n: usize) {
        if let Ok(mut keep) = self.shared.keep_bodies.lock() {
            *keep = Some(n);
        }
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    pub fn remaining_turns(&self) -> usize {
        self.shared.turns.lock().map(|t| t.len()).unwrap_or(0)
    }

    /// Tool call/result pairing problems over every recorded request (empty = all paired).
    pub fn pairing_violations(&self) -> Vec<String> {
        self.requests()
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                check_tool_pairing(&r.body)
                    .err()
                    .map(|e| format!("request {}: {e}", i + 1))
            })
            .collect()
    }
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn plain(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let recorded = RecordedRequest {
        received_at: std::time::Instant::now(),
        method: method.to_string(),
        path: path.clone(),
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
        raw_body,
    };
    let recorded_body = recorded.raw_body.clone();
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(recorded);
        if let Some(keep) = shared.keep_bodies.lock().ok().and_then(|k| *k) {
            let old = requests.len().saturating_sub(keep);
            for request in &mut requests[..old] {
                request.body = Value::Null;
                request.raw_body = String::new();
            }
        }
    }
    let bare = path.split('?').next().unwrap_or(&path);
    let fixed = shared.routes.lock().ok().and_then(|routes| {
        routes
            .iter()
            .find(|(p, _, _)| p == bare)
            .map(|(_, status, body)| (*status, body.clone()))
    });
    if let Some((status, body)) = fixed {
        let mut response = plain(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            body,
        );
        response.headers_mut().insert(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        );
        return response;
    }
    let Some(format) = WireFormat::from_path(&path) else {
        return plain(
            StatusCode::NOT_FOUND,
            format!("scripted server: no wire format serves {path}"),
        );
    };
    let turn = shared.turns.lock().ok().and_then(|mut turns| {
        let body = &recorded_body;
        let at = turns
            .iter()
            .position(|(m, _)| m.as_deref().is_some_and(|m| body.contains(m)))
            .or_else(|| turns.iter().position(|(m, _)| m.is_none()))?;
        turns.remove(at).map(|(_, turn)| turn)
    });
    match turn {
        None => plain(
            StatusCode::NOT_FOUND,
            "scripted server: the script has no turn left for this request".to_owned(),
        ),
        Some(ScriptTurn::Error {
            status,
            body,
            headers,
        }) => {
            let mut response = plain(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                body,
            );
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) = (
                    axum::http::HeaderName::from_bytes(name.as_bytes()),
                    axum::http::HeaderValue::from_str(&value),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
            response
        }
        Some(ScriptTurn::Reply { events, chunk_size }) => {
            let frames: VecDeque<Frame> = render(format, &events, chunk_size).into();
            let stream = futures::stream::unfold(frames, |mut frames| async move {
                loop {
                    match frames.pop_front()? {
                        Frame::Bytes(bytes) => return Some((Ok(Bytes::from(bytes)), frames)),
                        Frame::Delay(delay) => tokio::time::sleep(delay).await,
                        Frame::Disconnect => {
                            // Returning Pending once makes hyper flush the headers and the
                            // bytes so far, so the client sees a stream that breaks mid-way
                            // rather than a request that never got an answer.
                            tokio::task::yield_now().await;
                            let err = std::io::Error::new(
                                std::io::ErrorKind::ConnectionReset,
                                "scripted disconnect",
                            );
                            return Some((Err(err), VecDeque::new()));
                        }
                    }
                }
            });
            let mut response = Response::new(Body::from_stream(stream));
            response.headers_mut().insert(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("text/event-stream"),
            );
            response
        }
    }
}
