//! AskUserQuestion: put 1-4 multiple-choice questions to the user through the front end.

use std::collections::HashSet;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

pub const MAX_HEADER_CHARS: usize = 12;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub question: String,
    #[serde(default)]
    pub header: String,
    pub options: Vec<QuestionOption>,
    #[serde(default)]
    pub multi_select: bool,
}

/// The user's answer to one question: chosen labels and/or free text ("Other").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub question: String,
    pub selected: Vec<String>,
    pub other: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionOutcome {
    Answered(Vec<Answer>),
    /// The user closed the dialog without answering.
    Dismissed,
}

/// The front end's side: show the questions and wait for the user.
#[async_trait]
pub trait QuestionHost: Send + Sync {
    async fn ask(&self, questions: Vec<Question>, cancel: CancellationToken) -> QuestionOutcome;
}

#[derive(Debug, Deserialize)]
struct Params {
    questions: Vec<Question>,
}

/// §2.4's rules, with messages that say which question broke which rule.
fn validate(questions: &[Question]) -> Result<(), String> {
    if !(1..=4).contains(&questions.len()) {
        return Err(format!(
            "questions must hold 1 to 4 questions, got {}.",
            questions.len()
        ));
    }
    let mut texts = HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        let n = i + 1;
        if q.question.trim().is_empty() {
            return Err(format!("question {n} has an empty question text."));
        }
        if !texts.insert(q.question.trim()) {
            return Err(format!(
                "question {n} repeats an earlier question text; question texts must be unique."
            ));
        }
        if q.header.chars().count() > MAX_HEADER_CHARS {
            return Err(format!(
                "question {n}: header must be at most {MAX_HEADER_CHARS} characters."
            ));
        }
        if !(2..=4).contains(&q.options.len()) {
            return Err(format!(
                "question {n} must have 2 to 4 options, got {}.",
                q.options.len()
            ));
        }
        let mut labels = HashSet::new();
        for opt in &q.options {
            let words = opt.label.split_whitespace().count();
            if !(1..=5).contains(&words) {
                return Err(format!(
                    "question {n}: option label \"{}\" must be 1 to 5 words; put details in its description.",
                    opt.label
                ));
            }
            if !labels.insert(opt.label.trim()) {
                return Err(format!(
                    "question {n}: option labels must be unique (\"{}\" repeats).",
                    opt.label
                ));
            }
        }
    }
    Ok(())
}

#[derive(Debug, Default)]
pub struct AskUserQuestionTool;

#[async_trait]
impl Tool for AskUserQuestionTool {
    fn name(&self) -> &str {
        "AskUserQuestion"
    }

    fn description(&self) -> String {
        "Ask the user 1-4 multiple-choice questions when you need a decision only they can make. Each question has 2-4 \
         options with short labels (1-5 words); the user can always answer in their own words instead."
            .to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 4,
                    "items": {
                        "type": "object",
                        "properties": {
                            "question": {"type": "string", "description": "The question, ending with \"?\"."},
                            "header": {"type": "string", "maxLength": MAX_HEADER_CHARS, "description": "Very short tag."},
                            "options": {
                                "type": "array",
                                "minItems": 2,
                                "maxItems": 4,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string"},
                                        "description": {"type": "string"}
                                    },
                                    "required": ["label"],
                                    "additionalProperties": false
                                }
                            },
                            "multi_select": {"type": "boolean"}
                        },
                        "required": ["question", "options"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["questions"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let p: Params = parse_args(args)?;
        validate(&p.questions).map_err(ToolError::InvalidArgs)?;
        let summary = p
            .questions
            .first()
            .map(|q| q.question.clone())
            .unwrap_or_default();
        Ok(Resolution::Run(Box::new(AskExecution {
            plan: ToolPlan {
                accesses: None,
                approval_rule: "AskUserQuestion".to_owned(),
                subject: RuleSubject::NameOnly,
                display: ToolDisplay {
                    kind: "question".to_owned(),
                    summary: summary.clone(),
                    detail: None,
                    diff: None,
                },
                description: summary,
                stop_batch_after_this: false,
            },
            questions: p.questions,
        })))
    }
}

struct AskExecution {
    plan: ToolPlan,
    questions: Vec<Question>,
}

#[async_trait]
impl Execution for AskExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let Some(host) = ctx.questions.clone() else {
            return ToolResult::error(
                "This client cannot ask the user questions. Continue with your best judgement and state the assumptions you made.",
            );
        };
        match host.ask(self.questions, cancel).await {
            QuestionOutcome::Dismissed => ToolResult::ok(
                "The user dismissed the questions without answering. Do not ask again right away; continue with your best judgement or ask in plain text.",
            ),
            QuestionOutcome::Answered(answers) => {
                let lines: Vec<String> = answers
                    .iter()
                    .map(|a| {
                        let mut picked = a.selected.clone();
                        if let Some(other) = &a.other {
                            picked.push(format!("Other: {other}"));
                        }
                        format!("Q: {}\nA: {}", a.question, picked.join("; "))
                    })
                    .collect();
                ToolResult::ok(format!("The user answered:\n{}", lines.join("\n")))
            }
        }
    }
}
