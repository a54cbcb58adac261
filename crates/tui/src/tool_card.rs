//! A tool call as a card: name, the one argument that says what it does, status, elapsed
//! time, an output preview, and for Write/Edit the change as a diff. Subagent calls are drawn
//! by `agent_card`.

use std::time::{Duration, Instant};

use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::agent_card::AgentCall;
use crate::cells::{RenderCtx, diff_style, format_elapsed, preview};
use crate::wrap::{truncate, wrap_line};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Running,
    Done,
    Failed,
    /// The turn ended before a result arrived.
    Interrupted,
}

#[derive(Debug, Clone)]
pub struct ToolCard {
    pub id: String,
    pub name: String,
    pub key_arg: String,
    pub diff: Vec<String>,
    pub status: ToolStatus,
    pub started: Instant,
    pub finished: Option<Instant>,
    pub output: String,
    /// Loaded from a resumed session: its timing is unknown, so none is shown.
    pub resumed: bool,
    /// A subagent call (the `Agent` tool), drawn by [`crate::agent_card`].
    pub agent: Option<AgentCall>,
    /// Waiting for the user's approval since then (the call has not started running).
    pub awaiting_since: Option<Instant>,
    /// Time spent waiting for approvals, left out of the elapsed time shown.
    pub waited: Duration,
}

/// Shown instead of a diff when a call leaves the file as it is.
pub const NO_CHANGES: &str = "(no changes: the content is the same)";

/// Arguments that best describe a call, in order of preference.
const KEY_ARGS: [&str; 9] = [
    "command",
    "file_path",
    "path",
    "pattern",
    "url",
    "query",
    "description",
    "prompt",
    "title",
];

impl ToolCard {
    pub fn new(id: String, name: String, arguments: Option<&str>, now: Instant) -> Self {
        let args: Value = arguments
            .and_then(|a| serde_json::from_str(a).ok())
            .unwrap_or(Value::Null);
        let key_arg = KEY_ARGS
            .iter()
            .find_map(|k| args.get(k).and_then(Value::as_str))
            .map(str::to_owned)
            .or_else(|| {
                args.as_object()
                    .and_then(|o| o.values().find_map(Value::as_str))
                    .map(str::to_owned)
            })
            .unwrap_or_default();
        let diff = edit_diff(&name, &args);
        let agent = AgentCall::parse(&name, &args);
        ToolCard {
            id,
            name,
            key_arg,
            diff,
            status: ToolStatus::Running,
            started: now,
            finished: None,
            output: String::new(),
            resumed: false,
            agent,
            awaiting_since: None,
            waited: Duration::ZERO,
        }
    }

    /// The engine asked the user about this call. `diff` is the change the engine computed
    /// against the file as it is (a rewrite with the same content has none), which replaces
    /// the guess made from the arguments.
    pub fn await_approval(&mut self, now: Instant, diff: Option<&str>) {
        self.awaiting_since = Some(now);
        if let Some(diff) = diff {
            self.set_diff(diff);
        }
    }

    /// The engine's unified diff of the change (`Event::ToolDiff`, or the approval's): only
    /// the changed lines are kept; an empty one says the file stays as it is.
    pub fn set_diff(&mut self, diff: &str) {
        self.diff = diff
            .lines()
            .filter(|l| !l.starts_with("+++") && !l.starts_with("---"))
            .filter(|l| l.starts_with(['+', '-']))
            .map(str::to_owned)
            .collect();
        if self.diff.is_empty() {
            self.diff.push(NO_CHANGES.to_owned());
        }
    }

    /// The approval was answered: the wait ends and no longer counts as running time.
    pub fn approval_answered(&mut self, now: Instant) {
        if let Some(since) = self.awaiting_since.take() {
            self.waited += now.saturating_duration_since(since);
        }
    }

    pub fn is_awaiting_approval(&self) -> bool {
        self.awaiting_since.is_some() && self.is_running()
    }

    pub fn is_running(&self) -> bool {
        self.status == ToolStatus::Running
    }

    pub fn finish(&mut self, output: String, is_error: bool, now: Instant) {
        self.approval_answered(now);
        self.output = output;
        self.status = if is_error {
            ToolStatus::Failed
        } else {
            ToolStatus::Done
        };
        self.finished = Some(now);
    }

    pub fn lines(&self, ctx: &RenderCtx<'_>) -> Vec<Line<'static>> {
        if let Some(call) = &self.agent {
            return crate::agent_card::lines(self, call, ctx);
        }
        let t = ctx.theme;
        let (mark, mark_style, word) = match self.status {
            ToolStatus::Running if self.is_awaiting_approval() => {
                ("◇ ", t.warning, "awaiting approval")
            }
            ToolStatus::Running => ("◐ ", t.accent, "running"),
            ToolStatus::Done => ("✓ ", t.success, "done"),
            ToolStatus::Failed => ("✗ ", t.error, "failed"),
            ToolStatus::Interrupted => ("◌ ", t.warning, "interrupted"),
        };
        let elapsed = self
            .finished
            .unwrap_or(ctx.now)
            .saturating_duration_since(self.started)
            .saturating_sub(self.waited);
        let tail = if self.resumed || self.is_awaiting_approval() {
            format!(" · {word}")
        } else {
            format!(" · {word} {}", format_elapsed(elapsed))
        };
        let first_line: String = self.key_arg.lines().next().unwrap_or_default().to_owned();
        let room = ctx
            .width
            .saturating_sub(2 + self.name.chars().count() + 1 + tail.chars().count())
            .max(8);
        let mut spans = vec![
            Span::styled(mark, mark_style),
            Span::styled(self.name.clone(), t.text_strong),
        ];
        if !first_line.is_empty() {
            spans.push(Span::styled(
                format!(" {}", truncate(&first_line, room)),
                t.text,
            ));
        }
        spans.push(Span::styled(tail, t.text_dim));
        let mut out = wrap_line(&Line::from(spans), ctx.width, &[Span::raw("  ")]);
        let gutter = Span::styled("  │ ", t.border);
        if !self.diff.is_empty() {
            let max = if ctx.expanded { usize::MAX } else { 12 };
            for l in self.diff.iter().take(max) {
                let line = Line::from(vec![
                    gutter.clone(),
                    Span::styled(l.clone(), diff_style(l, t)),
                ]);
                out.extend(wrap_line(&line, ctx.width, std::slice::from_ref(&gutter)));
            }
            if self.diff.len() > max {
                out.push(Line::from(vec![
                    gutter.clone(),
                    Span::styled(
                        format!(
                            "… {} more diff lines (ctrl-o to expand)",
                            self.diff.len() - max
                        ),
                        t.text_dim,
                    ),
                ]));
            }
        }
        // Edits show their diff; the tool's "ok" text adds nothing unless it failed.
        let show_output = self.diff.is_empty() || self.status == ToolStatus::Failed;
        if show_output && !self.output.trim().is_empty() {
            let style = if self.status == ToolStatus::Failed {
                t.error
            } else {
                t.text_dim
            };
            let lines = if self.is_running() {
                // Live progress: only the newest lines matter.
                let all: Vec<&str> = self.output.trim_end().lines().collect();
                all[all.len().saturating_sub(3)..]
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect()
            } else {
                preview(&self.output, ctx.expanded, 4)
            };
            for l in lines {
                let line = Line::from(vec![gutter.clone(), Span::styled(l, style)]);
                out.extend(wrap_line(&line, ctx.width, std::slice::from_ref(&gutter)));
            }
        }
        out
    }
}

/// Write/Edit arguments as diff lines: replaced text in `-`, new text in `+`.
fn edit_diff(name: &str, args: &Value) -> Vec<String> {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let lower = name.to_ascii_lowercase();
    if lower.contains("edit") || lower.contains("replace") {
        if let (Some(old), Some(new)) = (
            s("old_string").or_else(|| s("old")),
            s("new_string").or_else(|| s("new")),
        ) {
            let mut out: Vec<String> = old.lines().map(|l| format!("-{l}")).collect();
            out.extend(new.lines().map(|l| format!("+{l}")));
            return out;
        }
        if let Some(diff) = s("diff").or_else(|| s("patch")) {
            return diff.lines().map(str::to_owned).collect();
        }
    } else if lower.contains("write")
        && let Some(content) = s("content")
    {
        return content.lines().map(|l| format!("+{l}")).collect();
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_argument_and_edit_diff() {
        let now = Instant::now();
        let card = ToolCard::new(
            "c1".into(),
            "Edit".into(),
            Some(r#"{"file_path":"src/a.rs","old_string":"a\nb","new_string":"c"}"#),
            now,
        );
        assert_eq!(card.key_arg, "src/a.rs");
        assert_eq!(card.diff, vec!["-a", "-b", "+c"]);
        let bash = ToolCard::new("c2".into(), "Bash".into(), Some(r#"{"command":"ls"}"#), now);
        assert_eq!(bash.key_arg, "ls");
        assert!(bash.diff.is_empty());
    }
}
