//! The server against slow and greedy clients, over loopback with short limits: idle and
//! trickling request heads (a WebSocket handshake too) are cut off at the header timeout, a
//! trickled body at the body timeout (a total, not a gap between bytes), connections over the
//! bound are closed on arrival while the others stay, and an idle authenticated WebSocket
//! outlives both timeouts while counting toward the bound.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use kimi_core::host::{SessionExtras, SessionFactory, SessionHost};
use kimi_core::session::{Resume, SessionSetup};
use kimi_web::{Limits, Notices, ServerOptions};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Upper bound of every wait: far above the limits under test, so only a broken server hits it.
const WAIT: Duration = Duration::from_secs(20);
const SHORT: Duration = Duration::from_millis(300);
/// Pace of a trickling client: one byte this often.
const TRICKLE: Duration = Duration::from_millis(50);

/// These tests open no sessions.
struct NoSessions;

impl SessionFactory for NoSessions {
    fn setup(
        &self,
        _cwd: &Path,
        _resume: &Resume,
        _mcp_servers: Option<&Value>,
    ) -> Result<(SessionSetup, Arc<dyn SessionExtras>), String> {
        Err("this test host opens no sessions".to_owned())
    }
}

struct Server {
    addr: SocketAddr,
    token: String,
    notices: mpsc::UnboundedReceiver<String>,
    _home: tempfile::TempDir,
}

async fn start(limits: Limits) -> Server {
    let home = tempfile::tempdir().unwrap();
    let (tx, notices) = mpsc::unbounded_channel();
    let mut options = ServerOptions::new("127.0.0.1", 0, home.path());
    options.limits = limits;
    options.notices = Notices::new(move |message| {
        let _ = tx.send(message.to_owned());
    });
    let bound = kimi_web::bind(options).await.unwrap();
    let (addr, token) = (bound.addr(), bound.token().to_owned());
    let host = Arc::new(SessionHost::new(
        home.path().to_owned(),
        Arc::new(NoSessions),
    ));
    // Runs until the test's runtime goes away.
    tokio::spawn(bound.serve(host, std::future::pending()));
    Server {
        addr,
        token,
        notices,
        _home: home,
    }
}

/// Read until the server closes the connection: what it sent and when it closed.
async fn until_closed(stream: &mut (impl AsyncReadExt + Unpin)) -> (String, Instant) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(WAIT, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server closed the connection in time");
    (String::from_utf8_lossy(&seen).into_owned(), Instant::now())
}

/// Send `request` a byte every [`TRICKLE`] on a new connection until the server closes it.
async fn trickle(addr: SocketAddr, request: &str) -> (usize, String, Duration) {
    trickle_on(TcpStream::connect(addr).await.unwrap(), request).await
}

/// Send `bytes` a byte every [`TRICKLE`] until the server closes the connection. Returns how
/// many bytes went out, what the server answered and how long after the first byte it closed.
async fn trickle_on(stream: TcpStream, bytes: &str) -> (usize, String, Duration) {
    let (mut read, mut write) = stream.into_split();
    let started = Instant::now();
    let closed = AtomicBool::new(false);
    let writer = async {
        let mut sent = 0;
        for byte in bytes.bytes() {
            if closed.load(Ordering::SeqCst) || write.write_all(&[byte]).await.is_err() {
                break;
            }
            sent += 1;
            tokio::time::sleep(TRICKLE).await;
        }
        sent
    };
    let reader = async {
        let out = until_closed(&mut read).await;
        closed.store(true, Ordering::SeqCst);
        out
    };
    let (sent, (answer, at)) = tokio::join!(writer, reader);
    (sent, answer, at - started)
}

fn limits(header: Duration, body: Duration, connections: usize) -> Limits {
    Limits {
        header_timeout: header,
        body_timeout: body,
        max_connections: connections,
    }
}

async fn healthz(server: &Server) -> String {
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let request = format!(
        "GET /api/v1/healthz HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        server.addr, server.token
    );
    // A refused connection may be closed before the request is written.
    let _ = stream.write_all(request.as_bytes()).await;
    until_closed(&mut stream).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_trickling_request_heads_are_cut_off_at_the_header_timeout() {
    let server = start(limits(SHORT, WAIT, 64)).await;

    let opened = Instant::now();
    let mut idle = TcpStream::connect(server.addr).await.unwrap();
    let (answer, closed) = until_closed(&mut idle).await;
    assert!(
        closed - opened >= SHORT,
        "closed after {:?}",
        closed - opened
    );
    assert!(!answer.contains(" 200 "), "{answer}");

    let host = server.addr;
    let plain = format!("GET /api/v1/healthz HTTP/1.1\r\nHost: {host}\r\n\r\n");
    let handshake = format!(
        "GET /api/v1/ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: kimi-code.bearer.{}\r\n\r\n",
        server.token
    );
    for request in [plain, handshake] {
        let (sent, answer, after) = trickle(server.addr, &request).await;
        // Sent whole, the request would have taken `len * TRICKLE`, far past the timeout.
        assert!(sent < request.len(), "sent all {sent} bytes of {request:?}");
        assert!(after >= SHORT, "closed after {after:?}");
        assert!(
            !answer.contains(" 200 ") && !answer.contains(" 101 "),
            "{answer}"
        );
    }

    // A client that sends its head at once is served.
    assert!(healthz(&server).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_request_body_is_cut_off_at_the_body_timeout() {
    let server = start(limits(WAIT, SHORT, 64)).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /api/v1/sessions HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n",
        server.addr, server.token
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    // A byte every 50 ms: a gap timeout of 300 ms would never fire, the total deadline does.
    let (sent, answer, after) = trickle_on(stream, &" ".repeat(200)).await;
    assert!(sent < 200, "the whole body went through");
    assert!(after >= SHORT, "closed after {after:?}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, body) = answer.split_once("\r\n\r\n").unwrap();
    let envelope: Value = serde_json::from_str(body).unwrap();
    assert_eq!(envelope["code"], 40001, "{envelope}");
    let msg = envelope["msg"].as_str().unwrap();
    assert!(
        msg.contains("the request body did not arrive within 300ms"),
        "{msg}"
    );
    assert!(started.elapsed() < WAIT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_bound_are_closed_on_arrival_and_the_others_kept() {
    let mut server = start(limits(WAIT, WAIT, 4)).await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    // Accepted after the four (accept order is arrival order), so it is the one closed.
    let mut fifth = TcpStream::connect(server.addr).await.unwrap();
    let (answer, _) = until_closed(&mut fifth).await;
    assert_eq!(answer, "");
    let notice = tokio::time::timeout(WAIT, server.notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        notice.contains("closed 1 new connection(s): 4 are open already"),
        "{notice}"
    );
    for stream in &idle {
        let mut buf = [0u8; 1];
        let still_open = matches!(stream.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        assert!(still_open, "an established connection was closed");
    }

    // Once a client leaves, its place is free again (after the server noticed it left).
    drop(idle.pop());
    let started = Instant::now();
    loop {
        let answer = healthz(&server).await;
        if answer.starts_with("HTTP/1.1 200") {
            break;
        }
        assert_eq!(answer, "", "refused connections get no answer");
        assert!(started.elapsed() < WAIT, "the freed place was never reused");
        // The server frees the place when it sees the socket close, which no client can
        // observe: a bounded poll of that state, paced so it does not flood the accept loop.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_authenticated_websocket_outlives_the_timeouts_and_counts_toward_the_bound() {
    let mut server = start(limits(SHORT, SHORT, 2)).await;
    let mut request = format!("ws://{}/api/v1/ws", server.addr)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        format!("kimi-code.bearer.{}", server.token)
            .parse()
            .unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let hello = tokio::time::timeout(WAIT, socket.next()).await.unwrap();
    assert!(format!("{hello:?}").contains("server_hello"), "{hello:?}");

    // An idle socket opened after the upgrade is closed at the header timeout: by then the
    // WebSocket has been idle longer than that. Meanwhile it fills the bound (WebSocket + it),
    // so a third connection is closed on arrival: the upgraded connection still counts.
    let mut idle = TcpStream::connect(server.addr).await.unwrap();
    let mut third = TcpStream::connect(server.addr).await.unwrap();
    assert_eq!(until_closed(&mut third).await.0, "");
    let notice = tokio::time::timeout(WAIT, server.notices.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(notice.contains("2 are open already"), "{notice}");
    let opened = Instant::now();
    let (_, closed) = until_closed(&mut idle).await;
    assert!(closed - opened >= SHORT);

    socket
        .send(Message::Text(r#"{"type":"ping","id":"p"}"#.into()))
        .await
        .unwrap();
    let pong = tokio::time::timeout(WAIT, socket.next())
        .await
        .expect("an answer in time")
        .expect("the WebSocket is still open")
        .unwrap();
    let pong: Value = serde_json::from_str(pong.to_text().unwrap()).unwrap();
    assert_eq!(pong["type"], "pong", "{pong}");
}
