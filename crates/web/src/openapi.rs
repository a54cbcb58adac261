//! The OpenAPI 3 document of the REST API (`GET /api/v1/openapi.json`). It describes exactly
//! the routes `server::api_routes` serves: a unit test walks both and fails when a route is
//! served but not documented, or documented but not served. Colon actions
//! (`/sessions/{id}:abort`) are documented as their own paths, as the reference does.

use serde_json::{Map, Value, json};

use crate::error::Data;

pub async fn serve() -> Data<Value> {
    Data(document())
}

/// A path parameter.
fn path_param(name: &str, what: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "description": what, "schema": {"type": "string"}})
}

fn query_param(name: &str, kind: &str, what: &str) -> Value {
    json!({"name": name, "in": "query", "required": false, "description": what, "schema": {"type": kind}})
}

/// One operation: every answer is the `{code, msg, data, request_id}` envelope with HTTP 200
/// (401 for a missing token), `data` shaped as `data`.
fn op(summary: &str, params: Vec<Value>, body: Option<Value>, data: Value) -> Value {
    let mut operation = json!({
        "summary": summary,
        "parameters": params,
        "responses": {
            "200": {
                "description": "The envelope; `code` 0 on success, a business code (400xx, 404xx, 409xx, 500xx) otherwise.",
                "content": {"application/json": {"schema": {
                    "allOf": [{"$ref": "#/components/schemas/Envelope"}],
                    "properties": {"data": data},
                }}},
            },
            "401": {"description": "Missing or wrong bearer token (code 40101).",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Envelope"}}}},
        },
    });
    if let Some(schema) = body {
        operation["requestBody"] = json!({
            "required": false,
            "content": {"application/json": {"schema": schema}},
        });
    }
    operation
}

fn object(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

fn any() -> Value {
    json!({"type": "object"})
}

/// What an MCP server action answers.
fn mcp_action() -> Value {
    object(json!({
        "server": {"$ref": "#/components/schemas/McpServer"},
        "message": {"type": "string"},
        "authorization_url": {"type": ["string", "null"], "description": "Set by :login."},
    }))
}

fn session_ref() -> Value {
    json!({"$ref": "#/components/schemas/Session"})
}

/// `(method, path under /api/v1, operation)`, the documented operations.
fn operations() -> Vec<(&'static str, &'static str, Value)> {
    let id = || path_param("id", "Session id.");
    let page = || {
        vec![
            id(),
            query_param("before_id", "string", "Messages older than this id."),
            query_param("after_id", "string", "Messages newer than this id."),
            query_param("page_size", "integer", "1–100, default 50."),
            query_param("role", "string", "user, assistant, tool or system."),
        ]
    };
    let list = |item: Value| {
        object(json!({"items": {"type": "array", "items": item}, "has_more": {"type": "boolean"}}))
    };
    let resolved =
        object(json!({"resolved": {"type": "boolean"}, "resolved_at": {"type": "string"}}));
    vec![
        (
            "get",
            "/healthz",
            op(
                "Liveness; needs no token.",
                vec![],
                None,
                object(json!({"ok": {"type": "boolean"}})),
            ),
        ),
        (
            "get",
            "/meta",
            op(
                "Server version, capabilities (which route groups this server serves), server id and the default working directory for new sessions.",
                vec![],
                None,
                object(json!({
                    "server_version": {"type": "string"}, "capabilities": {"type": "object", "additionalProperties": {"type": "boolean"}},
                    "server_id": {"type": "string"}, "started_at": {"type": "string"}, "default_cwd": {"type": ["string", "null"]},
                })),
            ),
        ),
        (
            "get",
            "/openapi.json",
            op("This document.", vec![], None, any()),
        ),
        (
            "get",
            "/sessions",
            op(
                "Stored sessions, newest first.",
                vec![
                    query_param(
                        "before_id",
                        "string",
                        "Sessions after this one in the list.",
                    ),
                    query_param("page_size", "integer", "1–100."),
                    query_param("include_archive", "boolean", "Include archived sessions."),
                    query_param(
                        "busy",
                        "boolean",
                        "Only sessions whose turn is (not) running.",
                    ),
                    query_param(
                        "q",
                        "string",
                        "Case-insensitive text searched in the title, working directory and id.",
                    ),
                ],
                None,
                list(session_ref()),
            ),
        ),
        (
            "post",
            "/sessions",
            op(
                "Create a session in a working directory.",
                vec![],
                Some(object(json!({
                    "metadata": object(json!({"cwd": {"type": "string", "description": "Absolute, existing directory."}})),
                }))),
                session_ref(),
            ),
        ),
        (
            "get",
            "/sessions/{id}",
            op("One session.", vec![id()], None, session_ref()),
        ),
        (
            "post",
            "/sessions/{id}:abort",
            op(
                "Stop the running turn and drop queued prompts.",
                vec![id()],
                None,
                object(json!({"aborted": {"type": "boolean"}})),
            ),
        ),
        (
            "post",
            "/sessions/{id}:undo",
            op(
                "Take back the last `count` turns of the conversation (40901 while busy, 40911 when impossible).",
                vec![id()],
                Some(object(
                    json!({"count": {"type": "integer", "minimum": 1}, "page_size": {"type": "integer"}}),
                )),
                object(
                    json!({"messages": any(), "status": {"$ref": "#/components/schemas/Status"}}),
                ),
            ),
        ),
        (
            "post",
            "/sessions/{id}:compact",
            op(
                "Compact the context now (40910 while a turn runs).",
                vec![id()],
                Some(object(json!({"instruction": {"type": "string"}}))),
                any(),
            ),
        ),
        (
            "get",
            "/sessions/{id}/status",
            op(
                "Model, permission mode, plan mode, swarm mode, todo list, goal and context use of a session (loads it).",
                vec![id()],
                None,
                json!({"$ref": "#/components/schemas/Status"}),
            ),
        ),
        (
            "get",
            "/sessions/{id}/goal",
            op(
                "The session's goal, or null.",
                vec![id()],
                None,
                object(json!({"goal": {"type": ["object", "null"]}})),
            ),
        ),
        (
            "get",
            "/sessions/{id}/messages",
            op(
                "The conversation, newest first, with text, thinking, tool_use and tool_result parts.",
                page(),
                None,
                list(any()),
            ),
        ),
        (
            "post",
            "/sessions/{id}/prompts",
            op(
                "Send a prompt (queued when a turn runs); events follow on the WebSocket.",
                vec![id()],
                Some(json!({
                    "type": "object", "required": ["content"],
                    "properties": {
                        "content": {"type": "array", "items": object(json!({"type": {"const": "text"}, "text": {"type": "string"}}))},
                        "prompt_id": {"type": "string", "description": "Idempotency id; a reused one is 40903."},
                        "permission_mode": {"enum": ["manual", "auto", "yolo"]},
                    },
                })),
                object(
                    json!({"prompt_id": {"type": "string"}, "status": {"enum": ["running", "queued"]}}),
                ),
            ),
        ),
        (
            "post",
            "/sessions/{id}/rewind",
            op(
                "Rewind files and/or the conversation by `turns` turns from checkpoints.",
                vec![id()],
                Some(object(json!({
                    "turns": {"type": "integer", "minimum": 1}, "scope": {"enum": ["both", "files", "conversation"]}, "force": {"type": "boolean"},
                }))),
                any(),
            ),
        ),
        (
            "get",
            "/sessions/{id}/approvals",
            op(
                "Pending approvals (`status=pending` is required).",
                vec![id(), query_param("status", "string", "Must be `pending`.")],
                None,
                object(
                    json!({"items": {"type": "array", "items": {"$ref": "#/components/schemas/Approval"}}}),
                ),
            ),
        ),
        (
            "post",
            "/sessions/{id}/approvals/{aid}",
            op(
                "Answer an approval (40902 when already answered).",
                vec![id(), path_param("aid", "Approval id.")],
                Some(json!({
                    "type": "object", "required": ["decision"],
                    "properties": {
                        "decision": {"enum": ["approved", "rejected", "cancelled"]},
                        "scope": {"const": "session", "description": "Approve this kind of call for the rest of the session."},
                        "feedback": {"type": "string", "description": "Why it was rejected; the model reads it."},
                        "selected_label": {"type": "string", "description": "One of the approval's `options` (plan review)."},
                    },
                })),
                resolved.clone(),
            ),
        ),
        (
            "get",
            "/sessions/{id}/mcp/servers",
            op(
                "The session's MCP servers: status connecting, connected, failed, needs_login or disabled, with the reason, the tool count and the file that configures each; `problem` lists entries that did not load.",
                vec![id()],
                None,
                object(json!({
                    "items": {"type": "array", "items": {"$ref": "#/components/schemas/McpServer"}},
                    "problem": {"type": ["string", "null"]},
                    "config_files": {"type": "array", "items": {"type": "string"}},
                })),
            ),
        ),
        (
            "post",
            "/sessions/{id}/mcp/servers/{name}:login",
            op(
                "Start the OAuth sign-in of a remote MCP server: open `authorization_url` in a browser; when it comes back to kimi-rs's loopback callback (within 15 minutes) the token is stored and the server reconnects. Code 80001 when the sign-in cannot start.",
                vec![id(), path_param("name", "The server's name in mcp.json.")],
                None,
                mcp_action(),
            ),
        ),
        (
            "post",
            "/sessions/{id}/mcp/servers/{name}:logout",
            op(
                "Delete the server's stored OAuth sign-in and reconnect it (it then needs a login again).",
                vec![id(), path_param("name", "The server's name in mcp.json.")],
                None,
                mcp_action(),
            ),
        ),
        (
            "post",
            "/sessions/{id}/mcp/servers/{name}:restart",
            op(
                "Close the server's connection (stopping a stdio server's process) and connect it again; code 80001 with the reason when it does not come back.",
                vec![id(), path_param("name", "The server's name in mcp.json.")],
                None,
                mcp_action(),
            ),
        ),
        (
            "get",
            "/sessions/{id}/questions",
            op(
                "Pending AskUserQuestion requests (`status=pending` is required).",
                vec![id(), query_param("status", "string", "Must be `pending`.")],
                None,
                object(json!({"items": {"type": "array", "items": any()}})),
            ),
        ),
        (
            "post",
            "/sessions/{id}/questions/{qid}",
            op(
                "Answer a question request: `answers` maps the question (its text or `q<index>`) to a label, a list of labels, or {kind, option_ids, other}.",
                vec![id(), path_param("qid", "Question request id.")],
                Some(object(json!({
                    "answers": {"type": "object"}, "method": {"type": "string"}, "note": {"type": "string"},
                }))),
                resolved.clone(),
            ),
        ),
        (
            "post",
            "/sessions/{id}/questions/{qid}:dismiss",
            op(
                "Dismiss a question request.",
                vec![id(), path_param("qid", "Question request id.")],
                None,
                resolved,
            ),
        ),
        (
            "get",
            "/sessions/{id}/terminals",
            op(
                "The session's terminals, running and exited (loopback clients only unless --allow-remote-terminals: 40303, HTTP 403).",
                vec![id()],
                None,
                list(json!({"$ref": "#/components/schemas/Terminal"})),
            ),
        ),
        (
            "post",
            "/sessions/{id}/terminals",
            op(
                "Open a terminal (a shell on a PTY) on the session's environment: this machine, or the ssh/docker/command target it is bound to. Attach over the WebSocket to type and read.",
                vec![id()],
                Some(object(json!({
                    "cwd": {"type": "string", "description": "Absolute, on the environment; the session's working directory by default."},
                    "cols": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 80},
                    "rows": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 24},
                    "shell": {"type": "string", "description": "The program to run; the environment's shell by default."},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Set on top of the environment's own variables (TERM=xterm-256color unless given)."},
                }))),
                json!({"$ref": "#/components/schemas/Terminal"}),
            ),
        ),
        (
            "get",
            "/sessions/{id}/terminals/{tid}",
            op(
                "One terminal (40412 when the session has no such terminal).",
                vec![id(), path_param("tid", "Terminal id.")],
                None,
                json!({"$ref": "#/components/schemas/Terminal"}),
            ),
        ),
        (
            "post",
            "/sessions/{id}/terminals/{tid}:close",
            op(
                "End the terminal's shell (SIGHUP to its process group, SIGKILL after 0.5 s) and answer once it has ended.",
                vec![id(), path_param("tid", "Terminal id.")],
                None,
                json!({"$ref": "#/components/schemas/Terminal"}),
            ),
        ),
        (
            "get",
            "/ws",
            op(
                "WebSocket upgrade (token as subprotocol `kimi-code.bearer.<token>`); see the README for the frames.",
                vec![],
                None,
                any(),
            ),
        ),
    ]
}

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for (method, path, operation) in operations() {
        let entry = paths
            .entry(format!("/api/v1{path}"))
            .or_insert_with(|| json!({}));
        entry[method] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "kimi-rs web API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The REST half of `kimi-rs web`. Events stream over the WebSocket at /api/v1/ws (see README.md, \"Web API\").",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "The token in server.token of the kimi-rs home."}},
            "schemas": {
                "Envelope": object(json!({
                    "code": {"type": "integer", "description": "0 on success."},
                    "msg": {"type": "string"},
                    "data": {},
                    "request_id": {"type": "string", "description": "A ULID; X-Request-Id is honoured."},
                })),
                "Session": object(json!({
                    "id": {"type": "string"}, "title": {"type": "string"}, "workspace_id": {"type": "string"},
                    "created_at": {"type": ["string", "null"]}, "updated_at": {"type": ["string", "null"]},
                    "archived": {"type": "boolean"}, "loaded": {"type": "boolean"}, "busy": {"type": "boolean"},
                    "main_turn_active": {"type": "boolean"}, "pending_interaction": {"enum": ["none", "approval", "question"]},
                    "metadata": object(json!({"cwd": {"type": "string"}})),
                    "agent_config": object(json!({"model": {"type": ["string", "null"], "description": "null until the session is loaded."}})),
                    "message_count": {"type": ["integer", "null"]}, "context_tokens": {"type": ["integer", "null"]},
                    "last_seq": {"type": "integer"},
                })),
                "Status": object(json!({
                    "busy": {"type": "boolean"}, "model": {"type": "string"}, "permission": {"enum": ["manual", "auto", "yolo"]},
                    "plan_mode": {"type": "boolean"}, "plan_file": {"type": ["string", "null"]}, "plan_text": {"type": ["string", "null"]},
                    "swarm_mode": {"type": "boolean"},
                    "todos": {"type": "array", "items": object(json!({"title": {"type": "string"}, "status": {"enum": ["pending", "in_progress", "done"]}}))},
                    "goal": {"type": ["object", "null"]},
                    "context_tokens": {"type": "integer"}, "max_context_tokens": {"type": ["integer", "null"]},
                })),
                "McpServer": object(json!({
                    "name": {"type": "string"}, "transport": {"enum": ["stdio", "http", "sse"]},
                    "status": {"enum": ["connecting", "connected", "failed", "needs_login", "disabled"]},
                    "reason": {"type": ["string", "null"], "description": "Why it failed, or how to sign in."},
                    "tool_count": {"type": "integer"}, "source": {"type": ["string", "null"]},
                })),
                "Terminal": object(json!({
                    "id": {"type": "string"}, "session_id": {"type": "string"},
                    "environment": {"type": "string", "description": "Where the shell runs: `local`, or e.g. `ssh:dev-box`."},
                    "cwd": {"type": "string"}, "shell": {"type": ["string", "null"]}, "pid": {"type": ["integer", "null"], "description": "On the environment's machine."},
                    "cols": {"type": "integer"}, "rows": {"type": "integer"},
                    "status": {"enum": ["running", "exited"]}, "exit_code": {"type": ["integer", "null"], "description": "null while running or when a signal ended it."},
                    "error": {"type": ["string", "null"], "description": "Why it ended when its environment's connection was lost."},
                    "output_bytes": {"type": "integer"}, "created_at": {"type": "string"},
                })),
                "Approval": object(json!({
                    "approval_id": {"type": "string"}, "tool_call_id": {"type": "string"}, "tool_name": {"type": "string"},
                    "action": {"type": "string"}, "summary": {"type": "string"}, "detail": {"type": ["string", "null"]},
                    "diff": {"type": ["string", "null"], "description": "Unified diff for Write/Edit."},
                    "danger": {"type": ["string", "null"]}, "options": {"type": "array"},
                })),
            },
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::server::api_routes;

    /// The served route a documented path belongs to: a colon action is a POST to the
    /// path without it.
    fn served_path(documented: &str) -> &str {
        match documented.rsplit_once('/') {
            Some((_, last)) if last.contains("}:") => {
                &documented[..documented.len() - last.len() + last.find("}:").unwrap() + 1]
            }
            _ => documented,
        }
    }

    #[test]
    fn every_served_route_is_documented_and_every_documented_one_is_served() {
        let doc = document();
        let paths = doc["paths"].as_object().unwrap();
        let routes = api_routes();
        let served: Vec<(String, String)> = routes
            .listed()
            .iter()
            .map(|(m, p)| (m.as_str().to_lowercase(), (*p).to_owned()))
            .collect();
        for (method, path) in &served {
            let documented = paths.iter().any(|(doc_path, item)| {
                item.get(method).is_some()
                    && served_path(doc_path.strip_prefix("/api/v1").unwrap()) == path
            });
            assert!(
                documented,
                "{method} {path} is served but not in openapi.json"
            );
        }
        for (doc_path, item) in paths {
            let path = served_path(doc_path.strip_prefix("/api/v1").unwrap());
            for method in item.as_object().unwrap().keys() {
                assert!(
                    served.contains(&(method.clone(), path.to_owned())),
                    "{method} {doc_path} is documented but not served"
                );
            }
        }
        assert_eq!(doc["openapi"], "3.1.0");
        assert!(paths.len() >= served.len());
    }

    #[test]
    fn colon_actions_map_to_their_route() {
        assert_eq!(served_path("/sessions/{id}:abort"), "/sessions/{id}");
        assert_eq!(
            served_path("/sessions/{id}/questions/{qid}:dismiss"),
            "/sessions/{id}/questions/{qid}"
        );
        assert_eq!(
            served_path("/sessions/{id}/status"),
            "/sessions/{id}/status"
        );
    }
}
