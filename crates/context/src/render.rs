//! How a tool result reads to the model (core.md §c, §e.5): the status texts for errors and empty
//! output, the model-only note, the executor's output normalisation and its fixed failure texts.
//!
//! History keeps a result's `is_error` and `note` as separate fields so UIs can show them
//! differently; they become plain text only here, at projection time.

use kimi_protocol::ContentPart;

/// First line of every failed result the model sees.
pub const TOOL_ERROR: &str = "<system>ERROR: Tool execution failed.</system>";
/// What an empty successful result reads as.
pub const TOOL_EMPTY: &str = "<system>Tool output is empty.</system>";
/// What an empty failed result reads as.
pub const TOOL_EMPTY_ERROR: &str =
    "<system>ERROR: Tool execution failed. Tool output is empty.</system>";
/// The executor's stand-in for an empty output; rendered as [`TOOL_EMPTY`].
pub const EMPTY_OUTPUT_TEXT: &str = "Tool output is empty.";
/// Companion text the executor puts before media when a result has no real text.
pub const NON_TEXT_OUTPUT_TEXT: &str = "Tool returned non-text content.";

/// Tools whose results show how long they ran (core-2.1.md §8 c): the slow, external ones.
pub fn should_render_wall_time(tool_name: &str) -> bool {
    matches!(
        tool_name,
        "Agent" | "AgentSwarm" | "Bash" | "FetchURL" | "Glob" | "Grep" | "WebSearch"
    ) || tool_name.starts_with("mcp__")
}

/// Render a tool result's output for the model (core.md §c): status prefixes for errors and
/// empty output, then the note (if any) after a newline or as an extra trailing part.
pub fn render_tool_result(
    output: &[ContentPart],
    is_error: bool,
    note: Option<&str>,
) -> Vec<ContentPart> {
    render_tool_result_timed(output, is_error, note, None)
}

/// [`render_tool_result`] with the 2.1 wall-time header: `Wall time: <s.mmm> seconds` as the
/// first line of the first text part (before any status prefix), or as a new first part. The
/// note still comes last.
pub fn render_tool_result_timed(
    output: &[ContentPart],
    is_error: bool,
    note: Option<&str>,
    duration_ms: Option<u64>,
) -> Vec<ContentPart> {
    let mut rendered = match output {
        [ContentPart::Text { text }] => vec![ContentPart::text(render_single_text(text, is_error))],
        parts => {
            let blank = parts
                .iter()
                .all(|p| p.as_text().is_some_and(|t| t.trim().is_empty()));
            if blank {
                vec![ContentPart::text(if is_error {
                    TOOL_EMPTY_ERROR
                } else {
                    TOOL_EMPTY
                })]
            } else if is_error {
                let mut out = Vec::with_capacity(parts.len() + 1);
                out.push(ContentPart::text(TOOL_ERROR));
                out.extend(parts.iter().cloned());
                out
            } else {
                parts.to_vec()
            }
        }
    };
    if let Some(ms) = duration_ms {
        let header = format!("Wall time: {}.{:03} seconds", ms / 1000, ms % 1000);
        match rendered.first_mut() {
            Some(ContentPart::Text { text }) => {
                text.insert(0, '\n');
                text.insert_str(0, &header);
            }
            _ => rendered.insert(0, ContentPart::text(header)),
        }
    }
    if let Some(note) = note.filter(|n| !n.is_empty()) {
        match rendered.as_mut_slice() {
            [ContentPart::Text { text }] => {
                text.push('\n');
                text.push_str(note);
            }
            _ => rendered.push(ContentPart::text(note)),
        }
    }
    rendered
}

fn render_single_text(text: &str, is_error: bool) -> String {
    if is_error {
        // Quirk kept from the reference: whitespace-only error text is not "empty".
        if text.is_empty() {
            TOOL_EMPTY_ERROR.to_owned()
        } else {
            format!("{TOOL_ERROR}\n{text}")
        }
    } else {
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed == EMPTY_OUTPUT_TEXT {
            TOOL_EMPTY.to_owned()
        } else {
            text.to_owned()
        }
    }
}

/// A tool's output after the executor's normalisation (core.md §e.5): text-only output becomes
/// one string; output with media stays a part list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NormalizedOutput {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl NormalizedOutput {
    /// The output as history content parts.
    pub fn into_parts(self) -> Vec<ContentPart> {
        match self {
            NormalizedOutput::Text(text) => vec![ContentPart::text(text)],
            NormalizedOutput::Parts(parts) => parts,
        }
    }
}

/// Normalise a part-list output: with media, keep the parts (prefixed by a companion text when
/// no text part says anything); without media, join the text parts (think parts are not text).
/// An empty result becomes "Tool output is empty." so the model never sees nothing.
pub fn normalize_tool_output(parts: Vec<ContentPart>) -> NormalizedOutput {
    if parts.iter().any(ContentPart::is_media) {
        let has_text = parts
            .iter()
            .any(|p| p.as_text().is_some_and(|t| !t.is_empty()));
        if has_text {
            return NormalizedOutput::Parts(parts);
        }
        let mut out = Vec::with_capacity(parts.len() + 1);
        out.push(ContentPart::text(NON_TEXT_OUTPUT_TEXT));
        out.extend(parts);
        return NormalizedOutput::Parts(out);
    }
    let joined: String = parts.iter().filter_map(ContentPart::as_text).collect();
    normalize_tool_text(joined)
}

/// Normalise a string output: the empty string becomes "Tool output is empty.".
pub fn normalize_tool_text(text: String) -> NormalizedOutput {
    if text.is_empty() {
        NormalizedOutput::Text(EMPTY_OUTPUT_TEXT.to_owned())
    } else {
        NormalizedOutput::Text(text)
    }
}

/// Fixed texts the executor puts into results it has to synthesize (core.md §e.5). They live
/// here, next to the rendering, so every model-facing tool-result text is in one place.
pub mod executor_text {
    /// The tool failed while executing (in this build: it panicked) with this message.
    pub fn failed(name: &str, message: &str) -> String {
        format!("Tool \"{name}\" failed: {message}")
    }

    /// A call after one that stopped the batch (`stopBatchAfterThis`, §e.4) is not run.
    pub fn skipped() -> &'static str {
        "Tool skipped because a previous tool call stopped the turn."
    }

    /// The after-execute (`onDidExecuteTool`) step failed for this call (§e.8): its result is
    /// replaced by this error text.
    pub fn after_execute_failed(name: &str, message: &str) -> String {
        format!("onDidExecuteTool hook failed for \"{name}\": {message}")
    }

    /// The call was aborted while its after-execute step ran (§e.8).
    pub fn after_execute_aborted(name: &str) -> String {
        format!("Tool \"{name}\" aborted during onDidExecuteTool hook.")
    }

    /// The call was aborted; a user cancellation gets a text that tells the model not to retry.
    pub fn aborted(name: &str, by_user: bool) -> String {
        if by_user {
            format!(
                "The user manually interrupted \"{name}\" (and anything else running at the same \
                 time). This was a deliberate user action, not a system error, timeout, or \
                 capacity limit. Do not retry automatically or guess at the cause \u{2014} wait for \
                 the user's next instruction."
            )
        } else {
            format!("Tool \"{name}\" was aborted")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::MediaUrl;
    use pretty_assertions::assert_eq;

    fn image() -> ContentPart {
        ContentPart::Image(MediaUrl {
            url: "data:x".into(),
            id: None,
        })
    }

    #[test]
    fn status_texts_for_errors_and_empty_output() {
        let t = |s: &str| vec![ContentPart::text(s)];
        assert_eq!(render_tool_result(&t("ok"), false, None), t("ok"));
        assert_eq!(render_tool_result(&t(""), false, None), t(TOOL_EMPTY));
        assert_eq!(
            render_tool_result(&t(" Tool output is empty. "), false, None),
            t(TOOL_EMPTY)
        );
        assert_eq!(render_tool_result(&t(""), true, None), t(TOOL_EMPTY_ERROR));
        assert_eq!(
            render_tool_result(&t("  "), true, None),
            t(&format!("{TOOL_ERROR}\n  "))
        );
        assert_eq!(render_tool_result(&[], true, None), t(TOOL_EMPTY_ERROR));
        assert_eq!(
            render_tool_result(&[ContentPart::text("a"), image()], true, None),
            vec![
                ContentPart::text(TOOL_ERROR),
                ContentPart::text("a"),
                image()
            ]
        );
    }

    #[test]
    fn note_goes_inside_single_text_or_after_parts() {
        let t = |s: &str| vec![ContentPart::text(s)];
        assert_eq!(
            render_tool_result(&t(""), false, Some("N")),
            t(&format!("{TOOL_EMPTY}\nN"))
        );
        assert_eq!(
            render_tool_result(&[image()], false, Some("N")),
            vec![image(), ContentPart::text("N")]
        );
        assert_eq!(render_tool_result(&t("x"), false, Some("")), t("x"));
    }

    #[test]
    fn wall_time_leads_and_the_note_stays_last() {
        assert_eq!(
            render_tool_result_timed(&[ContentPart::text("boom")], true, Some("N"), Some(1234)),
            vec![ContentPart::text(format!(
                "Wall time: 1.234 seconds\n{TOOL_ERROR}\nboom\nN"
            ))]
        );
        assert_eq!(
            render_tool_result_timed(&[image()], false, None, Some(5)),
            vec![ContentPart::text("Wall time: 0.005 seconds"), image()]
        );
        assert!(should_render_wall_time("mcp__github__search"));
        assert!(!should_render_wall_time("Read"));
    }

    #[test]
    fn normalisation_joins_text_and_guards_media() {
        assert_eq!(
            normalize_tool_output(vec![ContentPart::text("a"), ContentPart::text("b")]),
            NormalizedOutput::Text("ab".into())
        );
        assert_eq!(
            normalize_tool_output(vec![]),
            NormalizedOutput::Text(EMPTY_OUTPUT_TEXT.into())
        );
        assert_eq!(
            normalize_tool_output(vec![ContentPart::text(""), image()]),
            NormalizedOutput::Parts(vec![
                ContentPart::text(NON_TEXT_OUTPUT_TEXT),
                ContentPart::text(""),
                image()
            ])
        );
    }
}
