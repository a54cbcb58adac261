//! FetchURL against a loopback HTTP server: SSRF refusal, redirects, HTML reduction, errors.

use std::net::SocketAddr;

use kimi_tools::builtin::FetchUrlTool;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::common::{Workspace, text};

fn respond(path: &str) -> String {
    let (status, extra, ctype, body) = match path {
        "/page" => ("200 OK", "", "text/html; charset=utf-8", "<html><head><title>Hi</title></head><body><p>Hello <b>world</b></p><script>x()</script></body></html>".to_owned()),
        "/redir" => ("302 Found", "Location: /page\r\n", "text/plain", String::new()),
        "/loop" => ("302 Found", "Location: /loop\r\n", "text/plain", String::new()),
        "/text" => ("200 OK", "", "text/plain", "plain body".to_owned()),
        "/img" => ("200 OK", "", "image/png", "PNG".to_owned()),
        _ => ("404 Not Found", "", "text/plain", "nope".to_owned()),
    };
    format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn serve() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let req = String::from_utf8_lossy(&buf);
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let _ = sock.write_all(respond(&path).as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn ssrf_guard_refuses_loopback_by_default() {
    let ws = Workspace::new();
    let addr = serve().await;
    let r = ws
        .run(
            &FetchUrlTool::default(),
            json!({"url": format!("http://{addr}/page")}),
        )
        .await;
    assert!(r.is_error);
    assert!(
        text(&r).starts_with(&format!(
            "Refusing to fetch http://{addr}/page: `127.0.0.1` resolves to 127.0.0.1"
        )),
        "{}",
        text(&r)
    );
    let r = ws
        .run(
            &FetchUrlTool::default(),
            json!({"url": "ftp://example.com/x"}),
        )
        .await;
    assert!(r.is_error && text(&r).contains("only http and https"));
}

#[tokio::test]
async fn fetches_follows_redirects_and_reports_errors() {
    let mut ws = Workspace::new();
    ws.ctx.settings.fetch_allow_private = true;
    let addr = serve().await;
    let base = format!("http://{addr}");
    let r = ws
        .run(
            &FetchUrlTool::default(),
            json!({"url": format!("{base}/redir")}),
        )
        .await;
    assert_eq!(
        text(&r),
        format!("[Extracted text of the HTML page {base}/page]\nTitle: Hi\n\nHello world")
    );
    let r = ws
        .run(
            &FetchUrlTool::default(),
            json!({"url": format!("{base}/text")}),
        )
        .await;
    assert_eq!(
        text(&r),
        format!("[Verbatim body of {base}/text (text/plain)]\nplain body")
    );
    let r = ws
        .run(
            &FetchUrlTool::default(),
            json!({"url": format!("{base}/loop")}),
        )
        .await;
    assert!(
        r.is_error && text(&r).starts_with("Too many redirects (more than 10)"),
        "{}",
        text(&r)
    );
    let r = ws
        .run(
            &FetchUrlTool::default(),
            json!({"url": format!("{base}/missing")}),
        )
        .await;
    assert_eq!(text(&r), format!("HTTP 404 Not Found for {base}/missing."));
    let r = ws
        .run(
            &FetchUrlTool::default(),
            json!({"url": format!("{base}/img")}),
        )
        .await;
    assert!(r.is_error && text(&r).contains("which is not text"));
}
