use super::*;

fn service() -> (GoalService, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (GoalService::new(None, tx), rx)
}

#[test]
fn a_goal_turn_is_counted_once_and_continued() {
    let (goals, _rx) = service();
    let (_, records) = goals.create("ship it", None, false, false).unwrap();
    assert_eq!(records.len(), 1);
    assert!(goals.turn_started(1).is_empty());
    assert_eq!(goals.step_started(1).len(), 1);
    assert!(goals.step_started(1).is_empty());
    goals.tool_finished(1);
    let (_, next) = goals.turn_ended(1, &TurnOutcome::Completed);
    let next = next.unwrap();
    assert_eq!(next.delay, Duration::ZERO);
    assert_eq!(next.prompt, text::CONTINUATION_PROMPT);
    assert_eq!(goals.snapshot().unwrap().turns_used, 1);
}

#[test]
fn a_reached_token_budget_blocks_and_grants_one_grace_step() {
    let (goals, _rx) = service();
    let _ = goals.create("ship it", None, false, false).unwrap();
    let _ = goals.set_budget(GoalBudgetLimits {
        token_budget: Some(10),
        ..GoalBudgetLimits::default()
    });
    let _ = goals.turn_started(1);
    let _ = goals.step_started(1);
    let records = goals.record_usage(1, 12);
    assert_eq!(records.len(), 2, "tokens then the block");
    let snap = goals.snapshot().unwrap();
    assert_eq!(snap.status, GoalStatus::Blocked);
    assert_eq!(
        snap.terminal_reason.as_deref(),
        Some("Blocked after goal budget reached: token budget 10")
    );
    assert_eq!(goals.after_step(1, true, true), AfterStep::Grace);
    assert_eq!(goals.veto(1, "Bash"), Some(text::BUDGET_TOOLS_REJECTED));
    assert_eq!(goals.after_step(1, true, true), AfterStep::Stop);
    let (_, next) = goals.turn_ended(1, &TurnOutcome::Completed);
    assert_eq!(next, None);
}

#[test]
fn stale_goal_calls_are_vetoed_and_interrupts_pause() {
    let (goals, _rx) = service();
    let _ = goals.create("first", None, false, false).unwrap();
    let _ = goals.turn_started(1);
    assert_eq!(goals.veto(1, UPDATE_GOAL), None);
    assert_eq!(
        goals.create("second", None, false, false).unwrap_err(),
        GoalError::AlreadyExists
    );
    let _ = goals.create("second", None, true, false).unwrap();
    assert_eq!(goals.veto(1, UPDATE_GOAL), Some(text::STALE_TOOL_RESULT));
    assert_eq!(goals.veto(1, GET_GOAL), None);
    let _ = goals.turn_started(2);
    let (records, next) = goals.turn_ended(2, &TurnOutcome::Cancelled);
    assert_eq!((records.len(), next), (1, None));
    let snap = goals.snapshot().unwrap();
    assert_eq!(snap.status, GoalStatus::Paused);
    assert_eq!(
        snap.terminal_reason.as_deref(),
        Some(text::PAUSED_AFTER_INTERRUPTION)
    );
}

#[test]
fn completion_clears_the_goal_and_resume_pauses_an_active_one() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let goals = GoalService::new(None, tx);
    let (_, mut records) = goals.create("ship it", None, false, false).unwrap();
    let restored = GoalState::fold(records.iter());
    let resumed = GoalService::new(restored, mpsc::unbounded_channel().0);
    let paused = resumed.normalize_after_resume();
    assert_eq!(paused.len(), 1);
    assert_eq!(resumed.snapshot().unwrap().status, GoalStatus::Paused);
    let (snap, done) = goals.complete(GoalActor::Model).unwrap();
    assert_eq!(snap.status, GoalStatus::Complete);
    records.extend(done);
    assert_eq!(GoalState::fold(records.iter()), None);
    assert_eq!(goals.snapshot(), None);
    let mut saw_completion = false;
    while let Ok(event) = rx.try_recv() {
        if let Event::GoalUpdated {
            change: Some(GoalChange::Completion { .. }),
            ..
        } = event
        {
            saw_completion = true;
        }
    }
    assert!(saw_completion);
}
