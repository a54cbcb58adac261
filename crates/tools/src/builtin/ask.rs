//! AskUserQuestion: put 1-4 multiple-choice questions to the user through the front end, and
//! read the front end's answer (see [`parse_answers`] for its JSON shape).

use std::any::Any;
use std::collections::HashSet;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::context::{ProgressSink, ToolContext};
use crate::error::ToolError;
use crate::result::ToolResult;
use crate::tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan, parse_args};

pub const MAX_HEADER_CHARS: usize = 12;

pub use kimi_protocol::question::{Answers, Question, QuestionAnswer, QuestionOption};

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
    /// The turn was cancelled while the questions were waiting.
    Interrupted,
    /// No front end is there to show the questions.
    Unavailable,
}

/// The front end's side: show the questions and wait for the user. `Any` lets the engine find
/// its own host behind the `Arc<dyn QuestionHost>` to route answers to it.
#[async_trait]
pub trait QuestionHost: Any + Send + Sync {
    async fn ask(&self, questions: Vec<Question>, cancel: CancellationToken) -> QuestionOutcome;
}

/// Why an answer payload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AnswerError(pub String);

/// Match a front end's answers (see [`Answers`] for their shapes) to `questions`: keys are the
/// question text or `q<index>` (0-based); option ids are labels or `opt_<index>`; text matching
/// no label is a free-form ("Other") answer. Questions left out (or skipped) are unanswered;
/// when none is answered the outcome is [`QuestionOutcome::Dismissed`].
pub fn parse_answers(
    questions: &[Question],
    answers: &Answers,
) -> Result<QuestionOutcome, AnswerError> {
    let Some(map) = answers.given() else {
        return Ok(QuestionOutcome::Dismissed);
    };
    let mut answered = Vec::new();
    for (key, raw) in map {
        let found = questions.iter().enumerate().find(|(i, q)| {
            q.question == *key || q.question.trim() == key.trim() || format!("q{i}") == *key
        });
        let Some((_, q)) = found else {
            let known: Vec<&str> = questions.iter().map(|q| q.question.as_str()).collect();
            return Err(AnswerError(format!(
                "no question \"{key}\" was asked; answer one of: {}",
                known.join(" | ")
            )));
        };
        if let Some(answer) = read_answer(q, raw) {
            answered.push(answer);
        }
    }
    if answered.is_empty() {
        return Ok(QuestionOutcome::Dismissed);
    }
    // Keep the order the questions were asked in.
    answered.sort_by_key(|a| questions.iter().position(|q| q.question == a.question));
    Ok(QuestionOutcome::Answered(answered))
}

/// One question's answer; `None` when it was skipped or says nothing.
fn read_answer(q: &Question, raw: &QuestionAnswer) -> Option<Answer> {
    let mut selected = Vec::new();
    let mut other: Vec<String> = Vec::new();
    let mut pick = |id: &str| {
        let by_label = q
            .options
            .iter()
            .find(|o| o.label == id || o.label.trim() == id.trim());
        let by_index = id
            .strip_prefix("opt_")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| q.options.get(n));
        match by_label.or(by_index) {
            Some(opt) => selected.push(opt.label.clone()),
            None if !id.trim().is_empty() => other.push(id.to_owned()),
            None => {}
        }
    };
    match raw {
        QuestionAnswer::Skipped => return None,
        QuestionAnswer::Label(label) => pick(label),
        QuestionAnswer::Labels(labels) => labels.iter().for_each(|l| pick(l)),
        QuestionAnswer::Detailed {
            option_ids,
            other: texts,
            ..
        } => {
            option_ids.iter().for_each(|id| pick(id));
            other.extend(texts.iter().filter(|t| !t.trim().is_empty()).cloned());
        }
    }
    if selected.is_empty() && other.is_empty() {
        return None;
    }
    Some(Answer {
        question: q.question.clone(),
        selected,
        other: (!other.is_empty()).then(|| other.join("; ")),
    })
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

/// The tool result an outcome becomes: its text and whether it is an error. The engine also
/// journals it when the user answers, so a session resumed after a crash before the tool
/// returned still gives the model the answer.
pub fn outcome_text(outcome: &QuestionOutcome) -> (String, bool) {
    match outcome {
        QuestionOutcome::Unavailable => (
            "This client cannot ask the user questions: no front end is attached to show them. Do not call AskUserQuestion again; continue with your best judgement and state the assumptions you made.".to_owned(),
            true,
        ),
        QuestionOutcome::Interrupted => (
            "The user interrupted the session while the questions were waiting, so they were not answered. This was a deliberate user action, not an error. Do not ask again automatically; wait for the user's next instruction.".to_owned(),
            true,
        ),
        QuestionOutcome::Dismissed => (
            "The user dismissed the questions without answering. Do not ask again right away; continue with your best judgement or ask in plain text.".to_owned(),
            false,
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
            (format!("The user answered:\n{}", lines.join("\n")), false)
        }
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
                "This client cannot ask the user questions. (Subagents cannot either: the user does not see them.) Do not call AskUserQuestion again; continue with your best judgement and state the assumptions you made.",
            );
        };
        let (text, is_error) = outcome_text(&host.ask(self.questions, cancel).await);
        if is_error {
            ToolResult::error(text)
        } else {
            ToolResult::ok(text)
        }
    }
}
