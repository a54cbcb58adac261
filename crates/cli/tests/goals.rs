//! Goal mode end to end (surface.md §9.2, §1.2): the real `kimi-rs -p "/goal …"` against a
//! loopback scripted model. The run lasts until the goal is terminal and exits 0 complete, 3
//! blocked, 6 paused; continuation turns carry the built-in instruction; budgets in turns,
//! tokens and wall-clock time block the goal and nothing runs after them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{CORE_FORMATS, Fixture, json_lines, tool_results, user_texts};
use kimi_llm::scripted::ScriptTurn;
use pretty_assertions::assert_eq;
use serde_json::Value;

const CONTINUE: &str = "Continue working toward the active goal.";

fn body(fx: &Fixture, i: usize) -> Value {
    serde_json::from_str(&fx.requests()[i].raw_body).unwrap()
}

fn goal_records(journal: &[Value]) -> Vec<Value> {
    journal
        .iter()
        .filter(|r| r["type"].as_str().is_some_and(|t| t.starts_with("goal.")))
        .cloned()
        .collect()
}

#[test]
fn a_goal_continues_until_complete_then_summarizes_and_exits_0() {
    for format in CORE_FORMATS {
        let fx = Fixture::new(
            format,
            vec![
                // The first goal turn: one slice of work, no outcome yet.
                ScriptTurn::tool_calls(&[(
                    "call_1",
                    "Write",
                    r#"{"path":"part1.txt","content":"one\n"}"#,
                )]),
                ScriptTurn::text("Wrote part one; part two is left."),
                // The continuation turn finishes and reports the outcome.
                ScriptTurn::tool_calls(&[(
                    "call_2",
                    "Write",
                    r#"{"path":"part2.txt","content":"two\n"}"#,
                )]),
                ScriptTurn::tool_calls(&[("call_3", "UpdateGoal", r#"{"status":"complete"}"#)]),
                ScriptTurn::text("The goal is complete: both parts are written."),
            ],
        );
        let run = fx.run(&["-p", "/goal write part1.txt and part2.txt"]);
        assert_eq!(run.code, Some(0), "{}: {run:?}", format.1);
        assert!(fx.cwd().join("part2.txt").exists());
        assert!(
            run.stdout
                .contains("The goal is complete: both parts are written."),
            "{run:?}"
        );
        assert!(run.stderr.contains("Goal [complete]"), "{run:?}");
        let requests = fx.requests();
        assert_eq!(requests.len(), 5, "{}", format.1);
        // The first prompt is the objective; the continuation carries the instruction.
        let first = user_texts(&body(&fx, 0));
        assert!(
            first
                .iter()
                .any(|t| t.starts_with("write part1.txt and part2.txt")),
            "{first:?}"
        );
        assert!(!first.iter().any(|t| t.contains(CONTINUE)));
        let third = user_texts(&body(&fx, 2));
        assert!(third.iter().any(|t| t.contains(CONTINUE)), "{third:?}");
        // The summary step sees UpdateGoal's completion prompt.
        let results = tool_results(&body(&fx, 4));
        let summary = &results.last().unwrap().1;
        assert!(
            summary.contains("Goal completed successfully."),
            "{summary}"
        );
        assert!(summary.contains("Worked 2 turns"), "{summary}");
        let journal = fx.journal(&fx.session_ids()[0]);
        let goals = goal_records(&journal);
        assert_eq!(goals.first().unwrap()["type"], "goal.create");
        assert!(
            goals
                .iter()
                .any(|r| r["status"] == "complete" && r["actor"] == "model")
        );
        assert_eq!(goals.last().unwrap()["type"], "goal.clear");
        let continuation = journal.iter().find(|r| {
            r["type"] == "turn.prompt"
                && r["origin"]["kind"] == "system_trigger"
                && r["origin"]["name"] == "goal_continuation"
        });
        assert!(continuation.is_some(), "no goal_continuation turn.prompt");
    }
}

#[test]
fn stream_json_carries_the_goal_events_and_summary() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[("call_1", "UpdateGoal", r#"{"status":"complete"}"#)]),
            ScriptTurn::text("Done."),
        ],
    );
    let run = fx.run(&["-p", "/goal say done", "--output-format", "stream-json"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines = json_lines(&run);
    let goal_lines: Vec<&Value> = lines
        .iter()
        .filter(|l| l["role"] == "meta" && l["type"] == "goal.updated")
        .collect();
    assert!(
        goal_lines
            .iter()
            .any(|l| l["goal"]["status"] == "active" && l["goal"]["objective"] == "say done"),
        "{run:?}"
    );
    assert!(
        goal_lines
            .iter()
            .any(|l| l["change"]["kind"] == "completion"),
        "{run:?}"
    );
    let summary = lines
        .iter()
        .find(|l| l["type"] == "goal.summary")
        .expect("a goal.summary line");
    assert_eq!(summary["status"], "complete");
    assert_eq!(summary["turnsUsed"], 1);
}

#[test]
fn a_goal_the_model_blocks_exits_3() {
    let fx = Fixture::new(
        CORE_FORMATS[1],
        vec![
            ScriptTurn::tool_calls(&[("call_1", "UpdateGoal", r#"{"status":"blocked"}"#)]),
            ScriptTurn::text("Blocked: the credentials are missing."),
        ],
    );
    let run = fx.run(&["-p", "/goal deploy to production"]);
    assert_eq!(run.code, Some(3), "{run:?}");
    assert!(run.stderr.contains("Goal [blocked]"), "{run:?}");
    let results = tool_results(&body(&fx, 1));
    assert!(results[0].1.starts_with("Goal blocked"), "{results:?}");
    assert_eq!(fx.requests().len(), 2, "no continuation after a block");
}

#[test]
fn a_one_turn_budget_blocks_the_goal_and_nothing_runs_after_it() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![ScriptTurn::tool_calls(&[
            ("call_1", "SetGoalBudget", r#"{"value":1,"unit":"turns"}"#),
            (
                "call_2",
                "Write",
                r#"{"path":"after.txt","content":"no\n"}"#,
            ),
        ])],
    );
    let run = fx.run(&["-p", "/goal tidy the repo, stop after 1 turn"]);
    assert_eq!(run.code, Some(3), "{run:?}");
    assert!(
        run.stderr
            .contains("Blocked after goal budget reached: turn budget 1"),
        "{run:?}"
    );
    assert!(
        !fx.cwd().join("after.txt").exists(),
        "a call after the budget ran"
    );
    assert_eq!(fx.requests().len(), 1, "the turn ended with the budget");
    let journal = fx.journal(&fx.session_ids()[0]);
    let results = journal
        .iter()
        .filter(|r| r["type"] == "context.append_loop_event" && r["event"]["type"] == "tool.result")
        .count();
    assert_eq!(results, 2, "both calls got results");
    let blocked = goal_records(&journal)
        .into_iter()
        .find(|r| r["status"] == "blocked")
        .unwrap();
    assert_eq!(blocked["actor"], "runtime");
}

#[test]
fn a_token_budget_blocks_after_a_grace_step_whose_tools_are_rejected() {
    // Every scripted answer reports 5 output tokens: the budget of 10 is reached by the
    // second answer; its call still runs, the grace step's call is rejected.
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_1",
                "SetGoalBudget",
                r#"{"value":10,"unit":"tokens"}"#,
            )]),
            ScriptTurn::tool_calls(&[("call_2", "Write", r#"{"path":"a.txt","content":"a\n"}"#)]),
            ScriptTurn::tool_calls(&[("call_3", "Write", r#"{"path":"b.txt","content":"b\n"}"#)]),
        ],
    );
    let run = fx.run(&["-p", "/goal write files within 10 tokens"]);
    assert_eq!(run.code, Some(3), "{run:?}");
    assert!(
        run.stderr
            .contains("Blocked after goal budget reached: token budget 10"),
        "{run:?}"
    );
    assert!(fx.cwd().join("a.txt").exists());
    assert!(
        !fx.cwd().join("b.txt").exists(),
        "the grace step's call ran"
    );
    assert_eq!(fx.requests().len(), 3);
    let third = body(&fx, 2);
    assert!(
        user_texts(&third)
            .iter()
            .any(|t| t.contains("The goal's hard budget was reached")),
        "the grace step carries the stop reminder"
    );
    let journal = fx.journal(&fx.session_ids()[0]);
    let rejected = journal.iter().any(|r| {
        r["type"] == "context.append_loop_event"
            && r["event"]["toolCallId"] == "call_3"
            && r.to_string().contains("Goal budget exhausted")
    });
    assert!(rejected, "call_3 was not rejected with the budget text");
}

#[test]
fn a_wall_clock_budget_blocks_the_goal() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![
            ScriptTurn::tool_calls(&[(
                "call_1",
                "SetGoalBudget",
                r#"{"value":1,"unit":"seconds"}"#,
            )]),
            // The measured work outlasts the one-second budget.
            ScriptTurn::tool_calls(&[("call_2", "Bash", r#"{"command":"sleep 1.5"}"#)]),
            ScriptTurn::text("Still working."),
        ],
    );
    let run = fx.run(&["-p", "/goal work for at most a second"]);
    assert_eq!(run.code, Some(3), "{run:?}");
    assert!(
        run.stderr
            .contains("Blocked after goal budget reached: wall-clock budget 1000ms"),
        "{run:?}"
    );
    assert_eq!(fx.requests().len(), 3, "no continuation after the block");
}

#[test]
fn a_provider_error_pauses_the_goal_and_exits_6() {
    let fx = Fixture::new(
        CORE_FORMATS[0],
        vec![ScriptTurn::error(
            401,
            r#"{"error":{"message":"bad key","type":"authentication_error"}}"#,
        )],
    );
    let run = fx.run(&["-p", "/goal anything"]);
    assert_eq!(run.code, Some(6), "{run:?}");
    assert!(
        run.stderr
            .contains("Paused after provider authentication error"),
        "{run:?}"
    );
}

#[test]
fn the_four_goal_tools_are_offered_to_the_main_agent() {
    let fx = Fixture::new(CORE_FORMATS[0], vec![ScriptTurn::text("hi")]);
    let run = fx.run(&["-p", "hello"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let names: Vec<String> = body(&fx, 0)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    for tool in ["CreateGoal", "GetGoal", "SetGoalBudget", "UpdateGoal"] {
        assert!(names.iter().any(|n| n == tool), "{tool} missing: {names:?}");
    }
}
