//! The `EnterPlanMode` and `ExitPlanMode` tools (surface.md §2.4) and how the user's answer to
//! an `ExitPlanMode` review becomes the call's result ([`settle_review`]).

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use kimi_protocol::ops::ApprovalOption;
use kimi_tools::tool::{RuleSubject, ToolDisplay, parse_args};
use kimi_tools::{
    Execution, ProgressSink, Resolution, Tool, ToolContext, ToolError, ToolPlan, ToolResult,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::PlanMode;
use crate::engine::executor::UserAnswer;

pub const ENTER_PLAN_MODE: &str = "EnterPlanMode";
pub const EXIT_PLAN_MODE: &str = "ExitPlanMode";

/// Labels the review dialog uses itself; an option may not take one of them.
const RESERVED_LABELS: [&str; 4] = ["approve", "reject", "reject and exit", "revise"];
const MAX_OPTIONS: usize = 3;
const MAX_LABEL_CHARS: usize = 80;

const ENTER_DESCRIPTION: &str = "Switch to plan mode before a non-trivial change: explore the code read-only, write a plan into the plan file, then submit it with ExitPlanMode for the user's approval. Use it when the task is large, ambiguous or risky, or when the user asks for a plan first. No parameters.";

const EXIT_DESCRIPTION: &str = "Submit the plan in the plan file for the user's review and leave plan mode once it is approved. Write the complete plan to the plan file first. When the plan offers two or three genuinely different approaches, list them in `options` (label and short description each) so the user can pick one while approving. Only available in plan mode.";

/// `EnterPlanMode`: turns plan mode on with a new plan file and explains the workflow.
pub struct EnterPlanModeTool {
    plan: Arc<PlanMode>,
}

impl EnterPlanModeTool {
    pub fn new(plan: Arc<PlanMode>) -> Self {
        EnterPlanModeTool { plan }
    }
}

fn simple_plan(kind: &str, summary: String, description: &str) -> ToolPlan {
    ToolPlan {
        accesses: Some(Vec::new()),
        approval_rule: String::new(),
        subject: RuleSubject::NameOnly,
        display: ToolDisplay {
            kind: kind.to_owned(),
            summary,
            detail: None,
            diff: None,
        },
        description: description.to_owned(),
        stop_batch_after_this: false,
    }
}

struct EnterExecution {
    plan: Arc<PlanMode>,
    tool_plan: ToolPlan,
}

fn workflow_text(path: &std::path::Path) -> String {
    format!(
        "Plan mode is on. Plan file: {}\n\nWork read-only: explore with Glob, Grep and Read (Bash follows the normal permission rules). The plan file is the only file you may write — create it with Write, refine it with Edit. Settle on one recommended approach; list real alternatives in ExitPlanMode's `options`. Ask with AskUserQuestion if requirements are unclear. When the plan is complete, call ExitPlanMode so the user can review it.",
        path.display()
    )
}

#[async_trait]
impl Execution for EnterExecution {
    fn plan(&self) -> &ToolPlan {
        &self.tool_plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        if self.plan.is_active()
            && let Some(path) = self.plan.plan_file()
        {
            return ToolResult::ok(format!(
                "Plan mode is already on. Plan file: {}",
                path.display()
            ));
        }
        let (path, record) = self.plan.enter(true);
        ToolResult::ok(workflow_text(&path)).with_records(record)
    }
}

#[async_trait]
impl Tool for EnterPlanModeTool {
    fn name(&self) -> &str {
        ENTER_PLAN_MODE
    }

    fn description(&self) -> String {
        ENTER_DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn resolve(&self, _args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let mut tool_plan = simple_plan("plan", "enter plan mode".to_owned(), "Enter plan mode");
        tool_plan.approval_rule = ENTER_PLAN_MODE.to_owned();
        Ok(Resolution::Run(Box::new(EnterExecution {
            plan: self.plan.clone(),
            tool_plan,
        })))
    }
}

#[derive(Debug, Deserialize)]
struct ExitParams {
    #[serde(default)]
    options: Option<Vec<OptionParam>>,
}

#[derive(Debug, Deserialize)]
struct OptionParam {
    label: String,
    #[serde(default)]
    description: String,
}

/// Checks `options`: 1–3 items, labels 1–80 characters, unique and not reserved.
fn validate_options(options: Vec<OptionParam>) -> Result<Vec<ApprovalOption>, String> {
    if options.is_empty() || options.len() > MAX_OPTIONS {
        return Err(format!(
            "`options` must hold 1 to {MAX_OPTIONS} approaches (got {}); omit it when there is only the plan itself.",
            options.len()
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(options.len());
    for option in options {
        let label = option.label.trim().to_owned();
        let chars = label.chars().count();
        if chars == 0 || chars > MAX_LABEL_CHARS {
            return Err(format!(
                "option label {label:?} must be 1 to {MAX_LABEL_CHARS} characters long."
            ));
        }
        let key = label.to_lowercase();
        if RESERVED_LABELS.contains(&key.as_str()) {
            return Err(format!(
                "option label {label:?} is reserved for the review dialog; name the approach instead."
            ));
        }
        if !seen.insert(key) {
            return Err(format!(
                "option label {label:?} is used twice; labels must be unique."
            ));
        }
        out.push(ApprovalOption {
            label,
            description: option.description,
        });
    }
    Ok(out)
}

/// The validated options of an `ExitPlanMode` call's raw arguments (empty when absent or
/// invalid — an invalid call never reaches the review).
pub fn review_options(raw_args: Option<&str>) -> Vec<ApprovalOption> {
    raw_args
        .and_then(|a| serde_json::from_str::<ExitParams>(a).ok())
        .and_then(|p| p.options)
        .and_then(|o| validate_options(o).ok())
        .unwrap_or_default()
}

/// `ExitPlanMode`: reads the plan for review; runs only when no review was asked (auto mode).
pub struct ExitPlanModeTool {
    plan: Arc<PlanMode>,
}

impl ExitPlanModeTool {
    pub fn new(plan: Arc<PlanMode>) -> Self {
        ExitPlanModeTool { plan }
    }
}

struct ExitExecution {
    plan: Arc<PlanMode>,
    tool_plan: ToolPlan,
    text: String,
}

fn plan_header(path: &str) -> String {
    format!("Plan mode is off; every tool is available again.\nPlan file: {path}\n\n")
}

#[async_trait]
impl Execution for ExitExecution {
    fn plan(&self) -> &ToolPlan {
        &self.tool_plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let record = self.plan.exit();
        ToolResult::ok(format!(
            "Exited plan mode (auto-approved). {}Note: this plan was approved automatically — the user has not reviewed it. Follow the user's original instructions about whether to carry it out now; if they asked you to stop after planning, stop.\n\n## Plan (auto-approved, not reviewed by the user)\n{}",
            plan_header(&self.tool_plan.display.summary),
            self.text
        ))
        .with_records(record)
    }
}

#[async_trait]
impl Tool for ExitPlanModeTool {
    fn name(&self) -> &str {
        EXIT_PLAN_MODE
    }

    fn description(&self) -> String {
        EXIT_DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "options": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_OPTIONS,
                    "description": "Alternative approaches described in the plan, for the user to choose from when approving.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "label": {"type": "string", "minLength": 1, "maxLength": MAX_LABEL_CHARS},
                            "description": {"type": "string", "default": ""}
                        },
                        "required": ["label"],
                        "additionalProperties": false
                    }
                }
            },
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: ExitParams = parse_args(args)?;
        if let Some(options) = params.options
            && let Err(message) = validate_options(options)
        {
            return Err(ToolError::InvalidArgs(message));
        }
        let (true, Some(path)) = (self.plan.is_active(), self.plan.plan_file()) else {
            return Ok(Resolution::Result(ToolResult::error(
                "ExitPlanMode only works in plan mode, which is off. Call EnterPlanMode first if you want to plan.",
            )));
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.trim().is_empty() {
            return Ok(Resolution::Result(ToolResult::error(format!(
                "There is no plan to review yet. Write the plan to {} with Write, then call ExitPlanMode again.",
                path.display()
            ))));
        }
        let mut tool_plan = simple_plan(
            "plan_review",
            path.display().to_string(),
            "Present the plan and exit plan mode",
        );
        tool_plan.approval_rule = EXIT_PLAN_MODE.to_owned();
        tool_plan.display.detail = Some(text.clone());
        Ok(Resolution::Run(Box::new(ExitExecution {
            plan: self.plan.clone(),
            tool_plan,
            text,
        })))
    }
}

/// The result of an `ExitPlanMode` call the user reviewed: approve (optionally with an
/// option) ends plan mode and hands the plan back; feedback keeps plan mode and passes it on;
/// a bare rejection keeps plan mode and stops the turn.
pub fn settle_review(plan: &PlanMode, tool_plan: &ToolPlan, answer: &UserAnswer) -> ToolResult {
    let text = tool_plan.display.detail.clone().unwrap_or_default();
    let path = &tool_plan.display.summary;
    match answer {
        UserAnswer::Approve | UserAnswer::ApproveForSession | UserAnswer::ApproveOption(_) => {
            let record = plan.exit();
            let chosen = match answer {
                UserAnswer::ApproveOption(label) => format!(
                    "The user chose the approach \"{label}\". Carry out only that approach, none of the alternatives.\n\n"
                ),
                UserAnswer::Approve | UserAnswer::ApproveForSession | UserAnswer::Reject(_) => {
                    String::new()
                }
            };
            ToolResult::ok(format!(
                "Exited plan mode. {chosen}{}## Approved plan\n{text}",
                plan_header(path)
            ))
            .with_records(record)
        }
        UserAnswer::Reject(Some(feedback)) if !feedback.trim().is_empty() => {
            ToolResult::ok(format!(
                "The user did not approve the plan and asked for changes:\n\n{}\n\nPlan mode is still on: revise the plan file, then call ExitPlanMode again.",
                feedback.trim()
            ))
        }
        UserAnswer::Reject(_) => {
            let mut result = ToolResult::error(
                "The user rejected the plan. Plan mode is still on. Stop here and wait for the user's next message.",
            );
            result.stop_turn = true;
            result
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(label: &str) -> OptionParam {
        OptionParam {
            label: label.to_owned(),
            description: String::new(),
        }
    }

    #[test]
    fn options_are_checked() {
        assert!(validate_options(vec![opt("Small patch"), opt("Rewrite")]).is_ok());
        assert!(validate_options(vec![]).is_err());
        assert!(validate_options(vec![opt("a"), opt("b"), opt("c"), opt("d")]).is_err());
        assert!(validate_options(vec![opt("Revise")]).is_err());
        assert!(validate_options(vec![opt("reject AND exit")]).is_err());
        assert!(validate_options(vec![opt("x"), opt("X")]).is_err());
        assert!(validate_options(vec![opt(&"y".repeat(81))]).is_err());
        assert_eq!(
            review_options(Some(r#"{"options":[{"label":"A","description":"d"}]}"#)),
            vec![ApprovalOption {
                label: "A".into(),
                description: "d".into()
            }]
        );
    }
}
