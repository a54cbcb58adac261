//! Terminals over the web API on the real binary: a session's terminal is opened over REST,
//! typed into and read over the WebSocket, resized, closed; requests from another machine
//! are refused unless `--allow-remote-terminals`. (A terminal on an SSH-bound session is
//! tested with the sshd fixture in `environments.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::terminal_client::{client_runtime, echo_hi};
use common::web_client::WebServer;
use common::{CORE_FORMATS, Fixture};
use serde_json::json;

#[test]
fn a_terminal_opens_on_the_session_runs_typed_input_resizes_and_closes() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let server = WebServer::start(fx.command(&["web", "--port", "0", "--no-open"]));
    let meta = server.call("GET", "/api/v1/meta", json!({}));
    assert_eq!(meta["data"]["capabilities"]["terminal"], true, "{meta}");
    let session = server.create_session(&fx.cwd());
    let cwd = std::fs::canonicalize(fx.cwd()).unwrap();
    let pwd = cwd.display().to_string();
    let (closed, output) = client_runtime().block_on(echo_hi(&server, &session, &[("pwd", &pwd)]));
    assert_eq!(closed["environment"], "local");
    assert_eq!(closed["cwd"], cwd.display().to_string());
    assert!(
        common::terminal_client::screen_lines(output.as_bytes()).contains(&"hi".to_owned()),
        "{output}"
    );
    let missing = server.call(
        "GET",
        &format!("/api/v1/sessions/{session}/terminals/term_nope"),
        json!({}),
    );
    assert_eq!(missing["code"], 40412, "{missing}");
}

/// A request to `path` through this machine's first non-loopback IPv4 address (so the server
/// sees a peer that is not loopback); `None` when there is no such address.
fn from_outside(server: &WebServer, path: &str) -> Option<String> {
    let ip = if_addrs::get_if_addrs()
        .unwrap()
        .into_iter()
        .find(|i| i.ip().is_ipv4() && !i.is_loopback())?
        .ip();
    let mut stream = TcpStream::connect((ip, server.port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        server.port, server.token
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    Some(response)
}

#[test]
fn terminals_are_refused_to_other_machines_unless_allowed() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let closed =
        WebServer::start(fx.command(&["web", "--host", "0.0.0.0", "--port", "0", "--no-open"]));
    let session = closed.create_session(&fx.cwd());
    let path = format!("/api/v1/sessions/{session}/terminals");
    let Some(refused) = from_outside(&closed, &path) else {
        panic!("this machine has no non-loopback IPv4 address to connect from");
    };
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(refused.contains("\"code\":40303"), "{refused}");
    assert!(refused.contains("--allow-remote-terminals"), "{refused}");
    // Loopback clients are served.
    assert_eq!(closed.call("GET", &path, json!({}))["code"], 0);
    drop(closed);
    let open = WebServer::start(fx.command(&[
        "web",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        "--no-open",
        "--allow-remote-terminals",
    ]));
    let session = open.create_session(&fx.cwd());
    let served = from_outside(&open, &format!("/api/v1/sessions/{session}/terminals")).unwrap();
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    assert!(served.contains("\"code\":0"), "{served}");
}
