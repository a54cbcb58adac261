//! Pure mapping between ACP messages and kimi-rs's vocabulary: prompt blocks to content parts,
//! engine events to `session/update` payloads, tool names to ACP tool kinds and titles, modes.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock, ContentChunk,
    EmbeddedResourceResource, ImageContent, McpServer, SessionMode, SessionModeId,
    SessionModeState, SessionUpdate, TextContent, ToolCall as AcpToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use agent_client_protocol::v1::schema::{Diff, ToolCallLocation};
use agent_client_protocol::v1::schema::{PermissionOption, PermissionOptionKind};
use kimi_protocol::ops::{ApprovalDecision, ApprovalOption, PermissionMode};
use kimi_protocol::{ContentPart, Message, Role, ToolCall};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// A prompt from the editor as kimi-rs content parts. Embedded text resources are inlined as
/// `<resource uri="…">…</resource>`, links become their URI, images become data URLs; binary
/// resources and audio are dropped (not advertised in the capabilities).
pub fn prompt_parts(blocks: Vec<ContentBlock>) -> Vec<ContentPart> {
    let mut parts: Vec<ContentPart> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(ContentPart::text(t.text)),
            ContentBlock::Image(image) => parts.push(ContentPart::Image(kimi_protocol::MediaUrl {
                url: format!("data:{};base64,{}", image.mime_type, image.data),
                id: None,
            })),
            ContentBlock::ResourceLink(link) => {
                parts.push(ContentPart::text(format!("@{}", link.uri)));
            }
            ContentBlock::Resource(resource) => {
                if let EmbeddedResourceResource::TextResourceContents(text) = resource.resource {
                    parts.push(ContentPart::text(format!(
                        "<resource uri=\"{}\">\n{}\n</resource>",
                        text.uri, text.text
                    )));
                }
            }
            _ => {}
        }
    }
    parts
}

/// The ACP tool kind for a kimi-rs tool name (the editor picks an icon from it).
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "Read" | "ReadMediaFile" | "TaskOutput" | "TaskList" => ToolKind::Read,
        "Write" | "Edit" => ToolKind::Edit,
        "Grep" | "Glob" => ToolKind::Search,
        "Bash" => ToolKind::Execute,
        "FetchURL" | "WebSearch" => ToolKind::Fetch,
        "TodoList" | "Skill" | "Agent" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

pub fn args_of(call: &ToolCall) -> Value {
    call.arguments
        .as_deref()
        .and_then(|a| serde_json::from_str(a).ok())
        .unwrap_or(Value::Null)
}

/// A one-line title for a tool call: the tool and its main argument.
pub fn tool_title(call: &ToolCall) -> String {
    let args = args_of(call);
    let main = [
        "path",
        "command",
        "pattern",
        "url",
        "query",
        "skill",
        "description",
    ]
    .iter()
    .find_map(|k| args.get(*k).and_then(Value::as_str));
    match main {
        Some(arg) => {
            let arg: String = arg.lines().next().unwrap_or("").chars().take(120).collect();
            format!("{} {arg}", call.name)
        }
        None => call.name.clone(),
    }
}

/// Files larger than this are not read to show a Write's previous text.
const MAX_DIFF_FILE: u64 = 1024 * 1024;

/// The path a call's `path` argument names, absolute against the session's directory.
fn call_path(args: &Value, cwd: &Path) -> Option<PathBuf> {
    let path = args.get("path").and_then(Value::as_str)?;
    let path = Path::new(path);
    Some(if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    })
}

/// The file a Write is about to replace, as it is now (`None` when it does not exist yet, is
/// too large or is not text).
pub fn file_before_write(call: &ToolCall, cwd: &Path) -> Option<String> {
    if call.name != "Write" {
        return None;
    }
    let path = call_path(&args_of(call), cwd)?;
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_DIFF_FILE {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// Where a call works and what it changes, for the editor to follow and show: the file a
/// Read, Write or Edit names (Read with its first line) and, for Edit and Write, the change
/// as a diff. `before` is the file's text before a Write (see [`file_before_write`]).
pub fn tool_details(
    call: &ToolCall,
    cwd: &Path,
    before: Option<String>,
) -> (Vec<ToolCallLocation>, Vec<ToolCallContent>) {
    if !["Read", "ReadMediaFile", "Write", "Edit"].contains(&call.name.as_str()) {
        return (Vec::new(), Vec::new());
    }
    let args = args_of(call);
    let Some(path) = call_path(&args, cwd) else {
        return (Vec::new(), Vec::new());
    };
    let line = args
        .get("line_offset")
        .and_then(Value::as_u64)
        .filter(|_| call.name == "Read")
        .and_then(|l| u32::try_from(l).ok());
    let locations = vec![ToolCallLocation::new(path.clone()).line(line)];
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let diff = match call.name.as_str() {
        "Edit" => text("old_string")
            .zip(text("new_string"))
            .map(|(old, new)| Diff::new(path, new).old_text(old)),
        "Write" => text("content").map(|content| {
            let append = args.get("mode").and_then(Value::as_str) == Some("append");
            let new = match (&before, append) {
                (Some(old), true) => format!("{old}{content}"),
                _ => content,
            };
            Diff::new(path, new).old_text(before)
        }),
        _ => None,
    };
    (
        locations,
        diff.map(ToolCallContent::Diff).into_iter().collect(),
    )
}

/// `tool_call` announcing a call the model made, with its locations and diff. A live call
/// starts `pending` (it may wait for permission); a replayed one is shown as it was.
pub fn tool_started(
    call: &ToolCall,
    cwd: &Path,
    before: Option<String>,
    status: ToolCallStatus,
) -> SessionUpdate {
    let (locations, content) = tool_details(call, cwd, before);
    SessionUpdate::ToolCall(
        AcpToolCall::new(call.id.clone(), tool_title(call))
            .kind(tool_kind(&call.name))
            .status(status)
            .locations(locations)
            .content(content)
            .raw_input(args_of(call)),
    )
}

/// `tool_call_update` saying a call now runs (its permission was granted, or none was needed).
pub fn tool_running(tool_call_id: &str) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        tool_call_id.to_owned(),
        ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
    ))
}

fn text_of(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `tool_call_update` with a call's result (after the editor terminal it ran in, if any: the
/// update replaces the call's content).
pub fn tool_finished(
    tool_call_id: &str,
    output: &[ContentPart],
    is_error: bool,
    terminal: Option<&str>,
) -> SessionUpdate {
    let text = ToolCallContent::from(ContentBlock::Text(TextContent::new(text_of(output))));
    let content: Vec<ToolCallContent> = terminal
        .map(crate::terminal::content)
        .into_iter()
        .chain([text])
        .collect();
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        tool_call_id.to_owned(),
        ToolCallUpdateFields::new()
            .status(if is_error {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            })
            .content(content),
    ))
}

pub fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

pub fn agent_thought(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text,
    ))))
}

fn user_block(part: &ContentPart) -> Option<ContentBlock> {
    match part {
        ContentPart::Text { text } => Some(ContentBlock::Text(TextContent::new(text.clone()))),
        ContentPart::Image(media) => {
            let rest = media.url.strip_prefix("data:")?;
            let (mime, data) = rest.split_once(";base64,")?;
            Some(ContentBlock::Image(ImageContent::new(data, mime)))
        }
        _ => None,
    }
}

/// The updates that show a stored conversation to an editor (`session/load`): user and
/// assistant text, thinking, tool calls with their results.
pub fn replay(messages: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for message in messages {
        match message.role {
            Role::User => {
                for part in &message.content {
                    if let Some(block) = user_block(part) {
                        updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(block)));
                    }
                }
            }
            Role::Assistant => {
                for part in &message.content {
                    match part {
                        ContentPart::Text { text } if !text.is_empty() => {
                            updates.push(agent_text(text));
                        }
                        ContentPart::Think { think, .. } if !think.is_empty() => {
                            updates.push(agent_thought(think));
                        }
                        _ => {}
                    }
                }
                updates.extend(
                    message
                        .tool_calls
                        .iter()
                        .map(|call| tool_started(call, cwd, None, ToolCallStatus::InProgress)),
                );
            }
            Role::Tool => {
                if let Some(id) = &message.tool_call_id {
                    updates.push(tool_finished(
                        id,
                        &message.content,
                        message.is_error.unwrap_or(false),
                        None,
                    ));
                }
            }
            _ => {}
        }
    }
    updates
}

/// The MCP servers an editor passes with `session/new` / `session/load`, in `mcp.json` shape
/// (`{"mcpServers": {name: {...}}}`) so the front end reads them like its own files.
pub fn mcp_servers_json(servers: &[McpServer]) -> Value {
    let mut out = Map::new();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio(stdio) => (
                stdio.name.clone(),
                json!({
                    "command": stdio.command,
                    "args": stdio.args,
                    "env": stdio.env.iter().map(|e| (e.name.clone(), Value::from(e.value.clone()))).collect::<Map<String, Value>>(),
                }),
            ),
            McpServer::Http(http) => (
                http.name.clone(),
                json!({
                    "transport": "http",
                    "url": http.url,
                    "headers": http.headers.iter().map(|h| (h.name.clone(), Value::from(h.value.clone()))).collect::<Map<String, Value>>(),
                }),
            ),
            McpServer::Sse(sse) => (
                sse.name.clone(),
                json!({"transport": "sse", "url": sse.url}),
            ),
            _ => continue,
        };
        out.insert(name, entry);
    }
    json!({ "mcpServers": out })
}

/// `available_commands_update` listing slash commands (name, description) the session runs.
pub fn commands_update(commands: &[(String, String)]) -> SessionUpdate {
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
        commands
            .iter()
            .map(|(name, description)| {
                AvailableCommand::new(name.clone(), description.clone()).input(
                    AvailableCommandInput::Unstructured(
                        agent_client_protocol::v1::schema::UnstructuredCommandInput::new(
                            "arguments",
                        ),
                    ),
                )
            })
            .collect(),
    ))
}

/// The choices of a permission request: allow once / for the session / reject, or for a plan
/// review (ExitPlanMode) one "Approve" per offered approach (or a plain one) and reject.
pub fn permission_options(review: bool, approaches: &[ApprovalOption]) -> Vec<PermissionOption> {
    if !review {
        return vec![
            PermissionOption::new("approve_once", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                "approve_for_session",
                "Allow for this session",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
    }
    let mut options: Vec<PermissionOption> = if approaches.is_empty() {
        vec![PermissionOption::new(
            "approve_once",
            "Approve the plan",
            PermissionOptionKind::AllowOnce,
        )]
    } else {
        approaches
            .iter()
            .map(|a| {
                PermissionOption::new(
                    format!("{APPROACH_PREFIX}{}", a.label),
                    format!("Approve: {}", a.label),
                    PermissionOptionKind::AllowOnce,
                )
            })
            .collect()
    };
    options.push(PermissionOption::new(
        "reject",
        "Reject (stay in plan mode)",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

const APPROACH_PREFIX: &str = "approach:";

/// The engine's decision for the option the editor picked.
pub fn decision_for(option_id: &str) -> ApprovalDecision {
    match option_id {
        "approve_once" => ApprovalDecision::ApproveOnce,
        "approve_for_session" => ApprovalDecision::ApproveForSession,
        id => match id.strip_prefix(APPROACH_PREFIX) {
            Some(label) => ApprovalDecision::ApproveOption {
                label: label.to_owned(),
            },
            None => ApprovalDecision::Reject,
        },
    }
}

/// The session modes offered to the editor: the permission modes, and plan mode (which keeps
/// the permission mode and adds the plan guard).
pub const MODES: [(&str, &str, &str, Option<PermissionMode>); 4] = [
    (
        "default",
        "Default",
        "Ask before edits outside the workspace, commands and other risky actions",
        Some(PermissionMode::Manual),
    ),
    (
        "auto",
        "Auto",
        "Approve safe actions, ask for the rest",
        Some(PermissionMode::Auto),
    ),
    (
        "yolo",
        "YOLO",
        "Approve every tool call without asking",
        Some(PermissionMode::Yolo),
    ),
    (
        "plan",
        "Plan",
        "Read and plan only; the plan is reviewed before any change",
        None,
    ),
];

/// What a mode id asks for: `Some(mode)` a permission mode (leaving plan mode), `None` plan
/// mode; unknown ids are `Err`.
pub fn mode_from_id(id: &str) -> Result<Option<PermissionMode>, String> {
    MODES
        .iter()
        .find(|m| m.0 == id)
        .map(|m| m.3)
        .ok_or_else(|| format!("unknown mode {id}: use default, auto, yolo or plan"))
}

/// The id of the mode a session is in.
pub fn current_mode_id(permission: PermissionMode, plan: bool) -> &'static str {
    if plan {
        return "plan";
    }
    MODES
        .iter()
        .find(|m| m.3 == Some(permission))
        .map_or("default", |m| m.0)
}

pub fn mode_state(current: &str) -> SessionModeState {
    SessionModeState::new(
        SessionModeId::new(current.to_owned()),
        MODES
            .iter()
            .map(|(id, name, description, _)| {
                SessionMode::new(SessionModeId::new(*id), *name)
                    .description(description.to_string())
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{EmbeddedResource, ResourceLink, TextResourceContents};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn prompt_blocks_become_parts() {
        let parts = prompt_parts(vec![
            ContentBlock::Text(TextContent::new("fix it")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///p/src/main.rs",
                )),
            )),
            ContentBlock::ResourceLink(ResourceLink::new("lib.rs", "file:///p/src/lib.rs")),
            ContentBlock::Image(ImageContent::new("AAAA", "image/png")),
        ]);
        assert_eq!(
            serde_json::to_value(&parts).unwrap(),
            json!([
                {"type": "text", "text": "fix it"},
                {"type": "text", "text": "<resource uri=\"file:///p/src/main.rs\">\nfn main() {}\n</resource>"},
                {"type": "text", "text": "@file:///p/src/lib.rs"},
                {"type": "image_url", "imageUrl": {"url": "data:image/png;base64,AAAA"}},
            ])
        );
    }

    #[test]
    fn tool_calls_get_kind_title_and_status() {
        let call = ToolCall::new(
            "c1",
            "Bash",
            Some(r#"{"command":"cargo test\nmore"}"#.into()),
        );
        let update = serde_json::to_value(tool_started(
            &call,
            Path::new("/p"),
            None,
            ToolCallStatus::Pending,
        ))
        .unwrap();
        assert_eq!(update["sessionUpdate"], "tool_call");
        assert_eq!(update["toolCallId"], "c1");
        assert_eq!(update["title"], "Bash cargo test");
        assert_eq!(update["kind"], "execute");
        // `pending` is the protocol's default status, so it is left out.
        assert!(update.get("status").is_none(), "{update}");
        assert!(
            update.get("locations").is_none_or(|l| l == &json!([])),
            "{update}"
        );
        let running = serde_json::to_value(tool_running("c1")).unwrap();
        assert_eq!(running["status"], "in_progress");
        assert_eq!(update["rawInput"], json!({"command": "cargo test\nmore"}));
        let done =
            serde_json::to_value(tool_finished("c1", &[ContentPart::text("ok")], true, None))
                .unwrap();
        assert_eq!(done["sessionUpdate"], "tool_call_update");
        assert_eq!(done["status"], "failed");
        assert_eq!(done["content"][0]["content"]["text"], "ok");
    }

    #[test]
    fn file_tools_carry_locations_and_edits_carry_diffs() {
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("a.txt"), "old line\n").unwrap();
        let edit = ToolCall::new(
            "e1",
            "Edit",
            Some(r#"{"path":"a.txt","old_string":"old","new_string":"new"}"#.into()),
        );
        let update = serde_json::to_value(tool_started(
            &edit,
            cwd.path(),
            None,
            ToolCallStatus::Pending,
        ))
        .unwrap();
        let file = cwd.path().join("a.txt").display().to_string();
        assert_eq!(update["locations"], json!([{"path": file}]));
        assert_eq!(
            update["content"],
            json!([{"type": "diff", "path": file, "oldText": "old", "newText": "new"}])
        );

        let write = ToolCall::new(
            "w1",
            "Write",
            Some(r#"{"path":"a.txt","content":"fresh\n"}"#.into()),
        );
        let before = file_before_write(&write, cwd.path());
        assert_eq!(before.as_deref(), Some("old line\n"));
        let update = serde_json::to_value(tool_started(
            &write,
            cwd.path(),
            before,
            ToolCallStatus::Pending,
        ))
        .unwrap();
        assert_eq!(
            update["content"][0],
            json!({"type": "diff", "path": file, "oldText": "old line\n", "newText": "fresh\n"})
        );
        let new_file = ToolCall::new(
            "w2",
            "Write",
            Some(r#"{"path":"/abs/new.txt","content":"x"}"#.into()),
        );
        assert_eq!(file_before_write(&new_file, cwd.path()), None);
        let update = serde_json::to_value(tool_started(
            &new_file,
            cwd.path(),
            None,
            ToolCallStatus::Pending,
        ))
        .unwrap();
        assert_eq!(update["locations"][0]["path"], "/abs/new.txt");
        assert!(update["content"][0]["oldText"].is_null(), "{update}");

        let read = ToolCall::new(
            "r1",
            "Read",
            Some(r#"{"path":"a.txt","line_offset":40}"#.into()),
        );
        let update = serde_json::to_value(tool_started(
            &read,
            cwd.path(),
            None,
            ToolCallStatus::Pending,
        ))
        .unwrap();
        assert_eq!(update["locations"], json!([{"path": file, "line": 40}]));
    }

    #[test]
    fn editor_mcp_servers_become_mcp_json() {
        let servers: Vec<McpServer> = serde_json::from_value(json!([
            {"name": "fs", "command": "/bin/fs-server", "args": ["--root", "/p"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X-K", "value": "v"}]},
        ]))
        .unwrap();
        assert_eq!(
            mcp_servers_json(&servers),
            json!({"mcpServers": {
                "fs": {"command": "/bin/fs-server", "args": ["--root", "/p"], "env": {"A": "1"}},
                "web": {"transport": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-K": "v"}},
            }})
        );
    }

    #[test]
    fn plan_reviews_offer_each_approach_and_map_back() {
        let approaches = vec![
            ApprovalOption {
                label: "Small patch".into(),
                description: String::new(),
            },
            ApprovalOption {
                label: "Rewrite".into(),
                description: String::new(),
            },
        ];
        let options = serde_json::to_value(permission_options(true, &approaches)).unwrap();
        assert_eq!(options[0]["name"], "Approve: Small patch");
        assert_eq!(options[2]["kind"], "reject_once");
        assert_eq!(
            decision_for(options[1]["optionId"].as_str().unwrap()),
            ApprovalDecision::ApproveOption {
                label: "Rewrite".into()
            }
        );
        assert_eq!(decision_for("reject"), ApprovalDecision::Reject);
        let plain = serde_json::to_value(permission_options(true, &[])).unwrap();
        assert_eq!(plain[0]["optionId"], "approve_once");
        assert_eq!(permission_options(false, &[]).len(), 3);
    }

    #[test]
    fn modes_round_trip() {
        for (id, _, _, mode) in MODES {
            assert_eq!(mode_from_id(id), Ok(mode));
            assert_eq!(
                current_mode_id(mode.unwrap_or(PermissionMode::Manual), mode.is_none()),
                id
            );
        }
        assert!(
            mode_from_id("nosuch")
                .unwrap_err()
                .contains("default, auto, yolo or plan")
        );
        let state = serde_json::to_value(mode_state("auto")).unwrap();
        assert_eq!(state["currentModeId"], "auto");
        assert_eq!(state["availableModes"].as_array().unwrap().len(), 4);
    }
}
