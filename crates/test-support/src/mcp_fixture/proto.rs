//! The fixture server's JSON-RPC handling, written by hand against the MCP wire format so the
//! client is tested against the protocol rather than against rmcp's own server. Shared by the
//! stdio binary and the in-process streamable-HTTP fixture of the integration tests.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

/// A 1×1 transparent PNG.
pub const TINY_PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/// What to do with one incoming message.
pub enum Reply {
    Message(Value),
    None,
    /// Exit the process without answering (the `crash` tool).
    Exit(i32),
}

/// Per-connection state: who the client said it was.
#[derive(Default)]
pub struct Session {
    client_name: Mutex<Option<String>>,
}

fn ok(id: &Value, result: Value) -> Reply {
    Reply::Message(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn err(id: &Value, code: i64, message: &str) -> Reply {
    Reply::Message(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}]})
}

pub fn tool_list() -> Value {
    let obj = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required});
    json!([
        {"name": "echo", "description": "Echo the text back.",
         "inputSchema": obj(json!({"text": {"type": "string"}}), json!(["text"]))},
        {"name": "add", "description": "Add two numbers.",
         "inputSchema": obj(json!({"a": {"type": "number"}, "b": {"type": "number"}}), json!(["a", "b"]))},
        {"name": "fail", "description": "Always reports an error.", "inputSchema": obj(json!({}), json!([]))},
        {"name": "slow", "description": "Sleep for `ms` milliseconds.",
         "inputSchema": obj(json!({"ms": {"type": "integer"}}), json!(["ms"]))},
        {"name": "image", "description": "Return a tiny PNG.", "inputSchema": obj(json!({}), json!([]))},
        {"name": "whoami", "description": "The client name from initialize.", "inputSchema": obj(json!({}), json!([]))},
        {"name": "env", "description": "Read an environment variable.",
         "inputSchema": obj(json!({"name": {"type": "string"}}), json!(["name"]))},
        {"name": "cwd", "description": "The server's working directory.", "inputSchema": obj(json!({}), json!([]))},
        {"name": "big", "description": "Return `chars` x characters.",
         "inputSchema": obj(json!({"chars": {"type": "integer"}}), json!(["chars"]))},
        {"name": "crash", "description": "Exit without answering.", "inputSchema": obj(json!({}), json!([]))},
        {"name": "dotted.name v2", "inputSchema": obj(json!({}), json!([]))},
    ])
}

pub fn handle(session: &Session, msg: &Value) -> Reply {
    let method = msg
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(id) = msg.get("id") else {
        // Notifications (initialized, cancelled) and stray responses need no answer.
        return Reply::None;
    };
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    match method {
        "initialize" => {
            let name = params
                .pointer("/clientInfo/name")
                .and_then(Value::as_str)
                .map(str::to_owned);
            *session
                .client_name
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = name;
            ok(
                id,
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "kimi-mcp-fixture", "version": "0.1.0"}
                }),
            )
        }
        "ping" => ok(id, json!({})),
        "tools/list" => ok(id, json!({"tools": tool_list()})),
        "tools/call" => call(session, id, &params),
        _ => err(id, -32601, &format!("method not found: {method}")),
    }
}

fn call(session: &Session, id: &Value, params: &Value) -> Reply {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let arg_str = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let arg_u64 = |key: &str| args.get(key).and_then(Value::as_u64).unwrap_or_default();
    match name {
        "echo" => ok(id, text(arg_str("text"))),
        "add" => {
            let sum = match (
                args.get("a").and_then(Value::as_i64),
                args.get("b").and_then(Value::as_i64),
            ) {
                (Some(a), Some(b)) => (a + b).to_string(),
                _ => {
                    let f = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or_default();
                    (f("a") + f("b")).to_string()
                }
            };
            ok(id, text(sum))
        }
        "fail" => ok(
            id,
            json!({"content": [{"type": "text", "text": "failed on purpose"}], "isError": true}),
        ),
        "slow" => {
            std::thread::sleep(Duration::from_millis(arg_u64("ms")));
            ok(id, text(format!("slept {} ms", arg_u64("ms"))))
        }
        "image" => ok(
            id,
            json!({"content": [{"type": "image", "data": TINY_PNG_BASE64, "mimeType": "image/png"}]}),
        ),
        "whoami" => {
            let who = session
                .client_name
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
                .unwrap_or_default();
            ok(id, text(who))
        }
        "env" => ok(
            id,
            text(std::env::var(arg_str("name")).unwrap_or_else(|_| "<unset>".to_owned())),
        ),
        "cwd" => ok(
            id,
            text(
                std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default(),
            ),
        ),
        "big" => ok(
            id,
            text("x".repeat(usize::try_from(arg_u64("chars")).unwrap_or_default())),
        ),
        "crash" => Reply::Exit(3),
        "dotted.name v2" => ok(id, text("dotted")),
        _ => err(id, -32602, &format!("unknown tool: {name}")),
    }
}
