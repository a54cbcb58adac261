//! `ToolOutputAccumulator`: caps what a tool keeps in memory at 10,000,000 characters (the head)
//! while counting everything it was fed, so the model can be told the real size.

use super::ToolResult;
use super::utf16::{utf16_len, utf16_prefix};

pub const DEFAULT_RETAINED_CHARS: usize = 10_000_000;
/// Above this the model budget will spill; a success message then travels as a spill suffix.
const MODEL_BUDGET: usize = 50_000;

/// What the model-budget step needs to know about text the tool could not keep.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Spill {
    /// Characters written in total (set only when text was dropped).
    pub total_chars: Option<usize>,
    /// Text to show after the preview.
    pub suffix: Option<String>,
    /// A file that already holds the complete output (Bash's task log).
    pub output_path: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone)]
pub struct ToolOutputAccumulator {
    limit: usize,
    kept: String,
    kept_chars: usize,
    total_chars: usize,
}

impl Default for ToolOutputAccumulator {
    fn default() -> Self {
        Self::new(DEFAULT_RETAINED_CHARS)
    }
}

impl ToolOutputAccumulator {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            kept: String::new(),
            kept_chars: 0,
            total_chars: 0,
        }
    }

    pub fn write(&mut self, text: &str) {
        let len = utf16_len(text);
        self.total_chars += len;
        if self.kept_chars >= self.limit {
            return;
        }
        let room = self.limit - self.kept_chars;
        if len <= room {
            self.kept.push_str(text);
            self.kept_chars += len;
        } else {
            let piece = utf16_prefix(text, room);
            self.kept.push_str(piece);
            self.kept_chars += utf16_len(piece);
        }
    }

    /// Characters kept.
    pub fn n_chars(&self) -> usize {
        self.kept_chars
    }

    /// Characters written.
    pub fn total_chars(&self) -> usize {
        self.total_chars
    }

    pub fn text(&self) -> &str {
        &self.kept
    }

    pub fn dropped(&self) -> bool {
        self.total_chars > self.kept_chars
    }

    /// Success: the kept text, or the message (with a period) when nothing was written.
    pub fn ok(self, message: &str) -> (ToolResult, Option<Spill>) {
        let mut message = message.to_owned();
        if !message.is_empty() && !message.ends_with('.') {
            message.push('.');
        }
        let suffix = (!message.is_empty()).then(|| message.clone());
        let spill = if self.dropped() {
            Some(Spill {
                total_chars: Some(self.total_chars),
                suffix,
                output_path: None,
            })
        } else if suffix.is_some() && self.total_chars > MODEL_BUDGET {
            Some(Spill {
                total_chars: None,
                suffix,
                output_path: None,
            })
        } else {
            None
        };
        let output = if self.kept.is_empty() {
            message
        } else {
            self.kept
        };
        (ToolResult::ok(output), spill)
    }

    /// Failure: the kept text plus the message.
    pub fn error(self, message: &str) -> (ToolResult, Option<Spill>) {
        let spill = self.dropped().then(|| Spill {
            total_chars: Some(self.total_chars),
            suffix: (!message.is_empty()).then(|| message.to_owned()),
            output_path: None,
        });
        let mut out = self.kept;
        if !message.is_empty() {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(message);
        }
        (ToolResult::error(out), spill)
    }
}
