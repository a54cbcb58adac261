//! Goal mode in a real session (surface.md §9.2) against the loopback scripted model: the
//! goal tools in every permission mode, the goal-start review choosing the goal's mode, an
//! interrupt pausing the goal and `/goal resume` continuing it, idle goal turns backing off,
//! undo leaving the goal alone, and the workspace's queue starting the next goal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Each test binary uses its own part of the shared harness.
#[allow(dead_code)]
#[path = "engine/harness.rs"]
mod harness;

use kimi_core::permission::PermissionState;
use kimi_llm::ProviderType;
use kimi_llm::scripted::{ScriptEvent, ScriptTurn};
use kimi_protocol::host::{GoalChange, GoalSnapshot, GoalStatus};
use kimi_protocol::ops::{ApprovalDecision, Event, GoalAction, Op, PermissionMode, TurnEndReason};
use pretty_assertions::assert_eq;
use serde_json::Value;

use harness::{Dirs, Options, Session};

const GOAL_TOOLS: [&str; 4] = ["CreateGoal", "GetGoal", "SetGoalBudget", "UpdateGoal"];

fn options(mode: PermissionMode, plan: bool) -> Options {
    let mut options = Options::new(ProviderType::OpenAi);
    let mut state = PermissionState::default();
    state.mode.mode = mode;
    state.mode.plan = plan;
    options.permission_chain = Some(state);
    options
}

fn goal(session: &Session) -> Option<GoalSnapshot> {
    session
        .opened
        .agent
        .handle
        .runtime()
        .config
        .goal
        .as_ref()
        .unwrap()
        .snapshot()
}

fn start_goal(session: &Session, objective: &str) {
    session.send(Op::Goal {
        action: GoalAction::Start {
            objective: objective.to_owned(),
            replace: false,
        },
    });
}

fn complete_turn(summary: &str) -> Vec<ScriptTurn> {
    vec![
        ScriptTurn::tool_calls(&[("call_done", "UpdateGoal", r#"{"status":"complete"}"#)]),
        ScriptTurn::text(summary),
    ]
}

fn is_completion(event: &Event) -> bool {
    matches!(
        event,
        Event::GoalUpdated {
            change: Some(GoalChange::Completion { .. }),
            ..
        }
    )
}

#[tokio::test]
async fn the_goal_tools_are_offered_in_every_mode() {
    for mode in [
        PermissionMode::Manual,
        PermissionMode::Yolo,
        PermissionMode::Auto,
    ] {
        for plan in [false, true] {
            let dirs = Dirs::new();
            let mut s =
                Session::start_with(&dirs, options(mode, plan), vec![ScriptTurn::text("hi")]).await;
            assert_eq!(s.run("hello").await.0, TurnEndReason::Completed);
            let body: Value = serde_json::from_str(&s.requests()[0].raw_body).unwrap();
            let names: Vec<&str> = body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect();
            for tool in GOAL_TOOLS {
                assert!(
                    names.contains(&tool),
                    "{mode:?} plan={plan}: {tool} missing"
                );
            }
        }
    }
}

#[tokio::test]
async fn the_goal_start_review_lets_the_user_pick_the_goals_mode() {
    let dirs = Dirs::new();
    let mut turns = vec![
        ScriptTurn::tool_calls(&[(
            "call_1",
            "CreateGoal",
            r#"{"objective":"refactor the parser"}"#,
        )]),
        ScriptTurn::text("Goal set; starting."),
    ];
    turns.extend(complete_turn("Refactored."));
    let mut s = Session::start_with(&dirs, options(PermissionMode::Manual, false), turns).await;
    s.submit("make the parser a goal");
    let Event::ApprovalRequested(request) = s
        .wait_for(|e| matches!(e, Event::ApprovalRequested(_)))
        .await
    else {
        unreachable!()
    };
    assert_eq!(request.policy, "goal-start-review-ask");
    let labels: Vec<&str> = request.options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(labels, ["auto", "yolo", "manual"]);
    s.send(Op::Approve {
        request_id: request.request_id,
        decision: ApprovalDecision::ApproveOption {
            label: "auto".to_owned(),
        },
    });
    // The model's goal continues in a continuation turn until it completes.
    s.wait_for(is_completion).await;
    s.wait_for(|e| matches!(e, Event::TurnEnded { .. })).await;
    let runtime = s.opened.agent.handle.runtime().clone();
    assert_eq!(runtime.config.permissions.mode(), PermissionMode::Auto);
    let journal = s.journal();
    assert!(
        journal
            .iter()
            .any(|r| r["type"] == "permission.set_mode" && r["mode"] == "auto")
    );
    let created = journal.iter().find(|r| r["type"] == "goal.create").unwrap();
    assert_eq!(created["objective"], "refactor the parser");
    // The starter turn and its continuation are both counted.
    let completed = journal
        .iter()
        .find(|r| r["type"] == "goal.update" && r["status"] == "complete")
        .unwrap();
    assert_eq!(completed["actor"], "model");
    assert_eq!(goal(&s), None);
}

#[tokio::test]
async fn an_interrupt_pauses_the_goal_and_resume_continues_it() {
    let dirs = Dirs::new();
    let mut turns = vec![ScriptTurn::reply(vec![
        ScriptEvent::text("working"),
        ScriptEvent::stall(),
    ])];
    turns.extend(complete_turn("Finished after the resume."));
    let mut s = Session::start_with(&dirs, options(PermissionMode::Auto, false), turns).await;
    start_goal(&s, "long task");
    s.wait_for(|e| matches!(e, Event::AssistantDelta { .. }))
        .await;
    s.send(Op::Cancel { queued: false });
    assert_eq!(s.turn_end().await.0, TurnEndReason::Cancelled);
    let paused = goal(&s).unwrap();
    assert_eq!(paused.status, GoalStatus::Paused);
    assert_eq!(
        paused.terminal_reason.as_deref(),
        Some("Paused after interruption")
    );
    s.send(Op::Goal {
        action: GoalAction::Resume,
    });
    s.wait_for(is_completion).await;
    s.wait_for(|e| matches!(e, Event::TurnEnded { .. })).await;
    let resumed: Value = serde_json::from_str(&s.requests()[1].raw_body).unwrap();
    assert!(
        harness::user_texts(&resumed)
            .iter()
            .any(|t| t.contains("Resume the active goal.")),
        "{resumed}"
    );
    assert_eq!(goal(&s), None);
}

#[tokio::test]
async fn idle_goal_turns_back_off_and_undo_leaves_the_goal_alone() {
    let dirs = Dirs::new();
    // Two goal turns without a tool call: the next continuation waits (a minute), so the
    // agent goes idle with the goal still active.
    let turns = vec![
        ScriptTurn::text("thinking"),
        ScriptTurn::text("still thinking"),
    ];
    let mut s = Session::start_with(&dirs, options(PermissionMode::Auto, false), turns).await;
    start_goal(&s, "ponder");
    s.turn_end().await;
    s.turn_end().await;
    s.barrier().await;
    let active = goal(&s).unwrap();
    assert_eq!((active.status, active.turns_used), (GoalStatus::Active, 2));
    assert_eq!(
        s.requests().len(),
        2,
        "the third turn waits out the back-off"
    );
    s.send(Op::Goal {
        action: GoalAction::Pause,
    });
    s.barrier().await;
    let before = goal(&s).unwrap();
    assert_eq!(before.status, GoalStatus::Paused);
    s.send(Op::Undo { count: 1 });
    s.wait_for(|e| matches!(e, Event::ContextUndone { .. }))
        .await;
    let after = goal(&s).unwrap();
    assert_eq!(
        (after.goal_id, after.status, after.turns_used),
        (before.goal_id, GoalStatus::Paused, 2)
    );
}

#[tokio::test]
async fn the_queue_starts_the_next_goal_once_the_current_one_completes() {
    let dirs = Dirs::new();
    let mut turns = complete_turn("First done.");
    turns.extend(complete_turn("Second done."));
    let mut s = Session::start_with(&dirs, options(PermissionMode::Auto, false), turns).await;
    // No goal yet: `/goal next` starts it now; a second one waits in the queue.
    s.send(Op::Goal {
        action: GoalAction::Next {
            objective: "first".to_owned(),
        },
    });
    s.send(Op::Goal {
        action: GoalAction::Next {
            objective: "second".to_owned(),
        },
    });
    let Event::GoalQueue { goals: queued } =
        s.wait_for(|e| matches!(e, Event::GoalQueue { .. })).await
    else {
        unreachable!()
    };
    let objectives: Vec<&str> = queued.iter().map(|g| g.objective.as_str()).collect();
    assert_eq!(objectives, ["second"]);
    s.wait_for(is_completion).await;
    s.turn_end().await;
    // What a front end does after a completion.
    s.send(Op::Goal {
        action: GoalAction::StartNext,
    });
    let started = s
        .wait_for(|e| matches!(e, Event::GoalUpdated { goal: Some(g), change: None } if g.objective == "second"))
        .await;
    assert!(matches!(started, Event::GoalUpdated { .. }));
    s.wait_for(is_completion).await;
    s.turn_end().await;
    let creates = s
        .journal()
        .iter()
        .filter(|r| r["type"] == "goal.create")
        .count();
    assert_eq!(creates, 2);
    let queue = kimi_core::goal::queue::GoalQueue::for_workspace(dirs.home.path(), &dirs.cwd());
    assert!(queue.list().unwrap().is_empty());
}
