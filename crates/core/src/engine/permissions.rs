//! The permission chain as the engine's `PermissionPolicy`: a tool's execution plan is adapted
//! into the facts the chain decides on (paths resolved against the workspace, so `..` and
//! symlinks pointing out count as outside), and "approve for this session" remembers the
//! canonical subject the model sent.

use std::sync::{Mutex, MutexGuard};

use kimi_protocol::ToolCall;
use kimi_protocol::ops::PermissionMode;
use kimi_tools::tool::RuleSubject;
use kimi_tools::{Access, FileOperation, ToolPlan};
use serde_json::Value;

use super::executor::GateDecision;
use super::runtime::PermissionPolicy;
use crate::permission::{
    AccessOp, CallFacts, FileAccess, PermissionState, Subject, Verdict, Workspace, action_for,
    policy::PolicyName, summary_of,
};

pub struct ChainPolicy {
    state: Mutex<PermissionState>,
    workspace: Workspace,
}

impl ChainPolicy {
    pub fn new(state: PermissionState, workspace: Workspace) -> Self {
        ChainPolicy {
            state: Mutex::new(state),
            workspace,
        }
    }

    fn state(&self) -> MutexGuard<'_, PermissionState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The facts the chain decides on, built from the tool's plan.
    pub fn facts(&self, tool_name: &str, plan: &ToolPlan) -> CallFacts {
        call_facts(&self.workspace, tool_name, plan)
    }
}

/// The facts the chain (and the plan guard) decide on, built from a tool's plan with paths
/// resolved against `workspace`.
pub fn call_facts(workspace: &Workspace, tool_name: &str, plan: &ToolPlan) -> CallFacts {
    let subject = match &plan.subject {
        RuleSubject::Path(path) => Subject::Path(workspace.resolve(path)),
        RuleSubject::Text(text) => Subject::Text(text.clone()),
        RuleSubject::NameOnly => Subject::NameOnly,
    };
    let accesses = plan
        .accesses
        .iter()
        .flatten()
        .filter_map(|access| match access {
            Access::File {
                operation,
                path,
                recursive,
            } => Some(FileAccess {
                op: match operation {
                    FileOperation::Read => AccessOp::Read,
                    FileOperation::Write => AccessOp::Write,
                    FileOperation::Readwrite => AccessOp::Readwrite,
                    FileOperation::Search => AccessOp::Search,
                },
                path: workspace.resolve(path),
                recursive: *recursive,
            }),
            Access::All => None,
        })
        .collect();
    CallFacts::new(tool_name, subject, accesses)
}

impl PermissionPolicy for ChainPolicy {
    fn decide(&self, call: &ToolCall, _args: &Value, plan: &ToolPlan) -> GateDecision {
        let facts = self.facts(&call.name, plan);
        let decision = self.state().decide(&facts, &self.workspace);
        tracing::info!(tool = %call.name, call_id = %call.id, verdict = ?decision.verdict, policy = decision.policy.as_str(), reason = decision.reason.as_deref().unwrap_or(""), "permission decision");
        match decision.verdict {
            Verdict::Approve => GateDecision::Approve,
            Verdict::Deny => GateDecision::Deny(decision.deny_message(&call.name)),
            Verdict::Ask => {
                // The label reads the parse the chain already made.
                let label = facts.shell().and_then(summary_of);
                // A floor ask says why the floor stopped it, next to any danger label.
                let danger = match (decision.policy, decision.reason) {
                    (PolicyName::ProtectedFloor, Some(reason)) => Some(match label {
                        Some(label) => format!("{label}; {reason}"),
                        None => reason,
                    }),
                    _ => label,
                };
                GateDecision::Ask {
                    action: action_for(&facts, &self.workspace),
                    policy: decision.policy.as_str().to_owned(),
                    danger,
                }
            }
        }
    }

    fn set_mode(&self, mode: PermissionMode) {
        self.state().mode.mode = mode;
    }

    fn mode(&self) -> PermissionMode {
        self.state().mode.mode
    }

    fn for_worktree(
        &self,
        worktree: &std::path::Path,
        cwd: &std::path::Path,
    ) -> Option<std::sync::Arc<dyn PermissionPolicy>> {
        let state = self.state().clone();
        Some(std::sync::Arc::new(ChainPolicy::new(
            state,
            self.workspace.rebased(worktree, cwd),
        )))
    }

    fn for_environment(
        &self,
        environment: &str,
        cwd: &std::path::Path,
    ) -> Option<std::sync::Arc<dyn PermissionPolicy>> {
        let state = self.state().clone();
        Some(std::sync::Arc::new(ChainPolicy::new(
            state,
            self.workspace.rebased(cwd, cwd).on_environment(environment),
        )))
    }

    fn remember_session_approval(
        &self,
        call: &ToolCall,
        plan: &ToolPlan,
    ) -> Option<(String, Option<String>)> {
        let facts = self.facts(&call.name, plan);
        let scope = crate::permission::approval_scope(&facts, &self.workspace.environment);
        let rule = facts.approval_rule;
        match self.state().session.grant(&rule, scope.as_deref()) {
            Ok(()) => Some((rule, scope)),
            Err(err) => {
                tracing::warn!("cannot remember approval {rule}: {err}");
                None
            }
        }
    }
}
