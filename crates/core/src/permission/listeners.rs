//! The before-execute listeners around the policy chain (surface.md §3.2 step 3, core.md §e.6)
//! as pure pieces, and the adjudicator that combines their verdicts: the first veto wins, an
//! `allow` short-circuits, and asks are deferred until every listener has passed.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use kimi_protocol::ops::PermissionMode;
use serde_json::Value;

use super::call::CallFacts;
use super::policy::{Decision, PolicyName, Verdict};

/// The listeners, in registration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListenerName {
    Dedupe,
    PermissionGate,
    PlanGuard,
    GoalStartReview,
    SwarmExclusive,
    PreToolUseHook,
    StaleWriteGuard,
    SideQuestion,
}

impl ListenerName {
    pub fn as_str(self) -> &'static str {
        match self {
            ListenerName::Dedupe => "tool-dedupe",
            ListenerName::PermissionGate => "permission-gate",
            ListenerName::PlanGuard => "plan-guard",
            ListenerName::GoalStartReview => "goal-start-review",
            ListenerName::SwarmExclusive => "agent-swarm-exclusive",
            ListenerName::PreToolUseHook => "pre-tool-use-hook",
            ListenerName::StaleWriteGuard => "stale-write-guard",
            ListenerName::SideQuestion => "btw-side-question",
        }
    }
}

/// Why a listener wants the user asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskKind {
    /// The policy chain asked.
    Permission(Decision),
    /// `ExitPlanMode`: review the plan.
    PlanReview,
    /// `CreateGoal`: choose the goal's permission mode.
    GoalStart,
}

/// One listener's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenerVerdict {
    /// No objection; later listeners decide.
    Pass,
    /// Execute now; later listeners are skipped.
    Allow,
    /// Do not execute; the message becomes the tool result.
    Veto(String),
    /// Ask the user once every listener has passed (`waitUntil`).
    Ask(AskKind),
    /// A same-step duplicate: do not execute; the original call's result is reused.
    Duplicate { original_call_id: String },
}

/// The final outcome for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adjudication {
    Execute { allowed_by: Option<ListenerName> },
    Vetoed { by: ListenerName, message: String },
    Duplicate { original_call_id: String },
    AskUser { by: ListenerName, kind: AskKind },
}

/// Feeds listener verdicts in order and tells when the outcome is settled, so the engine never
/// runs a later listener (a hook process, say) once an earlier one decided.
#[derive(Debug, Clone, Default)]
pub struct Adjudicator {
    deferred: Option<(ListenerName, AskKind)>,
    settled: Option<Adjudication>,
}

impl Adjudicator {
    /// Records one listener's verdict; returns the outcome once it is settled.
    pub fn feed(&mut self, by: ListenerName, verdict: ListenerVerdict) -> Option<&Adjudication> {
        if self.settled.is_none() {
            match verdict {
                ListenerVerdict::Pass => {}
                ListenerVerdict::Allow => {
                    self.settled = Some(Adjudication::Execute {
                        allowed_by: Some(by),
                    });
                }
                ListenerVerdict::Veto(message) => {
                    self.settled = Some(Adjudication::Vetoed { by, message });
                }
                ListenerVerdict::Duplicate { original_call_id } => {
                    self.settled = Some(Adjudication::Duplicate { original_call_id });
                }
                ListenerVerdict::Ask(kind) => {
                    // The first deferred ask is the one shown; later ones wait behind it.
                    if self.deferred.is_none() {
                        self.deferred = Some((by, kind));
                    }
                }
            }
        }
        self.settled.as_ref()
    }

    /// The outcome after every listener has been fed.
    pub fn finish(self) -> Adjudication {
        match (self.settled, self.deferred) {
            (Some(settled), _) => settled,
            (None, Some((by, kind))) => Adjudication::AskUser { by, kind },
            (None, None) => Adjudication::Execute { allowed_by: None },
        }
    }
}

/// Combines a complete list of verdicts (convenience over [`Adjudicator`]).
pub fn adjudicate(
    verdicts: impl IntoIterator<Item = (ListenerName, ListenerVerdict)>,
) -> Adjudication {
    let mut adj = Adjudicator::default();
    for (name, verdict) in verdicts {
        if adj.feed(name, verdict).is_some() {
            break;
        }
    }
    adj.finish()
}

/// The permission gate: approve → pass, ask → deferred ask, deny → veto.
pub fn gate_verdict(decision: &Decision, tool_name: &str) -> ListenerVerdict {
    match decision.verdict {
        Verdict::Approve => ListenerVerdict::Pass,
        Verdict::Ask => ListenerVerdict::Ask(AskKind::Permission(decision.clone())),
        Verdict::Deny => ListenerVerdict::Veto(decision.deny_message(tool_name)),
    }
}

/// The deciding policy of a gate verdict, for "why did it ask?" displays.
pub fn asking_policy(kind: &AskKind) -> Option<PolicyName> {
    match kind {
        AskKind::Permission(d) => Some(d.policy),
        AskKind::PlanReview | AskKind::GoalStart => None,
    }
}

/// Plan mode state of the calling agent.
#[derive(Debug, Clone, Copy)]
pub struct PlanState<'a> {
    pub active: bool,
    /// The resolved plan file path (`<session>/agents/<agent>/plans/<id>.md`).
    pub plan_file: Option<&'a Path>,
}

/// Plan guard (surface.md §9.1): `ExitPlanMode` asks for a plan review unless in auto; in plan
/// mode, writes go only to the plan file (and are then allowed without the chain), other writes
/// and `TaskStop`/`CronCreate`/`CronDelete` are vetoed, everything else follows the chain.
pub fn plan_guard(call: &CallFacts, plan: PlanState<'_>, mode: PermissionMode) -> ListenerVerdict {
    if call.tool_name == "ExitPlanMode" {
        return match mode {
            PermissionMode::Auto => ListenerVerdict::Pass,
            PermissionMode::Manual | PermissionMode::Yolo => {
                ListenerVerdict::Ask(AskKind::PlanReview)
            }
        };
    }
    if !plan.active {
        return ListenerVerdict::Pass;
    }
    if matches!(
        call.tool_name.as_str(),
        "TaskStop" | "CronCreate" | "CronDelete"
    ) {
        return ListenerVerdict::Veto(format!(
            "{} is not available in plan mode. Finish the plan and exit plan mode first.",
            call.tool_name
        ));
    }
    let mut writes = call.write_targets().peekable();
    if writes.peek().is_none() {
        return ListenerVerdict::Pass;
    }
    let all_plan_file = writes.all(|a| plan.plan_file.is_some_and(|p| a.path == p));
    if all_plan_file {
        ListenerVerdict::Allow
    } else {
        let plan_file = plan
            .plan_file
            .map_or_else(|| "the plan file".to_owned(), |p| p.display().to_string());
        ListenerVerdict::Veto(format!(
            "Plan mode is active: only {plan_file} may be written. Describe the change in the \
             plan instead, or exit plan mode first."
        ))
    }
}

/// Goal-start review: outside auto, `CreateGoal` lets the user choose the goal's mode.
pub fn goal_start_review(call: &CallFacts, mode: PermissionMode) -> ListenerVerdict {
    match (call.tool_name.as_str(), mode) {
        ("CreateGoal", PermissionMode::Manual | PermissionMode::Yolo) => {
            ListenerVerdict::Ask(AskKind::GoalStart)
        }
        _ => ListenerVerdict::Pass,
    }
}

/// AgentSwarm must be the only tool call of its model response.
pub fn swarm_exclusive(call: &CallFacts, calls_in_response: usize) -> ListenerVerdict {
    if call.tool_name == "AgentSwarm" && calls_in_response > 1 {
        ListenerVerdict::Veto(
            "AgentSwarm must be the only tool call in its response. Call it again on its own."
                .to_owned(),
        )
    } else {
        ListenerVerdict::Pass
    }
}

/// The `/btw` side agent answers from what it knows: every tool call is refused.
pub fn side_question_guard(call: &CallFacts, is_side_question: bool) -> ListenerVerdict {
    if is_side_question {
        ListenerVerdict::Veto(format!(
            "{} is not available while answering a side question; answer from the conversation.",
            call.tool_name
        ))
    } else {
        ListenerVerdict::Pass
    }
}

/// Dedupe key (core.md §h.2): tool name plus canonical JSON of the parsed args, object keys
/// sorted recursively, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one call.
pub fn dedupe_key(tool_name: &str, args: &Value) -> String {
    fn canonical(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let sorted: BTreeMap<&String, Value> =
                    map.iter().map(|(k, v)| (k, canonical(v))).collect();
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => v.clone(),
        }
    }
    format!("{tool_name}:{}", canonical(args))
}

/// Dedupe listener: a call whose key was already seen in this step reuses that call's result.
pub fn dedupe_verdict(seen_in_step: Option<&str>) -> ListenerVerdict {
    match seen_in_step {
        Some(original) => ListenerVerdict::Duplicate {
            original_call_id: original.to_owned(),
        },
        None => ListenerVerdict::Pass,
    }
}

/// What the stale-write guard knows about one write target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleFacts {
    /// The file's current mtime, or `None` when it does not exist yet.
    pub current_mtime: Option<SystemTime>,
    /// The mtime recorded when this agent last read or wrote it (a Read earlier in the same
    /// batch counts).
    pub recorded_mtime: Option<SystemTime>,
}

/// Stale-write guard: Write/Edit of an existing file needs a prior read whose mtime still holds.
pub fn stale_write_guard(call: &CallFacts, path: &Path, facts: StaleFacts) -> ListenerVerdict {
    if !matches!(call.tool_name.as_str(), "Write" | "Edit") {
        return ListenerVerdict::Pass;
    }
    match (facts.current_mtime, facts.recorded_mtime) {
        (None, _) => ListenerVerdict::Pass,
        (Some(now), Some(seen)) if now == seen => ListenerVerdict::Pass,
        (Some(_), Some(_)) => ListenerVerdict::Veto(format!(
            "{} changed on disk since it was last read. Read it again, then retry the {}.",
            path.display(),
            call.tool_name
        )),
        (Some(_), None) => ListenerVerdict::Veto(format!(
            "{} already exists and has not been read in this session. Read it first, then \
             retry the {}.",
            path.display(),
            call.tool_name
        )),
    }
}
