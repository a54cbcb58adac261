//! The history of a session as the reference's message objects (`{id, session_id, role,
//! content, created_at, ...}` with `text`/`thinking`/`tool_use`/`tool_result` parts) and the
//! cursor pagination (`before_id`/`after_id`/`page_size` → `{items, has_more}`), newest first.

use kimi_protocol::{ContentPart, Message, Role};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::events::arguments;

/// Query of `GET …/messages`.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Page {
    pub before_id: Option<String>,
    pub after_id: Option<String>,
    pub page_size: Option<u32>,
    pub role: Option<String>,
}

fn part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        ContentPart::Think { think, .. } => json!({"type": "thinking", "thinking": think}),
        ContentPart::Image(media) => {
            json!({"type": "image", "source": {"kind": "url", "url": media.url}})
        }
        ContentPart::Video(media) => {
            json!({"type": "video", "source": {"kind": "url", "url": media.url}})
        }
        ContentPart::Audio(media) => {
            json!({"type": "audio", "source": {"kind": "url", "url": media.url}})
        }
    }
}

/// One history message in the wire shape; `index` names messages that have no id.
pub fn wire(session_id: &str, index: usize, message: &Message) -> Value {
    let id = message.id.clone().unwrap_or_else(|| format!("msg_{index}"));
    let mut content: Vec<Value> = Vec::new();
    if message.role == Role::Tool {
        content.push(json!({
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content.iter().map(part).collect::<Vec<_>>(),
            "is_error": message.is_error.unwrap_or(false),
        }));
    } else {
        content.extend(message.content.iter().map(part));
    }
    content.extend(message.tool_calls.iter().map(|call| {
        json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": arguments(call.arguments.as_deref()),
        })
    }));
    json!({
        "id": id,
        "session_id": session_id,
        "role": message.role.as_str(),
        "content": content,
        "created_at": Value::Null,
    })
}

/// One page of the history, newest first.
pub fn page(session_id: &str, history: &[Message], query: &Page) -> Result<Value, ApiError> {
    if query.before_id.is_some() && query.after_id.is_some() {
        return Err(ApiError::validation(
            "before_id and after_id cannot be combined: page in one direction at a time",
        ));
    }
    let size = query.page_size.unwrap_or(50);
    if !(1..=100).contains(&size) {
        return Err(ApiError::validation(format!(
            "page_size must be between 1 and 100, got {size}"
        )));
    }
    if let Some(role) = &query.role
        && !["user", "assistant", "tool", "system"].contains(&role.as_str())
    {
        return Err(ApiError::validation(format!(
            "unknown role {role}: use user, assistant, tool or system"
        )));
    }
    let items: Vec<Value> = history
        .iter()
        .enumerate()
        .map(|(i, m)| wire(session_id, i, m))
        .collect();
    let position = |id: &str| {
        items.iter().position(|m| m["id"] == id).ok_or_else(|| {
            ApiError::new(
                crate::error::code::MESSAGE_NOT_FOUND,
                format!("no message {id} in session {session_id}: take ids from a previous page"),
            )
        })
    };
    // The candidate range, oldest first.
    let range: &[Value] = match (&query.before_id, &query.after_id) {
        (Some(before), _) => &items[..position(before)?],
        (_, Some(after)) => &items[position(after)? + 1..],
        _ => &items,
    };
    let size = size as usize;
    let take = range.len().min(size);
    let page: Vec<Value> = range[range.len() - take..]
        .iter()
        .rev()
        .filter(|m| query.role.as_ref().is_none_or(|r| m["role"] == r.as_str()))
        .cloned()
        .collect();
    Ok(json!({"items": page, "has_more": range.len() > size}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use kimi_protocol::ToolCall;
    use pretty_assertions::assert_eq;

    fn history() -> Vec<Message> {
        let mut assistant = Message::new(Role::Assistant, vec![ContentPart::text("running")]);
        assistant.tool_calls.push(ToolCall {
            kind: "function".into(),
            id: "c1".into(),
            name: "Bash".into(),
            arguments: Some(r#"{"command":"ls"}"#.into()),
            extras: None,
        });
        let mut tool = Message::new(Role::Tool, vec![ContentPart::text("a.txt")]);
        tool.tool_call_id = Some("c1".into());
        vec![
            Message::new(Role::User, vec![ContentPart::text("list files")]),
            assistant,
            tool,
            Message::new(Role::Assistant, vec![ContentPart::text("one file")]),
        ]
    }

    #[test]
    fn messages_are_paged_newest_first_in_the_wire_shape() {
        let h = history();
        let all = page("s1", &h, &Page::default()).unwrap();
        let items = all["items"].as_array().unwrap();
        assert_eq!(items.len(), 4);
        assert_eq!(all["has_more"], false);
        assert_eq!(items[0]["content"][0]["text"], "one file");
        assert_eq!(items[1]["content"][0]["type"], "tool_result");
        assert_eq!(items[1]["content"][0]["tool_use_id"], "c1");
        assert_eq!(items[2]["content"][1]["type"], "tool_use");
        assert_eq!(items[2]["content"][1]["input"]["command"], "ls");
        assert_eq!(items[3]["role"], "user");

        let first = page(
            "s1",
            &h,
            &Page {
                page_size: Some(2),
                ..Page::default()
            },
        )
        .unwrap();
        assert_eq!(first["has_more"], true);
        let last_id = first["items"][1]["id"].as_str().unwrap().to_owned();
        let older = page(
            "s1",
            &h,
            &Page {
                page_size: Some(2),
                before_id: Some(last_id),
                ..Page::default()
            },
        )
        .unwrap();
        assert_eq!(older["has_more"], false);
        assert_eq!(older["items"][1]["content"][0]["text"], "list files");

        let users = page(
            "s1",
            &h,
            &Page {
                role: Some("user".into()),
                ..Page::default()
            },
        )
        .unwrap();
        assert_eq!(users["items"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn bad_queries_are_validation_errors() {
        let h = history();
        let both = Page {
            before_id: Some("a".into()),
            after_id: Some("b".into()),
            ..Page::default()
        };
        assert_eq!(page("s", &h, &both).unwrap_err().code, 40001);
        let zero = Page {
            page_size: Some(0),
            ..Page::default()
        };
        assert_eq!(page("s", &h, &zero).unwrap_err().code, 40001);
        let unknown = Page {
            before_id: Some("nope".into()),
            ..Page::default()
        };
        assert_eq!(page("s", &h, &unknown).unwrap_err().code, 40403);
    }
}
