//! Subagent calls (the `Agent` tool) as their own card: the subagent type and task description
//! while it runs, the first lines of its `[summary]` when it is done, and for a background
//! subagent the task id it runs under.

use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::cells::{RenderCtx, preview};
use crate::tool_card::{ToolCard, ToolStatus};
use crate::wrap::{truncate, wrap_line};

/// The subagent type when the call names none (surface.md §2.5).
const DEFAULT_TYPE: &str = "coder";

/// What an `Agent` call asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCall {
    pub subagent_type: String,
    pub description: String,
    pub background: bool,
    /// The agent id it continues (`resume`).
    pub resume: Option<String>,
}

impl AgentCall {
    /// `Some` for calls of the `Agent` tool.
    pub fn parse(tool_name: &str, args: &Value) -> Option<AgentCall> {
        if tool_name != "Agent" {
            return None;
        }
        let s = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
        let resume = s("resume").filter(|r| !r.is_empty());
        Some(AgentCall {
            subagent_type: s("subagent_type")
                .filter(|t| !t.is_empty())
                .unwrap_or_else(|| {
                    if resume.is_some() {
                        "subagent".to_owned()
                    } else {
                        DEFAULT_TYPE.to_owned()
                    }
                }),
            description: s("description").unwrap_or_default(),
            background: args
                .get("run_in_background")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            resume,
        })
    }
}

/// The report's `[summary]` section (a completed foreground run).
pub fn summary(output: &str) -> Option<&str> {
    let (_, rest) = output.split_once("[summary]\n")?;
    Some(rest.trim())
}

/// The task id of a subagent started in the background.
pub fn background_task(output: &str) -> Option<&str> {
    let (_, rest) = output.split_once("in the background as task ")?;
    let id = rest.split(|c: char| c.is_whitespace()).next()?;
    Some(id.trim_end_matches('.'))
}

/// A field of the report's header (`actual_subagent_type: explore`).
fn header_field<'a>(output: &'a str, key: &str) -> Option<&'a str> {
    output
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
}

/// What a finished run says beyond its header: the summary, or why it failed or stopped
/// (without the resume hint meant for the model).
fn report_body(output: &str) -> String {
    if let Some(summary) = summary(output) {
        return summary.to_owned();
    }
    let body = match output.split_once("\n\n") {
        Some((_, body)) if header_field(output, "agent_id").is_some() => body,
        _ => output,
    };
    body.lines()
        .filter(|l| !l.starts_with("resume_hint:"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

pub fn lines(card: &ToolCard, call: &AgentCall, ctx: &RenderCtx<'_>) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let background = background_task(&card.output).filter(|_| card.status == ToolStatus::Done);
    let (mark, mark_style, word) = match (card.status, background) {
        (ToolStatus::Done, Some(_)) => ("◐ ", t.accent, "in the background".to_owned()),
        (ToolStatus::Running, _) => ("◐ ", t.accent, "running".to_owned()),
        (ToolStatus::Done, None) => ("✓ ", t.success, "done".to_owned()),
        (ToolStatus::Failed, _) => ("✗ ", t.error, "failed".to_owned()),
        (ToolStatus::Interrupted, _) => ("◌ ", t.warning, "interrupted".to_owned()),
    };
    let tail = if card.resumed || background.is_some() {
        format!(" · {word}")
    } else {
        let elapsed = card
            .finished
            .unwrap_or(ctx.now)
            .saturating_duration_since(card.started);
        format!(" · {word} {}", crate::cells::format_elapsed(elapsed))
    };
    let kind = header_field(&card.output, "actual_subagent_type")
        .unwrap_or(&call.subagent_type)
        .to_owned();
    let what = match &call.resume {
        Some(id) if call.description.is_empty() => format!("resume {id}"),
        Some(id) => format!("{} (resumes {id})", call.description),
        None => call.description.clone(),
    };
    let room = ctx
        .width
        .saturating_sub(2 + 6 + kind.chars().count() + 3 + tail.chars().count())
        .max(8);
    let mut spans = vec![
        Span::styled(mark, mark_style),
        Span::styled("Agent ", t.text_strong),
        Span::styled(kind, t.accent),
    ];
    if !what.is_empty() {
        let first = what.lines().next().unwrap_or_default();
        spans.push(Span::styled(
            format!(" · {}", truncate(first, room)),
            t.text,
        ));
    }
    spans.push(Span::styled(tail, t.text_dim));
    let mut out = wrap_line(&Line::from(spans), ctx.width, &[Span::raw("  ")]);
    let gutter = Span::styled("  │ ", t.border);
    let body: Vec<(String, ratatui::style::Style)> = match (card.status, background) {
        (ToolStatus::Done, Some(id)) => vec![(
            format!("running in the background as task {id} (/tasks to follow it)"),
            t.text_dim,
        )],
        (ToolStatus::Running, _) if call.background => {
            vec![("starting in the background…".to_owned(), t.text_dim)]
        }
        (ToolStatus::Running, _) => Vec::new(),
        (ToolStatus::Done, None) => preview(&report_body(&card.output), ctx.expanded, 4)
            .into_iter()
            .map(|l| (l, t.text_dim))
            .collect(),
        (ToolStatus::Failed | ToolStatus::Interrupted, _) => {
            preview(&report_body(&card.output), ctx.expanded, 4)
                .into_iter()
                .map(|l| (l, t.error))
                .collect()
        }
    };
    for (text, style) in body {
        let line = Line::from(vec![gutter.clone(), Span::styled(text, style)]);
        out.extend(wrap_line(&line, ctx.width, std::slice::from_ref(&gutter)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_calls_and_reports() {
        let call = AgentCall::parse(
            "Agent",
            &json!({"description": "map the repo", "prompt": "…", "run_in_background": true}),
        )
        .unwrap();
        assert_eq!(call.subagent_type, "coder");
        assert!(call.background);
        assert!(AgentCall::parse("Bash", &json!({})).is_none());
        let done = "agent_id: agent-0\nactual_subagent_type: explore\nstatus: completed\nusage: input 1, output 2\n\n[summary]\nFound 3 crates.\nDone.";
        assert_eq!(summary(done), Some("Found 3 crates.\nDone."));
        assert_eq!(header_field(done, "actual_subagent_type"), Some("explore"));
        let failed = "agent_id: agent-1\nactual_subagent_type: coder\nstatus: failed\nusage: input 1, output 2\n\nsubagent error: boom\nresume_hint: …";
        assert_eq!(report_body(failed), "subagent error: boom");
        let bg = "Started the subagent in the background as task agent-1a2b3c4d. Its report arrives later.";
        assert_eq!(background_task(bg), Some("agent-1a2b3c4d"));
    }
}
