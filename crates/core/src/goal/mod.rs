//! Goal mode (surface.md §9.2): an objective the main agent pursues over many turns, auditing
//! itself, within budgets of turns, tokens and wall-clock time.
//!
//! [`GoalService`] holds the goal (folded from the journal's `goal.*` records, see [`state`])
//! and the live bookkeeping of the running goal turn. Every change returns the records that
//! make it durable — the caller commits them (a tool in its result, the engine through
//! `Runtime::commit`) — and announces itself to every front end as `Event::GoalUpdated`.
//! The engine drives it from the turn loop ([`engine`]): it counts goal turns and tokens,
//! blocks the goal when a budget is reached (rejecting tool calls in the grace step that
//! follows), pauses it on interrupts and errors, and queues a `goal_continuation` turn after
//! every goal turn that ended without a terminal `UpdateGoal`.

pub mod engine;
pub mod queue;
pub mod review;
pub mod state;
pub mod text;
pub mod tools;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use kimi_protocol::RecordPayload;
use kimi_protocol::host::{GoalActor, GoalBudgetLimits, GoalChange, GoalSnapshot, GoalStatus};
use kimi_protocol::ops::Event;
use kimi_protocol::record::{GoalClear, GoalCreate, GoalUpdate};
use tokio::sync::mpsc;

pub use state::GoalState;

/// The goal tools' names (also in the default-approve list of the permission chain).
pub const CREATE_GOAL: &str = "CreateGoal";
pub const GET_GOAL: &str = "GetGoal";
pub const SET_GOAL_BUDGET: &str = "SetGoalBudget";
pub const UPDATE_GOAL: &str = "UpdateGoal";

/// Idle goal turns (no tool call) in a row before continuations are spaced out.
const IDLE_TURNS_BEFORE_BACKOFF: u32 = 2;
const IDLE_DELAYS: [Duration; 3] = [
    Duration::from_secs(60),
    Duration::from_secs(5 * 60),
    Duration::from_secs(15 * 60),
];

/// Why a goal operation was refused; the texts are the reference's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoalError {
    #[error("No current goal.")]
    NotFound,
    #[error(
        "A goal is already active. Use `/goal replace <objective>` to replace it, or `/goal status` to inspect it."
    )]
    AlreadyExists,
    #[error("Goal objective cannot be empty.")]
    EmptyObjective,
    #[error(
        "Goal objective cannot exceed 4000 characters. Put long content in a file and reference the file path."
    )]
    TooLong,
    #[error("Cannot pause a goal in status \"{0}\".")]
    CannotPause(&'static str),
    #[error("Cannot resume a goal in status \"{0}\".")]
    NotResumable(&'static str),
}

/// What the turn loop does after a step of a goal turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterStep {
    Continue,
    /// A budget was reached in a step that made tool calls: one more step to write the final
    /// message, with tool calls rejected and the budget-stop reminder added.
    Grace,
    /// A budget was reached: end the turn now.
    Stop,
}

/// How a goal turn ended, as far as the goal cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    Completed,
    /// Failed on the per-turn step limit: continue with the step-cap prompt.
    StepCapped,
    Cancelled,
    /// A UserPromptSubmit hook refused the prompt.
    Blocked,
    /// Failed; the pause reason.
    Failed(String),
}

/// A continuation turn to queue after a goal turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation {
    pub goal_id: String,
    pub prompt: String,
    /// Wait this long first (idle goal turns back off); `Duration::ZERO` = now.
    pub delay: Duration,
    /// The goal's lifecycle epoch; a delayed continuation is dropped if it moved.
    pub epoch: u64,
}

/// Live bookkeeping of the goal turn that is running.
#[derive(Debug, Clone)]
struct TurnTrack {
    turn_id: u64,
    goal_id: String,
    counted: bool,
    /// The goal was created during this turn: counted when it ends.
    starter: bool,
    tool_calls: bool,
    /// The budget grace step is under way: tool calls are rejected.
    grace: bool,
}

#[derive(Debug, Default)]
struct Inner {
    goal: Option<GoalState>,
    /// When the running stretch of wall-clock time began (active goals only).
    live_since: Option<Instant>,
    turn: Option<TurnTrack>,
    /// The turn running now, goal turn or not (a goal the model creates adopts it).
    running_turn: Option<u64>,
    idle_turns: u32,
    /// Bumped on every lifecycle change.
    epoch: u64,
}

impl Inner {
    fn live_ms(&self) -> u64 {
        let Some(goal) = &self.goal else {
            return 0;
        };
        let running = match (goal.status, self.live_since) {
            (GoalStatus::Active, Some(since)) => {
                u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
            }
            _ => 0,
        };
        goal.wall_clock_ms.saturating_add(running)
    }

    fn snapshot(&self) -> Option<GoalSnapshot> {
        let ms = self.live_ms();
        self.goal.as_ref().map(|g| g.snapshot(ms))
    }

    fn apply(&mut self, payload: &RecordPayload) {
        GoalState::apply(&mut self.goal, payload);
    }
}

/// The main agent's goal.
pub struct GoalService {
    inner: Mutex<Inner>,
    events: mpsc::UnboundedSender<Event>,
    /// The workspace's queue of upcoming goals; `None` where there is none (tests).
    queue: Option<queue::GoalQueue>,
}

impl std::fmt::Debug for GoalService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoalService")
            .field("goal", &self.inner().goal)
            .finish_non_exhaustive()
    }
}

fn now_ms() -> u64 {
    crate::engine::log::now_ms()
}

impl GoalService {
    /// The goal of a session whose journal folded to `restored`; events go to `events`.
    pub fn new(restored: Option<GoalState>, events: mpsc::UnboundedSender<Event>) -> Self {
        GoalService {
            inner: Mutex::new(Inner {
                goal: restored,
                ..Inner::default()
            }),
            events,
            queue: None,
        }
    }

    /// The same, with the workspace's goal queue.
    pub fn with_queue(mut self, queue: queue::GoalQueue) -> Self {
        self.queue = Some(queue);
        self
    }

    /// The workspace's goal queue.
    pub fn queue(&self) -> Option<&queue::GoalQueue> {
        self.queue.as_ref()
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn emit(&self, goal: Option<GoalSnapshot>, change: Option<GoalChange>) {
        // A front end that went away is not a goal error.
        let _ = self.events.send(Event::GoalUpdated { goal, change });
    }

    /// The goal now (`None` when there is none).
    pub fn snapshot(&self) -> Option<GoalSnapshot> {
        self.inner().snapshot()
    }

    /// Announce the current goal (`/goal status`, a front end attaching).
    pub fn announce(&self) {
        let snap = self.snapshot();
        self.emit(snap, None);
    }

    /// The goal is active.
    pub fn is_active(&self) -> bool {
        self.inner()
            .goal
            .as_ref()
            .is_some_and(|g| g.status == GoalStatus::Active)
    }

    /// After replay: a goal that was active when the session stopped is paused (nobody is
    /// driving it), a completed one is cleared. Returns the records to journal.
    #[must_use = "the returned goal records must be committed"]
    pub fn normalize_after_resume(&self) -> Vec<RecordPayload> {
        let mut inner = self.inner();
        let Some(goal) = &inner.goal else {
            return Vec::new();
        };
        match goal.status {
            GoalStatus::Complete => {
                let record = RecordPayload::GoalClear(GoalClear::default());
                inner.apply(&record);
                vec![record]
            }
            GoalStatus::Active => {
                let (records, snap, change) = set_status(
                    &mut inner,
                    GoalStatus::Paused,
                    Some(text::PAUSED_AFTER_RESUME.to_owned()),
                    GoalActor::Runtime,
                );
                drop(inner);
                self.emit(snap, change);
                records
            }
            GoalStatus::Paused | GoalStatus::Blocked => Vec::new(),
        }
    }

    /// Start a goal. With `adopt` (the model creates it) the running turn becomes the goal's
    /// first. Refused while a goal exists, unless `replace`.
    pub fn create(
        &self,
        objective: &str,
        completion_criterion: Option<&str>,
        replace: bool,
        adopt: bool,
    ) -> Result<(GoalSnapshot, Vec<RecordPayload>), GoalError> {
        let objective = objective.trim();
        if objective.is_empty() {
            return Err(GoalError::EmptyObjective);
        }
        if objective.chars().count() > text::MAX_OBJECTIVE_CHARS {
            return Err(GoalError::TooLong);
        }
        let criterion = completion_criterion
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(|c| {
                c.chars()
                    .take(text::MAX_OBJECTIVE_CHARS)
                    .collect::<String>()
            });
        let mut inner = self.inner();
        let mut records = Vec::new();
        if inner.goal.is_some() {
            if !replace {
                return Err(GoalError::AlreadyExists);
            }
            let clear = RecordPayload::GoalClear(GoalClear::default());
            inner.apply(&clear);
            records.push(clear);
        }
        let goal_id = uuid::Uuid::new_v4().to_string();
        let create = RecordPayload::GoalCreate(GoalCreate {
            agent_id: None,
            goal_id: goal_id.clone(),
            objective: objective.to_owned(),
            completion_criterion: criterion,
            wall_clock_resumed_at: Some(now_ms()),
        });
        inner.apply(&create);
        records.push(create);
        inner.live_since = Some(Instant::now());
        inner.idle_turns = 0;
        inner.epoch += 1;
        if let Some(turn_id) = inner.running_turn.filter(|_| adopt) {
            inner.turn = Some(TurnTrack {
                turn_id,
                goal_id,
                counted: true,
                starter: true,
                tool_calls: false,
                grace: false,
            });
        }
        let snap = inner.snapshot();
        drop(inner);
        self.emit(snap.clone(), None);
        let snap = snap.ok_or(GoalError::NotFound)?;
        Ok((snap, records))
    }

    /// `/goal pause`: pause the active goal (a paused one stays paused).
    pub fn pause(&self, actor: GoalActor) -> Result<(GoalSnapshot, Vec<RecordPayload>), GoalError> {
        let mut inner = self.inner();
        let goal = inner.goal.as_ref().ok_or(GoalError::NotFound)?;
        match goal.status {
            GoalStatus::Paused => {
                let snap = inner.snapshot().ok_or(GoalError::NotFound)?;
                Ok((snap, Vec::new()))
            }
            GoalStatus::Active => {
                let (records, snap, change) =
                    set_status(&mut inner, GoalStatus::Paused, None, actor);
                drop(inner);
                self.emit(snap.clone(), change);
                Ok((snap.ok_or(GoalError::NotFound)?, records))
            }
            other => Err(GoalError::CannotPause(other.label())),
        }
    }

    /// Pause the goal if it is active (interrupts, errors); the records to journal.
    #[must_use = "the returned goal records must be committed"]
    pub fn pause_active(&self, reason: &str, actor: GoalActor) -> Vec<RecordPayload> {
        self.transition_active(GoalStatus::Paused, Some(reason), actor)
    }

    /// Block the goal if it is active; the records to journal.
    #[must_use = "the returned goal records must be committed"]
    pub fn block_active(&self, reason: &str, actor: GoalActor) -> Vec<RecordPayload> {
        self.transition_active(GoalStatus::Blocked, Some(reason), actor)
    }

    /// `UpdateGoal {blocked}`: the model blocks the active goal (its reason is the final
    /// message it writes next, so none is recorded — as in the reference).
    #[must_use = "the returned goal records must be committed"]
    pub fn block_by_model(&self) -> Vec<RecordPayload> {
        self.transition_active(GoalStatus::Blocked, None, GoalActor::Model)
    }

    fn transition_active(
        &self,
        status: GoalStatus,
        reason: Option<&str>,
        actor: GoalActor,
    ) -> Vec<RecordPayload> {
        let mut inner = self.inner();
        if !inner
            .goal
            .as_ref()
            .is_some_and(|g| g.status == GoalStatus::Active)
        {
            return Vec::new();
        }
        let (records, snap, change) =
            set_status(&mut inner, status, reason.map(str::to_owned), actor);
        drop(inner);
        self.emit(snap, change);
        records
    }

    /// Reactivate a paused or blocked goal. With `adopt` (the model resumes it with
    /// `UpdateGoal {active}`) the running turn becomes a goal turn. A goal whose budget is
    /// already spent is blocked again at once.
    pub fn resume(
        &self,
        actor: GoalActor,
        adopt: bool,
    ) -> Result<(GoalSnapshot, Vec<RecordPayload>), GoalError> {
        let mut inner = self.inner();
        let goal = inner.goal.as_ref().ok_or(GoalError::NotFound)?;
        match goal.status {
            GoalStatus::Active => {
                let snap = inner.snapshot().ok_or(GoalError::NotFound)?;
                return Ok((snap, Vec::new()));
            }
            GoalStatus::Paused | GoalStatus::Blocked => {}
            GoalStatus::Complete => return Err(GoalError::NotResumable("complete")),
        }
        let goal_id = goal.goal_id.clone();
        let (mut records, snap, change) = set_status(&mut inner, GoalStatus::Active, None, actor);
        inner.idle_turns = 0;
        if let Some(turn_id) = inner.running_turn.filter(|_| adopt)
            && inner.turn.as_ref().is_none_or(|t| t.turn_id != turn_id)
        {
            inner.turn = Some(TurnTrack {
                turn_id,
                goal_id,
                counted: true,
                starter: true,
                tool_calls: false,
                grace: false,
            });
        }
        drop(inner);
        self.emit(snap, change);
        records.extend(self.block_if_over_budget());
        let snap = self.snapshot().ok_or(GoalError::NotFound)?;
        Ok((snap, records))
    }

    /// `SetGoalBudget`: merge `limits` into the goal's budget; a budget that is already
    /// reached blocks the goal.
    pub fn set_budget(
        &self,
        limits: GoalBudgetLimits,
    ) -> Result<(GoalSnapshot, Vec<RecordPayload>), GoalError> {
        let mut inner = self.inner();
        let goal = inner.goal.as_ref().ok_or(GoalError::NotFound)?;
        let merged = GoalBudgetLimits {
            token_budget: limits.token_budget.or(goal.budget.token_budget),
            turn_budget: limits.turn_budget.or(goal.budget.turn_budget),
            wall_clock_budget_ms: limits
                .wall_clock_budget_ms
                .or(goal.budget.wall_clock_budget_ms),
        };
        let record = RecordPayload::GoalUpdate(GoalUpdate {
            budget_limits: Some(merged),
            ..GoalUpdate::default()
        });
        inner.apply(&record);
        let snap = inner.snapshot();
        drop(inner);
        self.emit(snap, None);
        let mut records = vec![record];
        records.extend(self.block_if_over_budget());
        let snap = self.snapshot().ok_or(GoalError::NotFound)?;
        Ok((snap, records))
    }

    /// `/goal cancel`: remove the goal. Returns the goal as it was.
    pub fn cancel(&self) -> Result<(GoalSnapshot, Vec<RecordPayload>), GoalError> {
        let mut inner = self.inner();
        let snap = inner.snapshot().ok_or(GoalError::NotFound)?;
        let record = RecordPayload::GoalClear(GoalClear::default());
        inner.apply(&record);
        inner.live_since = None;
        inner.epoch += 1;
        drop(inner);
        self.emit(None, None);
        Ok((snap, vec![record]))
    }

    /// `UpdateGoal {complete}`: record the completion and clear the goal. `None` when no goal
    /// is active.
    pub fn complete(&self, actor: GoalActor) -> Option<(GoalSnapshot, Vec<RecordPayload>)> {
        let mut inner = self.inner();
        if !inner
            .goal
            .as_ref()
            .is_some_and(|g| g.status == GoalStatus::Active)
        {
            return None;
        }
        let (mut records, snap, _) = set_status(&mut inner, GoalStatus::Complete, None, actor);
        let snap = snap?;
        let clear = RecordPayload::GoalClear(GoalClear::default());
        inner.apply(&clear);
        records.push(clear);
        drop(inner);
        self.emit(
            Some(snap.clone()),
            Some(GoalChange::Completion {
                reason: None,
                turns_used: snap.turns_used,
                tokens_used: snap.tokens_used,
                wall_clock_ms: snap.wall_clock_ms,
                actor,
            }),
        );
        self.emit(None, None);
        Some((snap, records))
    }

    /// Block the active goal when one of its budgets is reached.
    #[must_use = "the returned goal records must be committed"]
    pub fn block_if_over_budget(&self) -> Vec<RecordPayload> {
        let reason = {
            let inner = self.inner();
            match inner.snapshot() {
                Some(snap) if snap.status == GoalStatus::Active => text::budget_block_reason(&snap),
                _ => None,
            }
        };
        match reason {
            Some(reason) => self.block_active(&reason, GoalActor::Runtime),
            None => Vec::new(),
        }
    }

    /// How long until the active goal's wall-clock budget runs out.
    pub fn wall_clock_remaining(&self) -> Option<Duration> {
        let inner = self.inner();
        let goal = inner.goal.as_ref()?;
        if goal.status != GoalStatus::Active {
            return None;
        }
        let budget = goal.budget.wall_clock_budget_ms?;
        Some(Duration::from_millis(
            budget.saturating_sub(inner.live_ms()),
        ))
    }

    /// The goal the running turn pursues (its id), if it is a goal turn.
    pub fn turn_goal(&self, turn_id: u64) -> Option<String> {
        let inner = self.inner();
        inner
            .turn
            .as_ref()
            .filter(|t| t.turn_id == turn_id)
            .map(|t| t.goal_id.clone())
    }

    /// A turn starts: it is a goal turn when the goal is active (and within budget).
    #[must_use = "the returned goal records must be committed"]
    pub fn turn_started(&self, turn_id: u64) -> Vec<RecordPayload> {
        let over = self.block_if_over_budget();
        let mut inner = self.inner();
        inner.running_turn = Some(turn_id);
        inner.turn = inner
            .goal
            .as_ref()
            .filter(|g| g.status == GoalStatus::Active)
            .map(|g| TurnTrack {
                turn_id,
                goal_id: g.goal_id.clone(),
                counted: false,
                starter: false,
                tool_calls: false,
                grace: false,
            });
        over
    }

    /// A step of `turn_id` begins: the goal turn is counted on its first step.
    #[must_use = "the returned goal records must be committed"]
    pub fn step_started(&self, turn_id: u64) -> Vec<RecordPayload> {
        let mut inner = self.inner();
        let Some(track) = inner.turn.as_mut().filter(|t| t.turn_id == turn_id) else {
            return Vec::new();
        };
        if track.counted {
            return Vec::new();
        }
        track.counted = true;
        let goal_id = track.goal_id.clone();
        let records = count_turn(&mut inner, &goal_id);
        let snap = inner.snapshot();
        drop(inner);
        if !records.is_empty() {
            self.emit(snap, None);
        }
        records
    }

    /// A step of `turn_id` used `output_tokens`; the token budget may block the goal.
    #[must_use = "the returned goal records must be committed"]
    pub fn record_usage(&self, turn_id: u64, output_tokens: u64) -> Vec<RecordPayload> {
        let record = {
            let mut inner = self.inner();
            let Some(goal_id) = inner
                .turn
                .as_ref()
                .filter(|t| t.turn_id == turn_id)
                .map(|t| t.goal_id.clone())
            else {
                return Vec::new();
            };
            let Some(goal) = inner
                .goal
                .as_ref()
                .filter(|g| g.goal_id == goal_id && g.status == GoalStatus::Active)
            else {
                return Vec::new();
            };
            let record = RecordPayload::GoalUpdate(GoalUpdate {
                tokens_used: Some(goal.tokens_used.saturating_add(output_tokens)),
                ..GoalUpdate::default()
            });
            inner.apply(&record);
            record
        };
        let mut records = vec![record];
        records.extend(self.block_if_over_budget());
        records
    }

    /// A tool call of `turn_id` finished.
    pub fn tool_finished(&self, turn_id: u64) {
        if let Some(track) = self.inner().turn.as_mut().filter(|t| t.turn_id == turn_id) {
            track.tool_calls = true;
        }
    }

    /// Why a tool call of `turn_id` must not run: a goal tool aimed at a goal that changed
    /// since the turn started, or any call in the budget grace step.
    pub fn veto(&self, turn_id: u64, tool_name: &str) -> Option<&'static str> {
        let inner = self.inner();
        let track = inner.turn.as_ref().filter(|t| t.turn_id == turn_id)?;
        let mutation = matches!(tool_name, CREATE_GOAL | UPDATE_GOAL | SET_GOAL_BUDGET);
        let current = inner.goal.as_ref().map(|g| g.goal_id.as_str());
        if mutation && current != Some(track.goal_id.as_str()) {
            return Some(text::STALE_TOOL_RESULT);
        }
        track.grace.then_some(text::BUDGET_TOOLS_REJECTED)
    }

    /// A step of `turn_id` finished; `tool_calls` = it ended with tool calls, `more_steps` =
    /// the per-turn step limit leaves room for another.
    pub fn after_step(&self, turn_id: u64, tool_calls: bool, more_steps: bool) -> AfterStep {
        let mut inner = self.inner();
        let ms = inner.live_ms();
        let Some(goal) = inner.goal.clone() else {
            return AfterStep::Continue;
        };
        let Some(track) = inner.turn.as_mut().filter(|t| t.turn_id == turn_id) else {
            return AfterStep::Continue;
        };
        if track.goal_id != goal.goal_id {
            return AfterStep::Continue;
        }
        let budget = goal.snapshot(ms).budget;
        let budget_blocked = goal.status == GoalStatus::Blocked
            && goal
                .terminal_reason
                .as_deref()
                .is_some_and(|r| r.starts_with(text::BUDGET_BLOCK_PREFIX));
        let spent = budget_blocked
            || (goal.status == GoalStatus::Active
                && (budget.token_budget_reached || budget.wall_clock_budget_reached));
        if !spent {
            return AfterStep::Continue;
        }
        if tool_calls && !track.grace && more_steps {
            track.grace = true;
            return AfterStep::Grace;
        }
        AfterStep::Stop
    }

    /// `turn_id` ended with `outcome`: pause or block the goal, or say which continuation to
    /// queue. Returns the records to journal too.
    #[must_use = "the returned goal records must be committed"]
    pub fn turn_ended(
        &self,
        turn_id: u64,
        outcome: &TurnOutcome,
    ) -> (Vec<RecordPayload>, Option<Continuation>) {
        let track = {
            let mut inner = self.inner();
            inner.running_turn = None;
            match inner.turn.take() {
                Some(t) if t.turn_id == turn_id => t,
                other => {
                    inner.turn = other;
                    return (Vec::new(), None);
                }
            }
        };
        let active_same = {
            let inner = self.inner();
            inner
                .goal
                .as_ref()
                .is_some_and(|g| g.goal_id == track.goal_id && g.status == GoalStatus::Active)
        };
        if !active_same {
            return (Vec::new(), None);
        }
        let step_capped = match outcome {
            TurnOutcome::Cancelled => {
                let records = self.pause_active(text::PAUSED_AFTER_INTERRUPTION, GoalActor::User);
                return (records, None);
            }
            TurnOutcome::Blocked => {
                let records = self.block_active(text::BLOCKED_BY_HOOK, GoalActor::Runtime);
                return (records, None);
            }
            TurnOutcome::Failed(reason) => {
                return (self.pause_active(reason, GoalActor::Runtime), None);
            }
            TurnOutcome::Completed => false,
            TurnOutcome::StepCapped => true,
        };
        let mut records = Vec::new();
        if track.starter {
            let mut inner = self.inner();
            records.extend(count_turn(&mut inner, &track.goal_id));
            let snap = inner.snapshot();
            drop(inner);
            self.emit(snap, None);
        }
        records.extend(self.block_if_over_budget());
        let mut inner = self.inner();
        if !inner
            .goal
            .as_ref()
            .is_some_and(|g| g.goal_id == track.goal_id && g.status == GoalStatus::Active)
        {
            return (records, None);
        }
        inner.idle_turns = if track.tool_calls {
            0
        } else {
            inner.idle_turns + 1
        };
        let delay = inner
            .idle_turns
            .checked_sub(IDLE_TURNS_BEFORE_BACKOFF)
            .map_or(Duration::ZERO, |i| {
                IDLE_DELAYS[usize::try_from(i)
                    .unwrap_or(usize::MAX)
                    .min(IDLE_DELAYS.len() - 1)]
            });
        let prompt = if step_capped {
            text::step_cap_continuation_prompt()
        } else {
            text::CONTINUATION_PROMPT.to_owned()
        };
        let continuation = Continuation {
            goal_id: track.goal_id,
            prompt,
            delay,
            epoch: inner.epoch,
        };
        (records, Some(continuation))
    }

    /// A delayed continuation is still wanted: the same goal, active, nothing changed since.
    pub fn still_due(&self, continuation: &Continuation) -> bool {
        let inner = self.inner();
        inner.epoch == continuation.epoch
            && inner.goal.as_ref().is_some_and(|g| {
                g.goal_id == continuation.goal_id && g.status == GoalStatus::Active
            })
    }

    /// A user prompt arrived: idle goal turns start counting again.
    pub fn user_activity(&self) {
        let mut inner = self.inner();
        inner.idle_turns = 0;
        inner.epoch += 1;
    }
}

/// Change the goal's status, settling its wall clock; returns the record, the new snapshot
/// and the change to announce.
fn set_status(
    inner: &mut Inner,
    status: GoalStatus,
    reason: Option<String>,
    actor: GoalActor,
) -> (Vec<RecordPayload>, Option<GoalSnapshot>, Option<GoalChange>) {
    let wall_clock_ms = inner.live_ms();
    let record = RecordPayload::GoalUpdate(GoalUpdate {
        status: Some(status),
        reason: reason.clone(),
        wall_clock_ms: Some(wall_clock_ms),
        wall_clock_resumed_at: (status == GoalStatus::Active).then(now_ms),
        actor: Some(actor),
        ..GoalUpdate::default()
    });
    inner.apply(&record);
    inner.live_since = (status == GoalStatus::Active).then(Instant::now);
    inner.epoch += 1;
    let change = GoalChange::Lifecycle {
        status,
        reason,
        actor,
    };
    (vec![record], inner.snapshot(), Some(change))
}

/// One more goal turn used (when the goal is still the same and active).
fn count_turn(inner: &mut Inner, goal_id: &str) -> Vec<RecordPayload> {
    let Some(goal) = inner
        .goal
        .as_ref()
        .filter(|g| g.goal_id == goal_id && g.status == GoalStatus::Active)
    else {
        return Vec::new();
    };
    let record = RecordPayload::GoalUpdate(GoalUpdate {
        turns_used: Some(goal.turns_used + 1),
        ..GoalUpdate::default()
    });
    inner.apply(&record);
    vec![record]
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
