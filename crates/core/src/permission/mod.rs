//! Permission modes, the v2 policy chain, user rules, session approval memory, the
//! before-execute listeners and dangerous-command labels (surface.md §3). Everything here is a
//! pure function over plain data, except resolving paths against the file system, which
//! happens once when a call's facts are built ([`Workspace::resolve`]).
//!
//! How the engine uses it for one tool call:
//! 0. at session start: [`resolve_mode`], [`load_rules_from_str`] (report its errors), and on
//!    resume [`SessionApprovals::from_records`]; keep them in a [`PermissionState`];
//! 1. build [`CallFacts`] from the tool's plan with [`CallFacts::new`] (paths resolved with
//!    [`Workspace::resolve`]); the approval rule is derived there, escaped, rather than taken
//!    from the plan, so a remembered approval matches exactly its own subject;
//!    For Bash the command line is parsed once ([`shell::parse`]) into the simple commands it
//!    runs; user rules and the protected floor ([`floor`]) both decide on that parse;
//! 2. feed the listeners in order into an [`Adjudicator`]: [`dedupe_verdict`], then
//!    [`gate_verdict`] of [`decide`], [`plan_guard`], [`goal_start_review`], [`swarm_exclusive`],
//!    the PreToolUse hooks (`crate::hooks::pre_tool_use_verdict`), [`stale_write_guard`],
//!    [`side_question_guard`] — stopping as soon as `feed` returns a settled outcome;
//! 3. on [`Adjudication::AskUser`], send [`approval_request`] (Bash commands carry their
//!    [`danger_summary`] label), journal the answer with [`approval_record`] and, for
//!    approve-for-session, [`SessionApprovals::grant`] the call's approval rule.
//!
//! The optional OS sandbox for Bash lives in [`sandbox`].

mod call;
mod danger;
pub mod floor;
mod listeners;
mod mode;
mod paths;
pub mod policy;
mod request;
mod rule_set;
mod rules;
pub mod sandbox;
mod session;
pub mod shell;
mod state;

pub use call::{
    AccessOp, CallFacts, FileAccess, Subject, approval_rule_for, escape_glob, is_shell_tool,
};
pub use danger::{DangerLabel, danger_labels, danger_summary, labels_of, summary_of};
pub use floor::{Finding, Protected, findings, protected_floor};
pub use listeners::{
    Adjudication, Adjudicator, AskKind, ListenerName, ListenerVerdict, PlanState, StaleFacts,
    adjudicate, asking_policy, dedupe_key, dedupe_verdict, gate_verdict, goal_start_review,
    plan_guard, side_question_guard, stale_write_guard, swarm_exclusive,
};
pub use mode::{ModeInputs, ModeState, inherit_for_subagent, mode_name, parse_mode, resolve_mode};
pub use paths::{
    GitInfo, Workspace, expand_tilde, is_git_control_path, is_sensitive_path, normalize_lexically,
};
pub use policy::{
    CHAIN, DEFAULT_APPROVED_TOOLS, Decision, PolicyInput, PolicyName, Verdict, decide,
};
pub use request::{ApprovalDisplay, action_for, approval_request, ask_reason};
pub use rule_set::{
    ConfigSyntaxError, LoadedRules, PermissionRule, RuleDecision, RuleLoadError, RuleProblem,
    RuleScope, RuleSet, load_rules, load_rules_from_str, load_rules_from_value,
};
pub use rules::{MatchContext, PatternError, RulePattern};
pub use session::{
    ApprovalContext, SessionApprovals, approval_record, approval_scope, legacy_session_rule,
};

pub use state::PermissionState;

/// Errors from mode resolution.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    #[error(
        "`default_permission_mode = {value:?}` is not a mode; use \"manual\", \"yolo\" or \"auto\""
    )]
    InvalidMode { value: String },
    #[error("--yolo and --auto cannot be used together; pick one")]
    ConflictingModeFlags,
}
