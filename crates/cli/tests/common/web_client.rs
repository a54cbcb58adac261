//! A `kimi-rs web` child process and WebSocket clients for it, shared by the web load test and
//! the web load benchmark (which includes this file by path): start the server and read its
//! URL, call REST, connect sockets (optionally with a tiny receive buffer, to play a client
//! that reads slowly) and read their frames.
// The test and the benchmark each use their own subset.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

const START: Duration = Duration::from_secs(30);

pub struct WebServer {
    child: Child,
    pub port: u16,
    pub token: String,
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl WebServer {
    /// Start `command` (a `kimi-rs web --port 0 --no-open …`) and wait for its URL.
    pub fn start(mut command: Command) -> WebServer {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("kimi-rs web: serving on ") {
                    let _ = tx.send(url.to_owned());
                }
            }
        });
        let url = rx.recv_timeout(START).expect("the server printed its URL");
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
        let (port, token) = rest.split_once("/#token=").unwrap();
        WebServer {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
        }
    }

    /// The child's process id (for reading its memory use).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One authenticated request; the envelope, after checking the HTTP status is 200.
    pub fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let body = body.to_string();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(START)).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.port,
            self.token,
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "{method} {path}: {response}"
        );
        let (_, body) = response.split_once("\r\n\r\n").unwrap();
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
    }

    /// A new session in `cwd`; its id.
    pub fn create_session(&self, cwd: &std::path::Path) -> String {
        let created = self.call(
            "POST",
            "/api/v1/sessions",
            json!({"metadata": {"cwd": cwd}}),
        );
        assert_eq!(created["code"], 0, "{created}");
        created["data"]["id"].as_str().unwrap().to_owned()
    }

    pub fn prompt(&self, session: &str, text: &str) {
        let sent = self.call(
            "POST",
            &format!("/api/v1/sessions/{session}/prompts"),
            json!({"content": [{"type": "text", "text": text}]}),
        );
        assert_eq!(sent["code"], 0, "{sent}");
    }
}

pub type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// A WebSocket to the server, past `server_hello`. `recv_buffer` shrinks the socket's receive
/// buffer (bytes) so that a client that does not read fills up quickly.
pub async fn connect(port: u16, token: &str, recv_buffer: Option<u32>) -> Socket {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    if let Some(size) = recv_buffer {
        socket.set_recv_buffer_size(size).unwrap();
    }
    let stream = socket
        .connect(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .unwrap();
    let mut request = format!("ws://127.0.0.1:{port}/api/v1/ws")
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        format!("kimi-code.bearer.{token}").parse().unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .unwrap();
    match next(&mut socket, START).await {
        Some(Incoming::Frame(hello)) => assert_eq!(hello["type"], "server_hello", "{hello}"),
        other => panic!("no server_hello: {other:?}"),
    }
    socket
}

/// What a socket read gave.
#[derive(Debug)]
pub enum Incoming {
    Frame(Value),
    Closed(Option<CloseFrame>),
}

/// The next text frame or the close, `None` after `wait` without either (or at end of stream).
pub async fn next(socket: &mut Socket, wait: Duration) -> Option<Incoming> {
    loop {
        let message = tokio::time::timeout(wait, socket.next()).await.ok()??;
        match message {
            Ok(Message::Text(text)) => {
                return Some(Incoming::Frame(
                    serde_json::from_str(text.as_str()).unwrap(),
                ));
            }
            Ok(Message::Close(frame)) => return Some(Incoming::Closed(frame)),
            Ok(_) => {}
            Err(_) => return Some(Incoming::Closed(None)),
        }
    }
}

pub async fn send(socket: &mut Socket, frame: Value) {
    socket
        .send(Message::Text(frame.to_string().into()))
        .await
        .unwrap();
}

/// Subscribe to `session` (from `cursor` = `(seq, epoch)` if given); the ack's payload.
pub async fn subscribe(socket: &mut Socket, session: &str, cursor: Option<(u64, &str)>) -> Value {
    let mut payload = json!({"session_ids": [session]});
    if let Some((seq, epoch)) = cursor {
        payload["cursors"] = json!({session: {"seq": seq, "epoch": epoch}});
    }
    send(
        socket,
        json!({"type": "subscribe", "id": "sub", "payload": payload}),
    )
    .await;
    loop {
        match next(socket, START).await {
            Some(Incoming::Frame(frame)) if frame["type"] == "ack" && frame["id"] == "sub" => {
                assert_eq!(frame["code"], 0, "{frame}");
                return frame["payload"].clone();
            }
            Some(Incoming::Frame(_)) => {}
            other => panic!("no subscribe ack: {other:?}"),
        }
    }
}

/// What one client saw of a session's events, checked for order as it arrives.
#[derive(Debug, Default)]
pub struct Seen {
    /// Durable frames' seqs, in arrival order.
    pub seqs: Vec<u64>,
    /// The streamed answer, delta by delta.
    pub text: String,
    pub frames: u64,
    pub bytes: u64,
    /// A durable seq that did not follow the previous one.
    pub out_of_order: Option<String>,
    pub turn_ended: bool,
}

impl Seen {
    pub fn add(&mut self, frame: &Value) {
        self.frames += 1;
        self.bytes += frame.to_string().len() as u64;
        let kind = frame["type"].as_str().unwrap_or_default();
        if kind == "assistant.delta" {
            self.text
                .push_str(frame["payload"]["text"].as_str().unwrap_or_default());
            return;
        }
        if frame["volatile"] == true || frame.get("seq").is_none() {
            return;
        }
        let seq = frame["seq"].as_u64().unwrap_or_default();
        if let Some(last) = self.seqs.last()
            && seq != last + 1
            && self.out_of_order.is_none()
        {
            self.out_of_order = Some(format!("{kind} seq {seq} after {last}"));
        }
        self.seqs.push(seq);
        if kind == "turn.ended" {
            self.turn_ended = true;
        }
    }
}
