//! The v2 permission policy chain (surface.md §3.2, core.md §h.6) with kimi-rs's protected
//! floor after the user's deny rules: thirteen small pure policies,
//! consulted in order; the first that answers decides, and the decision names its policy so a
//! front end can explain why it asked or refused.

use kimi_protocol::ops::PermissionMode;

use super::call::CallFacts;
use super::floor::protected_floor;
use super::paths::{Workspace, is_git_control_path, is_sensitive_path};
use super::rule_set::{RuleDecision, RuleSet};
use super::rules::MatchContext;
use super::session::SessionApprovals;

/// The policies, in chain order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyName {
    AutoModeAskUserQuestionDeny,
    UserConfiguredDeny,
    ProtectedFloor,
    AutoModeApprove,
    SessionApprovalHistory,
    UserConfiguredAsk,
    UserConfiguredAllow,
    SensitiveFileAccessAsk,
    GitControlPathAccessAsk,
    YoloModeApprove,
    DefaultToolApprove,
    GitCwdWriteApprove,
    FallbackAsk,
}

impl PolicyName {
    /// The reference's policy id (used in telemetry and shown to the user).
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyName::AutoModeAskUserQuestionDeny => "auto-mode-ask-user-question-deny",
            PolicyName::UserConfiguredDeny => "user-configured-deny",
            PolicyName::ProtectedFloor => "protected-floor",
            PolicyName::AutoModeApprove => "auto-mode-approve",
            PolicyName::SessionApprovalHistory => "session-approval-history",
            PolicyName::UserConfiguredAsk => "user-configured-ask",
            PolicyName::UserConfiguredAllow => "user-configured-allow",
            PolicyName::SensitiveFileAccessAsk => "sensitive-file-access-ask",
            PolicyName::GitControlPathAccessAsk => "git-control-path-access-ask",
            PolicyName::YoloModeApprove => "yolo-mode-approve",
            PolicyName::DefaultToolApprove => "default-tool-approve",
            PolicyName::GitCwdWriteApprove => "git-cwd-write-approve",
            PolicyName::FallbackAsk => "fallback-ask",
        }
    }
}

/// What the chain decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Approve,
    Ask,
    Deny,
}

/// A decision and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub policy: PolicyName,
    /// The user rule or remembered approval that matched, as written.
    pub rule: Option<String>,
    /// The rule's `reason`, or the policy's own explanation.
    pub reason: Option<String>,
}

impl Decision {
    fn new(verdict: Verdict, policy: PolicyName) -> Decision {
        Decision {
            verdict,
            policy,
            rule: None,
            reason: None,
        }
    }

    /// The tool result text the model gets for a deny.
    pub fn deny_message(&self, tool_name: &str) -> String {
        match (self.policy, &self.rule, &self.reason) {
            (PolicyName::AutoModeAskUserQuestionDeny, _, _) => format!(
                "{tool_name} is not available in auto mode: no one is watching to answer. Make \
                 the decision yourself and continue."
            ),
            (_, Some(rule), Some(reason)) => {
                format!("Tool call denied by permission rule `{rule}`: {reason}")
            }
            (_, Some(rule), None) => format!("Tool call denied by permission rule `{rule}`."),
            (_, None, Some(reason)) => format!("Tool call denied: {reason}"),
            (_, None, None) => format!("Tool call denied by policy {}.", self.policy.as_str()),
        }
    }
}

/// Everything one decision reads. All fields are plain data; no I/O happens in the chain.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInput<'a> {
    pub mode: PermissionMode,
    pub call: &'a CallFacts,
    pub workspace: &'a Workspace,
    pub rules: &'a RuleSet,
    pub session: &'a SessionApprovals,
}

impl PolicyInput<'_> {
    pub(crate) fn ctx(&self) -> MatchContext<'_> {
        MatchContext {
            cwd: self.workspace.canonical_cwd(),
            home: self.workspace.home.as_deref(),
        }
    }
}

type Policy = fn(&PolicyInput<'_>) -> Option<Decision>;

/// The chain, in order.
pub const CHAIN: [(PolicyName, Policy); 13] = [
    (
        PolicyName::AutoModeAskUserQuestionDeny,
        auto_mode_ask_user_question_deny,
    ),
    (PolicyName::UserConfiguredDeny, user_configured_deny),
    // kimi-rs's own: before any mode approves (see `floor`).
    (PolicyName::ProtectedFloor, protected_floor),
    (PolicyName::AutoModeApprove, auto_mode_approve),
    (PolicyName::SessionApprovalHistory, session_approval_history),
    (PolicyName::UserConfiguredAsk, user_configured_ask),
    (PolicyName::UserConfiguredAllow, user_configured_allow),
    (
        PolicyName::SensitiveFileAccessAsk,
        sensitive_file_access_ask,
    ),
    (
        PolicyName::GitControlPathAccessAsk,
        git_control_path_access_ask,
    ),
    (PolicyName::YoloModeApprove, yolo_mode_approve),
    (PolicyName::DefaultToolApprove, default_tool_approve),
    (PolicyName::GitCwdWriteApprove, git_cwd_write_approve),
    (PolicyName::FallbackAsk, fallback_ask),
];

/// Runs the chain: the first policy with an answer decides. `fallback-ask` always answers.
pub fn decide(input: &PolicyInput<'_>) -> Decision {
    CHAIN
        .iter()
        .find_map(|(_, policy)| policy(input))
        .unwrap_or_else(|| Decision::new(Verdict::Ask, PolicyName::FallbackAsk))
}

/// 1: in auto mode nobody answers questions, so the model must decide itself.
pub fn auto_mode_ask_user_question_deny(input: &PolicyInput<'_>) -> Option<Decision> {
    (input.mode == PermissionMode::Auto && input.call.tool_name == "AskUserQuestion")
        .then(|| Decision::new(Verdict::Deny, PolicyName::AutoModeAskUserQuestionDeny))
}

fn rule_decision(
    input: &PolicyInput<'_>,
    class: RuleDecision,
    verdict: Verdict,
    policy: PolicyName,
) -> Option<Decision> {
    input
        .rules
        .first_match(class, input.call, input.ctx())
        .map(|rule| Decision {
            verdict,
            policy,
            rule: Some(rule.pattern.as_str().to_owned()),
            reason: rule.reason.clone(),
        })
}

/// 2: a deny rule wins over every mode, including auto.
pub fn user_configured_deny(input: &PolicyInput<'_>) -> Option<Decision> {
    rule_decision(
        input,
        RuleDecision::Deny,
        Verdict::Deny,
        PolicyName::UserConfiguredDeny,
    )
}

/// 3: auto approves everything that got past the deny rules.
pub fn auto_mode_approve(input: &PolicyInput<'_>) -> Option<Decision> {
    (input.mode == PermissionMode::Auto)
        .then(|| Decision::new(Verdict::Approve, PolicyName::AutoModeApprove))
}

/// 4: "approve for this session" memory.
pub fn session_approval_history(input: &PolicyInput<'_>) -> Option<Decision> {
    input
        .session
        .find(input.call, input.ctx(), &input.workspace.environment)
        .map(|p| Decision {
            verdict: Verdict::Approve,
            policy: PolicyName::SessionApprovalHistory,
            rule: Some(p.as_str().to_owned()),
            reason: None,
        })
}

/// 5.
pub fn user_configured_ask(input: &PolicyInput<'_>) -> Option<Decision> {
    rule_decision(
        input,
        RuleDecision::Ask,
        Verdict::Ask,
        PolicyName::UserConfiguredAsk,
    )
}

/// 6.
pub fn user_configured_allow(input: &PolicyInput<'_>) -> Option<Decision> {
    rule_decision(
        input,
        RuleDecision::Allow,
        Verdict::Approve,
        PolicyName::UserConfiguredAllow,
    )
}

/// 7: secrets are always confirmed (yolo too).
pub fn sensitive_file_access_ask(input: &PolicyInput<'_>) -> Option<Decision> {
    input
        .call
        .accesses
        .iter()
        .find(|a| is_sensitive_path(&a.path))
        .map(|a| Decision {
            reason: Some(format!("{} is a sensitive file", a.path.display())),
            ..Decision::new(Verdict::Ask, PolicyName::SensitiveFileAccessAsk)
        })
}

/// 8: touching git's control files can rewrite history or run hooks.
pub fn git_control_path_access_ask(input: &PolicyInput<'_>) -> Option<Decision> {
    input
        .call
        .accesses
        .iter()
        .find(|a| is_git_control_path(&a.path, input.workspace))
        .map(|a| Decision {
            reason: Some(format!(
                "{} is inside git's control directory",
                a.path.display()
            )),
            ..Decision::new(Verdict::Ask, PolicyName::GitControlPathAccessAsk)
        })
}

/// 9.
pub fn yolo_mode_approve(input: &PolicyInput<'_>) -> Option<Decision> {
    (input.mode == PermissionMode::Yolo)
        .then(|| Decision::new(Verdict::Approve, PolicyName::YoloModeApprove))
}

/// Tools approved without asking in manual mode (surface.md §3.2 policy 10).
pub const DEFAULT_APPROVED_TOOLS: [&str; 23] = [
    "Read",
    "Grep",
    "Glob",
    "ReadMediaFile",
    "SetTodoList",
    "TodoList",
    "TaskList",
    "TaskOutput",
    "WaitFor",
    "CronList",
    "WebSearch",
    "FetchURL",
    "Agent",
    "AgentSwarm",
    "AskUserQuestion",
    "Skill",
    "EnterPlanMode",
    "ExitPlanMode",
    "CreateGoal",
    "GetGoal",
    "SetGoalBudget",
    "UpdateGoal",
    "select_tools",
];

/// 10.
pub fn default_tool_approve(input: &PolicyInput<'_>) -> Option<Decision> {
    DEFAULT_APPROVED_TOOLS
        .contains(&input.call.tool_name.as_str())
        .then(|| Decision::new(Verdict::Approve, PolicyName::DefaultToolApprove))
}

/// 11: inside a git work tree, writes within the workspace are recoverable, so they need no
/// confirmation. Every write target must be inside, and there must be at least one.
pub fn git_cwd_write_approve(input: &PolicyInput<'_>) -> Option<Decision> {
    let ws = input.workspace;
    let is_write_tool = matches!(input.call.tool_name.as_str(), "Write" | "Edit");
    let mut targets = input.call.write_targets().peekable();
    let has_targets = targets.peek().is_some();
    let all_inside = targets.all(|a| ws.contains(&a.path));
    (is_write_tool && ws.posix && ws.git.is_some() && has_targets && all_inside)
        .then(|| Decision::new(Verdict::Approve, PolicyName::GitCwdWriteApprove))
}

/// 12.
pub fn fallback_ask(_input: &PolicyInput<'_>) -> Option<Decision> {
    Some(Decision::new(Verdict::Ask, PolicyName::FallbackAsk))
}
