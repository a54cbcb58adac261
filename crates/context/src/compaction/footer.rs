//! The Context Recovery footer (core-2.1.md §3.1, beyond the reference snapshot): after a
//! compaction summary, tell the model where the replaced conversation still lives — the agent's
//! journal file and the exact line range — so it looks details up with the Read tool instead of
//! guessing. We also carry the current task verbatim (the latest user instruction and the open
//! todo list), because those are what a summary most often blurs.

use std::fmt::Write as _;

/// Inclusive, 1-based journal line range (line 1 is the metadata line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    pub start: u64,
    pub end: u64,
}

/// The compaction windows recorded in one journal (`fullCompaction.wireRanges`): each applied
/// compaction that captured a range adds one; a `context.clear` empties the list. Not undoable,
/// so replay rebuilds it from the whole journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireRanges {
    windows: Vec<LineRange>,
    last_clear_line: Option<u64>,
}

impl WireRanges {
    pub fn windows(&self) -> &[LineRange] {
        &self.windows
    }

    /// The range a compaction starting now replaces, given how many lines the journal holds
    /// after a flush: from just after the previous window (or the last clear) to the end.
    /// `None` when nothing new was written (then there is no footer).
    pub fn capture(&self, line_count: u64) -> Option<LineRange> {
        let previous_end = self.windows.last().map_or(0, |w| w.end);
        let start = previous_end.max(self.last_clear_line.unwrap_or(0)) + 1;
        (line_count >= start).then_some(LineRange {
            start,
            end: line_count,
        })
    }

    /// A `context.apply_compaction` record carrying `wireLines`.
    pub fn record(&mut self, range: LineRange) {
        self.windows.push(range);
    }

    /// A `context.clear` record on journal line `line`.
    pub fn clear(&mut self, line: u64) {
        self.windows.clear();
        self.last_clear_line = Some(line);
    }
}

/// The todo list is carried verbatim (open items only); the one item type lives in the protocol.
pub use kimi_protocol::record::{TodoItem, TodoStatus};

/// The latest real user instruction at compaction time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LatestInstruction {
    /// Repeat it word for word in the footer.
    Verbatim(String),
    /// It is already kept whole among the user messages before the summary; only point at it
    /// (repeating a long instruction would spend the tokens compaction just freed).
    KeptAbove,
}

/// Everything the footer shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooterInput<'a> {
    /// Absolute path of this agent's `wire.jsonl`.
    pub journal_path: &'a str,
    /// Earlier windows of this journal (from [`WireRanges::windows`]), oldest first.
    pub earlier_windows: &'a [LineRange],
    /// The lines this summary replaces; `None` when they could not be captured (journal flush
    /// failed, or nothing new was written), in which case only the current task is carried.
    pub window: Option<LineRange>,
    pub latest_instruction: Option<LatestInstruction>,
    pub todos: &'a [TodoItem],
}

pub const FOOTER_HEADING: &str = "## Context Recovery";
/// Heading of a footer that only carries the current task (no journal range known).
pub const TASK_ONLY_HEADING: &str = "## Current Task";

/// Render the footer (trailing whitespace trimmed); `None` when there is nothing to say.
pub fn render_recovery_footer(input: &FooterInput<'_>) -> Option<String> {
    let open: Vec<&TodoItem> = input
        .todos
        .iter()
        .filter(|t| t.status != TodoStatus::Done)
        .collect();
    let mut out = String::with_capacity(2048);
    match input.window {
        Some(window) => journal_section(&mut out, input, window),
        None => {
            let verbatim = matches!(
                input.latest_instruction,
                Some(LatestInstruction::Verbatim(_))
            );
            if open.is_empty() && !verbatim {
                return None;
            }
            out.push_str(TASK_ONLY_HEADING);
            out.push('\n');
        }
    }
    match &input.latest_instruction {
        Some(LatestInstruction::Verbatim(text)) => {
            out.push('\n');
            out.push_str("### Latest user instruction (verbatim)\n");
            out.push_str(text.trim_end());
            out.push('\n');
        }
        Some(LatestInstruction::KeptAbove) => {
            out.push('\n');
            out.push_str(
                "### Latest user instruction\nIt is the last user message before this summary, \
                 kept verbatim; it governs your next move unless the summary says it was \
                 already handled.\n",
            );
        }
        None => {}
    }
    if !open.is_empty() {
        out.push('\n');
        out.push_str("### Open todo items (verbatim)\n");
        for item in open {
            let _ = writeln!(out, "  [{}] {}", item.status.label(), item.title);
        }
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    Some(out)
}

/// The journal pointer: path, windows, and how to read the log.
fn journal_section(out: &mut String, input: &FooterInput<'_>, window: LineRange) {
    let journal = input.journal_path;
    // `write!` into a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(out, "{FOOTER_HEADING}");
    out.push('\n');
    out.push_str(
        "Everything before this note is still on disk, unchanged, in this agent's event log. \
         The log is read-only and append-only:\n",
    );
    let _ = writeln!(out, "  {journal}");
    out.push('\n');
    let mut number = 0usize;
    for window in input.earlier_windows {
        number += 1;
        let _ = writeln!(
            out,
            "  window {number}: lines {}\u{2013}{}",
            window.start, window.end
        );
    }
    number += 1;
    let LineRange { start, end } = window;
    let _ = writeln!(
        out,
        "  window {number}: lines {start}\u{2013}{end}   \u{2190} the conversation this note summarizes"
    );
    let next = end + 1;
    let _ = writeln!(
        out,
        "  window {} (the one you are in now) starts at line {next} with the \
         `context.apply_compaction` record that carries this note; it is already in your \
         context, so there is no need to read it.",
        number + 1
    );
    out.push('\n');
    out.push_str(
        "Do not guess at what happened before this note. When you need exact command output, \
         file contents, error text, or the precise wording of an earlier request, read it from \
         the log:\n",
    );
    out.push_str(
        "- Layout: one log per agent. The main agent's is under `agents/main/`; a subagent's \
         steps are in its own `agents/<agentId>/wire.jsonl`, and the parent's log holds only the \
         Agent call and its result.\n",
    );
    out.push_str(
        "- Format: one JSON record per line, identified by `type`. The conversation is in \
         `context.append_message` and `context.append_loop_event` records (step.begin, \
         content.part, tool.call, tool.result, step.end); everything else (llm.request, \
         usage.record, ...) is bookkeeping.\n",
    );
    out.push_str(
        "- Boundaries: `context.apply_compaction` (an earlier compaction), `context.undo` and \
         branch records (turns the user took back; not part of the current conversation), \
         `context.clear` (history was cleared).\n",
    );
    out.push_str(
        "- Externalised content: tool results over 50,000 characters carry an `output_path` to \
         the full text, and their preview says how much the file holds; media parts are blob \
         references.\n",
    );
    let _ = writeln!(
        out,
        "- Reading: lines are long. Find line numbers with Grep first, then Read only those \
         lines, one at a time. To pull a single field out of line N: \
         `sed -n 'Np' {journal} | jq -r '.type'`."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_starts_after_the_last_window_or_clear() {
        let mut ranges = WireRanges::default();
        assert_eq!(ranges.capture(0), None);
        assert_eq!(ranges.capture(40), Some(LineRange { start: 1, end: 40 }));
        ranges.record(LineRange { start: 1, end: 40 });
        assert_eq!(ranges.capture(40), None);
        assert_eq!(ranges.capture(90), Some(LineRange { start: 41, end: 90 }));
        ranges.clear(100);
        assert!(ranges.windows().is_empty());
        assert_eq!(ranges.capture(100), None);
        assert_eq!(
            ranges.capture(120),
            Some(LineRange {
                start: 101,
                end: 120
            })
        );
    }

    #[test]
    fn footer_names_the_journal_the_windows_and_the_current_task() {
        let todos = [
            TodoItem {
                title: "write the parser".into(),
                status: TodoStatus::InProgress,
            },
            TodoItem {
                title: "read the spec".into(),
                status: TodoStatus::Done,
            },
        ];
        let text = render_recovery_footer(&FooterInput {
            journal_path: "/h/sessions/w/s/agents/main/wire.jsonl",
            earlier_windows: &[LineRange { start: 1, end: 40 }],
            window: Some(LineRange { start: 42, end: 90 }),
            latest_instruction: Some(LatestInstruction::Verbatim("Fix the flaky test.\n".into())),
            todos: &todos,
        })
        .unwrap_or_default();
        assert!(text.starts_with("## Context Recovery\n"));
        for needle in [
            "\n  /h/sessions/w/s/agents/main/wire.jsonl\n",
            "\n  window 1: lines 1\u{2013}40\n",
            "\n  window 2: lines 42\u{2013}90   \u{2190} the conversation this note summarizes\n",
            "\n  window 3 (the one you are in now) starts at line 91 with the `context.apply_compaction` record",
            "### Latest user instruction (verbatim)\nFix the flaky test.\n",
            "  [in_progress] write the parser",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        assert!(!text.contains("read the spec"));
        assert_eq!(text, text.trim_end());
    }
}

#[cfg(test)]
mod task_only_tests {
    use super::*;

    #[test]
    fn without_a_range_only_the_current_task_is_carried() {
        let todos = [TodoItem {
            title: "ship it".into(),
            status: TodoStatus::Pending,
        }];
        let input = FooterInput {
            journal_path: "/j",
            earlier_windows: &[],
            window: None,
            latest_instruction: Some(LatestInstruction::KeptAbove),
            todos: &todos,
        };
        assert_eq!(
            render_recovery_footer(&input).as_deref(),
            Some(
                "## Current Task\n\n### Latest user instruction\nIt is the last user message \
                 before this summary, kept verbatim; it governs your next move unless the summary \
                 says it was already handled.\n\n### Open todo items (verbatim)\n  [pending] ship it"
            )
        );
        let nothing = FooterInput {
            todos: &[],
            ..input
        };
        assert_eq!(render_recovery_footer(&nothing), None);
    }
}
