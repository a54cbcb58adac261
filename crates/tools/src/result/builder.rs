//! `ToolResultBuilder`: bounds a tool's own output to `max_chars` (50,000) and each line to
//! `max_line_length` (2,000), marking every cut with `[...truncated]`.

use super::ToolResult;
use super::utf16::{utf16_len, utf16_prefix};

pub const TRUNCATION_MARKER: &str = "[...truncated]";
pub const TRUNCATION_NOTICE: &str = "Output is truncated to fit in the message.";
pub const DEFAULT_MAX_CHARS: usize = 50_000;
pub const DEFAULT_MAX_LINE_LENGTH: usize = 2_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BuilderError {
    #[error("maxLineLength must be greater than the truncation marker length.")]
    LineLengthTooSmall,
}

#[derive(Debug, Clone)]
pub struct ToolResultBuilder {
    max_chars: usize,
    max_line_length: Option<usize>,
    buffer: String,
    n_chars: usize,
    truncated: bool,
}

impl Default for ToolResultBuilder {
    fn default() -> Self {
        Self {
            max_chars: DEFAULT_MAX_CHARS,
            max_line_length: Some(DEFAULT_MAX_LINE_LENGTH),
            buffer: String::new(),
            n_chars: 0,
            truncated: false,
        }
    }
}

/// Split keeping line breaks (`\r\n`, `\n`, `\r`); a trailing fragment is its own line.
fn split_lines_keep(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..=i]);
                start = i + 1;
            }
            b'\r' => {
                let end = if bytes.get(i + 1) == Some(&b'\n') {
                    i + 1
                } else {
                    i
                };
                lines.push(&text[start..=end]);
                i = end;
                start = end + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

fn line_break(line: &str) -> &str {
    let body = line.trim_end_matches(['\r', '\n']);
    &line[body.len()..]
}

impl ToolResultBuilder {
    pub fn new(max_chars: usize, max_line_length: Option<usize>) -> Result<Self, BuilderError> {
        if let Some(limit) = max_line_length
            && limit <= TRUNCATION_MARKER.len()
        {
            return Err(BuilderError::LineLengthTooSmall);
        }
        Ok(Self {
            max_chars,
            max_line_length,
            ..Self::default()
        })
    }

    pub fn n_chars(&self) -> usize {
        self.n_chars
    }

    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    pub fn is_full(&self) -> bool {
        self.n_chars >= self.max_chars
    }

    fn push_marker(&mut self) {
        if !self.truncated {
            self.buffer.push_str(TRUNCATION_MARKER);
            self.n_chars += TRUNCATION_MARKER.len();
            self.truncated = true;
        }
    }

    /// Append text; returns the characters written (markers pushed because the buffer filled up
    /// are counted in `n_chars` but not in the return value).
    pub fn write(&mut self, text: &str) -> usize {
        if self.is_full() {
            if !text.is_empty() {
                self.push_marker();
            }
            return 0;
        }
        let mut written = 0;
        for line in split_lines_keep(text) {
            if self.is_full() {
                self.push_marker();
                break;
            }
            let remaining = self.max_chars - self.n_chars;
            let limit = self.max_line_length.map_or(remaining, |l| l.min(remaining));
            let len = utf16_len(line);
            if len <= limit {
                self.buffer.push_str(line);
                written += len;
                self.n_chars += len;
                continue;
            }
            let brk = line_break(line);
            let end_len = TRUNCATION_MARKER.len() + brk.len();
            let keep = limit.max(end_len) - end_len;
            let kept = utf16_prefix(line, keep);
            let piece_len = utf16_len(kept) + end_len;
            self.buffer.push_str(kept);
            self.buffer.push_str(TRUNCATION_MARKER);
            self.buffer.push_str(brk);
            self.truncated = true;
            written += piece_len;
            self.n_chars += piece_len;
        }
        written
    }

    fn append_message(&self, message: &str) -> String {
        let mut out = self.buffer.clone();
        if !message.is_empty() {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(message);
        }
        out
    }

    /// Success: the message (with a period) only appears when the output is empty or truncated.
    pub fn ok(self, message: &str) -> ToolResult {
        let mut message = message.to_owned();
        if !message.is_empty() && !message.ends_with('.') {
            message.push('.');
        }
        if self.truncated {
            message = if message.is_empty() {
                TRUNCATION_NOTICE.to_owned()
            } else {
                format!("{message} {TRUNCATION_NOTICE}")
            };
        }
        let output = if self.truncated || self.buffer.is_empty() {
            self.append_message(&message)
        } else {
            self.buffer.clone()
        };
        let mut result = ToolResult::ok(output);
        result.truncated = self.truncated;
        result
    }

    /// Failure: the output is kept and the message always appended.
    pub fn error(self, message: &str) -> ToolResult {
        let message = if self.truncated {
            if message.is_empty() {
                TRUNCATION_NOTICE.to_owned()
            } else {
                format!("{message} {TRUNCATION_NOTICE}")
            }
        } else {
            message.to_owned()
        };
        let mut result = ToolResult::error(self.append_message(&message));
        result.truncated = self.truncated;
        result
    }
}
