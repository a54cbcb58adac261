//! The WebSocket `/api/v1/ws`: `server_hello`, client frames `{type, id?, payload}` answered by
//! `ack`, `subscribe`/`unsubscribe` to sessions (replaying durable events after a cursor, or
//! `resync_required`), `ping`/`pong` and `abort`; event frames are forwarded per subscription.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use futures::{SinkExt, StreamExt};
use kimi_protocol::ops::Op;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

use crate::error::{ApiError, code};
use crate::events::{Frame, MAX_EVENT_BUFFER, timestamp};
use crate::server::App;

/// Frames queued for one connection before forwarders wait (and then lag into a resync).
const OUT_QUEUE: usize = 1024;

fn ack(id: &Value, code: u32, msg: &str, payload: Value) -> String {
    json!({"type": "ack", "id": id, "code": code, "msg": msg, "payload": payload}).to_string()
}

fn resync(session_id: &str, reason: &str, last_seq: u64, epoch: &str) -> String {
    json!({
        "type": "resync_required",
        "session_id": session_id,
        "timestamp": timestamp(),
        "payload": {"reason": reason, "last_seq": last_seq, "epoch": epoch,
            "hint": "fetch the history over REST, then subscribe again without a cursor"},
    })
    .to_string()
}

fn encode(frame: &Frame) -> String {
    serde_json::to_string(frame).unwrap_or_default()
}

/// Send the replay, then live frames, until the session ends or the client lags too far.
async fn forward(
    out: mpsc::Sender<String>,
    session_id: String,
    replay: Vec<Arc<Frame>>,
    mut live: broadcast::Receiver<Arc<Frame>>,
    mut last_sent: u64,
    epoch: String,
) {
    for frame in replay {
        last_sent = frame.seq;
        if out.send(encode(&frame)).await.is_err() {
            return;
        }
    }
    loop {
        match live.recv().await {
            Ok(frame) => {
                // Frames already replayed are skipped; volatile ones ride along.
                if !frame.volatile && frame.seq <= last_sent {
                    continue;
                }
                if !frame.volatile {
                    last_sent = frame.seq;
                }
                if out.send(encode(&frame)).await.is_err() {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                let reason = format!("the connection fell {missed} frames behind");
                let _ = out
                    .send(resync(&session_id, &reason, last_sent, &epoch))
                    .await;
                return;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

struct Connection {
    app: Arc<App>,
    out: mpsc::Sender<String>,
    subscriptions: HashMap<String, JoinHandle<()>>,
}

impl Connection {
    async fn send(&self, text: String) {
        let _ = self.out.send(text).await;
    }

    async fn subscribe(&mut self, id: &Value, payload: &Value) {
        let Some(ids) = payload["session_ids"].as_array() else {
            let msg = "subscribe needs payload.session_ids, an array of session ids";
            return self.send(ack(id, code::VALIDATION, msg, Value::Null)).await;
        };
        let mut sessions = Vec::new();
        for session_id in ids {
            let Some(session_id) = session_id.as_str() else {
                let msg = "payload.session_ids must hold strings";
                return self.send(ack(id, code::VALIDATION, msg, Value::Null)).await;
            };
            match self.app.registry.get(session_id).await {
                Ok(live) => sessions.push(live),
                Err(err) => return self.send(ack(id, err.code, &err.msg, Value::Null)).await,
            }
        }
        let mut started = Vec::new();
        let mut subscribed = Vec::new();
        for live in sessions {
            let cursor = &payload["cursors"][&live.id];
            let cursor = cursor["seq"]
                .as_u64()
                .map(|seq| (seq, cursor["epoch"].as_str().map(str::to_owned)));
            let from = cursor.as_ref().map_or(0, |c| c.0);
            let sub = live.subscribe(cursor);
            let (replay, notice) = match sub.replay {
                Ok(frames) => (frames, None),
                Err(why) => (
                    Vec::new(),
                    Some(resync(&live.id, &why.reason, sub.last_seq, &live.epoch)),
                ),
            };
            subscribed.push(
                json!({"session_id": live.id, "last_seq": sub.last_seq, "epoch": live.epoch}),
            );
            let last_sent = if notice.is_some() {
                sub.last_seq
            } else {
                from.min(sub.last_seq)
            };
            started.push((
                live.id.clone(),
                live.epoch.clone(),
                replay,
                sub.live,
                notice,
                last_sent,
            ));
        }
        self.send(ack(
            id,
            code::OK,
            "success",
            json!({"subscriptions": subscribed}),
        ))
        .await;
        for (session_id, epoch, replay, live, notice, last_sent) in started {
            if let Some(notice) = notice {
                self.send(notice).await;
            }
            let task = tokio::spawn(forward(
                self.out.clone(),
                session_id.clone(),
                replay,
                live,
                last_sent,
                epoch,
            ));
            if let Some(old) = self.subscriptions.insert(session_id, task) {
                old.abort();
            }
        }
    }

    async fn handle(&mut self, text: &str) {
        let frame: Value = match serde_json::from_str(text) {
            Ok(frame @ Value::Object(_)) => frame,
            _ => {
                let msg = "frames must be JSON objects {\"type\", \"id\"?, \"payload\"}";
                return self
                    .send(ack(&Value::Null, code::VALIDATION, msg, Value::Null))
                    .await;
            }
        };
        let id = &frame["id"];
        let payload = &frame["payload"];
        match frame["type"].as_str().unwrap_or_default() {
            "subscribe" => self.subscribe(id, payload).await,
            "unsubscribe" => {
                for session_id in payload["session_ids"].as_array().into_iter().flatten() {
                    if let Some(task) = session_id
                        .as_str()
                        .and_then(|s| self.subscriptions.remove(s))
                    {
                        task.abort();
                    }
                }
                self.send(ack(id, code::OK, "success", json!({}))).await;
            }
            "client_hello" => self.send(ack(id, code::OK, "success", json!({}))).await,
            "ping" => {
                self.send(
                    json!({"type": "pong", "id": id, "timestamp": timestamp(), "payload": payload})
                        .to_string(),
                )
                .await;
            }
            "pong" => {}
            "abort" => {
                let session_id = payload["session_id"].as_str().unwrap_or_default();
                let answer = match self.app.registry.loaded(session_id) {
                    Some(live) => {
                        live.handle.send(Op::Cancel { queued: true });
                        ack(id, code::OK, "success", json!({"aborted": true}))
                    }
                    None => {
                        let err = ApiError::session_not_found(session_id);
                        ack(id, err.code, &err.msg, Value::Null)
                    }
                };
                self.send(answer).await;
            }
            other => {
                let msg = format!(
                    "unsupported frame type {other:?}: use subscribe, unsubscribe, client_hello, ping or abort"
                );
                self.send(ack(id, code::VALIDATION, &msg, Value::Null))
                    .await;
            }
        }
    }
}

/// Serve one upgraded connection until the client closes it.
pub async fn serve(app: Arc<App>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (out, mut queue) = mpsc::channel::<String>(OUT_QUEUE);
    let writer = tokio::spawn(async move {
        while let Some(text) = queue.recv().await {
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let hello = json!({
        "type": "server_hello",
        "timestamp": timestamp(),
        "payload": {
            "ws_connection_id": format!("conn_{}", crate::error::new_ulid()),
            "protocol_version": 2,
            "max_event_buffer_size": MAX_EVENT_BUFFER,
            "capabilities": {"event_batching": false, "compression": false},
        },
    });
    let mut connection = Connection {
        app,
        out,
        subscriptions: HashMap::new(),
    };
    connection.send(hello.to_string()).await;
    while let Some(Ok(message)) = stream.next().await {
        match message {
            Message::Text(text) => connection.handle(text.as_str()).await,
            Message::Close(_) => break,
            _ => {}
        }
    }
    for (_, task) in connection.subscriptions.drain() {
        task.abort();
    }
    drop(connection);
    let _ = writer.await;
}
