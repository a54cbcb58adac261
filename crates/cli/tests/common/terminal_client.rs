//! A user's terminal over the web API, driven like a browser would: open it over REST, attach
//! over the WebSocket, type, resize, close. Shared by the local and the SSH-bound tests.
#![allow(dead_code)]

use base64::Engine as _;
use serde_json::{Value, json};

use super::WAIT;
use super::web_client::{Incoming, Socket, WebServer, connect, next, send};

/// A runtime for the WebSocket client (the fixture's scripted server runs its own).
pub fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The next frame that is not an event of a session subscription.
async fn frame(socket: &mut Socket) -> Value {
    match next(socket, WAIT).await {
        Some(Incoming::Frame(frame)) => frame,
        other => panic!("the socket ended: {other:?}"),
    }
}

/// The ack of frame `id`, checked for success; its payload.
async fn ack(socket: &mut Socket, id: &str, output: &mut Vec<u8>) -> Value {
    loop {
        let frame = frame(socket).await;
        if frame["type"] == "ack" && frame["id"] == id {
            assert_eq!(frame["code"], 0, "{frame}");
            return frame["payload"].clone();
        }
        take_output(&frame, output);
    }
}

fn take_output(frame: &Value, output: &mut Vec<u8>) {
    if frame["type"] == "terminal_output" {
        let data = frame["payload"]["data"].as_str().unwrap();
        output.extend(
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap(),
        );
    }
}

/// The terminal's output as lines, without escape sequences (prompts set modes and titles).
pub fn screen_lines(output: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(output);
    let mut plain = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            // CSI: up to a final byte in @..~.
            ('\u{1b}', Some('[')) => {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \.
            ('\u{1b}', Some(']')) => {
                for c in chars.by_ref() {
                    if c == '\u{7}' || c == '\\' {
                        break;
                    }
                }
            }
            ('\u{1b}', _) => {
                chars.next();
            }
            _ => plain.push(c),
        }
    }
    plain
        .split(['\r', '\n'])
        .map(|l| l.trim_end().to_owned())
        .collect()
}

/// Reads terminal frames until a line of the output is `line`.
async fn output_until(socket: &mut Socket, output: &mut Vec<u8>, line: &str) {
    while !screen_lines(output).iter().any(|l| l == line) {
        let Some(Incoming::Frame(frame)) = next(socket, WAIT).await else {
            panic!(
                "no line {line:?} in the terminal's output: {:?}",
                String::from_utf8_lossy(output)
            );
        };
        assert_ne!(
            frame["type"],
            "terminal_exit",
            "ended before {line:?}: {:?}",
            String::from_utf8_lossy(output)
        );
        take_output(&frame, output);
    }
}

/// Open a terminal on `session`, attach, run `echo hi`, then each `(line, expected output line)`
/// of `checks`, resize it and close it; the closed terminal and what the shell printed.
pub async fn echo_hi(
    server: &WebServer,
    session: &str,
    checks: &[(&str, &str)],
) -> (Value, String) {
    let opened = server.call(
        "POST",
        &format!("/api/v1/sessions/{session}/terminals"),
        json!({"cols": 100, "rows": 30}),
    );
    assert_eq!(opened["code"], 0, "{opened}");
    let terminal = opened["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(opened["data"]["status"], "running", "{opened}");
    let mut socket = connect(server.port, &server.token, None).await;
    let ids = json!({"session_id": session, "terminal_id": terminal});
    send(
        &mut socket,
        json!({"type": "terminal_attach", "id": "a", "payload": ids}),
    )
    .await;
    let mut output = Vec::new();
    let attached = ack(&mut socket, "a", &mut output).await;
    assert_eq!(attached["id"], terminal.as_str());
    let mut input = ids.clone();
    input["data"] = json!("echo hi\n");
    send(
        &mut socket,
        json!({"type": "terminal_input", "id": "i", "payload": input}),
    )
    .await;
    ack(&mut socket, "i", &mut output).await;
    // The terminal echoes the typed line, then the shell prints `hi` on a line of its own.
    output_until(&mut socket, &mut output, "hi").await;
    for (n, (line, expected)) in checks.iter().enumerate() {
        input["data"] = json!(format!("{line}\n"));
        let id = format!("c{n}");
        send(
            &mut socket,
            json!({"type": "terminal_input", "id": id, "payload": input}),
        )
        .await;
        ack(&mut socket, &id, &mut output).await;
        output_until(&mut socket, &mut output, expected).await;
    }
    let mut size = ids.clone();
    size["cols"] = json!(44);
    size["rows"] = json!(11);
    send(
        &mut socket,
        json!({"type": "terminal_resize", "id": "r", "payload": size}),
    )
    .await;
    let resized = ack(&mut socket, "r", &mut output).await;
    assert_eq!(
        (resized["cols"].clone(), resized["rows"].clone()),
        (json!(44), json!(11))
    );
    input["data"] = json!("stty size\n");
    send(
        &mut socket,
        json!({"type": "terminal_input", "id": "i2", "payload": input}),
    )
    .await;
    ack(&mut socket, "i2", &mut output).await;
    output_until(&mut socket, &mut output, "11 44").await;
    let closed = server.call(
        "POST",
        &format!("/api/v1/sessions/{session}/terminals/{terminal}:close"),
        json!({}),
    );
    assert_eq!(closed["code"], 0, "{closed}");
    assert_eq!(closed["data"]["status"], "exited", "{closed}");
    // The attached client is told.
    loop {
        let frame = frame(&mut socket).await;
        if frame["type"] == "terminal_exit" {
            assert_eq!(frame["payload"]["terminal_id"], terminal.as_str());
            break;
        }
        take_output(&frame, &mut output);
    }
    let listed = server.call(
        "GET",
        &format!("/api/v1/sessions/{session}/terminals"),
        json!({}),
    );
    assert_eq!(
        listed["data"]["items"][0]["id"],
        terminal.as_str(),
        "{listed}"
    );
    input["data"] = json!("late\n");
    send(
        &mut socket,
        json!({"type": "terminal_input", "id": "late", "payload": input}),
    )
    .await;
    let late = frame(&mut socket).await;
    assert_eq!(late["code"], 40912, "{late}");
    (
        closed["data"].clone(),
        String::from_utf8_lossy(&output).into_owned(),
    )
}
