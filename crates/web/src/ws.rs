//! The WebSocket `/api/v1/ws`: `server_hello`, client frames `{type, id?, payload}` answered by
//! `ack`, `subscribe`/`unsubscribe` to sessions (replaying durable events after a cursor, or
//! `resync_required`), `ping`/`pong`, `abort` and the `terminal_*` frames (see `terminals`);
//! event frames are forwarded per subscription.
//!
//! A slow client costs bounded memory and cannot stall anyone else: every session publishes
//! into a bounded broadcast ring that never waits for readers, each connection has a bounded
//! queue, and a client that lets its queue stay full (or falls behind the ring) is cut off
//! clearly — it gets what was queued, a `resync_required` notice naming the last `seq` it was
//! sent, and a close frame — after which it reconnects and subscribes from that cursor.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures::{SinkExt, StreamExt};
use kimi_protocol::ops::Op;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::{ApiError, code};
use crate::events::{Frame, MAX_EVENT_BUFFER, timestamp};
use crate::server::App;
use crate::terminals::{self, Peer, TermEvent, Terminal};
use kimi_tools::terminal::TerminalSize;

/// Frames queued for one connection (the per-client memory bound).
const OUT_QUEUE: usize = 1024;
/// How long the queue may stay full before the client counts as too slow.
const QUEUE_PATIENCE: Duration = Duration::from_secs(5);
/// How long one write may take before the client counts as gone.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The close code for a client cut off for reading too slowly (RFC 6455: policy violation).
const TOO_SLOW: u16 = 1008;

/// A connection's cut-off: set once by the first forwarder that finds its client too slow.
#[derive(Clone, Default)]
struct Cut {
    token: CancellationToken,
    notice: Arc<Mutex<Option<String>>>,
}

impl Cut {
    fn cut(&self, notice: String) {
        let mut slot = self.notice.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(notice);
        }
        drop(slot);
        self.token.cancel();
    }

    fn notice(&self) -> Option<String> {
        self.notice
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn ack(id: &Value, code: u32, msg: &str, payload: Value) -> String {
    json!({"type": "ack", "id": id, "code": code, "msg": msg, "payload": payload}).to_string()
}

fn resync(session_id: &str, reason: &str, last_seq: u64, epoch: &str) -> String {
    json!({
        "type": "resync_required",
        "session_id": session_id,
        "timestamp": timestamp(),
        "payload": {"reason": reason, "last_seq": last_seq, "epoch": epoch,
            "hint": "subscribe again with this last_seq and epoch as the cursor; if that is refused too, fetch the history over REST and subscribe without a cursor"},
    })
    .to_string()
}

fn encode(frame: &Frame) -> String {
    serde_json::to_string(frame).unwrap_or_default()
}

/// One frame into the connection's queue, waiting at most `QUEUE_PATIENCE` for room.
async fn queue(out: &mpsc::Sender<String>, text: String) -> Result<(), Stop> {
    match tokio::time::timeout(QUEUE_PATIENCE, out.send(text)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(Stop::Closed),
        Err(_) => Err(Stop::TooSlow(format!(
            "the client read too slowly: {OUT_QUEUE} frames waited for over {}s",
            QUEUE_PATIENCE.as_secs()
        ))),
    }
}

enum Stop {
    Closed,
    TooSlow(String),
}

/// Send the replay, then live frames, until the session ends or the client is too slow (its
/// queue stays full, or it falls behind the session's ring): then the connection is cut.
async fn forward(
    out: mpsc::Sender<String>,
    cut: Cut,
    session_id: String,
    replay: Vec<Arc<Frame>>,
    mut live: broadcast::Receiver<Arc<Frame>>,
    mut last_sent: u64,
    epoch: String,
) {
    let stop = 'run: {
        for frame in replay {
            if let Err(stop) = queue(&out, encode(&frame)).await {
                break 'run stop;
            }
            last_sent = frame.seq;
        }
        loop {
            match live.recv().await {
                Ok(frame) => {
                    // Frames already replayed are skipped; volatile ones ride along.
                    if !frame.volatile && frame.seq <= last_sent {
                        continue;
                    }
                    if let Err(stop) = queue(&out, encode(&frame)).await {
                        break 'run stop;
                    }
                    if !frame.volatile {
                        last_sent = frame.seq;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    break 'run Stop::TooSlow(format!(
                        "the connection fell {missed} frames behind"
                    ));
                }
                Err(broadcast::error::RecvError::Closed) => break 'run Stop::Closed,
            }
        }
    };
    if let Stop::TooSlow(reason) = stop {
        tracing::warn!(session_id, last_sent, "WebSocket client cut off: {reason}");
        cut.cut(resync(&session_id, &reason, last_sent, &epoch));
    }
}

struct Connection {
    app: Arc<App>,
    out: mpsc::Sender<String>,
    cut: Cut,
    subscriptions: HashMap<String, JoinHandle<()>>,
    /// Who is connected (terminal frames are for this machine's clients unless allowed).
    peer: Option<Peer>,
    /// Forwarders of the terminals this connection is attached to, by terminal id.
    terminals: HashMap<String, JoinHandle<()>>,
}

/// Send a terminal's kept output from `next` on, then its live output and exit. A client that
/// falls behind the live channel is sent the kept output again from where it was; bytes that
/// have left the scrollback meanwhile show as a jump in `offset`.
async fn forward_terminal(out: mpsc::Sender<String>, cut: Cut, terminal: Arc<Terminal>) {
    let mut next = 0u64;
    loop {
        let (start, kept, exit, mut live) = terminal.attach();
        let skip = usize::try_from(next.saturating_sub(start)).unwrap_or(usize::MAX);
        if skip < kept.len() {
            let event = TermEvent::Output {
                offset: start.max(next),
                data: kept[skip..].into(),
            };
            if queue(
                &out,
                terminals::frame(&terminal.session_id, &terminal.id, &event),
            )
            .await
            .is_err()
            {
                return;
            }
        }
        next = next.max(start + kept.len() as u64);
        if let Some(exit_code) = exit {
            let event = TermEvent::Exit { exit_code };
            let _ = queue(
                &out,
                terminals::frame(&terminal.session_id, &terminal.id, &event),
            )
            .await;
            return;
        }
        loop {
            match live.recv().await {
                Ok(event) => {
                    if let TermEvent::Output { offset, data } = &event {
                        next = offset + data.len() as u64;
                    }
                    let text = terminals::frame(&terminal.session_id, &terminal.id, &event);
                    match queue(&out, text).await {
                        Ok(()) => {}
                        Err(Stop::Closed) => return,
                        Err(Stop::TooSlow(reason)) => {
                            cut.cut(json!({"type": "error", "payload": {"terminal_id": terminal.id, "reason": reason}}).to_string());
                            return;
                        }
                    }
                    if matches!(event, TermEvent::Exit { .. }) {
                        return;
                    }
                }
                // Catch up from the kept output.
                Err(broadcast::error::RecvError::Lagged(_)) => break,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
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
                self.cut.clone(),
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

    /// A `terminal_*` frame: its answer, and the terminal to start forwarding (attach).
    async fn terminal(
        &mut self,
        kind: &str,
        payload: &Value,
    ) -> Result<(Value, Option<Arc<Terminal>>), ApiError> {
        terminals::check_peer(&self.app, self.peer)?;
        let field = |name: &str| {
            payload[name].as_str().ok_or_else(|| {
                ApiError::validation(format!("{kind} needs payload.{name}, a string"))
            })
        };
        let terminal = self
            .app
            .terminals
            .get(field("session_id")?, field("terminal_id")?)?;
        match kind {
            "terminal_attach" => Ok((terminal.describe(), Some(terminal))),
            "terminal_input" => {
                terminal.write(field("data")?.as_bytes().to_vec()).await?;
                Ok((json!({}), None))
            }
            "terminal_resize" => {
                let size = TerminalSize::checked(
                    payload["cols"].as_u64().unwrap_or(0),
                    payload["rows"].as_u64().unwrap_or(0),
                )
                .map_err(|e| ApiError::validation(format!("terminal_resize: {e}")))?;
                terminal.resize(size).await?;
                Ok((terminal.describe(), None))
            }
            "terminal_detach" => {
                if let Some(task) = self.terminals.remove(&terminal.id) {
                    task.abort();
                }
                Ok((json!({}), None))
            }
            _ => {
                terminal.close().await;
                Ok((terminal.describe(), None))
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
            kind @ ("terminal_attach" | "terminal_input" | "terminal_resize"
            | "terminal_detach" | "terminal_close") => {
                match self.terminal(kind, payload).await {
                    Ok((data, attach)) => {
                        self.send(ack(id, code::OK, "success", data)).await;
                        // Started after the ack, so the ack comes before any output.
                        if let Some(terminal) = attach {
                            let task = tokio::spawn(forward_terminal(
                                self.out.clone(),
                                self.cut.clone(),
                                terminal.clone(),
                            ));
                            if let Some(old) = self.terminals.insert(terminal.id.clone(), task) {
                                old.abort();
                            }
                        }
                    }
                    Err(err) => self.send(ack(id, err.code, &err.msg, Value::Null)).await,
                }
            }
            other => {
                let msg = format!(
                    "unsupported frame type {other:?}: use subscribe, unsubscribe, client_hello, ping, abort or a terminal_* frame"
                );
                self.send(ack(id, code::VALIDATION, &msg, Value::Null))
                    .await;
            }
        }
    }
}

type Sink = futures::stream::SplitSink<WebSocket, Message>;

/// One write, `false` when it failed or took longer than `WRITE_TIMEOUT`.
async fn send_within(sink: &mut Sink, message: Message) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, sink.send(message)).await,
        Ok(Ok(()))
    )
}

/// Write queued frames until the queue closes or the connection is cut; a cut client gets
/// what was queued before the cut, the notice and a close frame. A write that takes longer
/// than `WRITE_TIMEOUT` ends the connection (the client is not reading).
async fn write(mut sink: Sink, mut queue: mpsc::Receiver<String>, cut: Cut) {
    loop {
        tokio::select! {
            biased;
            () = cut.token.cancelled() => {
                let mut healthy = true;
                while let Ok(text) = queue.try_recv() {
                    healthy = send_within(&mut sink, Message::Text(text.into())).await;
                    if !healthy {
                        break;
                    }
                }
                if healthy && let Some(notice) = cut.notice() {
                    healthy = send_within(&mut sink, Message::Text(notice.into())).await;
                }
                if healthy {
                    let frame = CloseFrame {
                        code: TOO_SLOW,
                        reason: "too slow: subscribe again from the last seq sent".into(),
                    };
                    let _ = send_within(&mut sink, Message::Close(Some(frame))).await;
                }
                return;
            }
            text = queue.recv() => {
                let Some(text) = text else { break };
                if !send_within(&mut sink, Message::Text(text.into())).await {
                    tracing::warn!("WebSocket client stopped reading for {WRITE_TIMEOUT:?}; connection closed");
                    return;
                }
            }
        }
    }
    let _ = tokio::time::timeout(WRITE_TIMEOUT, sink.close()).await;
}

/// Serve one upgraded connection until the client closes it or is cut off.
pub async fn serve(app: Arc<App>, socket: WebSocket, peer: Option<Peer>) {
    let (sink, mut stream) = socket.split();
    let (out, queue) = mpsc::channel::<String>(OUT_QUEUE);
    let cut = Cut::default();
    let mut writer = tokio::spawn(write(sink, queue, cut.clone()));
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
        cut,
        subscriptions: HashMap::new(),
        peer,
        terminals: HashMap::new(),
    };
    connection.send(hello.to_string()).await;
    loop {
        tokio::select! {
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => connection.handle(text.as_str()).await,
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                Some(Ok(_)) => {}
            },
            // The writer ended (cut off, or the client stopped reading): so does the connection.
            _ = &mut writer => {
                for (_, task) in connection.subscriptions.drain().chain(connection.terminals.drain()) {
                    task.abort();
                }
                return;
            }
        }
    }
    // Detached, not closed: the terminals keep running for the next client to attach.
    for (_, task) in connection
        .subscriptions
        .drain()
        .chain(connection.terminals.drain())
    {
        task.abort();
    }
    drop(connection);
    let _ = writer.await;
}
