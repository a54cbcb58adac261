//! The goal tools of the main agent (surface.md §2.4 "Goal tools"): `CreateGoal`, `GetGoal`,
//! `SetGoalBudget` and `UpdateGoal`. All four are default-approved; `CreateGoal` outside auto
//! mode goes through the goal-start review, where the user picks the goal's permission mode.
//! Calls aimed at a goal that changed since their turn started are vetoed by the engine
//! ([`super::GoalService::veto`]); the texts here cover a change between resolution and run.

use std::sync::Arc;

use async_trait::async_trait;
use kimi_protocol::host::{GoalActor, GoalBudgetLimits, GoalSnapshot, GoalStatus};
use kimi_tools::tool::{RuleSubject, ToolDisplay, parse_args};
use kimi_tools::{
    Execution, ProgressSink, Resolution, Tool, ToolContext, ToolError, ToolPlan, ToolResult,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{CREATE_GOAL, GET_GOAL, GoalService, SET_GOAL_BUDGET, UPDATE_GOAL, text};

/// The four goal tools over one goal service.
pub fn goal_tools(goals: &Arc<GoalService>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(CreateGoalTool(goals.clone())),
        Arc::new(GetGoalTool(goals.clone())),
        Arc::new(SetGoalBudgetTool(goals.clone())),
        Arc::new(UpdateGoalTool(goals.clone())),
    ]
}

fn plan(name: &str, kind: &str, summary: String) -> ToolPlan {
    ToolPlan {
        accesses: Some(Vec::new()),
        approval_rule: name.to_owned(),
        subject: RuleSubject::NameOnly,
        display: ToolDisplay {
            kind: kind.to_owned(),
            summary: summary.clone(),
            detail: None,
            diff: None,
        },
        description: summary,
        stop_batch_after_this: false,
    }
}

/// What the model sees of a goal: the snapshot without its id.
fn goal_for_model(goal: Option<&GoalSnapshot>) -> String {
    let value = match goal {
        Some(goal) => {
            let mut value = serde_json::to_value(goal).unwrap_or(Value::Null);
            if let Some(map) = value.as_object_mut() {
                map.remove("goalId");
            }
            value
        }
        None => Value::Null,
    };
    serde_json::to_string_pretty(&json!({ "goal": value })).unwrap_or_default()
}

type Action = Box<dyn FnOnce() -> ToolResult + Send + Sync>;

/// A goal tool's run: the plan and what to do.
struct Run {
    plan: ToolPlan,
    action: Action,
}

#[async_trait]
impl Execution for Run {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        (self.action)()
    }
}

fn run(plan: ToolPlan, action: impl FnOnce() -> ToolResult + Send + Sync + 'static) -> Resolution {
    Resolution::Run(Box::new(Run {
        plan,
        action: Box::new(action),
    }))
}

struct CreateGoalTool(Arc<GoalService>);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateParams {
    objective: String,
    #[serde(default)]
    completion_criterion: Option<String>,
    #[serde(default)]
    replace: bool,
}

#[async_trait]
impl Tool for CreateGoalTool {
    fn name(&self) -> &str {
        CREATE_GOAL
    }

    fn description(&self) -> String {
        "Start a goal: an objective you then pursue over several turns until it is complete. Use it when the user asks for sustained, autonomous work toward a clear outcome. The runtime keeps starting goal turns until you call UpdateGoal with `complete` (after auditing the work) or `blocked`. Give the objective in the user's terms and, when the user stated one, the completion criterion. Set `replace` only when the user asked to replace the current goal.".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "objective": {"type": "string", "minLength": 1, "maxLength": text::MAX_OBJECTIVE_CHARS, "description": "What the goal must achieve."},
                "completionCriterion": {"type": "string", "maxLength": text::MAX_OBJECTIVE_CHARS, "description": "How to tell that the goal is complete."},
                "replace": {"type": "boolean", "description": "Replace the current goal if there is one."}
            },
            "required": ["objective"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: CreateParams = parse_args(args)?;
        let goals = self.0.clone();
        let at_resolution = goals.snapshot().map(|g| g.goal_id);
        let mut tool_plan = plan(CREATE_GOAL, "goal_start", params.objective.clone());
        tool_plan.display.detail = params.completion_criterion.clone();
        Ok(run(tool_plan, move || {
            if goals.snapshot().map(|g| g.goal_id) != at_resolution {
                return ToolResult::ok("Goal not created: the current goal changed.");
            }
            match goals.create(
                &params.objective,
                params.completion_criterion.as_deref(),
                params.replace,
                true,
            ) {
                Ok((snap, records)) => {
                    ToolResult::ok(goal_for_model(Some(&snap))).with_records(records)
                }
                Err(err) => ToolResult::error(err.to_string()),
            }
        }))
    }
}

struct GetGoalTool(Arc<GoalService>);

#[async_trait]
impl Tool for GetGoalTool {
    fn name(&self) -> &str {
        GET_GOAL
    }

    fn description(&self) -> String {
        "Read the current goal: objective, status, turns, tokens and time used, and the budget report. Returns null when there is no goal.".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn resolve(&self, _args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let goals = self.0.clone();
        Ok(run(
            plan(GET_GOAL, "goal", "read the goal".to_owned()),
            move || ToolResult::ok(goal_for_model(goals.snapshot().as_ref())),
        ))
    }
}

struct SetGoalBudgetTool(Arc<GoalService>);

#[derive(Deserialize)]
struct BudgetParams {
    value: f64,
    unit: String,
}

const UNITS: [&str; 6] = [
    "turns",
    "tokens",
    "milliseconds",
    "seconds",
    "minutes",
    "hours",
];
/// A time budget under a second is a mistake, not a budget.
const MIN_TIME_BUDGET_MS: f64 = 1000.0;

fn format_budget(value: f64, unit: &str) -> String {
    let shown = if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        value.to_string()
    };
    let unit = if value == 1.0 {
        unit.strip_suffix('s').unwrap_or(unit)
    } else {
        unit
    };
    format!("{shown} {unit}")
}

/// The limits `value` `unit` sets; `None` for a time budget too small to mean anything.
fn limits_for(value: f64, unit: &str) -> Option<GoalBudgetLimits> {
    // Counts round to a whole number of at least one; `as` saturates on huge values.
    let count = || value.round().max(1.0) as u64;
    let ms = |factor: f64| {
        let ms = (value * factor).round();
        (ms.is_finite() && ms >= MIN_TIME_BUDGET_MS).then_some(GoalBudgetLimits {
            wall_clock_budget_ms: Some(ms as u64),
            ..GoalBudgetLimits::default()
        })
    };
    match unit {
        "turns" => Some(GoalBudgetLimits {
            turn_budget: Some(count()),
            ..GoalBudgetLimits::default()
        }),
        "tokens" => Some(GoalBudgetLimits {
            token_budget: Some(count()),
            ..GoalBudgetLimits::default()
        }),
        "milliseconds" => ms(1.0),
        "seconds" => ms(1000.0),
        "minutes" => ms(60_000.0),
        _ => ms(3_600_000.0),
    }
}

#[async_trait]
impl Tool for SetGoalBudgetTool {
    fn name(&self) -> &str {
        SET_GOAL_BUDGET
    }

    fn description(&self) -> String {
        "Set a hard budget for the current goal in turns, tokens or time, usually because the user's objective states one (\"stop after 20 turns\", \"spend at most an hour\"). Once a budget is reached the goal is blocked and you must stop. Calling it again with another unit adds that limit; with the same unit it replaces it.".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "value": {"type": "number", "exclusiveMinimum": 0},
                "unit": {"type": "string", "enum": UNITS}
            },
            "required": ["value", "unit"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: BudgetParams = parse_args(args)?;
        if !UNITS.contains(&params.unit.as_str()) {
            return Err(ToolError::InvalidArgs(format!(
                "unit must be one of {}",
                UNITS.join(", ")
            )));
        }
        if !(params.value.is_finite() && params.value > 0.0) {
            return Err(ToolError::InvalidArgs(
                "value must be a number greater than 0".to_owned(),
            ));
        }
        let value = if matches!(params.unit.as_str(), "turns" | "tokens") {
            params.value.round().max(1.0)
        } else {
            params.value
        };
        let shown = format_budget(value, &params.unit);
        let limits = limits_for(value, &params.unit);
        let goals = self.0.clone();
        let at_resolution = goals.snapshot();
        let mut tool_plan = plan(
            SET_GOAL_BUDGET,
            "goal",
            format!("Setting goal budget: {shown}"),
        );
        // A budget the goal has already spent stops it: nothing after this call may run.
        tool_plan.stop_batch_after_this = match (&at_resolution, limits) {
            (Some(goal), Some(limits)) => {
                let merged = GoalBudgetLimits {
                    token_budget: limits.token_budget.or(goal.budget.token_budget),
                    turn_budget: limits.turn_budget.or(goal.budget.turn_budget),
                    wall_clock_budget_ms: limits
                        .wall_clock_budget_ms
                        .or(goal.budget.wall_clock_budget_ms),
                };
                super::state::budget_report(
                    &merged,
                    goal.turns_used,
                    goal.tokens_used,
                    goal.wall_clock_ms,
                )
                .over_budget
            }
            _ => false,
        };
        let at_resolution = at_resolution.map(|g| g.goal_id);
        Ok(run(tool_plan, move || {
            let Some(current) = goals.snapshot() else {
                return ToolResult::ok("Goal budget not set: no current goal.");
            };
            if Some(&current.goal_id) != at_resolution.as_ref() {
                return ToolResult::ok("Goal budget not set: the current goal changed.");
            }
            let Some(limits) = limits else {
                return ToolResult::ok(format!(
                    "Goal budget not set: {shown} is not a reasonable goal budget."
                ));
            };
            match goals.set_budget(limits) {
                Ok((snap, records)) if snap.budget.over_budget => {
                    let mut result = ToolResult::ok(format!(
                        "Goal budget set: {shown}. The goal has already reached this budget and will stop now."
                    ))
                    .with_records(records);
                    result.stop_turn = true;
                    result
                }
                Ok((_, records)) => {
                    ToolResult::ok(format!("Goal budget set: {shown}.")).with_records(records)
                }
                Err(err) => ToolResult::error(err.to_string()),
            }
        }))
    }
}

struct UpdateGoalTool(Arc<GoalService>);

#[derive(Deserialize)]
struct UpdateParams {
    status: String,
}

const INVALID_STATUS: &str = "Invalid goal status. Use `active`, `complete`, or `blocked`.";

#[async_trait]
impl Tool for UpdateGoalTool {
    fn name(&self) -> &str {
        UPDATE_GOAL
    }

    fn description(&self) -> String {
        "Report the goal's outcome. `complete` only after the completion audit passed: every requirement of the objective is met and verified. `blocked` only for a genuine impasse you cannot get past without the user (see the continuation instructions). `active` resumes a paused or blocked goal. Most goal turns should not call this: end the turn normally and the runtime continues the goal.".to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"status": {"type": "string", "enum": ["active", "complete", "blocked"]}},
            "required": ["status"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: UpdateParams = parse_args(args)?;
        let status = match params.status.as_str() {
            "active" => GoalStatus::Active,
            "complete" => GoalStatus::Complete,
            "blocked" => GoalStatus::Blocked,
            _ => return Ok(Resolution::Result(ToolResult::error(INVALID_STATUS))),
        };
        let goals = self.0.clone();
        let at_resolution = goals.snapshot();
        let was_active = at_resolution
            .as_ref()
            .is_some_and(|g| g.status == GoalStatus::Active);
        let mut tool_plan = plan(
            UPDATE_GOAL,
            "goal",
            format!("Setting goal status: {}", status.label()),
        );
        // Nothing after a terminal outcome runs in this batch; the next step is the summary.
        tool_plan.stop_batch_after_this = status != GoalStatus::Active && was_active;
        let at_resolution = at_resolution.map(|g| g.goal_id);
        Ok(run(tool_plan, move || {
            let verb = match status {
                GoalStatus::Active => "resumed",
                GoalStatus::Complete => "completed",
                GoalStatus::Blocked | GoalStatus::Paused => "blocked",
            };
            let Some(current) = goals.snapshot() else {
                let missing = if status == GoalStatus::Active {
                    "no current goal"
                } else {
                    "no active goal"
                };
                return ToolResult::ok(format!("Goal not {verb}: {missing}."));
            };
            if Some(&current.goal_id) != at_resolution.as_ref() {
                return ToolResult::ok(format!("Goal not {verb}: the current goal changed."));
            }
            match status {
                GoalStatus::Active => match goals.resume(GoalActor::Model, true) {
                    Ok((_, records)) => ToolResult::ok("Goal resumed.").with_records(records),
                    Err(err) => ToolResult::error(err.to_string()),
                },
                GoalStatus::Complete => match goals.complete(GoalActor::Model) {
                    Some((snap, records)) => {
                        ToolResult::ok(text::completion_summary_prompt(&snap)).with_records(records)
                    }
                    None => ToolResult::ok("Goal not completed: no active goal."),
                },
                GoalStatus::Blocked | GoalStatus::Paused => {
                    let records = goals.block_by_model();
                    match (records.is_empty(), goals.snapshot()) {
                        (false, Some(snap)) => {
                            ToolResult::ok(text::blocked_reason_prompt(&snap)).with_records(records)
                        }
                        _ => ToolResult::ok("Goal not blocked: no active goal."),
                    }
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_parsed_like_the_reference() {
        assert_eq!(format_budget(1.0, "turns"), "1 turn");
        assert_eq!(format_budget(2.5, "hours"), "2.5 hours");
        assert_eq!(limits_for(0.4, "turns").unwrap().turn_budget, Some(1));
        assert_eq!(
            limits_for(2.0, "minutes").unwrap().wall_clock_budget_ms,
            Some(120_000)
        );
        assert_eq!(limits_for(500.0, "milliseconds"), None);
    }
}
