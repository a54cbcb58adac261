//! `/btw <question>` (surface.md §8.4) and `/effort`: a side question goes to the engine
//! (`Op::Btw`), which answers from a tool-less copy of the conversation; question and answer
//! live in their own pane above the prompt — never in the transcript — until Esc closes it.
//! `/effort` without an argument opens a picker of the levels the current model offers.

use ratatui::text::{Line, Span};

use crate::app::App;
use crate::cells::NoticeLevel;
use crate::dialogs::{Picker, PickerItem, PickerKind};
use crate::markdown::render_markdown;
use crate::theme::Theme;
use crate::wrap::{truncate, wrap_line};

/// The answer rows the pane shows at most; the rest is summarised in one line.
const MAX_ANSWER_ROWS: usize = 12;

/// Every effort level a model may accept (surface.md §5.3).
const EFFORTS: [&str; 7] = ["off", "on", "low", "medium", "high", "xhigh", "max"];

/// The side question on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtwPane {
    pub question: String,
    /// `None` while the model is still answering; `Err` says why there is no answer.
    pub answer: Option<Result<String, String>>,
}

impl BtwPane {
    pub(crate) fn lines(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let t = theme;
        let inner = width.saturating_sub(2).max(1);
        let mut out = vec![Line::from(vec![
            Span::styled("╭ btw ", t.accent),
            Span::styled(
                truncate(&self.question, width.saturating_sub(6)),
                t.text_strong,
            ),
        ])];
        let body: Vec<Line<'static>> = match &self.answer {
            None => vec![Line::styled("thinking…", t.text_dim)],
            Some(Ok(answer)) => render_markdown(answer, inner, t),
            Some(Err(error)) => wrap_line(&Line::styled(error.clone(), t.error), inner, &[]),
        };
        let hidden = body.len().saturating_sub(MAX_ANSWER_ROWS);
        for line in body.into_iter().take(MAX_ANSWER_ROWS) {
            let mut spans = vec![Span::styled("│ ", t.accent)];
            spans.extend(line.spans);
            out.push(Line::from(spans));
        }
        if hidden > 0 {
            out.push(Line::styled(
                format!("│ … {hidden} more lines (/copy does not include side answers)"),
                t.text_dim,
            ));
        }
        out.push(Line::from(vec![
            Span::styled("╰ ", t.accent),
            Span::styled("esc closes · not part of the conversation", t.text_dim),
        ]));
        out
    }
}

impl App {
    /// `/btw <question>`.
    pub(crate) fn ask_btw(&mut self, question: &str) {
        let question = question.trim();
        if question.is_empty() {
            self.notice(
                NoticeLevel::Warning,
                "Usage: /btw <question> — asks the model on the side, without tools and without adding to the conversation.",
            );
            return;
        }
        self.btw = Some(BtwPane {
            question: question.to_owned(),
            answer: None,
        });
        self.op(kimi_protocol::ops::Op::Btw {
            question: question.to_owned(),
        });
    }

    /// `Event::BtwAnswered`: fill the pane (opening it again if it was closed meanwhile).
    pub(crate) fn btw_answered(&mut self, question: String, answer: String, error: Option<String>) {
        let answer = match error {
            Some(error) => Err(error),
            None => Ok(answer),
        };
        self.btw = Some(BtwPane {
            question,
            answer: Some(answer),
        });
    }

    /// `/effort` without an argument: the levels the model in use offers.
    pub(crate) fn open_effort_picker(&mut self) {
        let offered: Vec<String> = self
            .info
            .models
            .iter()
            .find(|m| m.alias == self.info.model)
            .map(|m| m.efforts.clone())
            .filter(|e| !e.is_empty())
            .map(|mut e| {
                // Turning thinking off is always possible.
                if !e.iter().any(|x| x == "off") {
                    e.insert(0, "off".to_owned());
                }
                e
            })
            .unwrap_or_else(|| EFFORTS.iter().map(|e| (*e).to_owned()).collect());
        let current = self.info.effort.clone().unwrap_or_default();
        let items = offered
            .iter()
            .map(|e| PickerItem {
                label: e.clone(),
                detail: if *e == current {
                    "current".to_owned()
                } else {
                    String::new()
                },
                value: e.clone(),
                this_dir: true,
            })
            .collect();
        let mut picker = Picker::new(PickerKind::Effort, "Thinking effort", items);
        if let Some(i) = offered.iter().position(|e| *e == current) {
            picker.selected = i;
        }
        self.open_picker(picker);
    }

    /// `Event::ModelChanged`: the footer and `/status` follow the engine.
    pub(crate) fn model_changed(
        &mut self,
        alias: String,
        model: String,
        effort: Option<String>,
        context_window: u64,
    ) {
        let effort_text = effort
            .as_deref()
            .map(|e| format!(", thinking {e}"))
            .unwrap_or_default();
        let id = if model == alias {
            String::new()
        } else {
            format!(" ({model})")
        };
        self.notice(
            NoticeLevel::Info,
            format!("Model: {alias}{id}{effort_text}; the next request uses it."),
        );
        self.info.model = alias;
        self.info.effort = effort;
        if context_window > 0 {
            self.info.context_window = context_window;
        }
    }
}
