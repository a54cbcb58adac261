//! The accept loop: HTTP/1 connections served by hyper with a deadline for the request head, a
//! deadline for the whole request body and a bound on open connections (upgraded WebSockets
//! included), so idle or trickling clients cannot starve the ones that talk.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::Request;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Sleep;
use tower::ServiceExt;

/// Time a client gets to send a complete request head, counted from the moment the server waits
/// for it (a new connection, or the next request on a kept-alive one). Real clients send their
/// head in one packet; 10 s leaves room for a slow network while an idle or byte-a-second
/// socket is gone well before it can matter. It also bounds the WebSocket handshake, which is
/// a request head; an upgraded WebSocket is not subject to it.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Time a client gets to send a whole request body once its head has arrived. A total, not a
/// gap between reads (the per-read idle timeout of tower-http's body layer lets a client that
/// sends a byte just under the limit hold the request forever); the bodies of this API are small
/// JSON documents, so 30 s is generous.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Open connections served at once, WebSockets included. Far more than a browser and a few
/// scripts use (browsers open at most six per host, plus one WebSocket per tab) and a small
/// number of file descriptors, yet enough that 250 stuck sockets leave room for everyone else.
/// The connection over the bound is closed right away, never queued.
pub const MAX_CONNECTIONS: usize = 512;

/// How long a burst of refused connections or failed accepts is summed up before it is reported
/// again (a flood must not flood the log and the terminal too).
const NOTICE_EVERY: Duration = Duration::from_secs(10);

/// Pause after an accept error other than a failed handshake: the usual cause is running out of
/// file descriptors, which only closing connections can cure, so retrying at once would spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// The server's timeouts and connection bound; [`Limits::default`] holds the constants above,
/// which `kimi-rs web` uses. Tests pass short values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: HEADER_TIMEOUT,
            body_timeout: BODY_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// Accept and serve connections until `shutdown` resolves, then let the requests in flight
/// finish (upgraded WebSockets are not waited for).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    notices: Notices,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // Connection tasks watch `stop` for the shutdown and each holds a clone of `done` until it
    // ends, so the loop can wait for them.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, done_rx) = watch::channel(());
    let mut refused = Throttled::default();
    let mut failed = Throttled::default();
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => (stream, peer),
                Err(err) if client_gone(&err) => continue,
                Err(err) => {
                    failed.report(&notices, |n| format!(
                        "cannot accept connections ({n} failure(s)): {err}; if it says too many open files, raise the limit (ulimit -n)"
                    ));
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            // Full: the newest connection goes, so the accept loop never waits and the
            // connections already served keep their place.
            drop(stream);
            let bound = limits.max_connections;
            refused.report(&notices, |n| format!(
                "closed {n} new connection(s): {bound} are open already (idle or stuck clients are closed after {:?})",
                limits.header_timeout
            ));
            continue;
        };
        let io = TokioIo::new(Counted {
            stream,
            _permit: permit,
        });
        let body_timeout = limits.body_timeout;
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            // Who is asking: terminals are for this machine's clients unless allowed.
            request
                .extensions_mut()
                .insert(crate::terminals::Peer(peer));
            router
                .clone()
                .oneshot(request.map(|body| within(body, body_timeout)))
        });
        let connection = http.serve_connection(io, service).with_upgrades();
        let mut stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let mut connection = pin!(connection);
            let mut stopping = false;
            loop {
                tokio::select! {
                    result = connection.as_mut() => {
                        // Header timeouts, resets and clients that vanish end up here.
                        if let Err(err) = result {
                            tracing::debug!("web connection ended: {err}");
                        }
                        break;
                    }
                    _ = stop.wait_for(|stop| *stop), if !stopping => {
                        stopping = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(done);
        });
    }
    drop(listener);
    drop(done_rx);
    let _ = stop_tx.send(true);
    done_tx.closed().await;
}

/// Where the server reports what its operator should see while it runs (connections closed at
/// the bound, failing accepts), besides the log. `kimi-rs web` prints them on stderr.
#[derive(Clone, Default)]
pub struct Notices(Option<Arc<Notify>>);

type Notify = dyn Fn(&str) + Send + Sync;

impl Notices {
    pub fn new(notify: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Notices(Some(Arc::new(notify)))
    }

    fn warn(&self, message: &str) {
        tracing::warn!("{message}");
        if let Some(notify) = &self.0 {
            notify(message);
        }
    }
}

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Notices(..)"
        } else {
            "Notices(none)"
        })
    }
}

/// Reports a repeated event at most every [`NOTICE_EVERY`], with how often it happened since.
#[derive(Default)]
struct Throttled {
    since: u64,
    reported_at: Option<Instant>,
}

impl Throttled {
    fn report(&mut self, notices: &Notices, message: impl FnOnce(u64) -> String) {
        self.since += 1;
        if self
            .reported_at
            .is_none_or(|at| at.elapsed() >= NOTICE_EVERY)
        {
            notices.warn(&message(self.since));
            self.since = 0;
            self.reported_at = Some(Instant::now());
        }
    }
}

/// Whether an accept error is the client's (it gave up during the TCP handshake).
fn client_gone(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// A TCP stream that holds its connection permit for as long as it lives, which for an upgraded
/// WebSocket is past the end of the HTTP connection that carried its handshake.
struct Counted {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

impl AsyncRead for Counted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The request body, failing once `limit` has passed since the head arrived.
fn within(body: Incoming, limit: Duration) -> Body {
    if body.is_end_stream() {
        return Body::new(body);
    }
    Body::new(Deadline {
        body,
        limit,
        sleep: Box::pin(tokio::time::sleep(limit)),
    })
}

#[derive(Debug, thiserror::Error)]
enum BodyError {
    #[error(
        "the request body did not arrive within {0:?}: send the whole body right after the headers"
    )]
    TooSlow(Duration),
    #[error(transparent)]
    Read(#[from] hyper::Error),
}

struct Deadline {
    body: Incoming,
    limit: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl HttpBody for Deadline {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(BodyError::from)));
        }
        match this.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BodyError::TooSlow(this.limit)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
