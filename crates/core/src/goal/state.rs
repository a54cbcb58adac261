//! A goal's durable state and its fold from the journal's `goal.*` records, plus the snapshot
//! every front end sees (counters, budget report). Pure data: the live side (wall clock,
//! per-turn tracking, events) is [`super::GoalService`].

use kimi_protocol::RecordPayload;
use kimi_protocol::host::{GoalBudgetLimits, GoalBudgetReport, GoalSnapshot, GoalStatus};

/// The goal as journaled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalState {
    pub goal_id: String,
    pub objective: String,
    pub completion_criterion: Option<String>,
    pub status: GoalStatus,
    pub turns_used: u64,
    pub tokens_used: u64,
    /// Wall-clock time settled at the last status change (the running stretch is live).
    pub wall_clock_ms: u64,
    pub budget: GoalBudgetLimits,
    pub terminal_reason: Option<String>,
}

impl GoalState {
    /// Apply one record to `goal` (the fold step; records of other kinds are ignored).
    pub fn apply(goal: &mut Option<GoalState>, payload: &RecordPayload) {
        match payload {
            RecordPayload::GoalCreate(create) => {
                *goal = Some(GoalState {
                    goal_id: create.goal_id.clone(),
                    objective: create.objective.clone(),
                    completion_criterion: create.completion_criterion.clone(),
                    status: GoalStatus::Active,
                    turns_used: 0,
                    tokens_used: 0,
                    wall_clock_ms: 0,
                    budget: GoalBudgetLimits::default(),
                    terminal_reason: None,
                });
            }
            RecordPayload::GoalUpdate(update) => {
                let Some(state) = goal.as_mut() else {
                    return;
                };
                if let Some(status) = update.status
                    && status != state.status
                {
                    state.status = status;
                    state.terminal_reason = match status {
                        GoalStatus::Active => None,
                        GoalStatus::Paused | GoalStatus::Blocked | GoalStatus::Complete => {
                            update.reason.clone()
                        }
                    };
                }
                if let Some(turns) = update.turns_used {
                    state.turns_used = turns;
                }
                if let Some(tokens) = update.tokens_used {
                    state.tokens_used = tokens;
                }
                if let Some(ms) = update.wall_clock_ms {
                    state.wall_clock_ms = ms;
                }
                if let Some(limits) = update.budget_limits {
                    state.budget = limits;
                }
            }
            RecordPayload::GoalClear(_) | RecordPayload::Forked(_) => *goal = None,
            _ => {}
        }
    }

    /// The goal after `records`, in journal order. Goals are not undoable: every record
    /// counts, whichever branch it is on, so an undo leaves the goal as it was.
    pub fn fold<'a>(records: impl Iterator<Item = &'a RecordPayload>) -> Option<GoalState> {
        let mut goal = None;
        for payload in records {
            GoalState::apply(&mut goal, payload);
        }
        goal
    }

    /// The snapshot with `wall_clock_ms` as the live figure.
    pub fn snapshot(&self, wall_clock_ms: u64) -> GoalSnapshot {
        GoalSnapshot {
            goal_id: self.goal_id.clone(),
            objective: self.objective.clone(),
            completion_criterion: self.completion_criterion.clone(),
            status: self.status,
            turns_used: self.turns_used,
            tokens_used: self.tokens_used,
            wall_clock_ms,
            budget: budget_report(
                &self.budget,
                self.turns_used,
                self.tokens_used,
                wall_clock_ms,
            ),
            terminal_reason: self.terminal_reason.clone(),
        }
    }
}

/// How `used` stands against `limits`.
pub fn budget_report(
    limits: &GoalBudgetLimits,
    turns: u64,
    tokens: u64,
    wall_clock_ms: u64,
) -> GoalBudgetReport {
    let reached = |limit: Option<u64>, used: u64| limit.is_some_and(|l| used >= l);
    let remaining = |limit: Option<u64>, used: u64| limit.map(|l| l.saturating_sub(used));
    let token_budget_reached = reached(limits.token_budget, tokens);
    let turn_budget_reached = reached(limits.turn_budget, turns);
    let wall_clock_budget_reached = reached(limits.wall_clock_budget_ms, wall_clock_ms);
    GoalBudgetReport {
        token_budget: limits.token_budget,
        turn_budget: limits.turn_budget,
        wall_clock_budget_ms: limits.wall_clock_budget_ms,
        remaining_tokens: remaining(limits.token_budget, tokens),
        remaining_turns: remaining(limits.turn_budget, turns),
        remaining_wall_clock_ms: remaining(limits.wall_clock_budget_ms, wall_clock_ms),
        token_budget_reached,
        turn_budget_reached,
        wall_clock_budget_reached,
        over_budget: token_budget_reached || turn_budget_reached || wall_clock_budget_reached,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::record::{GoalClear, GoalCreate, GoalUpdate};

    fn create(id: &str) -> RecordPayload {
        RecordPayload::GoalCreate(GoalCreate {
            agent_id: None,
            goal_id: id.to_owned(),
            objective: "ship it".to_owned(),
            completion_criterion: None,
            wall_clock_resumed_at: None,
        })
    }

    #[test]
    fn the_fold_follows_create_update_and_clear() {
        let records = [
            create("g1"),
            RecordPayload::GoalUpdate(GoalUpdate {
                turns_used: Some(2),
                tokens_used: Some(50),
                budget_limits: Some(GoalBudgetLimits {
                    turn_budget: Some(2),
                    ..GoalBudgetLimits::default()
                }),
                ..GoalUpdate::default()
            }),
            RecordPayload::GoalUpdate(GoalUpdate {
                status: Some(GoalStatus::Paused),
                reason: Some("Paused after interruption".to_owned()),
                ..GoalUpdate::default()
            }),
        ];
        let goal = GoalState::fold(records.iter()).unwrap();
        assert_eq!(goal.status, GoalStatus::Paused);
        assert_eq!(
            goal.terminal_reason.as_deref(),
            Some("Paused after interruption")
        );
        let snap = goal.snapshot(10);
        assert!(snap.budget.turn_budget_reached && snap.budget.over_budget);
        assert_eq!(snap.budget.remaining_turns, Some(0));
        let cleared = [create("g1"), RecordPayload::GoalClear(GoalClear::default())];
        assert_eq!(GoalState::fold(cleared.iter()), None);
    }
}
