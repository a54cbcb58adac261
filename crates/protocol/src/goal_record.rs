//! Goal journal records (core.md §g.3 "Features", after the 1.4/1.5 migrations): `goal.create`
//! starts a goal, `goal.update` changes any of its fields (status with reason and actor,
//! counters, budget limits), `goal.clear` removes it. The goal fold (`kimi_core::goal`) reads
//! them in journal order; goals are not undoable state, so undo does not move them.

use serde::{Deserialize, Serialize};

use crate::host::{GoalActor, GoalBudgetLimits, GoalStatus};

/// `goal.create`: a new active goal with zeroed counters and no budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalCreate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub goal_id: String,
    pub objective: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_criterion: Option<String>,
    /// When the goal's wall clock (re)started, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock_resumed_at: Option<u64>,
}

/// `goal.update`: every field is optional; only the present ones change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GoalStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_used: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_used: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock_resumed_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_limits: Option<GoalBudgetLimits>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<GoalActor>,
}

/// `goal.clear`: the goal is gone (completed, cancelled or replaced).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GoalClear {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}
