//! Attacks on one attempt's bounds over a real loopback socket: a server that only sends
//! keep-alives or content-free chunks, one that streams text forever, and a Retry-After of a
//! day. Each must end the attempt with a clear error instead of hanging or exhausting memory.

use std::sync::Mutex;
use std::time::Duration;

use futures::StreamExt;
use kimi_llm::scripted::ScriptTurn;
use kimi_llm::{
    Accumulator, LlmError, Provider, ProviderType, RetryPolicy, StallLimits, build_provider,
    stream_watched, with_retry,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::common::{fixture, request};

/// How long a test waits for anything before it fails instead of hanging.
const BOUND: Duration = Duration::from_secs(60);

/// A one-connection SSE server: after the response headers it writes `first`, then
/// `forever(i)` for i = 0, 1, … every `every` until the client goes away (a write fails) or
/// the test's bound runs out. Reports how many bytes it wrote once the client disconnected.
struct RawServer {
    url: String,
    gone: oneshot::Receiver<u64>,
}

impl RawServer {
    async fn start(
        first: String,
        every: Duration,
        forever: impl Fn(u64) -> String + Send + 'static,
    ) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let (tx, gone) = oneshot::channel();
        tokio::spawn(async move {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            read_request(&mut socket).await;
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            let mut written = 0u64;
            let mut send = async |bytes: &[u8]| -> bool {
                written += bytes.len() as u64;
                socket.write_all(bytes).await.is_ok() && socket.flush().await.is_ok()
            };
            if !send(head.as_bytes()).await || !send(first.as_bytes()).await {
                let _ = tx.send(written);
                return;
            }
            let deadline = tokio::time::Instant::now() + BOUND;
            let mut i = 0;
            while tokio::time::Instant::now() < deadline {
                if !send(forever(i).as_bytes()).await {
                    let _ = tx.send(written);
                    return;
                }
                i += 1;
                if !every.is_zero() {
                    tokio::time::sleep(every).await;
                }
            }
        });
        RawServer { url, gone }
    }

    fn provider(&self) -> std::sync::Arc<dyn Provider> {
        let model = kimi_test_support::test_model(ProviderType::OpenAi, &self.url, "gpt-4.1");
        build_provider(&model).unwrap()
    }

    /// Waits (bounded) for the client to drop the connection; the bytes written by then.
    async fn disconnected(self) -> u64 {
        tokio::time::timeout(BOUND, self.gone)
            .await
            .expect("the client never closed the connection")
            .expect("the server task ended without seeing a disconnect")
    }
}

/// Reads the request head and its body (by Content-Length) so the client sees a clean answer.
async fn read_request(socket: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Ok(n) = socket.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return;
            }
        }
    }
}

fn limits(first_token: u64, idle: u64) -> StallLimits {
    StallLimits {
        first_token: Some(Duration::from_secs(first_token)),
        idle: Some(Duration::from_secs(idle)),
        ..StallLimits::from_policy(&RetryPolicy::default())
    }
}

/// Streams one attempt to its end like the engine does; the error that ended it.
async fn run_attempt(provider: &dyn Provider, limits: StallLimits) -> LlmError {
    let run = async {
        let mut stream = stream_watched(provider, request(), limits).await?;
        let mut acc = Accumulator::new();
        while let Some(item) = stream.next().await {
            acc.push(item?);
        }
        Ok::<_, LlmError>(acc.finish())
    };
    match tokio::time::timeout(BOUND, run).await {
        Ok(Ok(done)) => panic!("the attempt succeeded: {done:?}"),
        Ok(Err(err)) => err,
        Err(_) => panic!("the attempt did not end within {BOUND:?}"),
    }
}

fn chunk(delta: &str) -> String {
    format!("data: {{\"id\":\"c1\",\"choices\":[{{\"index\":0,\"delta\":{delta}}}]}}\n\n")
}

#[tokio::test]
async fn keep_alive_comments_alone_stall_before_the_first_token() {
    let server = RawServer::start(String::new(), Duration::from_millis(100), |_| {
        ": keep-alive\n\n".to_owned()
    })
    .await;
    let err = run_attempt(server.provider().as_ref(), limits(1, 1)).await;
    assert!(
        matches!(
            err,
            LlmError::StreamStalled {
                first_token: true,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.is_retryable());
    server.disconnected().await;
}

#[tokio::test]
async fn content_free_chunks_and_pings_do_not_count_as_tokens() {
    // Empty deltas with usage, empty-data events and comments: bytes arrive, no answer does.
    let server = RawServer::start(String::new(), Duration::from_millis(100), |i| match i % 3 {
        0 => "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{}}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":0}}\n\n".to_owned(),
        1 => chunk("{\"content\":\"\"}"),
        _ => "event: ping\ndata:\n\n".to_owned(),
    })
    .await;
    let err = run_attempt(server.provider().as_ref(), limits(1, 1)).await;
    assert!(
        matches!(
            err,
            LlmError::StreamStalled {
                first_token: true,
                ..
            }
        ),
        "{err}"
    );
    server.disconnected().await;
}

#[tokio::test]
async fn keep_alives_after_some_text_are_an_idle_stall() {
    let usage_only = "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n";
    let server = RawServer::start(
        chunk("{\"content\":\"hel\"}"),
        Duration::from_millis(100),
        move |i| {
            if i % 2 == 0 {
                ": keep-alive\n\n".to_owned()
            } else {
                usage_only.to_owned()
            }
        },
    )
    .await;
    // A long first-token limit: only the idle limit can end this attempt.
    let err = run_attempt(server.provider().as_ref(), limits(600, 1)).await;
    assert!(
        matches!(
            err,
            LlmError::StreamStalled {
                first_token: false,
                ..
            }
        ),
        "{err}"
    );
    server.disconnected().await;
}

#[tokio::test]
async fn an_endless_answer_is_cut_at_the_size_bound_and_not_retried() {
    let piece = chunk(&format!("{{\"content\":\"{}\"}}", "x".repeat(64 * 1024)));
    let server = RawServer::start(String::new(), Duration::ZERO, move |_| piece.clone()).await;
    let provider = server.provider();
    let bound = StallLimits {
        max_response_bytes: 1024 * 1024,
        ..limits(600, 600)
    };
    let attempts = Mutex::new(0);
    let result = with_retry(
        &RetryPolicy::default(),
        &CancellationToken::new(),
        |_| {},
        |_| {
            *attempts.lock().unwrap() += 1;
            let provider = provider.clone();
            async move { Err::<(), _>(run_attempt(provider.as_ref(), bound).await) }
        },
    )
    .await;
    let err = result.unwrap_err();
    assert!(matches!(err, LlmError::ResponseTooLarge { .. }), "{err}");
    assert!(
        err.to_string().contains("exceeded 1 MiB") && err.to_string().contains("stream was cut"),
        "{err}"
    );
    assert_eq!(
        *attempts.lock().unwrap(),
        1,
        "a runaway answer is not retried"
    );
    let written = server.disconnected().await;
    // The server got ahead by at most the socket buffers, not by the whole (endless) answer.
    assert!(written < 64 * 1024 * 1024, "{written} bytes written");
}

async fn rate_limited(retry_after: &str) -> super::common::Fixture {
    fixture(
        ProviderType::OpenAi,
        vec![
            ScriptTurn::Error {
                status: 429,
                body: r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#
                    .into(),
                headers: vec![("Retry-After".into(), retry_after.into())],
            },
            ScriptTurn::text("ok"),
        ],
    )
    .await
}

#[tokio::test]
async fn a_day_long_retry_after_fails_at_once_naming_the_key() {
    let f = rate_limited("86000").await;
    let cap = StallLimits {
        max_retry_after: Duration::from_secs(2),
        ..limits(600, 600)
    };
    // The engine's path: the capped error comes back from the attempt itself.
    let Err(err) = stream_watched(f.provider.as_ref(), request(), cap).await else {
        panic!("a 429 opened a stream");
    };
    assert!(matches!(err, LlmError::RetryAfterTooLong { .. }), "{err}");
    assert!(!err.is_retryable());
    let text = err.to_string();
    assert!(
        text.contains("asked to wait 86000 s") && text.contains("max_retry_after_s = 2 s"),
        "{text}"
    );
    assert_eq!(f.server.remaining_turns(), 1, "no second request was sent");
}

#[tokio::test]
async fn a_retry_after_a_little_over_the_cap_waits_the_cap_and_says_so() {
    let f = rate_limited("3").await;
    let policy = RetryPolicy {
        max_retry_after: Duration::from_secs(1),
        ..RetryPolicy::default()
    };
    let seen = Mutex::new(Vec::new());
    let result = tokio::time::timeout(
        BOUND,
        with_retry(
            &policy,
            &CancellationToken::new(),
            |e| seen.lock().unwrap().push((e.delay, e.error.to_string())),
            |_| kimi_llm::complete(f.provider.as_ref(), request()),
        ),
    )
    .await
    .unwrap();
    assert_eq!(result.unwrap().message.text(), "ok");
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, Duration::from_secs(1));
    assert!(
        seen[0]
            .1
            .contains("server asked to wait 3 s; waiting 1 s ([loop_control] max_retry_after_s)"),
        "{}",
        seen[0].1
    );
}
