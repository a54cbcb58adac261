//! The permission state one agent carries: its mode, the session's user rules and its
//! remembered approvals — and what a subagent it dispatches starts with.

use super::call::CallFacts;
use super::mode::{ModeState, inherit_for_subagent};
use super::paths::Workspace;
use super::policy::{Decision, PolicyInput, decide};
use super::rule_set::RuleSet;
use super::session::SessionApprovals;

/// Mode, rules and session approvals of one agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionState {
    pub mode: ModeState,
    /// Loaded from `config.toml` at session start (unlike the reference snapshot, always).
    pub rules: RuleSet,
    pub session: SessionApprovals,
}

impl PermissionState {
    /// Runs the policy chain for one call.
    pub fn decide(&self, call: &CallFacts, workspace: &Workspace) -> Decision {
        decide(&PolicyInput {
            mode: self.mode.mode,
            call,
            workspace,
            rules: &self.rules,
            session: &self.session,
        })
    }

    /// A subagent inherits the caller's mode, the rules and the session approvals so far.
    pub fn for_subagent(&self) -> PermissionState {
        PermissionState {
            mode: inherit_for_subagent(self.mode),
            rules: self.rules.clone(),
            session: self.session.inherit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use kimi_protocol::ops::PermissionMode;

    use super::*;
    use crate::permission::policy::{PolicyName, Verdict};

    #[test]
    fn subagent_inherits_mode_and_approvals() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path(), &[], None);
        let mut parent = PermissionState::default();
        parent.mode.mode = PermissionMode::Manual;
        parent.mode.plan = true;
        let call = CallFacts::text("Bash", "make test");
        assert_eq!(parent.decide(&call, &ws).verdict, Verdict::Ask);
        parent.session.grant(&call.approval_rule, None).unwrap();
        let child = parent.for_subagent();
        let d = child.decide(&call, &ws);
        assert_eq!(
            (d.verdict, d.policy),
            (Verdict::Approve, PolicyName::SessionApprovalHistory)
        );
        assert!(!child.mode.plan);
        assert_eq!(child.mode.mode, PermissionMode::Manual);
    }
}
