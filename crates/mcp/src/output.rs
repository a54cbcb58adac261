//! Turning an MCP `CallToolResult` into a kimi-rs [`ToolResult`] (reference: `agent/mcp/output.ts`):
//! content blocks to parts, media-only results wrapped in a named tag, structured content kept
//! when the text would lose it, text capped at 100,000 characters and media parts at 10 MiB.
//!
//! The blocks are read as JSON rather than through rmcp's typed content enum, so the mapping is
//! tied to the wire format (which the spec fixes) instead of the SDK's type layout.

use kimi_protocol::{ContentPart, MediaUrl};
use kimi_tools::ToolResult;
use kimi_tools::result::{ToolOutput, utf16_len, utf16_prefix};
use serde_json::Value;

/// Text budget of one MCP result, in UTF-16 units like the reference (JavaScript lengths).
pub const MAX_OUTPUT_CHARS: usize = 100_000;
/// Largest media part kept, in decoded bytes.
pub const MAX_BINARY_PART_BYTES: usize = 10 * 1024 * 1024;
/// The base64 length of a part of `MAX_BINARY_PART_BYTES`.
const MAX_BINARY_PART_CHARS: usize = MAX_BINARY_PART_BYTES.div_ceil(3) * 4;
/// Structured content is appended when its JSON is more than this many times the text length
/// (the text is then a lossy rendering of it).
const STRUCTURED_LOSSY_RATIO: usize = 2;

fn truncation_notice() -> String {
    format!(
        "\n\n[Output truncated: exceeded {MAX_OUTPUT_CHARS} character limit. Use pagination or more specific queries to get remaining content.]"
    )
}

/// Convert a `CallToolResult` (as JSON: `content`, `structuredContent`, `isError`) for the tool
/// `qualified_name`.
pub fn convert_result(result: &Value, qualified_name: &str) -> ToolResult {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let converted: Vec<ContentPart> = blocks.iter().filter_map(convert_block).collect();
    let text_len: usize = converted
        .iter()
        .filter_map(ContentPart::as_text)
        .map(|t| utf16_len(t.trim()))
        .sum();
    let mut parts = wrap_media_only(converted, qualified_name);

    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        let json = serde_json::json!({ "structuredContent": structured }).to_string();
        if text_len == 0 || utf16_len(&json) > STRUCTURED_LOSSY_RATIO * text_len {
            let json = json.replace("</mcp-structured-result>", "");
            parts.push(ContentPart::text(format!(
                "\n<mcp-structured-result>\n{json}\n</mcp-structured-result>"
            )));
        }
    }

    let (parts, text_cut) = apply_text_budget(parts);
    let (parts, media_cut) = apply_binary_cap(parts);
    let parts = join_adjacent_text(parts);
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut out = match parts.as_slice() {
        [ContentPart::Text { text }] if is_error => ToolResult::error(text.clone()),
        [ContentPart::Text { text }] => ToolResult::ok(text.clone()),
        _ if is_error => {
            let mut r = ToolResult::parts(parts);
            r.is_error = true;
            r
        }
        _ => ToolResult::parts(parts),
    };
    out.truncated = text_cut || media_cut;
    if matches!(&out.output, ToolOutput::Parts(p) if p.is_empty()) {
        // A result with nothing the model can read still has to say something.
        out.output = ToolOutput::Text(if is_error {
            "The MCP tool reported an error without any message.".to_owned()
        } else {
            "The MCP tool returned no content.".to_owned()
        });
    }
    out
}

fn data_url(mime: &str, data: &str) -> MediaUrl {
    MediaUrl {
        url: format!("data:{mime};base64,{data}"),
        id: None,
    }
}

fn media_part(mime: &str, url: MediaUrl) -> Option<ContentPart> {
    if mime.starts_with("image/") {
        Some(ContentPart::Image(url))
    } else if mime.starts_with("audio/") {
        Some(ContentPart::Audio(url))
    } else if mime.starts_with("video/") {
        Some(ContentPart::Video(url))
    } else {
        None
    }
}

fn convert_block(block: &Value) -> Option<ContentPart> {
    let str_field = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    match block.get("type").and_then(Value::as_str)? {
        "text" => str_field(block, "text").map(ContentPart::text),
        "image" => {
            let data = str_field(block, "data")?;
            let mime = str_field(block, "mimeType").unwrap_or_else(|| "image/png".to_owned());
            Some(ContentPart::Image(data_url(&mime, &data)))
        }
        "audio" => {
            let data = str_field(block, "data")?;
            let mime = str_field(block, "mimeType").unwrap_or_else(|| "audio/mpeg".to_owned());
            Some(ContentPart::Audio(data_url(&mime, &data)))
        }
        "resource" => {
            let resource = block.get("resource")?;
            if let Some(text) = str_field(resource, "text") {
                return Some(ContentPart::text(text));
            }
            let blob = str_field(resource, "blob")?;
            let mime = str_field(resource, "mimeType")
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            media_part(&mime, data_url(&mime, &blob))
        }
        "resource_link" => {
            let uri = str_field(block, "uri")?;
            let mime = str_field(block, "mimeType")
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            let link = MediaUrl {
                url: uri.clone(),
                id: None,
            };
            // Unlike the reference (which drops them), a non-media link stays visible as text:
            // the URI is often the only pointer to the data.
            media_part(&mime, link).or_else(|| {
                Some(ContentPart::text(format!(
                    "[resource link: {uri} ({mime})]"
                )))
            })
        }
        _ => None,
    }
}

fn wrap_media_only(parts: Vec<ContentPart>, qualified_name: &str) -> Vec<ContentPart> {
    let has_media = parts.iter().any(ContentPart::is_media);
    let has_text = parts
        .iter()
        .any(|p| p.as_text().is_some_and(|t| !t.is_empty()));
    if !has_media || has_text {
        return parts;
    }
    let mut out = Vec::with_capacity(parts.len() + 2);
    out.push(ContentPart::text(format!(
        "<mcp_tool_result name=\"{qualified_name}\">"
    )));
    out.extend(parts);
    out.push(ContentPart::text("</mcp_tool_result>"));
    out
}

/// Adjacent text parts become one, with a newline between them unless one is already there:
/// two text blocks of one result must not reach the model glued together ("ab").
fn join_adjacent_text(parts: Vec<ContentPart>) -> Vec<ContentPart> {
    let mut out: Vec<ContentPart> = Vec::with_capacity(parts.len());
    for part in parts {
        if let (Some(ContentPart::Text { text: last }), ContentPart::Text { text }) =
            (out.last_mut(), &part)
        {
            if !(last.ends_with('\n') || text.starts_with('\n')) {
                last.push('\n');
            }
            last.push_str(text);
            continue;
        }
        out.push(part);
    }
    out
}

fn apply_text_budget(parts: Vec<ContentPart>) -> (Vec<ContentPart>, bool) {
    let mut remaining = MAX_OUTPUT_CHARS;
    let mut truncated = false;
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let Some(text) = part.as_text() else {
            out.push(part);
            continue;
        };
        let len = utf16_len(text);
        if remaining == 0 {
            truncated = true;
        } else if len > remaining {
            out.push(ContentPart::text(utf16_prefix(text, remaining)));
            remaining = 0;
            truncated = true;
        } else {
            remaining -= len;
            out.push(part);
        }
    }
    if truncated {
        match out.iter_mut().rev().find_map(|p| match p {
            ContentPart::Text { text } => Some(text),
            _ => None,
        }) {
            Some(text) => text.push_str(&truncation_notice()),
            None => out.push(ContentPart::text(truncation_notice())),
        }
    }
    (out, truncated)
}

fn apply_binary_cap(parts: Vec<ContentPart>) -> (Vec<ContentPart>, bool) {
    let mut truncated = false;
    let out = parts
        .into_iter()
        .map(|part| {
            let (kind, url) = match &part {
                ContentPart::Image(m) => ("image", &m.url),
                ContentPart::Audio(m) => ("audio", &m.url),
                ContentPart::Video(m) => ("video", &m.url),
                ContentPart::Text { .. } | ContentPart::Think { .. } => return part,
            };
            if url.len() <= MAX_BINARY_PART_CHARS {
                return part;
            }
            truncated = true;
            // Approximate decoded size in tenths of a MiB, without floating point.
            let tenths = url.len() * 3 / 4 * 10 / (1024 * 1024);
            let cap_mb = MAX_BINARY_PART_BYTES / (1024 * 1024);
            ContentPart::text(format!(
                "[{kind}_url dropped: ~{}.{} MB exceeds {cap_mb} MB per-part limit. Try a smaller resource.]",
                tenths / 10,
                tenths % 10
            ))
        })
        .collect();
    (out, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    const NAME: &str = "mcp__s__t";

    #[test]
    fn text_parts_are_joined_into_one_text_when_alone() {
        let r = convert_result(&json!({"content": [{"type": "text", "text": "hi"}]}), NAME);
        assert_eq!(r, ToolResult::ok("hi"));
        let r = convert_result(
            &json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
            NAME,
        );
        assert_eq!(r, ToolResult::error("bad"));
        let r = convert_result(
            &json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
            NAME,
        );
        assert_eq!(
            r,
            ToolResult::ok("a\nb"),
            "joined with a newline, never glued"
        );
        let r = convert_result(
            &json!({"content": [{"type": "text", "text": "a\n"}, {"type": "text", "text": "b"}]}),
            NAME,
        );
        assert_eq!(r, ToolResult::ok("a\nb"));
    }

    #[test]
    fn empty_results_say_so() {
        assert_eq!(
            convert_result(&json!({"content": []}), NAME),
            ToolResult::ok("The MCP tool returned no content.")
        );
        assert!(convert_result(&json!({"content": [], "isError": true}), NAME).is_error);
    }

    #[test]
    fn media_only_results_are_wrapped() {
        let r = convert_result(
            &json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/gif"}]}),
            NAME,
        );
        assert_eq!(
            r,
            ToolResult::parts(vec![
                ContentPart::text("<mcp_tool_result name=\"mcp__s__t\">"),
                ContentPart::Image(MediaUrl {
                    url: "data:image/gif;base64,AAAA".into(),
                    id: None
                }),
                ContentPart::text("</mcp_tool_result>"),
            ])
        );
    }

    #[test]
    fn resources_and_links() {
        let r = convert_result(
            &json!({"content": [
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inline"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "QQ==", "mimeType": "application/zip"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"},
            ]}),
            NAME,
        );
        assert_eq!(
            r.text().as_deref(),
            Some("inline\n[resource link: file:///c (application/octet-stream)]")
        );
    }

    #[test]
    fn long_text_is_cut_and_says_so() {
        let long = "x".repeat(MAX_OUTPUT_CHARS + 10);
        let r = convert_result(&json!({"content": [{"type": "text", "text": long}]}), NAME);
        assert!(r.truncated);
        let text = r.text().unwrap_or_default();
        assert!(text.starts_with(&"x".repeat(MAX_OUTPUT_CHARS)));
        assert!(text.ends_with("to get remaining content.]"), "{text}");
        assert_eq!(text.len(), MAX_OUTPUT_CHARS + truncation_notice().len());
    }

    #[test]
    fn oversized_media_is_dropped_with_a_notice() {
        let data = "A".repeat(MAX_BINARY_PART_CHARS + 4);
        let r = convert_result(
            &json!({"content": [{"type": "text", "text": "pic:"}, {"type": "image", "data": data}]}),
            NAME,
        );
        assert!(r.truncated);
        let text = r.text().unwrap_or_default();
        assert!(
            text.starts_with("pic:\n[image_url dropped: ~10.0 MB exceeds 10 MB"),
            "{text}"
        );
    }

    #[test]
    fn structured_content_is_kept_when_text_is_lossy() {
        let r = convert_result(
            &json!({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"rows": [1, 2, 3]}}),
            NAME,
        );
        assert_eq!(
            r.text().as_deref(),
            Some(
                "ok\n<mcp-structured-result>\n{\"structuredContent\":{\"rows\":[1,2,3]}}\n</mcp-structured-result>"
            )
        );
        // Text that already carries it: nothing appended.
        let text = "{\"rows\":[1,2,3]} plus a longer explanation of the rows";
        let r = convert_result(
            &json!({"content": [{"type": "text", "text": text}], "structuredContent": {"rows": [1, 2, 3]}}),
            NAME,
        );
        assert_eq!(r.text().as_deref(), Some(text));
    }
}
