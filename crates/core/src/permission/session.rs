//! Session approval memory (surface.md §3.4): "approve for this session" remembers the call's
//! approval rule — the canonical subject the model sent, never a shell-wrapped form — journals it
//! as `permission.record_approval_result`, and is rebuilt from those records on resume.

use kimi_protocol::ops::ApprovalDecision;
use kimi_protocol::record::ApprovalResult;
use serde_json::{Value, json};

use super::call::CallFacts;
use super::rules::{MatchContext, PatternError, RulePattern};

/// The remembered session approvals of one agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionApprovals {
    patterns: Vec<RulePattern>,
}

impl SessionApprovals {
    /// Remembers an approval rule; remembering the same rule twice keeps one copy.
    pub fn grant(&mut self, approval_rule: &str) -> Result<(), PatternError> {
        let pattern = RulePattern::parse(approval_rule)?;
        if !self.patterns.contains(&pattern) {
            self.patterns.push(pattern);
        }
        Ok(())
    }

    /// The remembered rule that covers this call, if any.
    pub fn find(&self, call: &CallFacts, ctx: MatchContext<'_>) -> Option<&RulePattern> {
        self.patterns.iter().find(|p| p.matches(call, ctx))
    }

    /// The remembered rules as written.
    pub fn rules(&self) -> Vec<&str> {
        self.patterns.iter().map(RulePattern::as_str).collect()
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
                // A rule that no longer compiles (written by another version) is dropped: the
                // user is simply asked again, which is the safe direction.
                let _ignored = memory.grant(&rule);
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
        assert!(memory.find(&call, ctx()).is_some());
        // Exact, not a prefix.
        assert!(
            memory
                .find(&CallFacts::text("Bash", "npm run test && rm -rf /"), ctx())
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
        m.grant("TodoList").unwrap();
        m.grant("TodoList").unwrap();
        assert_eq!(m.rules(), vec!["TodoList"]);
        assert!(m.grant("Bash(a[").is_err());
    }
}
