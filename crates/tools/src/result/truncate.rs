//! The model budget: a text-only result longer than 50,000 characters is saved in full under
//! the agent's `tool-results/` directory and replaced by a preview that names the saved file.

use std::path::{Path, PathBuf};

use kimi_protocol::loop_event::ToolOutput;

use super::ToolResult;
use super::accumulator::Spill;
use super::utf16::{utf16_len, utf16_prefix};

pub const MODEL_BUDGET_CHARS: usize = 50_000;
pub const PREVIEW_CHARS: usize = 2_000;
const STEM_MAX: usize = 80;

#[derive(Debug, Clone, PartialEq)]
pub struct SpillOutcome {
    pub result: ToolResult,
    /// Where the full text was saved, when the result was replaced by a preview.
    pub spilled_to: Option<PathBuf>,
}

/// `<tool>-<callId>` with characters outside `[A-Za-z0-9._-]` replaced, cut to 80.
fn spill_stem(tool_name: &str, tool_call_id: &str) -> String {
    format!("{tool_name}-{tool_call_id}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(STEM_MAX)
        .collect()
}

/// Write via a temporary sibling and rename, so a reader never sees half a file.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let tmp = path.with_extension("txt.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Apply the model budget to one result. Results with any non-text part, results already marked
/// truncated and `spill_exempt` results pass unchanged; a failed write leaves the result as it
/// was. `spill` carries what an accumulator knew (real total, suffix, existing full-output file).
pub fn truncate_for_model(
    result: ToolResult,
    tool_name: &str,
    tool_call_id: &str,
    tool_results_dir: &Path,
    spill: Option<&Spill>,
) -> SpillOutcome {
    let unchanged = |result| SpillOutcome {
        result,
        spilled_to: None,
    };
    if result.spill_exempt || result.truncated {
        return unchanged(result);
    }
    let Some(text) = result.text() else {
        return unchanged(result);
    };
    let chars = utf16_len(&text);
    if chars <= MODEL_BUDGET_CHARS {
        return unchanged(result);
    }
    let path = match spill.and_then(|s| s.output_path.clone()) {
        Some(existing) => existing,
        None => {
            let name = format!(
                "{}-{}.txt",
                spill_stem(tool_name, tool_call_id),
                uuid::Uuid::new_v4()
            );
            let path = tool_results_dir.join(name);
            if write_atomic(&path, &text).is_err() {
                return unchanged(result);
            }
            path
        }
    };
    let total = spill.and_then(|s| s.total_chars).unwrap_or(chars);
    let mut lines = vec![
        format!("Tool output exceeded {MODEL_BUDGET_CHARS} characters; showing a preview only."),
        format!("tool_name: {tool_name}"),
        format!("tool_call_id: {tool_call_id}"),
        format!("output_size_chars: {total}"),
        format!("output_size_bytes: {}", text.len()),
        format!("output_path: {}", path.display()),
        "next_step: Use Read with output_path to page through the full output.".to_owned(),
        String::new(),
        "[preview]".to_owned(),
        utf16_prefix(&text, PREVIEW_CHARS).to_owned(),
    ];
    if let Some(suffix) = spill.and_then(|s| s.suffix.as_deref()) {
        lines.push(String::new());
        lines.push(suffix.to_owned());
    }
    let mut replaced = result;
    replaced.output = ToolOutput::Text(lines.join("\n"));
    replaced.truncated = true;
    SpillOutcome {
        result: replaced,
        spilled_to: Some(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stem_is_sanitized_and_capped() {
        assert_eq!(spill_stem("mcp/x", "call 1"), "mcp_x-call_1");
        assert_eq!(spill_stem(&"a".repeat(100), "c").len(), 80);
    }
}
