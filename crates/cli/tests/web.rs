//! `kimi-rs web` end to end: the real binary serves REST and WebSocket on a loopback port
//! against the scripted model. Covers the token (401 without it), the Host allowlist, 40001 for
//! bad bodies, creating a session, subscribing over the WebSocket, a prompt whose Bash call asks
//! for approval, approving it over REST (and 40902 the second time), the tool result and turn
//! end as frames with increasing seq, the messages endpoint, and replay from a cursor.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Child;

use common::{CORE_FORMATS, Fixture, WAIT};
use futures::{SinkExt, StreamExt};
use kimi_llm::scripted::ScriptTurn;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(fx: &Fixture) -> Server {
        let mut child = fx.spawn(&["web", "--port", "0", "--no-open"]);
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
        let url = rx.recv_timeout(WAIT).expect("the server printed its URL");
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
        let (port, token) = rest.split_once("/#token=").unwrap();
        Server {
            child,
            port: port.parse().unwrap(),
            token: token.to_owned(),
        }
    }

    /// One HTTP/1.1 request; (status, body as JSON).
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, Value) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("host"))
        {
            head.push_str(&format!("Host: 127.0.0.1:{}\r\n", self.port));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let status: u16 = response[9..12].parse().unwrap();
        let (_, body) = response.split_once("\r\n\r\n").unwrap();
        let value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"));
        (status, value)
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let auth = format!("Bearer {}", self.token);
        let (status, value) =
            self.request(method, path, &[("Authorization", &auth)], &body.to_string());
        assert_eq!(status, 200, "{method} {path}: {value}");
        value
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(server: &Server) -> Socket {
    let mut request = format!("ws://127.0.0.1:{}/api/v1/ws", server.port)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        format!("kimi-code.bearer.{}", server.token)
            .parse()
            .unwrap(),
    );
    let (mut socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(
        response.headers()["sec-websocket-protocol"],
        format!("kimi-code.bearer.{}", server.token).as_str()
    );
    let hello = next(&mut socket).await;
    assert_eq!(hello["type"], "server_hello", "{hello}");
    assert_eq!(hello["payload"]["max_event_buffer_size"], 1000);
    socket
}

async fn next(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(WAIT, socket.next())
            .await
            .expect("a frame in time")
            .expect("the socket is open")
            .unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

async fn send(socket: &mut Socket, frame: Value) {
    socket
        .send(Message::Text(frame.to_string().into()))
        .await
        .unwrap();
}

/// Frames until one of type `kind` (included).
async fn until(socket: &mut Socket, kind: &str, seen: &mut Vec<Value>) -> Value {
    loop {
        let frame = next(socket).await;
        seen.push(frame.clone());
        if frame["type"] == kind {
            return frame;
        }
    }
}

#[test]
fn auth_host_and_validation_errors_use_the_envelope() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![]);
    let server = Server::start(&fx);
    let (status, health) = server.request("GET", "/api/v1/healthz", &[], "");
    assert_eq!(
        (status, &health["code"], &health["data"]["ok"]),
        (200, &json!(0), &json!(true))
    );
    assert_eq!(health["request_id"].as_str().unwrap().len(), 26);

    let (status, denied) = server.request("GET", "/api/v1/sessions", &[], "");
    assert_eq!(status, 401, "{denied}");
    assert_eq!(denied["code"], 40101);
    assert!(denied["msg"].as_str().unwrap().contains("server.token"));
    let (status, _) = server.request(
        "GET",
        "/api/v1/sessions",
        &[("Authorization", "Bearer wrong")],
        "",
    );
    assert_eq!(status, 401);
    let token_file = std::fs::read_to_string(fx.home.path().join("server.token")).unwrap();
    assert_eq!(token_file.trim(), server.token);

    let auth = format!("Bearer {}", server.token);
    let (status, rebind) = server.request(
        "GET",
        "/api/v1/meta",
        &[("Authorization", &auth), ("Host", "evil.example.com")],
        "",
    );
    assert_eq!(status, 403, "{rebind}");

    let meta = server.call("GET", "/api/v1/meta", Value::Null);
    assert_eq!(meta["data"]["capabilities"]["websocket"], true);

    let (_, bad) = server.request(
        "POST",
        "/api/v1/sessions",
        &[("Authorization", &auth)],
        "{not json",
    );
    assert_eq!(bad["code"], 40001, "{bad}");
    let missing = server.call("POST", "/api/v1/sessions", json!({}));
    assert_eq!(missing["code"], 40001);
    assert!(missing["msg"].as_str().unwrap().contains("metadata.cwd"));
    let nowhere = server.call(
        "POST",
        "/api/v1/sessions",
        json!({"metadata": {"cwd": "/no/such/dir"}}),
    );
    assert_eq!(nowhere["code"], 40409);
    let unknown = server.call("GET", "/api/v1/sessions/nope/messages", Value::Null);
    assert_eq!(unknown["code"], 40401);
    let endpoint = server.call("GET", "/api/v1/nothing-here", Value::Null);
    assert_eq!(endpoint["code"], 40400);
}

#[test]
fn a_prompt_streams_over_the_websocket_and_its_approval_is_answered_over_rest() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_a",
                "Bash",
                r#"{"command":"echo yes > allowed.txt"}"#,
            )]),
            ScriptTurn::text("Ran it."),
        ],
    );
    let server = Server::start(&fx);
    let created = server.call(
        "POST",
        "/api/v1/sessions",
        json!({"metadata": {"cwd": fx.cwd()}}),
    );
    assert_eq!(created["code"], 0, "{created}");
    let session = created["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["data"]["metadata"]["cwd"], json!(fx.cwd()));
    let listed = server.call("GET", "/api/v1/sessions", Value::Null);
    assert!(
        listed["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == session.as_str())
    );

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut socket = connect(&server).await;
        send(&mut socket, json!({"type": "subscribe", "id": "1", "payload": {"session_ids": [session]}})).await;
        let ack = next(&mut socket).await;
        assert_eq!((&ack["type"], &ack["id"], &ack["code"]), (&json!("ack"), &json!("1"), &json!(0)), "{ack}");
        let epoch = ack["payload"]["subscriptions"][0]["epoch"].as_str().unwrap().to_owned();
        send(&mut socket, json!({"type": "ping", "id": "p"})).await;
        assert_eq!(next(&mut socket).await["type"], "pong");

        let prompt = server.call(
            "POST",
            &format!("/api/v1/sessions/{session}/prompts"),
            json!({"content": [{"type": "text", "text": "write the file"}]}),
        );
        assert_eq!(prompt["code"], 0, "{prompt}");
        assert!(prompt["data"]["prompt_id"].as_str().unwrap().starts_with("prompt_"));

        let mut seen = Vec::new();
        let asked = until(&mut socket, "event.approval.requested", &mut seen).await;
        assert_eq!(asked["session_id"], session.as_str());
        assert_eq!(asked["payload"]["tool_call_id"], "call_a");
        assert_eq!(asked["payload"]["tool_name"], "Bash");
        let approval = asked["payload"]["approval_id"].as_str().unwrap().to_owned();

        let pending = server.call("GET", &format!("/api/v1/sessions/{session}/approvals?status=pending"), Value::Null);
        assert_eq!(pending["data"]["items"][0]["approval_id"], approval.as_str(), "{pending}");
        let no_status = server.call("GET", &format!("/api/v1/sessions/{session}/approvals"), Value::Null);
        assert_eq!(no_status["code"], 40001);
        let busy = server.call("POST", &format!("/api/v1/sessions/{session}:undo"), json!({}));
        assert_eq!(busy["code"], 40901, "{busy}");

        let path = format!("/api/v1/sessions/{session}/approvals/{approval}");
        let bad = server.call("POST", &path, json!({"decision": "maybe"}));
        assert_eq!(bad["code"], 40001);
        let resolved = server.call("POST", &path, json!({"decision": "approved"}));
        assert_eq!(resolved["code"], 0, "{resolved}");
        assert_eq!(resolved["data"]["resolved"], true);
        let again = server.call("POST", &path, json!({"decision": "approved"}));
        assert_eq!(again["code"], 40902, "{again}");
        assert_eq!(again["data"]["resolved"], false);

        let result = until(&mut socket, "tool.result", &mut seen).await;
        assert_eq!(result["payload"]["tool_call_id"], "call_a");
        assert_eq!(result["payload"]["is_error"], false);
        let ended = until(&mut socket, "turn.ended", &mut seen).await;
        assert_eq!(ended["payload"]["reason"], "completed", "{ended}");

        let kinds: Vec<&str> = seen.iter().map(|f| f["type"].as_str().unwrap()).collect();
        for kind in ["prompt.submitted", "turn.started", "tool.call.started", "event.approval.resolved", "assistant.delta"] {
            assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
        }
        let durable: Vec<&Value> = seen.iter().filter(|f| f.get("volatile").is_none()).collect();
        let seqs: Vec<u64> = durable.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
        let text: String = seen
            .iter()
            .filter(|f| f["type"] == "assistant.delta")
            .map(|f| f["payload"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(text, "Ran it.");

        // A second client replays the durable frames after its cursor, deltas excluded.
        let mut late = connect(&server).await;
        let cursor = json!({"seq": seqs[0], "epoch": epoch});
        send(&mut late, json!({"type": "subscribe", "id": 7, "payload": {"session_ids": [session], "cursors": {session.clone(): cursor}}})).await;
        assert_eq!(next(&mut late).await["code"], 0);
        let mut replayed = Vec::new();
        until(&mut late, "turn.ended", &mut replayed).await;
        assert_eq!(replayed.len(), durable.len() - 1);
        assert!(replayed.iter().all(|f| f.get("volatile").is_none()));
        assert_eq!(replayed[0]["seq"], seqs[1]);
        // A cursor from another epoch asks for a resync.
        send(&mut late, json!({"type": "subscribe", "id": 8, "payload": {"session_ids": [session], "cursors": {session.clone(): {"seq": 1, "epoch": "old"}}}})).await;
        assert_eq!(next(&mut late).await["code"], 0);
        assert_eq!(next(&mut late).await["type"], "resync_required");
        send(&mut late, json!({"type": "nonsense", "id": 9})).await;
        assert_eq!(next(&mut late).await["code"], 40001);
    });

    assert_eq!(
        std::fs::read_to_string(fx.cwd().join("allowed.txt")).unwrap(),
        "yes\n"
    );
    let messages = server.call(
        "GET",
        &format!("/api/v1/sessions/{session}/messages"),
        Value::Null,
    );
    let items = messages["data"]["items"].as_array().unwrap();
    let roles: Vec<&str> = items.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["assistant", "tool", "assistant", "user"],
        "{messages}"
    );
    assert_eq!(items[0]["content"][0]["text"], "Ran it.");
    assert_eq!(items[1]["content"][0]["tool_use_id"], "call_a");
    assert_eq!(
        items[2]["content"].as_array().unwrap().last().unwrap()["type"],
        "tool_use"
    );
    assert_eq!(items[3]["content"][0]["text"], "write the file");
    let status = server.call(
        "GET",
        &format!("/api/v1/sessions/{session}/status"),
        Value::Null,
    );
    assert_eq!(status["data"]["busy"], false, "{status}");
    assert_eq!(status["data"]["permission"], "manual");
}

#[test]
fn questions_are_listed_answered_and_dismissed_over_rest() {
    let args = r#"{"questions":[{"question":"Which database?","options":[{"label":"SQLite"},{"label":"Postgres"}]},{"question":"Which extras?","options":[{"label":"Cache"},{"label":"Search"}],"multi_select":true}]}"#;
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_q", "AskUserQuestion", args)]),
            ScriptTurn::text("Noted."),
            ScriptTurn::tool_calls(&[("call_q2", "AskUserQuestion", args)]),
            ScriptTurn::text("I will decide."),
        ],
    );
    let server = Server::start(&fx);
    let created = server.call(
        "POST",
        "/api/v1/sessions",
        json!({"metadata": {"cwd": fx.cwd()}}),
    );
    let session = created["data"]["id"].as_str().unwrap().to_owned();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut socket = connect(&server).await;
        send(
            &mut socket,
            json!({"type": "subscribe", "id": "1", "payload": {"session_ids": [session]}}),
        )
        .await;
        assert_eq!(next(&mut socket).await["type"], "ack");
        let prompt = |text: &str| {
            server.call(
                "POST",
                &format!("/api/v1/sessions/{session}/prompts"),
                json!({"content": [{"type": "text", "text": text}]}),
            )
        };
        assert_eq!(prompt("set up the database")["code"], 0);
        let mut seen = Vec::new();
        let asked = until(&mut socket, "event.question.requested", &mut seen).await;
        let qid = asked["payload"]["question_id"].as_str().unwrap().to_owned();
        assert_eq!(
            asked["payload"]["questions"][0]["question"],
            "Which database?"
        );
        assert_eq!(asked["payload"]["questions"][1]["id"], "q1");

        let list = format!("/api/v1/sessions/{session}/questions");
        assert_eq!(server.call("GET", &list, Value::Null)["code"], 40001);
        let pending = server.call("GET", &format!("{list}?status=pending"), Value::Null);
        assert_eq!(
            pending["data"]["items"][0]["question_id"],
            qid.as_str(),
            "{pending}"
        );

        let path = format!("{list}/{qid}");
        let missing = server.call("POST", &path, json!({}));
        assert_eq!(missing["code"], 40001, "{missing}");
        let wrong = server.call(
            "POST",
            &path,
            json!({"answers": {"Which colour?": {"kind": "single", "option_id": "Blue"}}}),
        );
        assert_eq!(wrong["code"], 40001, "{wrong}");
        let unknown = server.call(
            "POST",
            &format!("{list}/question_nope"),
            json!({"answers": {}}),
        );
        assert_eq!(unknown["code"], 40404, "{unknown}");
        let answered = server.call(
            "POST",
            &path,
            json!({"answers": {
                "q0": {"kind": "single", "option_id": "Postgres"},
                "q1": {"kind": "multi_with_other", "option_ids": ["Cache"], "other_text": "Tracing"}
            }, "method": "enter"}),
        );
        assert_eq!(answered["code"], 0, "{answered}");
        let again = server.call(
            "POST",
            &path,
            json!({"answers": {"q0": {"kind": "skipped"}}}),
        );
        assert_eq!(again["code"], 40902, "{again}");
        until(&mut socket, "event.question.answered", &mut seen).await;
        let ended = until(&mut socket, "turn.ended", &mut seen).await;
        assert_eq!(ended["payload"]["reason"], "completed", "{ended}");
        let body = fx.requests().last().unwrap().body.to_string();
        assert!(body.contains("A: Postgres"), "{body}");
        assert!(body.contains("A: Cache; Other: Tracing"), "{body}");

        assert_eq!(prompt("and the cache?")["code"], 0);
        let asked = until(&mut socket, "event.question.requested", &mut seen).await;
        let qid = asked["payload"]["question_id"].as_str().unwrap().to_owned();
        let dismissed = server.call("POST", &format!("{list}/{qid}:dismiss"), json!({}));
        assert_eq!(dismissed["code"], 0, "{dismissed}");
        until(&mut socket, "event.question.dismissed", &mut seen).await;
        until(&mut socket, "turn.ended", &mut seen).await;
        let body = fx.requests().last().unwrap().body.to_string();
        assert!(body.contains("The user dismissed the questions"), "{body}");
    });
}

/// A goal that was running when its process died comes back paused ("Paused after agent
/// resume"), and `GET /sessions/{id}/goal` reports it.
#[test]
fn a_goal_running_when_the_process_died_is_paused_on_resume_and_served_over_rest() {
    use kimi_llm::scripted::ScriptEvent;
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![ScriptTurn::reply(vec![
            ScriptEvent::text("working"),
            ScriptEvent::stall(),
        ])],
    );
    let mut child = fx.spawn(&["-p", "/goal keep working"]);
    // The goal is journaled before its first request goes out; wait for that request.
    common::wait_until("the goal's first request", || fx.requests().len() == 1);
    child.kill().unwrap();
    child.wait().unwrap();
    let session = fx.session_ids()[0].clone();
    let before = fx.journal(&session);
    assert!(before.iter().any(|r| r["type"] == "goal.create"));

    let server = Server::start(&fx);
    let goal = server.call(
        "GET",
        &format!("/api/v1/sessions/{session}/goal"),
        Value::Null,
    );
    let goal = &goal["data"]["goal"];
    assert_eq!(goal["objective"], "keep working", "{goal}");
    assert_eq!(goal["status"], "paused", "{goal}");
    assert_eq!(
        goal["terminalReason"], "Paused after agent resume",
        "{goal}"
    );
    assert_eq!(goal["turnsUsed"], 1, "{goal}");
    let after = fx.journal(&session);
    assert!(
        after.iter().any(|r| r["type"] == "goal.update"
            && r["status"] == "paused"
            && r["actor"] == "runtime"),
        "the pause is journaled"
    );
}

/// `POST …/prompts` answers only once the prompt is journaled. A slow UserPromptSubmit hook
/// holds an idle session's turn back before the turn records its prompt (the window in which
/// a kill used to lose an acknowledged prompt); kill -9 right after the answer, and the
/// prompt is in the journal, and the session reopened by a new server runs it.
#[test]
fn a_prompt_acknowledged_to_an_idle_session_survives_kill_9_before_its_turn_starts() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("Kept it.")]);
    let config = fx.home.path().join("config.toml");
    std::fs::write(
        &config,
        "[[hooks]]\nevent = \"UserPromptSubmit\"\ncommand = \"sleep 20\"\n",
    )
    .unwrap();
    let mut server = Server::start(&fx);
    let created = server.call(
        "POST",
        "/api/v1/sessions",
        json!({"metadata": {"cwd": fx.cwd()}}),
    );
    let session = created["data"]["id"].as_str().unwrap().to_owned();
    let sent = server.call(
        "POST",
        &format!("/api/v1/sessions/{session}/prompts"),
        json!({"content": [{"type": "text", "text": "keep this prompt"}], "prompt_id": "prompt_keep"}),
    );
    assert_eq!(sent["code"], 0, "{sent}");
    server.child.kill().unwrap(); // SIGKILL, while the hook still holds the turn back
    server.child.wait().unwrap();
    assert!(fx.requests().is_empty(), "the turn had not started");
    let journal = fx.journal(&session);
    assert!(
        journal.iter().any(|r| r["type"] == "prompt.queued"
            && r["promptId"] == "prompt_keep"
            && r.to_string().contains("keep this prompt")),
        "the acknowledged prompt is journaled: {journal:?}"
    );

    std::fs::remove_file(&config).unwrap();
    let server = Server::start(&fx);
    let status = server.call(
        "GET",
        &format!("/api/v1/sessions/{session}/status"),
        Value::Null,
    );
    assert_eq!(status["code"], 0, "{status}");
    common::wait_until("the reopened session runs the prompt", || {
        fx.requests()
            .iter()
            .any(|r| r.body.to_string().contains("keep this prompt"))
    });
    common::wait_until("its turn is journaled once", || {
        fx.journal(&session)
            .iter()
            .any(|r| r["type"] == "turn.prompt" && r.to_string().contains("prompt_keep"))
    });
    let prompts = fx
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("keep this prompt"))
        .count();
    assert_eq!(prompts, 1, "delivered once");
}

#[test]
fn rewind_over_rest_stops_on_a_conflict_and_restores_with_force() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_b", "Bash", r#"{"command":"echo agent > f.txt"}"#)]),
            ScriptTurn::text("Changed it."),
        ],
    );
    let file = fx.cwd().join("f.txt");
    std::fs::write(&file, "original\n").unwrap();
    let server = Server::start(&fx);
    let created = server.call(
        "POST",
        "/api/v1/sessions",
        json!({"metadata": {"cwd": fx.cwd()}}),
    );
    let session = created["data"]["id"].as_str().unwrap().to_owned();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut socket = connect(&server).await;
        send(
            &mut socket,
            json!({"type": "subscribe", "id": "1", "payload": {"session_ids": [session]}}),
        )
        .await;
        assert_eq!(next(&mut socket).await["code"], 0);
        server.call(
            "POST",
            &format!("/api/v1/sessions/{session}/prompts"),
            json!({"content": [{"type": "text", "text": "change f"}], "permission_mode": "yolo"}),
        );
        let ended = until(&mut socket, "turn.ended", &mut Vec::new()).await;
        assert_eq!(ended["payload"]["reason"], "completed", "{ended}");
    });
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "agent\n");

    std::fs::write(&file, "user\n").unwrap();
    let path = format!("/api/v1/sessions/{session}/rewind");
    let stopped = server.call("POST", &path, json!({"turns": 1}));
    assert_eq!(stopped["code"], 40912, "{stopped}");
    let conflict = &stopped["data"]["report"]["conflicts"][0]["path"];
    assert_eq!(conflict, file.display().to_string().as_str(), "{stopped}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "user\n");

    let done = server.call("POST", &path, json!({"turns": 1, "force": true}));
    assert_eq!(done["code"], 0, "{done}");
    assert_eq!(
        done["data"]["report"]["conversation_undone"], true,
        "{done}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "original\n");
    let messages = server.call(
        "GET",
        &format!("/api/v1/sessions/{session}/messages"),
        Value::Null,
    );
    assert_eq!(messages["data"]["items"], json!([]), "{messages}");
}

/// GET a path without the token; (status line, headers, body) as text.
fn raw_get(server: &Server, path: &str) -> (String, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
        server.port
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap();
    (status.to_owned(), headers.to_lowercase(), body.to_owned())
}

#[test]
fn status_meta_search_and_the_page_report_real_state() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[
                (
                    "call_t",
                    "TodoList",
                    r#"{"todos":[{"title":"look around","status":"in_progress"}]}"#,
                ),
                ("call_p", "EnterPlanMode", "{}"),
            ]),
            ScriptTurn::text("Planning now."),
        ],
    );
    let config = fx.home.path().join("config.toml");
    std::fs::write(&config, "[experimental]\nauto_session_title = true\n").unwrap();
    let server = Server::start(&fx);
    let meta = server.call("GET", "/api/v1/meta", Value::Null)["data"].clone();
    assert_eq!(meta["default_cwd"], json!(fx.cwd()), "{meta}");
    // The flags as config.toml has them now, read again when asked.
    assert_eq!(
        meta["experimental_flags"]["auto_session_title"], true,
        "{meta}"
    );
    assert_eq!(meta["experimental_flags"]["wait_for"], true, "{meta}");
    std::fs::write(&config, "[experimental]\nwait_for = false\n").unwrap();
    let meta = server.call("GET", "/api/v1/meta", Value::Null)["data"].clone();
    assert_eq!(
        meta["experimental_flags"]["auto_session_title"], false,
        "{meta}"
    );
    assert_eq!(meta["experimental_flags"]["wait_for"], false, "{meta}");
    let capabilities = &meta["capabilities"];
    for (name, served) in [
        ("websocket", true),
        ("approvals", true),
        ("questions", true),
        ("openapi", true),
        ("mcp", true),
        ("file_upload", false),
        ("terminal", true),
    ] {
        assert_eq!(capabilities[name], served, "{name}: {capabilities}");
    }
    let doc = server.call("GET", "/api/v1/openapi.json", Value::Null)["data"].clone();
    assert!(doc["paths"]["/api/v1/sessions/{id}/prompts"]["post"].is_object());

    let session = server.call(
        "POST",
        "/api/v1/sessions",
        json!({"metadata": {"cwd": fx.cwd()}}),
    )["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = server.call(
        "GET",
        &format!("/api/v1/sessions/{session}/status"),
        Value::Null,
    )["data"]
        .clone();
    assert_eq!(
        (&before["plan_mode"], &before["todos"]),
        (&json!(false), &json!([])),
        "{before}"
    );
    server.call(
        "POST",
        &format!("/api/v1/sessions/{session}/prompts"),
        json!({"content": [{"type": "text", "text": "plan the work"}]}),
    );
    let status = || {
        server.call(
            "GET",
            &format!("/api/v1/sessions/{session}/status"),
            Value::Null,
        )["data"]
            .clone()
    };
    common::wait_until("the turn ends in plan mode", || {
        let now = status();
        now["busy"] == false && now["plan_mode"] == true
    });
    let after = status();
    assert_eq!(
        after["todos"],
        json!([{"title": "look around", "status": "in_progress"}]),
        "{after}"
    );
    assert!(
        after["plan_file"].as_str().unwrap().ends_with(".md"),
        "{after}"
    );
    assert_eq!(after["model"], "scripted-model");

    let listed = server.call("GET", "/api/v1/sessions?q=PLAN%20THE", Value::Null)["data"].clone();
    assert_eq!(listed["items"][0]["id"], session.as_str(), "{listed}");
    assert_eq!(
        listed["items"][0]["agent_config"]["model"],
        "scripted-model"
    );
    assert!(
        listed["items"][0]["message_count"].as_u64().unwrap() >= 4,
        "{listed}"
    );
    let none =
        server.call("GET", "/api/v1/sessions?q=nothing-like-this", Value::Null)["data"].clone();
    assert_eq!(none["items"], json!([]), "{none}");

    let (status_line, headers, body) = raw_get(&server, "/");
    assert!(status_line.contains("200"), "{status_line}");
    assert!(
        headers.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{headers}"
    );
    assert!(
        body.contains("/assets/app.js") && !body.contains("<script>"),
        "no inline script"
    );
    let (status_line, headers, body) = raw_get(&server, "/assets/markdown.js");
    assert!(status_line.contains("200"), "{status_line}");
    assert!(
        headers.contains("content-type: text/javascript"),
        "{headers}"
    );
    assert!(body.contains("KimiMarkdown"));
    let (_, _, missing) = raw_get(&server, "/assets/nope.js");
    assert!(missing.contains("40400"), "{missing}");
}
