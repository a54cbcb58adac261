//! Tool results and the budgets applied to them: the tool-side output builder, the 10M-char
//! accumulator and the 50,000-char model budget with spill-to-disk.

pub mod accumulator;
pub mod builder;
pub mod truncate;
mod utf16;

pub use accumulator::{Spill, ToolOutputAccumulator};
pub use builder::{BuilderError, ToolResultBuilder};
pub use truncate::{MODEL_BUDGET_CHARS, SpillOutcome, truncate_for_model};
pub use utf16::{utf16_len, utf16_prefix, utf16_suffix};

pub use kimi_protocol::loop_event::ToolOutput;
use kimi_protocol::{ContentPart, RecordPayload};

/// What a tool returns for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub output: ToolOutput,
    pub is_error: bool,
    /// Model-only side note rendered after the output at projection.
    pub note: Option<String>,
    /// The output was cut (by a builder or by the model budget).
    pub truncated: bool,
    /// The tool bounds its own output (Read); the model budget must not spill it again.
    pub spill_exempt: bool,
    /// No continuation step after this batch.
    pub stop_turn: bool,
    /// Journal records the engine commits together with this call's result (a todo list, a
    /// plan-mode or cron change). Tools never write the journal themselves: what they return
    /// here is durable exactly when their result is.
    pub records: Vec<RecordPayload>,
}

impl ToolResult {
    pub fn ok(text: impl Into<String>) -> Self {
        Self::new(ToolOutput::Text(text.into()), false)
    }

    pub fn error(text: impl Into<String>) -> Self {
        Self::new(ToolOutput::Text(text.into()), true)
    }

    pub fn parts(parts: Vec<ContentPart>) -> Self {
        Self::new(ToolOutput::Parts(parts), false)
    }

    fn new(output: ToolOutput, is_error: bool) -> Self {
        Self {
            output,
            is_error,
            note: None,
            truncated: false,
            spill_exempt: false,
            stop_turn: false,
            records: Vec::new(),
        }
    }

    /// The result with `records` to journal alongside it.
    pub fn with_records(mut self, records: impl IntoIterator<Item = RecordPayload>) -> Self {
        self.records.extend(records);
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// The output as text when it is text only (a string, or only text parts, joined).
    pub fn text(&self) -> Option<String> {
        match &self.output {
            ToolOutput::Text(t) => Some(t.clone()),
            ToolOutput::Parts(parts) => {
                let mut out = String::new();
                for part in parts {
                    out.push_str(part.as_text()?);
                }
                Some(out)
            }
        }
    }
}
