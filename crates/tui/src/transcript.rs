//! The transcript's way in and out: a stored conversation shown again as cells (only what
//! the user typed, answers, thinking and tool cards), and the transcript written back out as
//! Markdown, the user's prompts and the last answer.

use kimi_protocol::message::{ContentPart, Message, Role};
use kimi_protocol::origin::{KnownOrigin, Origin};

use crate::app::App;
use crate::cells::{CellKind, NoticeLevel};
use crate::tool_card::{ToolCard, ToolStatus};

impl App {
    pub(crate) fn load_transcript(&mut self, messages: &[Message]) {
        for m in messages {
            match m.role {
                Role::User => {
                    // Only what the user typed; injections and reminders stay hidden.
                    let typed = match m.origin.as_ref().and_then(Origin::known) {
                        None | Some(KnownOrigin::User { .. }) => true,
                        Some(
                            KnownOrigin::SkillActivation { .. }
                            | KnownOrigin::PluginCommand { .. }
                            | KnownOrigin::Injection { .. }
                            | KnownOrigin::ShellCommand { .. }
                            | KnownOrigin::CompactionSummary
                            | KnownOrigin::SystemTrigger { .. }
                            | KnownOrigin::Task { .. }
                            | KnownOrigin::CronJob { .. }
                            | KnownOrigin::CronMissed { .. }
                            | KnownOrigin::HookResult { .. }
                            | KnownOrigin::Retry { .. },
                        ) => false,
                    };
                    // A flow's node prompt: shown as the step it was, not as typed text.
                    if let Some(KnownOrigin::SystemTrigger { name }) =
                        m.origin.as_ref().and_then(Origin::known)
                        && name == kimi_protocol::flow::NODE_ORIGIN
                    {
                        let first = m.text().lines().next().unwrap_or_default().to_owned();
                        self.notice(NoticeLevel::Info, format!("flow step: {first}"));
                        continue;
                    }
                    let mut text = m.text();
                    if let Some(KnownOrigin::User {
                        skill_activations: Some(loaded),
                        ..
                    }) = m.origin.as_ref().and_then(Origin::known)
                    {
                        // Inline skill mentions: one part per loaded skill, then what the
                        // user typed.
                        text = m
                            .content
                            .iter()
                            .skip(loaded.len())
                            .filter_map(ContentPart::as_text)
                            .collect();
                    }
                    if typed && !text.trim().is_empty() {
                        self.push(CellKind::User { text, steer: None });
                    }
                }
                Role::Assistant => {
                    for part in &m.content {
                        match part {
                            ContentPart::Think { think, .. } if !think.trim().is_empty() => {
                                self.push(CellKind::Thinking {
                                    text: think.clone(),
                                    streaming: false,
                                });
                            }
                            ContentPart::Text { text } if !text.trim().is_empty() => {
                                self.push(CellKind::Assistant {
                                    text: text.clone(),
                                    streaming: false,
                                });
                            }
                            ContentPart::Think { .. }
                            | ContentPart::Text { .. }
                            | ContentPart::Image(_)
                            | ContentPart::Audio(_)
                            | ContentPart::Video(_) => {}
                        }
                    }
                    for call in &m.tool_calls {
                        let mut card = ToolCard::new(
                            call.id.clone(),
                            call.name.clone(),
                            call.arguments.as_deref(),
                            self.now,
                        );
                        card.status = ToolStatus::Interrupted;
                        card.finished = Some(self.now);
                        card.resumed = true;
                        self.push(CellKind::Tool(Box::new(card)));
                    }
                }
                Role::Tool => {
                    if let Some(id) = &m.tool_call_id {
                        let output = parts_text(&m.content);
                        let now = self.now;
                        if let Some(card) = self.card_mut(id) {
                            card.finish(output, m.is_error == Some(true), now);
                        }
                    }
                }
                Role::System => {}
            }
        }
    }

    /// The user prompts of the transcript, newest first (the undo selector's rows).
    pub(crate) fn user_prompts(&self) -> Vec<String> {
        self.cells
            .iter()
            .rev()
            .filter_map(|c| c.user_prompt().map(str::to_owned))
            .collect()
    }

    /// The transcript as Markdown, for `/export-md`.
    pub fn transcript_markdown(&self) -> String {
        let mut out = String::new();
        for c in &self.cells {
            match &c.kind {
                CellKind::User { text, .. } => out.push_str(&format!("## User\n\n{text}\n\n")),
                CellKind::Assistant { text, .. } => {
                    out.push_str(&format!("## Assistant\n\n{text}\n\n"));
                }
                CellKind::Thinking { text, .. } => {
                    let quoted: Vec<String> = text.lines().map(|l| format!("> {l}")).collect();
                    out.push_str(&format!("{}\n\n", quoted.join("\n")));
                }
                CellKind::Tool(card) => out.push_str(&format!(
                    "**Tool** `{}` {}\n\n```\n{}\n```\n\n",
                    card.name,
                    card.key_arg,
                    card.output.trim_end()
                )),
                CellKind::Notice { text, .. } => out.push_str(&format!("_{text}_\n\n")),
                CellKind::Compacting => {}
                CellKind::Shell {
                    command, output, ..
                } => {
                    out.push_str(&format!("```\n$ {command}\n{}\n```\n\n", output.trim_end()));
                }
                CellKind::Mcp(status) => {
                    let text = crate::extensions::mcp_text(status);
                    out.push_str(&format!("```\n{text}\n```\n\n"));
                }
            }
        }
        out
    }

    pub(crate) fn last_answer(&self) -> Option<String> {
        self.cells
            .iter()
            .rev()
            .find_map(|c| c.answer().map(str::to_owned))
    }
}

pub(crate) fn parts_text(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .map(|p| match p {
            ContentPart::Text { text } => text.clone(),
            ContentPart::Think { .. } => String::new(),
            ContentPart::Image(_) => "[image]".to_owned(),
            ContentPart::Audio(_) => "[audio]".to_owned(),
            ContentPart::Video(_) => "[video]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
