//! The loopback redirect listener of an OAuth login: `http://127.0.0.1:<random port>/callback`.
//! The browser lands there after the user approves; the listener answers with a short page and
//! hands the full redirect URL (with `code` and `state`) to the waiting login. Anything else
//! that connects gets a 404 and does not end the wait.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// Longest request head read from a connection (a redirect URL is far shorter).
const MAX_HEAD: usize = 16 * 1024;
/// How long one connection may take to send its request line.
const READ_LIMIT: Duration = Duration::from_secs(10);

/// A listening callback endpoint.
pub struct CallbackListener {
    redirect_uri: String,
    redirects: mpsc::Receiver<String>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CallbackListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CallbackListener {
    /// Bind a random loopback port and start answering.
    pub async fn start() -> std::io::Result<CallbackListener> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let redirect_uri = format!("{base}/callback");
        let (tx, redirects) = mpsc::channel(4);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let tx = tx.clone();
                let base = base.clone();
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, &base, &tx).await {
                        tracing::debug!(error = %e, "OAuth callback connection dropped");
                    }
                });
            }
        });
        Ok(CallbackListener {
            redirect_uri,
            redirects,
            task,
        })
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// The next redirect the browser delivered (its full URL).
    pub async fn next(&mut self) -> Option<String> {
        self.redirects.recv().await
    }
}

async fn answer(
    mut stream: tokio::net::TcpStream,
    base: &str,
    tx: &mpsc::Sender<String>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::time::timeout(READ_LIMIT, read)
        .await
        .map_err(|_| std::io::Error::other("request not sent in time"))??;
    let text = String::from_utf8_lossy(&head);
    let target = text
        .lines()
        .next()
        .and_then(|line| {
            let mut parts = line.split_whitespace();
            match (parts.next(), parts.next()) {
                (Some("GET"), Some(target)) => Some(target.to_owned()),
                _ => None,
            }
        })
        .filter(|target| target == "/callback" || target.starts_with("/callback?"));
    let (status, body) = match &target {
        Some(target) if target.contains("error=") => (
            "200 OK",
            "Sign-in was not completed. You can close this window and return to kimi-rs.",
        ),
        Some(_) => (
            "200 OK",
            "Signed in. You can close this window and return to kimi-rs.",
        ),
        None => ("404 Not Found", "Not the kimi-rs sign-in callback."),
    };
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>kimi-rs</title></head><body><p>{body}</p></body></html>"
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await?;
    if let Some(target) = target {
        // The login may have ended already; then nobody needs this redirect.
        let _ = tx.send(format!("{base}{target}")).await;
    }
    Ok(())
}
