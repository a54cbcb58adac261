//! Goal mode in the UI: `/goal <objective>` outside auto mode asks which permission mode the
//! goal runs in, then starts it; the goal strip follows `goal.updated`; a completion asks the
//! engine for the next queued goal; `/goal status` and the queue listing are shown.

use crossterm::event::KeyCode;
use kimi_protocol::host::{
    GoalActor, GoalBudgetReport, GoalChange, GoalSnapshot, GoalStatus, QueuedGoal,
};
use kimi_protocol::ops::{Event, GoalAction, Op, PermissionMode};
use kimi_tui::UiAction;

use super::support::Harness;

fn snapshot(status: GoalStatus, turns: u64) -> GoalSnapshot {
    GoalSnapshot {
        goal_id: "g1".into(),
        objective: "ship the parser".into(),
        completion_criterion: None,
        status,
        turns_used: turns,
        tokens_used: 120,
        wall_clock_ms: 3000,
        budget: GoalBudgetReport {
            turn_budget: Some(5),
            remaining_turns: Some(5 - turns),
            ..GoalBudgetReport::default()
        },
        terminal_reason: None,
    }
}

fn ops(h: &mut Harness) -> Vec<Op> {
    h.actions()
        .into_iter()
        .filter_map(|a| match a {
            UiAction::Op(op) => Some(op),
            _ => None,
        })
        .collect()
}

#[test]
fn a_goal_started_in_manual_mode_asks_for_its_permission_mode_first() {
    let mut h = Harness::new();
    h.type_str("/goal ship the parser");
    h.key(KeyCode::Enter);
    assert!(
        !ops(&mut h).iter().any(|op| matches!(op, Op::Goal { .. })),
        "nothing starts before the choice"
    );
    let screen = h.screen(80, 12);
    assert!(screen.contains("which permission mode"), "{screen}");
    // The first choice is auto.
    h.key(KeyCode::Enter);
    let sent = ops(&mut h);
    assert_eq!(
        sent,
        [
            Op::SetPermissionMode {
                mode: PermissionMode::Auto
            },
            Op::Goal {
                action: GoalAction::Start {
                    objective: "ship the parser".into(),
                    replace: false
                }
            }
        ]
    );
}

#[test]
fn the_goal_strip_follows_the_goal_and_completion_asks_for_the_next_one() {
    let mut h = Harness::new();
    h.event(Event::GoalUpdated {
        goal: Some(snapshot(GoalStatus::Active, 0)),
        change: None,
    });
    let screen = h.screen(90, 10);
    assert!(screen.contains("◎ goal active · 0 turns"), "{screen}");
    assert!(screen.contains("Goal set: ship the parser"), "{screen}");
    h.event(Event::GoalUpdated {
        goal: Some(snapshot(GoalStatus::Paused, 2)),
        change: Some(GoalChange::Lifecycle {
            status: GoalStatus::Paused,
            reason: Some("Paused after interruption".into()),
            actor: GoalActor::User,
        }),
    });
    let screen = h.screen(90, 10);
    assert!(screen.contains("◎ goal paused · 2 turns"), "{screen}");
    assert!(screen.contains("Paused after interruption"), "{screen}");
    h.type_str("/goal status");
    h.key(KeyCode::Enter);
    assert_eq!(
        ops(&mut h),
        [Op::Goal {
            action: GoalAction::Status
        }]
    );
    h.event(Event::GoalUpdated {
        goal: Some(snapshot(GoalStatus::Paused, 2)),
        change: None,
    });
    let screen = h.screen(90, 16);
    assert!(screen.contains("Objective: ship the parser"), "{screen}");
    h.event(Event::GoalUpdated {
        goal: Some(snapshot(GoalStatus::Complete, 3)),
        change: Some(GoalChange::Completion {
            reason: None,
            turns_used: 3,
            tokens_used: 120,
            wall_clock_ms: 3000,
            actor: GoalActor::Model,
        }),
    });
    h.event(Event::GoalUpdated {
        goal: None,
        change: None,
    });
    assert_eq!(
        ops(&mut h),
        [Op::Goal {
            action: GoalAction::StartNext
        }]
    );
    let screen = h.screen(90, 16);
    assert!(screen.contains("Goal complete. Worked 3 turns"), "{screen}");
    assert!(
        !screen.contains("◎ goal"),
        "the strip goes with the goal: {screen}"
    );
}

#[test]
fn the_queue_is_listed_and_edited_by_number() {
    let mut h = Harness::new();
    h.type_str("/goal next manage");
    h.key(KeyCode::Enter);
    assert_eq!(
        ops(&mut h),
        [Op::Goal {
            action: GoalAction::QueueList
        }]
    );
    h.event(Event::GoalQueue {
        goals: vec![
            QueuedGoal {
                id: "q1".into(),
                objective: "write docs".into(),
                created_at: 1,
            },
            QueuedGoal {
                id: "q2".into(),
                objective: "cut a release".into(),
                created_at: 2,
            },
        ],
    });
    let screen = h.screen(90, 12);
    assert!(screen.contains("2. cut a release"), "{screen}");
    h.type_str("/goal next up 2");
    h.key(KeyCode::Enter);
    assert_eq!(
        ops(&mut h),
        [Op::Goal {
            action: GoalAction::QueueMove {
                id: "q2".into(),
                up: true
            }
        }]
    );
}
