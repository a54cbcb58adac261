//! Writers for print mode. `text`: assistant text on stdout as bullet blocks (`• `, wrapped
//! lines indented two spaces), thinking on stderr the same way, one stderr line per retry, a
//! resume hint on stderr.
//! `stream-json`: one JSON object per stdout line — assistant messages (with `tool_calls`
//! before their results), tool results, and `meta` lines for retries, a failed turn and the
//! resume hint.
//! Both print an answer only once its response arrived whole: the text of an attempt that
//! broke off (retried, or the turn failed) is discarded, as the engine discards it.

use std::io::{self, Write};

use kimi_protocol::ContentPart;
use kimi_protocol::ops::{Event, TurnEndReason};
use serde_json::{Map, Value, json};

const BULLET: &str = "• ";
const INDENT: &str = "  ";

/// What print mode does with each engine event.
pub trait TurnWriter {
    fn event(&mut self, event: &Event) -> io::Result<()>;
    /// Forget the partial assistant output of an attempt that is being retried.
    fn discard_assistant(&mut self);
    /// End of the run: flush whatever is buffered.
    fn finish(&mut self) -> io::Result<()>;
    fn resume_hint(&mut self, session_id: &str, command: &str) -> io::Result<()>;
}

/// `cd <dir> && kimi-rs -r <id>` with the directory shell-quoted when needed.
pub fn resume_hint_command(session_id: &str, work_dir: Option<&str>) -> String {
    match work_dir {
        Some(dir) => format!("cd {} && kimi-rs -r {session_id}", quote_shell_arg(dir)),
        None => format!("kimi-rs -r {session_id}"),
    }
}

fn quote_shell_arg(arg: &str) -> String {
    let safe = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if safe {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// A bullet block that wraps at the terminal width (when known) and indents continuation lines.
struct BlockWriter {
    started: bool,
    at_line_start: bool,
    width: usize,
    wrap: Option<usize>,
}

impl BlockWriter {
    fn new(columns: Option<usize>) -> Self {
        BlockWriter {
            started: false,
            at_line_start: false,
            width: 0,
            wrap: columns.filter(|c| *c > INDENT.len() + 1),
        }
    }

    fn write(&mut self, out: &mut dyn Write, chunk: &str) -> io::Result<()> {
        if chunk.is_empty() {
            return Ok(());
        }
        let mut rendered = String::with_capacity(chunk.len() + 8);
        if !self.started {
            self.started = true;
            self.at_line_start = false;
            self.width = BULLET.chars().count();
            rendered.push_str(BULLET);
        }
        for c in chunk.chars() {
            if self.at_line_start && c != '\n' {
                rendered.push_str(INDENT);
                self.at_line_start = false;
                self.width = INDENT.len();
            }
            let w = if c == '\t' { 4 } else { 1 };
            if let Some(wrap) = self.wrap
                && c != '\n'
                && self.width + w > wrap
            {
                rendered.push('\n');
                rendered.push_str(INDENT);
                self.width = INDENT.len();
            }
            rendered.push(c);
            if c == '\n' {
                self.at_line_start = true;
                self.width = 0;
            } else {
                self.width += w;
            }
        }
        out.write_all(rendered.as_bytes())
    }

    fn finish(&mut self, out: &mut dyn Write) -> io::Result<()> {
        if !self.started {
            return Ok(());
        }
        out.write_all(if self.at_line_start { b"\n" } else { b"\n\n" })?;
        self.started = false;
        self.at_line_start = false;
        self.width = 0;
        Ok(())
    }
}

pub struct TextWriter<O: Write, E: Write> {
    stdout: O,
    stderr: E,
    assistant: BlockWriter,
    thinking: BlockWriter,
    /// The answer of the attempt under way, printed when its response is complete.
    answer: String,
    /// Running MCP sign-in calls (`mcp__<server>__authenticate`): their progress is the URL the
    /// user must open, so it is shown although other tool traffic is not.
    sign_ins: Vec<String>,
}

impl<O: Write, E: Write> TextWriter<O, E> {
    pub fn new(
        stdout: O,
        stderr: E,
        stdout_columns: Option<usize>,
        stderr_columns: Option<usize>,
    ) -> Self {
        TextWriter {
            stdout,
            stderr,
            assistant: BlockWriter::new(stdout_columns),
            thinking: BlockWriter::new(stderr_columns),
            answer: String::new(),
            sign_ins: Vec::new(),
        }
    }

    pub fn into_inner(self) -> (O, E) {
        (self.stdout, self.stderr)
    }

    fn write_answer(&mut self) -> io::Result<()> {
        let answer = std::mem::take(&mut self.answer);
        if answer.is_empty() {
            return Ok(());
        }
        self.thinking.finish(&mut self.stderr)?;
        self.assistant.write(&mut self.stdout, &answer)
    }
}

impl<O: Write, E: Write> TurnWriter for TextWriter<O, E> {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        match event {
            Event::AssistantDelta { text } => {
                self.answer.push_str(text);
                Ok(())
            }
            // The response arrived whole: its text is the answer.
            Event::AssistantMessage { .. } => self.write_answer(),
            Event::ThinkingDelta { text } => self.thinking.write(&mut self.stderr, text),
            Event::TurnEnded { reason, .. } => {
                // A failed turn's unfinished attempt was discarded; an interrupted one's text
                // is kept (the journal keeps it too).
                if *reason == TurnEndReason::Failed {
                    self.answer.clear();
                }
                self.write_answer()?;
                self.thinking.finish(&mut self.stderr)?;
                self.assistant.finish(&mut self.stdout)
            }
            Event::StepCompleted { .. } => {
                self.write_answer()?;
                self.thinking.finish(&mut self.stderr)?;
                self.assistant.finish(&mut self.stdout)
            }
            Event::Warning { message } => writeln!(self.stderr, "warning: {message}"),
            Event::Error { message } => writeln!(self.stderr, "error: {message}"),
            // Flow progress is a notice too: stderr.
            Event::FlowUpdated { update } => writeln!(self.stderr, "{}", update.describe()),
            // Goal progress is a notice, like the resume hint: stderr.
            Event::GoalUpdated {
                goal,
                change: Some(change),
            } => {
                let line = goal_change_line(goal.as_ref(), change);
                writeln!(self.stderr, "{line}")
            }
            // A retry is a wait the user should see (one stderr line), never a silent pause.
            Event::StepRetrying {
                failed_attempt,
                next_attempt,
                max_attempts,
                delay_ms,
                error_message,
                ..
            } => {
                self.answer.clear();
                self.thinking.finish(&mut self.stderr)?;
                self.assistant.finish(&mut self.stdout)?;
                self.stdout.flush()?;
                writeln!(
                    self.stderr,
                    "retrying: attempt {failed_attempt}/{max_attempts} failed: {error_message} — attempt {next_attempt}/{max_attempts} in {:.1} s",
                    *delay_ms as f64 / 1000.0
                )
            }
            Event::ToolStarted { call }
                if call.name.starts_with("mcp__") && call.name.ends_with("__authenticate") =>
            {
                self.sign_ins.push(call.id.clone());
                Ok(())
            }
            Event::ToolProgress { tool_call_id, text } if self.sign_ins.contains(tool_call_id) => {
                write!(self.stderr, "{text}")?;
                self.stderr.flush()
            }
            // Tool traffic stays off the human transcript, as in the reference.
            Event::TurnStarted { .. }
            | Event::StepStarted { .. }
            | Event::ToolStarted { .. }
            | Event::ToolDiff { .. }
            | Event::ToolProgress { .. }
            | Event::ToolResult { .. }
            | Event::ApprovalRequested(_)
            | Event::QuestionRequested { .. }
            | Event::CompactionStarted { .. }
            | Event::CompactionCompleted { .. }
            | Event::CompactionCancelled { .. }
            | Event::PromptQueued { .. }
            | Event::PromptSteered { .. }
            | Event::SteerAccepted { .. }
            | Event::AnswerRecorded { .. }
            | Event::PromptRecorded { .. }
            | Event::ContextUndone { .. }
            | Event::Rewound { .. }
            | Event::Usage { .. }
            | Event::Status { .. }
            | Event::SwarmMode { .. }
            | Event::TodosUpdated { .. }
            | Event::GoalUpdated { change: None, .. }
            // Answers to host ops, which print mode never sends.
            | Event::SessionList { .. }
            | Event::TaskList { .. }
            | Event::TaskStopped { .. }
            | Event::TaskOutput { .. }
            | Event::ShellOutput { .. }
            | Event::ShellStarted { .. }
            | Event::ShellBackgrounded { .. }
            | Event::McpStatus { .. }
            | Event::McpSignIn { .. }
            | Event::McpServerDone { .. }
            | Event::GoalQueue { .. }
        | Event::SessionTitle { .. }
        | Event::SessionForked { .. }
        // Answers to ops print mode never sends (`/model`, `/effort`, `/btw`).
        | Event::ModelChanged { .. }
        | Event::BtwAnswered { .. } => Ok(()),
        }
    }

    fn discard_assistant(&mut self) {
        self.answer.clear();
    }

    fn finish(&mut self) -> io::Result<()> {
        self.write_answer()?;
        self.thinking.finish(&mut self.stderr)?;
        self.assistant.finish(&mut self.stdout)?;
        self.stdout.flush()?;
        self.stderr.flush()
    }

    fn resume_hint(&mut self, _session_id: &str, command: &str) -> io::Result<()> {
        writeln!(self.stderr, "To resume this session: {command}")
    }
}

pub struct JsonWriter<O: Write> {
    stdout: O,
    text: String,
    tool_calls: Vec<(String, String, String)>,
}

impl<O: Write> JsonWriter<O> {
    pub fn new(stdout: O) -> Self {
        JsonWriter {
            stdout,
            text: String::new(),
            tool_calls: Vec::new(),
        }
    }

    pub fn into_inner(self) -> O {
        self.stdout
    }

    fn line(&mut self, value: &Value) -> io::Result<()> {
        let mut text = value.to_string();
        text.push('\n');
        self.stdout.write_all(text.as_bytes())
    }

    fn flush_assistant(&mut self) -> io::Result<()> {
        if self.text.is_empty() && self.tool_calls.is_empty() {
            return Ok(());
        }
        let mut msg = Map::new();
        msg.insert("role".into(), json!("assistant"));
        if !self.text.is_empty() {
            msg.insert("content".into(), json!(self.text));
        }
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(|(id, name, args)| {
                    json!({"type": "function", "id": id, "function": {"name": name, "arguments": args}})
                })
                .collect();
            msg.insert("tool_calls".into(), Value::Array(calls));
        }
        self.line(&Value::Object(msg))?;
        self.discard_assistant();
        Ok(())
    }
}

/// The stderr line of a goal change: `goal: paused — Paused after interruption (2 turns, …)`.
fn goal_change_line(
    goal: Option<&kimi_protocol::host::GoalSnapshot>,
    change: &kimi_protocol::host::GoalChange,
) -> String {
    use kimi_protocol::host::GoalChange;
    let (status, reason) = match change {
        GoalChange::Lifecycle { status, reason, .. } => (status.label(), reason.clone()),
        GoalChange::Completion { reason, .. } => ("complete", reason.clone()),
    };
    let mut line = format!("goal: {status}");
    if let Some(reason) = reason {
        line.push_str(" — ");
        line.push_str(&reason);
    }
    if let Some(goal) = goal {
        line.push_str(&format!(
            " (turns: {}, tokens: {})",
            goal.turns_used, goal.tokens_used
        ));
    }
    line
}

/// A single text part is written as its string; anything else as the JSON of its parts.
fn tool_output_text(parts: &[ContentPart]) -> String {
    match parts {
        [ContentPart::Text { text }] => text.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

impl<O: Write> TurnWriter for JsonWriter<O> {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        match event {
            Event::AssistantDelta { text } => {
                self.text.push_str(text);
                Ok(())
            }
            Event::ToolStarted { call } => {
                let args = call.arguments.clone().unwrap_or_default();
                match self.tool_calls.iter_mut().find(|(id, ..)| *id == call.id) {
                    Some(existing) => {
                        existing.1.clone_from(&call.name);
                        existing.2 = args;
                    }
                    None => self
                        .tool_calls
                        .push((call.id.clone(), call.name.clone(), args)),
                }
                Ok(())
            }
            Event::ToolResult {
                tool_call_id,
                output,
                ..
            } => {
                self.flush_assistant()?;
                let line = json!({"role": "tool", "tool_call_id": tool_call_id, "content": tool_output_text(output)});
                self.line(&line)
            }
            Event::StepRetrying {
                failed_attempt,
                next_attempt,
                max_attempts,
                delay_ms,
                error_name,
                error_message,
                status_code,
                ..
            } => {
                self.discard_assistant();
                let mut line = json!({
                    "role": "meta",
                    "type": "turn.step.retrying",
                    "failed_attempt": failed_attempt,
                    "next_attempt": next_attempt,
                    "max_attempts": max_attempts,
                    "delay_ms": delay_ms,
                    "error_name": error_name,
                    "error_message": error_message,
                });
                if let (Some(code), Some(obj)) = (status_code, line.as_object_mut()) {
                    obj.insert("status_code".into(), json!(code));
                }
                self.line(&line)
            }
            Event::StepCompleted { .. } => self.flush_assistant(),
            Event::FlowUpdated { update } => {
                self.flush_assistant()?;
                self.line(&json!({"role": "meta", "type": "flow.updated", "update": update}))
            }
            Event::GoalUpdated { goal, change } => {
                self.flush_assistant()?;
                let mut line = json!({"role": "meta", "type": "goal.updated", "goal": goal});
                if let (Some(change), Some(obj)) = (change, line.as_object_mut()) {
                    obj.insert("change".into(), json!(change));
                }
                self.line(&line)
            }
            Event::TurnEnded { reason, error, .. } => {
                if *reason == TurnEndReason::Failed {
                    // What is left is the unfinished attempt the engine discarded.
                    self.discard_assistant();
                } else {
                    self.flush_assistant()?;
                }
                match (reason, error) {
                    (TurnEndReason::Failed | TurnEndReason::Blocked, Some(error)) => {
                        let reason = if *reason == TurnEndReason::Failed {
                            "failed"
                        } else {
                            "blocked"
                        };
                        self.line(&json!({
                            "role": "meta",
                            "type": "turn.failed",
                            "reason": reason,
                            "error": error,
                        }))
                    }
                    _ => Ok(()),
                }
            }
            Event::TurnStarted { .. }
            | Event::StepStarted { .. }
            | Event::ThinkingDelta { .. }
            | Event::ToolDiff { .. }
            | Event::AssistantMessage { .. }
            | Event::ToolProgress { .. }
            | Event::ApprovalRequested(_)
            | Event::QuestionRequested { .. }
            | Event::CompactionStarted { .. }
            | Event::CompactionCompleted { .. }
            | Event::CompactionCancelled { .. }
            | Event::PromptQueued { .. }
            | Event::PromptSteered { .. }
            | Event::SteerAccepted { .. }
            | Event::AnswerRecorded { .. }
            | Event::PromptRecorded { .. }
            | Event::ContextUndone { .. }
            | Event::Rewound { .. }
            | Event::Usage { .. }
            | Event::Status { .. }
            | Event::SwarmMode { .. }
            | Event::TodosUpdated { .. }
            | Event::Warning { .. }
            | Event::Error { .. }
            // Answers to host ops, which print mode never sends.
            | Event::SessionList { .. }
            | Event::TaskList { .. }
            | Event::TaskStopped { .. }
            | Event::TaskOutput { .. }
            | Event::ShellOutput { .. }
            | Event::ShellStarted { .. }
            | Event::ShellBackgrounded { .. }
            | Event::McpStatus { .. }
            | Event::McpSignIn { .. }
            | Event::McpServerDone { .. }
            | Event::GoalQueue { .. }
        | Event::SessionTitle { .. }
        | Event::SessionForked { .. }
        // Answers to ops print mode never sends (`/model`, `/effort`, `/btw`).
        | Event::ModelChanged { .. }
        | Event::BtwAnswered { .. } => Ok(()),
        }
    }

    fn discard_assistant(&mut self) {
        self.text.clear();
        self.tool_calls.clear();
    }

    fn finish(&mut self) -> io::Result<()> {
        self.flush_assistant()?;
        self.stdout.flush()
    }

    fn resume_hint(&mut self, session_id: &str, command: &str) -> io::Result<()> {
        let line = json!({
            "role": "meta",
            "type": "session.resume_hint",
            "session_id": session_id,
            "command": command,
            "content": format!("To resume this session: {command}"),
        });
        self.line(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::ToolCall;
    use pretty_assertions::assert_eq;

    fn ended() -> Event {
        Event::TurnEnded {
            turn_id: 0,
            reason: TurnEndReason::Completed,
            error: None,
        }
    }

    #[test]
    fn text_blocks_wrap_and_indent() {
        let mut w = TextWriter::new(Vec::new(), Vec::new(), Some(12), None);
        w.event(&Event::ThinkingDelta { text: "hmm".into() })
            .unwrap();
        w.event(&Event::AssistantDelta {
            text: "hello world again\nnext".into(),
        })
        .unwrap();
        w.event(&ended()).unwrap();
        w.resume_hint("s1", &resume_hint_command("s1", Some("/my dir")))
            .unwrap();
        let (out, err) = w.into_inner();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "• hello worl\n  d again\n  next\n\n"
        );
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "• hmm\n\nTo resume this session: cd '/my dir' && kimi-rs -r s1\n"
        );
    }

    #[test]
    fn json_lines_follow_the_reference_shapes() {
        let mut w = JsonWriter::new(Vec::new());
        w.event(&Event::AssistantDelta {
            text: "let me look".into(),
        })
        .unwrap();
        w.event(&Event::ToolStarted {
            call: ToolCall::new("c1", "Read", Some(r#"{"path":"a"}"#.into())),
        })
        .unwrap();
        w.event(&Event::ToolResult {
            tool_call_id: "c1".into(),
            output: vec![ContentPart::text("data")],
            is_error: false,
        })
        .unwrap();
        w.event(&Event::AssistantDelta {
            text: "partial".into(),
        })
        .unwrap();
        w.event(&Event::StepRetrying {
            turn_id: 0,
            failed_attempt: 1,
            next_attempt: 2,
            max_attempts: 10,
            delay_ms: 500,
            error_name: "RateLimit".into(),
            error_message: "slow down".into(),
            status_code: Some(429),
        })
        .unwrap();
        w.event(&Event::AssistantDelta {
            text: "done".into(),
        })
        .unwrap();
        w.event(&ended()).unwrap();
        w.resume_hint("s1", "kimi-rs -r s1").unwrap();
        let lines: Vec<Value> = String::from_utf8(w.into_inner())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines,
            vec![
                json!({"role": "assistant", "content": "let me look", "tool_calls": [{"type": "function", "id": "c1", "function": {"name": "Read", "arguments": "{\"path\":\"a\"}"}}]}),
                json!({"role": "tool", "tool_call_id": "c1", "content": "data"}),
                json!({"role": "meta", "type": "turn.step.retrying", "failed_attempt": 1, "next_attempt": 2, "max_attempts": 10, "delay_ms": 500, "error_name": "RateLimit", "error_message": "slow down", "status_code": 429}),
                json!({"role": "assistant", "content": "done"}),
                json!({"role": "meta", "type": "session.resume_hint", "session_id": "s1", "command": "kimi-rs -r s1", "content": "To resume this session: kimi-rs -r s1"}),
            ]
        );
    }
}
