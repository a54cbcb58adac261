//! What the parser found wrong with a file: one [`Diagnostic`] per problem, with the file, the
//! 1-based line, the dotted key path, the message and (for unknown keys) the closest known key.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Something is ignored (an unknown, deprecated or unsupported key); start-up goes on.
    Warning,
    /// The file, or a key in it, cannot be used as written; kimi-rs refuses to start.
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub file: PathBuf,
    /// 1-based; `None` when the problem has no place in the file (an environment variable).
    pub line: Option<usize>,
    /// Dotted key path (`loop_control.max_steps_per_turn`, `hooks.0.command`); empty for the
    /// whole file.
    pub key: String,
    pub message: String,
    /// The known key closest to an unknown one.
    pub suggestion: Option<String>,
}

impl Diagnostic {
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The diagnostic without its file name (for reports grouped by file):
    /// `line 4: `key`: message (did you mean …?)`.
    pub fn brief(&self) -> String {
        let full = self.to_string();
        let file = self.file.display().to_string();
        let rest = full.strip_prefix(&file).unwrap_or(&full);
        match rest.strip_prefix(':') {
            Some(rest) if self.line.is_some() => format!("line {}", rest.trim_start()),
            Some(rest) => rest.trim_start().to_owned(),
            None => rest.to_owned(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if !self.key.is_empty() {
            write!(f, "`{}`: ", self.key)?;
        }
        f.write_str(&self.message)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " (did you mean `{suggestion}`?)")?;
        }
        Ok(())
    }
}

/// The errors of a configuration that cannot be used, for the binary to refuse to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render_errors(.0))]
pub struct ConfigErrors(pub Vec<Diagnostic>);

fn render_errors(errors: &[Diagnostic]) -> String {
    let mut out = String::from("the configuration cannot be used:");
    for error in errors {
        out.push_str("\n  ");
        out.push_str(&error.to_string());
    }
    out.push_str(
        "\nFix the keys named above (run `kimi-rs doctor` to see every problem) and start again.",
    );
    out
}

/// 1-based line of byte `offset` in `text`. Scans from the start: for one lookup only; many
/// lookups in one text go through [`LineIndex`].
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    // `offset` comes from the parser, so it is on a char boundary; count bytes to be safe.
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Where each line of a text starts, so an offset's line is a binary search. One scan per
/// lookup made loading quadratic: 40,000 `[[permission.rules]]` entries each counted the
/// newlines before them, which took close to a minute.
#[derive(Debug, Clone)]
pub struct LineIndex {
    /// Byte offsets of every `\n`, ascending.
    newlines: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let newlines = text
            .bytes()
            .enumerate()
            .filter_map(|(i, b)| (b == b'\n').then_some(i))
            .collect();
        LineIndex { newlines }
    }

    /// 1-based line of byte `offset`; the same answer as [`line_of`].
    pub fn line(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&n| n < offset) + 1
    }
}

/// The candidate closest to `name`, when it is close enough to be a likely typo: a few edits
/// away, or sharing a long prefix (`max_stepz` → `max_steps_per_turn`, which edit distance
/// alone would not suggest).
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let candidates: Vec<&str> = candidates.into_iter().filter(|c| *c != name).collect();
    let by_edits = candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(name, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len().min(name.len()) / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    // A misspelt or cut-short start of a longer key: all but its last two characters (and at
    // least five) are the start of exactly one candidate's name.
    let by_prefix = || {
        let common = |c: &str| {
            name.chars()
                .zip(c.chars())
                .take_while(|(a, b)| a == b)
                .count()
        };
        let needed = name.chars().count().saturating_sub(2).max(5);
        let mut hits = candidates.iter().filter(|c| common(c) >= needed);
        match (hits.next(), hits.next()) {
            (Some(only), None) => Some(*only),
            _ => None,
        }
    };
    by_edits.or_else(by_prefix).map(str::to_owned)
}

pub(crate) struct Sink<'a> {
    pub file: &'a Path,
    pub lines: LineIndex,
    pub out: &'a mut Vec<Diagnostic>,
}

impl Sink<'_> {
    pub fn push(
        &mut self,
        severity: Severity,
        offset: Option<usize>,
        key: &str,
        message: String,
        suggestion: Option<String>,
    ) {
        self.out.push(Diagnostic {
            severity,
            file: self.file.to_path_buf(),
            line: offset.map(|o| self.lines.line(o)),
            key: key.to_owned(),
            message,
            suggestion,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_keys_only() {
        let keys = ["max_steps_per_turn", "max_attempts_per_step"];
        assert_eq!(
            did_you_mean("max_stepz_per_turn", keys).as_deref(),
            Some("max_steps_per_turn")
        );
        assert_eq!(
            did_you_mean("max_stepz", keys).as_deref(),
            Some("max_steps_per_turn")
        );
        assert_eq!(did_you_mean("frobnicate", keys), None);
        assert_eq!(did_you_mean("max", keys), None);
        assert_eq!(did_you_mean("max_steps_per_turn", keys), None);
        assert_eq!(line_of("a\nb\nc", 2), 2);
    }

    #[test]
    fn the_line_index_agrees_with_a_scan_at_every_offset() {
        for text in ["", "a", "\n", "a\nb\nc", "\n\nx\r\ny\n", "日本\n語\n"] {
            let index = LineIndex::new(text);
            for offset in 0..=text.len() + 2 {
                assert_eq!(
                    index.line(offset),
                    line_of(text, offset),
                    "{text:?} @ {offset}"
                );
            }
        }
    }
}
