//! Table tests for the before-execute listeners (dedupe, permission gate, plan guard, goal
//! review, swarm exclusivity, PreToolUse hooks, stale-write guard, side question): each has at
//! least one case that executes, one that asks and one that is refused, combined through the
//! adjudicator exactly as the executor will.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap fixture I/O

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use kimi_core::hooks::{HookEvent, HookRun, RunStatus, combine, interpret, pre_tool_use_verdict};
use kimi_core::permission::policy;
use kimi_core::permission::{
    AccessOp, Adjudication, AskKind, CallFacts, ListenerName, ListenerVerdict, PlanState,
    PolicyInput, RuleSet, SessionApprovals, StaleFacts, Workspace, adjudicate, dedupe_key,
    dedupe_verdict, gate_verdict, goal_start_review, plan_guard, side_question_guard,
    stale_write_guard, swarm_exclusive,
};
use kimi_protocol::ops::PermissionMode::{Auto, Manual, Yolo};
use pretty_assertions::assert_eq;
use serde_json::json;

struct Env {
    _dir: tempfile::TempDir,
    ws: Workspace,
    root: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    for d in ["ws/.git", "ws/src"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let ws = Workspace::new(&root.join("ws"), &[], Some(&root));
    Env {
        _dir: dir,
        ws,
        root,
    }
}

fn outcome_class(a: &Adjudication) -> &'static str {
    match a {
        Adjudication::Execute { .. } => "execute",
        Adjudication::AskUser { .. } => "ask",
        Adjudication::Vetoed { .. } | Adjudication::Duplicate { .. } => "deny",
    }
}

fn hook_verdict(status: RunStatus, stdout: &str, stderr: &str) -> ListenerVerdict {
    let run = HookRun {
        command: "h".into(),
        status,
        stdout: stdout.into(),
        stderr: stderr.into(),
        pid: None,
    };
    let ev = HookEvent::PreToolUse;
    pre_tool_use_verdict(&combine(ev, [interpret(ev, &run)]))
}

#[test]
fn every_listener_executes_asks_and_vetoes() {
    use ListenerName as L;
    use ListenerVerdict as V;
    let e = env();
    let plan_file = e.root.join("plans/p.md");
    let write = |p: &str| CallFacts::path("Write", AccessOp::Write, p, &e.ws);
    let plan_write = write(&plan_file.to_string_lossy());
    let other_write = write("src/a.rs");
    let active = PlanState {
        active: true,
        plan_file: Some(&plan_file),
    };
    let inactive = PlanState {
        active: false,
        plan_file: None,
    };
    let ask_gate = gate_verdict(
        &policy::fallback_ask(&PolicyInput {
            mode: Manual,
            call: &other_write,
            workspace: &e.ws,
            rules: &RuleSet::default(),
            session: &SessionApprovals::default(),
        })
        .unwrap(),
        "Write",
    );
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
    let t1 = t0 + Duration::from_secs(1);
    let stale = |current, recorded| {
        stale_write_guard(
            &other_write,
            Path::new("src/a.rs"),
            StaleFacts {
                current_mtime: current,
                recorded_mtime: recorded,
            },
        )
    };
    let deny_json = r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"policy says no"}}"#;

    type Row = (
        ListenerName,
        Vec<(ListenerName, ListenerVerdict)>,
        &'static str,
    );
    let rows: Vec<Row> = vec![
        // dedupe
        (
            L::Dedupe,
            vec![
                (L::Dedupe, dedupe_verdict(None)),
                (L::PermissionGate, V::Pass),
            ],
            "execute",
        ),
        (
            L::Dedupe,
            vec![
                (L::Dedupe, dedupe_verdict(None)),
                (L::PermissionGate, ask_gate.clone()),
            ],
            "ask",
        ),
        (
            L::Dedupe,
            vec![
                (L::Dedupe, dedupe_verdict(Some("call_1"))),
                (L::PermissionGate, ask_gate.clone()),
            ],
            "deny",
        ),
        // permission gate
        (
            L::PermissionGate,
            vec![(L::PermissionGate, V::Pass)],
            "execute",
        ),
        (
            L::PermissionGate,
            vec![(L::PermissionGate, ask_gate.clone())],
            "ask",
        ),
        (
            L::PermissionGate,
            vec![
                (L::PermissionGate, V::Veto("denied".into())),
                (L::PlanGuard, V::Allow),
            ],
            "deny",
        ),
        // plan guard: plan-file write is allowed even though the gate asked (allow short-circuits)
        (
            L::PlanGuard,
            vec![
                (L::PermissionGate, ask_gate.clone()),
                (L::PlanGuard, plan_guard(&plan_write, active, Manual)),
            ],
            "execute",
        ),
        (
            L::PlanGuard,
            vec![
                (L::PermissionGate, V::Pass),
                (
                    L::PlanGuard,
                    plan_guard(&CallFacts::name_only("ExitPlanMode"), active, Yolo),
                ),
            ],
            "ask",
        ),
        (
            L::PlanGuard,
            vec![
                (L::PermissionGate, ask_gate.clone()),
                (L::PlanGuard, plan_guard(&other_write, active, Manual)),
            ],
            "deny",
        ),
        (
            L::PlanGuard,
            vec![
                (L::PermissionGate, V::Pass),
                (
                    L::PlanGuard,
                    plan_guard(&CallFacts::name_only("TaskStop"), active, Auto),
                ),
            ],
            "deny",
        ),
        (
            L::PlanGuard,
            vec![
                (L::PermissionGate, V::Pass),
                (L::PlanGuard, plan_guard(&other_write, inactive, Manual)),
            ],
            "execute",
        ),
        // goal-start review
        (
            L::GoalStartReview,
            vec![(
                L::GoalStartReview,
                goal_start_review(&CallFacts::name_only("CreateGoal"), Auto),
            )],
            "execute",
        ),
        (
            L::GoalStartReview,
            vec![(
                L::GoalStartReview,
                goal_start_review(&CallFacts::name_only("CreateGoal"), Manual),
            )],
            "ask",
        ),
        (
            L::GoalStartReview,
            vec![
                (
                    L::GoalStartReview,
                    goal_start_review(&CallFacts::name_only("CreateGoal"), Yolo),
                ),
                (
                    L::PreToolUseHook,
                    hook_verdict(RunStatus::Exited(2), "", "no goals"),
                ),
            ],
            "deny",
        ),
        // swarm exclusivity
        (
            L::SwarmExclusive,
            vec![(
                L::SwarmExclusive,
                swarm_exclusive(&CallFacts::name_only("AgentSwarm"), 1),
            )],
            "execute",
        ),
        (
            L::SwarmExclusive,
            vec![
                (L::PermissionGate, ask_gate.clone()),
                (
                    L::SwarmExclusive,
                    swarm_exclusive(&CallFacts::name_only("Agent"), 3),
                ),
            ],
            "ask",
        ),
        (
            L::SwarmExclusive,
            vec![(
                L::SwarmExclusive,
                swarm_exclusive(&CallFacts::name_only("AgentSwarm"), 2),
            )],
            "deny",
        ),
        // PreToolUse hooks (real interpretation of exit codes and output)
        (
            L::PreToolUseHook,
            vec![(
                L::PreToolUseHook,
                hook_verdict(RunStatus::Exited(0), "fine", ""),
            )],
            "execute",
        ),
        (
            L::PreToolUseHook,
            vec![(
                L::PreToolUseHook,
                hook_verdict(RunStatus::TimedOut { after_secs: 1 }, "", ""),
            )],
            "execute",
        ),
        (
            L::PreToolUseHook,
            vec![
                (L::PermissionGate, ask_gate.clone()),
                (
                    L::PreToolUseHook,
                    hook_verdict(RunStatus::Exited(1), "", "crash"),
                ),
            ],
            "ask",
        ),
        (
            L::PreToolUseHook,
            vec![
                (L::PermissionGate, ask_gate.clone()),
                (
                    L::PreToolUseHook,
                    hook_verdict(RunStatus::Exited(2), "", "blocked"),
                ),
            ],
            "deny",
        ),
        (
            L::PreToolUseHook,
            vec![(
                L::PreToolUseHook,
                hook_verdict(RunStatus::Exited(0), deny_json, ""),
            )],
            "deny",
        ),
        // stale-write guard
        (
            L::StaleWriteGuard,
            vec![(L::StaleWriteGuard, stale(None, None))],
            "execute",
        ),
        (
            L::StaleWriteGuard,
            vec![(L::StaleWriteGuard, stale(Some(t0), Some(t0)))],
            "execute",
        ),
        (
            L::StaleWriteGuard,
            vec![
                (L::PermissionGate, ask_gate.clone()),
                (L::StaleWriteGuard, stale(Some(t0), Some(t0))),
            ],
            "ask",
        ),
        (
            L::StaleWriteGuard,
            vec![
                (L::PermissionGate, ask_gate.clone()),
                (L::StaleWriteGuard, stale(Some(t1), Some(t0))),
            ],
            "deny",
        ),
        (
            L::StaleWriteGuard,
            vec![(L::StaleWriteGuard, stale(Some(t0), None))],
            "deny",
        ),
        // /btw side question
        (
            L::SideQuestion,
            vec![(L::SideQuestion, side_question_guard(&other_write, false))],
            "execute",
        ),
        (
            L::SideQuestion,
            vec![
                (L::PermissionGate, ask_gate.clone()),
                (L::SideQuestion, side_question_guard(&other_write, false)),
            ],
            "ask",
        ),
        (
            L::SideQuestion,
            vec![
                (L::PermissionGate, ask_gate),
                (L::SideQuestion, side_question_guard(&other_write, true)),
            ],
            "deny",
        ),
    ];
    let mut coverage: HashMap<ListenerName, BTreeSet<&str>> = HashMap::new();
    for (focus, verdicts, expected) in rows {
        let shown = format!("{verdicts:?}");
        let got = adjudicate(verdicts);
        assert_eq!(
            outcome_class(&got),
            expected,
            "{focus:?}: {shown} → {got:?}"
        );
        coverage.entry(focus).or_default().insert(expected);
    }
    for name in [
        L::Dedupe,
        L::PermissionGate,
        L::PlanGuard,
        L::GoalStartReview,
        L::SwarmExclusive,
        L::PreToolUseHook,
        L::StaleWriteGuard,
        L::SideQuestion,
    ] {
        assert_eq!(
            coverage.get(&name).cloned().unwrap_or_default(),
            BTreeSet::from(["ask", "deny", "execute"]),
            "coverage of {}",
            name.as_str()
        );
    }
}

#[test]
fn adjudication_details() {
    use ListenerName as L;
    use ListenerVerdict as V;
    // First veto wins and later listeners are not consulted.
    assert_eq!(
        adjudicate([
            (L::PermissionGate, V::Ask(AskKind::PlanReview)),
            (L::PlanGuard, V::Veto("first".into())),
            (L::StaleWriteGuard, V::Veto("second".into())),
        ]),
        Adjudication::Vetoed {
            by: L::PlanGuard,
            message: "first".into()
        }
    );
    // The first deferred ask is the one shown.
    assert_eq!(
        adjudicate([
            (L::PermissionGate, V::Ask(AskKind::GoalStart)),
            (L::PlanGuard, V::Ask(AskKind::PlanReview)),
        ]),
        Adjudication::AskUser {
            by: L::PermissionGate,
            kind: AskKind::GoalStart
        }
    );
    assert_eq!(
        adjudicate([(L::Dedupe, dedupe_verdict(Some("c1")))]),
        Adjudication::Duplicate {
            original_call_id: "c1".into()
        }
    );
    // Dedupe keys ignore object key order.
    assert_eq!(
        dedupe_key(
            "Read",
            &json!({"path": "a", "opts": {"y": 1, "x": [2, {"b": 1, "a": 0}]}})
        ),
        dedupe_key(
            "Read",
            &json!({"opts": {"x": [2, {"a": 0, "b": 1}], "y": 1}, "path": "a"})
        )
    );
    assert_ne!(
        dedupe_key("Read", &json!({"path": "a"})),
        dedupe_key("Grep", &json!({"path": "a"}))
    );
}
