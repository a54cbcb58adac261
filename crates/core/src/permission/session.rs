//! Session approval memory (surface.md §3.4): "approve for this session" remembers the call's
//! approval rule — the canonical subject the model sent, never a shell-wrapped form — journals it
//! as `permission.record_approval_result`, and is rebuilt from those records on resume.
//!
//! A path-based approval holds on the execution environment it was given on only: `/srv/app`
//! on `ssh:prod` is not `/srv/app` on this machine or another target (fail closed).

use kimi_protocol::ops::ApprovalDecision;
use kimi_protocol::record::ApprovalResult;
use serde_json::{Value, json};

use super::call::{CallFacts, Subject};
use super::rules::{MatchContext, PatternError, RulePattern};

/// The remembered session approvals of one agent: each rule, and the environment it holds on
/// (`None`: everywhere — rules that name no path).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionApprovals {
    patterns: Vec<(RulePattern, Option<String>)>,
}

/// The environment a path-based approval of `call` made on `environment` holds on; `None` for
/// rules that name no path.
pub fn approval_scope(call: &CallFacts, environment: &str) -> Option<String> {
    matches!(call.subject, Subject::Path(_)).then(|| environment.to_owned())
}

impl SessionApprovals {
    /// Remembers an approval rule, holding on `environment` only when given; remembering the
    /// same rule twice keeps one copy.
    pub fn grant(
        &mut self,
        approval_rule: &str,
        environment: Option<&str>,
    ) -> Result<(), PatternError> {
        let entry = (
            RulePattern::parse(approval_rule)?,
            environment.map(str::to_owned),
        );
        if !self.patterns.contains(&entry) {
            self.patterns.push(entry);
        }
        Ok(())
    }

    /// The remembered rule that covers this call on `environment`, if any.
    pub fn find(
        &self,
        call: &CallFacts,
        ctx: MatchContext<'_>,
        environment: &str,
    ) -> Option<&RulePattern> {
        self.patterns
            .iter()
            .filter(|(_, scope)| scope.as_deref().is_none_or(|s| s == environment))
            .map(|(pattern, _)| pattern)
            .find(|p| p.matches(call, ctx))
    }

    /// The remembered rules as written.
    pub fn rules(&self) -> Vec<&str> {
        self.patterns.iter().map(|(p, _)| p.as_str()).collect()
    }

    /// What a subagent dispatched by this agent starts with: a copy of the grants so far.
    pub fn inherit(&self) -> SessionApprovals {
        self.clone()
    }

    /// Rebuilds the memory from journal records, in journal order. Records from before wire
    /// protocol 1.2 lack `sessionApprovalRule`; they get the migrated rule. A remembered rule
    /// that no longer parses is skipped rather than failing the resume.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a ApprovalResult>) -> Self {
        let mut memory = SessionApprovals::default();
        for record in records {
            let rule = match &record.session_approval_rule {
                Some(rule) => Some(rule.clone()),
                None if is_session_approval(&record.result) => {
                    legacy_session_rule(&record.action, &record.tool_name)
                }
                None => None,
            };
            if let Some(rule) = rule {
                // A path rule recorded before approvals knew environments was given here:
                // the approval rule of a path call names the resolved, absolute path.
                let scope = record.environment.clone().or_else(|| {
                    rule.split_once("(/")
                        .map(|_| crate::session::LOCAL_ENVIRONMENT.to_owned())
                });
                // A rule that no longer compiles (written by another version) is dropped: the
                // user is simply asked again, which is the safe direction.
                let _ignored = memory.grant(&rule, scope.as_deref());
            }
        }
        memory
    }
}

fn is_session_approval(result: &Value) -> bool {
    result.get("decision").and_then(Value::as_str) == Some("approved")
        && result.get("scope").and_then(Value::as_str) == Some("session")
}

/// The 1.1→1.2 wire migration (core.md §g.5): the session rule an old approved-for-session
/// record implies, from its action text.
pub fn legacy_session_rule(action: &str, tool_name: &str) -> Option<String> {
    match action {
        "run command in plan mode" | "run background command" => None,
        "run command" => Some("Bash".to_owned()),
        "stop background task" => Some("TaskStop".to_owned()),
        "edit file" | "edit file outside of working directory" | "write file" => {
            Some("Write".to_owned())
        }
        _ => Some(tool_name.to_owned()),
    }
}

/// Identifies the call an approval answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalContext<'a> {
    pub agent_id: Option<&'a str>,
    pub turn_id: Option<Value>,
    pub tool_call_id: &'a str,
    pub action: &'a str,
}

/// The `permission.record_approval_result` record for a user's answer. `sessionApprovalRule`
/// is set only for approve-for-session, and it is the call's own approval rule.
pub fn approval_record(
    ctx: &ApprovalContext<'_>,
    call: &CallFacts,
    decision: &ApprovalDecision,
    environment: &str,
) -> ApprovalResult {
    let (result, rule) = match decision {
        ApprovalDecision::ApproveOnce => (json!({"decision": "approved"}), None),
        ApprovalDecision::ApproveOption { label } => (
            json!({"decision": "approved", "selectedLabel": label}),
            None,
        ),
        ApprovalDecision::ApproveForSession => (
            json!({"decision": "approved", "scope": "session"}),
            Some(call.approval_rule.clone()),
        ),
        ApprovalDecision::Reject => (json!({"decision": "rejected"}), None),
        ApprovalDecision::RejectWithFeedback { feedback } => {
            (json!({"decision": "rejected", "feedback": feedback}), None)
        }
    };
    ApprovalResult {
        agent_id: ctx.agent_id.map(str::to_owned),
        turn_id: ctx.turn_id.clone(),
        tool_call_id: ctx.tool_call_id.to_owned(),
        tool_name: call.tool_name.clone(),
        action: ctx.action.to_owned(),
        environment: rule
            .as_ref()
            .and_then(|_| approval_scope(call, environment)),
        session_approval_rule: rule,
        result,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn ctx() -> MatchContext<'static> {
        MatchContext {
            cwd: Path::new("/w"),
            home: None,
        }
    }

    fn record(call: &CallFacts, decision: &ApprovalDecision) -> ApprovalResult {
        approval_record(
            &ApprovalContext {
                agent_id: Some("main"),
                turn_id: Some(json!(3)),
                tool_call_id: "call_1",
                action: "run command",
            },
            call,
            decision,
            "local",
        )
    }

    #[test]
    fn session_grant_roundtrips_through_the_journal() {
        let call = CallFacts::text("Bash", "npm run test");
        let rec = record(&call, &ApprovalDecision::ApproveForSession);
        let json = serde_json::to_value(&rec).unwrap();
        assert_eq!(
            json,
            json!({"agentId": "main", "turnId": 3, "toolCallId": "call_1", "toolName": "Bash",
                   "action": "run command", "sessionApprovalRule": "Bash(npm run test)",
                   "result": {"decision": "approved", "scope": "session"}})
        );
        let once = record(&call, &ApprovalDecision::ApproveOnce);
        let rejected = record(
            &call,
            &ApprovalDecision::RejectWithFeedback {
                feedback: "no".into(),
            },
        );
        assert_eq!(once.session_approval_rule, None);
        assert_eq!(
            rejected.result,
            json!({"decision": "rejected", "feedback": "no"})
        );

        let memory = SessionApprovals::from_records([&once, &rec, &rejected]);
        assert_eq!(memory.rules(), vec!["Bash(npm run test)"]);
        assert!(memory.find(&call, ctx(), "local").is_some());
        // A command is not a path: its approval holds on every environment.
        assert!(memory.find(&call, ctx(), "box").is_some());
        // Exact, not a prefix.
        assert!(
            memory
                .find(
                    &CallFacts::text("Bash", "npm run test && rm -rf /"),
                    ctx(),
                    "local"
                )
                .is_none()
        );
        assert_eq!(memory.inherit(), memory);
    }

    #[test]
    fn legacy_records_are_migrated() {
        let legacy = |action: &str, tool: &str, result: Value| ApprovalResult {
            agent_id: None,
            turn_id: None,
            tool_call_id: "c".into(),
            tool_name: tool.into(),
            action: action.into(),
            session_approval_rule: None,
            environment: None,
            result,
        };
        let session = json!({"decision": "approved", "scope": "session"});
        let records = [
            legacy("run command", "Bash", session.clone()),
            legacy(
                "edit file outside of working directory",
                "Edit",
                session.clone(),
            ),
            legacy("run command in plan mode", "Bash", session.clone()),
            legacy("call mcp tool", "mcp__s__t", session),
            legacy(
                "stop background task",
                "TaskStop",
                json!({"decision": "approved"}),
            ),
        ];
        let memory = SessionApprovals::from_records(&records);
        assert_eq!(memory.rules(), vec!["Bash", "Write", "mcp__s__t"]);
    }

    #[test]
    fn grant_dedupes_and_rejects_bad_rules() {
        let mut m = SessionApprovals::default();
        m.grant("TodoList", None).unwrap();
        m.grant("TodoList", None).unwrap();
        assert_eq!(m.rules(), vec!["TodoList"]);
        assert!(m.grant("Bash(a[", None).is_err());
    }

    #[test]
    fn a_path_approval_holds_on_the_environment_it_was_given_on_only() {
        let dir = tempfile::tempdir().unwrap();
        let ws = crate::permission::Workspace::new(dir.path(), &[], None);
        let call = CallFacts::path(
            "Write",
            crate::permission::AccessOp::Write,
            "notes.txt",
            &ws,
        );
        let rec = record_on(&call, "box-a");
        assert_eq!(rec.environment.as_deref(), Some("box-a"));
        let json = serde_json::to_value(&rec).unwrap();
        assert_eq!(json["environment"], "box-a");
        let memory = SessionApprovals::from_records([&rec]);
        let here = MatchContext {
            cwd: &ws.cwd,
            home: None,
        };
        assert!(memory.find(&call, here, "box-a").is_some());
        assert!(memory.find(&call, here, "box-b").is_none());
        assert!(memory.find(&call, here, "local").is_none());
        // A subagent inherits the scope with the rule.
        assert!(memory.inherit().find(&call, here, "local").is_none());
        // A path rule journaled before approvals knew environments was given on this machine.
        let mut legacy = rec;
        legacy.environment = None;
        let memory = SessionApprovals::from_records([&legacy]);
        assert!(memory.find(&call, here, "local").is_some());
        assert!(memory.find(&call, here, "box-a").is_none());
    }

    fn record_on(call: &CallFacts, environment: &str) -> ApprovalResult {
        approval_record(
            &ApprovalContext {
                agent_id: None,
                turn_id: None,
                tool_call_id: "call_2",
                action: "write file",
            },
            call,
            &ApprovalDecision::ApproveForSession,
            environment,
        )
    }
}
