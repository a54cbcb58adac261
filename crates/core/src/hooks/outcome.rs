//! What a finished hook process means (surface.md §6.2), as pure functions: exit 0 allows
//! (stdout is text or a JSON decision), exit 2 blocks with stderr as the reason, everything
//! else fails open with a warning; and how the results of all hooks of one event combine.

use serde_json::Value;

use super::event::HookEvent;
use crate::permission::ListenerVerdict;

/// How the hook process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    Exited(i32),
    /// Killed by a signal it did not get from us.
    Signalled,
    /// Ran past its timeout; its process group was killed.
    TimedOut {
        after_secs: u64,
    },
    SpawnFailed(String),
}

/// One finished hook run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    pub command: String,
    pub status: RunStatus,
    pub stdout: String,
    pub stderr: String,
    /// The process id, which is also its process-group id.
    pub pid: Option<u32>,
}

/// The meaning of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    Allow { message: Option<String> },
    Block { reason: String },
    FailOpen { warning: String },
}

/// Interprets one run. A JSON object on stdout may carry `message` and
/// `hookSpecificOutput {message, permissionDecision, permissionDecisionReason}`; stdout that is
/// not a JSON object is plain text.
pub fn interpret(event: HookEvent, run: &HookRun) -> HookOutcome {
    match &run.status {
        RunStatus::Exited(0) => interpret_stdout(event, run.stdout.trim()),
        RunStatus::Exited(2) => {
            let reason = run.stderr.trim();
            HookOutcome::Block {
                reason: if reason.is_empty() {
                    format!("Blocked by {} hook", event.as_str())
                } else {
                    reason.to_owned()
                },
            }
        }
        RunStatus::Exited(code) => HookOutcome::FailOpen {
            warning: with_stderr(
                format!(
                    "hook `{}` exited with code {code}; ignoring it",
                    run.command
                ),
                &run.stderr,
            ),
        },
        RunStatus::Signalled => HookOutcome::FailOpen {
            warning: with_stderr(
                format!("hook `{}` was killed by a signal; ignoring it", run.command),
                &run.stderr,
            ),
        },
        RunStatus::TimedOut { after_secs } => HookOutcome::FailOpen {
            warning: format!(
                "hook `{}` did not finish within {after_secs} s and was killed; ignoring it \
                 (raise `timeout`, up to 600, if it needs longer)",
                run.command
            ),
        },
        RunStatus::SpawnFailed(why) => HookOutcome::FailOpen {
            warning: format!(
                "hook `{}` could not be started: {why}; ignoring it",
                run.command
            ),
        },
    }
}

fn with_stderr(text: String, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        text
    } else {
        format!("{text}: {stderr}")
    }
}

fn interpret_stdout(event: HookEvent, stdout: &str) -> HookOutcome {
    let plain = || HookOutcome::Allow {
        message: (!stdout.is_empty()).then(|| stdout.to_owned()),
    };
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(stdout) else {
        return plain();
    };
    let specific = obj.get("hookSpecificOutput").and_then(Value::as_object);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let message =
        text(specific.and_then(|s| s.get("message"))).or_else(|| text(obj.get("message")));
    let decision = specific
        .and_then(|s| s.get("permissionDecision"))
        .and_then(Value::as_str);
    if decision == Some("deny") {
        let reason = text(specific.and_then(|s| s.get("permissionDecisionReason")))
            .or(message)
            .unwrap_or_else(|| format!("Blocked by {} hook", event.as_str()));
        return HookOutcome::Block { reason };
    }
    HookOutcome::Allow { message }
}

/// The combined result of every hook that ran for one event occurrence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventResult {
    /// Set only for events that honour blocking; the reasons of all blocking hooks.
    pub blocked: Option<String>,
    /// Text from allowing hooks (appended to context for UserPromptSubmit).
    pub messages: Vec<String>,
    /// Fail-open warnings to show the user.
    pub warnings: Vec<String>,
}

/// Combines per-hook outcomes (in hook order). Blocks from events that do not honour them are
/// dropped: those hooks are observers.
pub fn combine(event: HookEvent, outcomes: impl IntoIterator<Item = HookOutcome>) -> EventResult {
    let mut result = EventResult::default();
    let mut reasons = Vec::new();
    for outcome in outcomes {
        match outcome {
            HookOutcome::Allow { message } => result.messages.extend(message),
            HookOutcome::Block { reason } => {
                if event.honours_block() {
                    reasons.push(reason);
                }
            }
            HookOutcome::FailOpen { warning } => result.warnings.push(warning),
        }
    }
    if !reasons.is_empty() {
        result.blocked = Some(reasons.join("\n"));
    }
    result
}

/// The PreToolUse hooks as a before-execute listener: a block vetoes the call with the reason.
pub fn pre_tool_use_verdict(result: &EventResult) -> ListenerVerdict {
    match &result.blocked {
        Some(reason) => ListenerVerdict::Veto(reason.clone()),
        None => ListenerVerdict::Pass,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: RunStatus, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            command: "hook.sh".into(),
            status,
            stdout: stdout.into(),
            stderr: stderr.into(),
            pid: None,
        }
    }

    #[test]
    fn interpretation_table() {
        let e = HookEvent::PreToolUse;
        let allow = |m: Option<&str>| HookOutcome::Allow {
            message: m.map(str::to_owned),
        };
        let block = |r: &str| HookOutcome::Block { reason: r.into() };
        let cases = vec![
            (run(RunStatus::Exited(0), "", ""), allow(None)),
            (
                run(RunStatus::Exited(0), "  hello \n", ""),
                allow(Some("hello")),
            ),
            (
                run(RunStatus::Exited(0), "{not json", ""),
                allow(Some("{not json")),
            ),
            (run(RunStatus::Exited(0), "[1,2]", ""), allow(Some("[1,2]"))),
            (
                run(RunStatus::Exited(0), r#"{"message":"m"}"#, ""),
                allow(Some("m")),
            ),
            (
                run(
                    RunStatus::Exited(0),
                    r#"{"message":"outer","hookSpecificOutput":{"message":"inner"}}"#,
                    "",
                ),
                allow(Some("inner")),
            ),
            (
                run(
                    RunStatus::Exited(0),
                    r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"nope"}}"#,
                    "",
                ),
                block("nope"),
            ),
            (
                run(
                    RunStatus::Exited(0),
                    r#"{"hookSpecificOutput":{"permissionDecision":"deny"}}"#,
                    "",
                ),
                block("Blocked by PreToolUse hook"),
            ),
            (
                run(
                    RunStatus::Exited(0),
                    r#"{"hookSpecificOutput":{"permissionDecision":"allow"}}"#,
                    "",
                ),
                allow(None),
            ),
            (run(RunStatus::Exited(2), "", " no rm \n"), block("no rm")),
            (
                run(RunStatus::Exited(2), "", ""),
                block("Blocked by PreToolUse hook"),
            ),
        ];
        for (r, expected) in cases {
            assert_eq!(interpret(e, &r), expected, "{r:?}");
        }
        for status in [
            RunStatus::Exited(1),
            RunStatus::Signalled,
            RunStatus::TimedOut { after_secs: 3 },
            RunStatus::SpawnFailed("no sh".into()),
        ] {
            assert!(
                matches!(
                    interpret(e, &run(status.clone(), "", "")),
                    HookOutcome::FailOpen { .. }
                ),
                "{status:?}"
            );
        }
    }

    #[test]
    fn combine_honours_blocks_only_where_allowed() {
        let outcomes = || {
            vec![
                HookOutcome::Allow {
                    message: Some("a".into()),
                },
                HookOutcome::Block {
                    reason: "r1".into(),
                },
                HookOutcome::FailOpen {
                    warning: "w".into(),
                },
                HookOutcome::Block {
                    reason: "r2".into(),
                },
            ]
        };
        let stop = combine(HookEvent::Stop, outcomes());
        assert_eq!(
            stop,
            EventResult {
                blocked: Some("r1\nr2".into()),
                messages: vec!["a".into()],
                warnings: vec!["w".into()],
            }
        );
        let post = combine(HookEvent::PostToolUse, outcomes());
        assert_eq!(post.blocked, None);
        assert_eq!(pre_tool_use_verdict(&post), ListenerVerdict::Pass);
        assert_eq!(
            pre_tool_use_verdict(&stop),
            ListenerVerdict::Veto("r1\nr2".into())
        );
    }
}
