//! AskUserQuestion end to end: the model asks, the test answers through `Op::Answer` the way
//! the front ends do, and the tool result the model receives carries the answer; a dismissed
//! question; a cancel while the question waits.

use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use kimi_protocol::question::Answers;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Dirs, Session, tool_results};

const ARGS: &str = r#"{"questions":[{"question":"Which database?","header":"DB","options":[{"label":"SQLite","description":"a file"},{"label":"Postgres"}]},{"question":"Which extras?","options":[{"label":"Cache"},{"label":"Search"},{"label":"Metrics"}],"multi_select":true}]}"#;

/// The answer payload a front end sent, read as the engine reads `Op::Answer`.
fn answers(payload: Value) -> Answers {
    Answers::from_json(&payload).expect("a readable answer payload")
}

async fn asked(s: &mut Session) -> (String, Value) {
    match s
        .wait_for(|e| matches!(e, Event::QuestionRequested { .. }))
        .await
    {
        Event::QuestionRequested {
            request_id,
            questions,
        } => (request_id, serde_json::to_value(questions).unwrap()),
        _ => unreachable!(),
    }
}

fn script() -> Vec<ScriptTurn> {
    vec![
        ScriptTurn::tool_calls(&[("call_ask", "AskUserQuestion", ARGS)]),
        ScriptTurn::text("Thanks."),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_reaches_the_model_as_the_tool_result() {
    for format in [ProviderType::OpenAi, ProviderType::Anthropic] {
        let dirs = Dirs::new();
        let mut s = Session::start(&dirs, format, script()).await;
        s.submit("Set up the project.");
        let (id, questions) = asked(&mut s).await;
        assert_eq!(questions["questions"][0]["question"], "Which database?");
        assert_eq!(questions["questions"][1]["multi_select"], true);
        assert_eq!(questions["questions"][0]["options"][1]["label"], "Postgres");

        // An answer to a question nobody asked is refused and the question keeps waiting.
        s.send(Op::Answer {
            request_id: id.clone(),
            answers: answers(json!({"answers": {"Which colour?": "Blue"}})),
        });
        let warning = s.wait_for(|e| matches!(e, Event::Warning { .. })).await;
        assert!(
            matches!(&warning, Event::Warning { message } if message.contains("still waiting") && message.contains("Which colour?")),
            "{warning:?}"
        );

        // The TUI's shape: a label per question, a list for multi-select, free text = Other.
        s.send(Op::Answer {
            request_id: id.clone(),
            answers: answers(json!({"answers": {"Which database?": "Postgres", "Which extras?": ["Cache", "Metrics"]}})),
        });
        let (reason, error) = s.turn_end().await;
        assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
        let requests = s.requests();
        assert_eq!(requests.len(), 2);
        let results = tool_results(&requests[1].body);
        assert_eq!(results.len(), 1);
        assert!(!results[0].reads_as_error(), "{results:#?}");
        assert_eq!(
            results[0].text,
            "The user answered:\nQ: Which database?\nA: Postgres\nQ: Which extras?\nA: Cache; Metrics",
            "{format:?}"
        );
        // Answered once: a second answer finds nothing waiting.
        s.send(Op::Answer {
            request_id: id.clone(),
            answers: answers(json!({"answers": {"Which database?": "SQLite"}})),
        });
        s.wait_for(|e| matches!(e, Event::Warning { message } if message.contains(&id) && message.contains("no question")))
            .await;
        s.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_kinds_and_other_text_are_read() {
    let dirs = Dirs::new();
    let mut s = Session::start(&dirs, ProviderType::Anthropic, script()).await;
    s.submit("Set up the project.");
    let (id, _) = asked(&mut s).await;
    s.send(Op::Answer {
        request_id: id,
        answers: answers(json!({"answers": {
            "q0": {"kind": "other", "text": "MySQL, for legacy reasons"},
            "q1": {"kind": "multi_with_other", "option_ids": ["opt_1"], "other_text": "Tracing"}
        }, "method": "enter"})),
    });
    let (reason, _) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Completed);
    let results = tool_results(&s.requests()[1].body);
    assert_eq!(
        results[0].text,
        "The user answered:\nQ: Which database?\nA: Other: MySQL, for legacy reasons\nQ: Which extras?\nA: Search; Other: Tracing"
    );
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissed_question_tells_the_model_not_to_ask_again() {
    let dirs = Dirs::new();
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script()).await;
    s.submit("Set up the project.");
    let (id, _) = asked(&mut s).await;
    s.send(Op::Answer {
        request_id: id,
        answers: answers(json!({"dismissed": true})),
    });
    let (reason, _) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Completed);
    let results = tool_results(&s.requests()[1].body);
    assert!(
        results[0]
            .text
            .starts_with("The user dismissed the questions"),
        "{results:#?}"
    );
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_question_waits_ends_the_call_as_interrupted() {
    let dirs = Dirs::new();
    let mut s = Session::start(&dirs, ProviderType::Anthropic, script()).await;
    s.submit("Set up the project.");
    let (id, _) = asked(&mut s).await;
    s.send(Op::Cancel { queued: false });
    let result = s.wait_for(|e| matches!(e, Event::ToolResult { .. })).await;
    let Event::ToolResult {
        tool_call_id,
        output,
        is_error,
    } = result
    else {
        unreachable!()
    };
    assert_eq!(tool_call_id, "call_ask");
    assert!(is_error);
    let text = format!("{output:?}");
    assert!(text.contains("interrupted"), "{text}");
    let (reason, _) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Cancelled);
    assert_eq!(
        s.requests().len(),
        1,
        "nothing is sent to the model after a cancel"
    );
    // The question is gone: a late answer is refused.
    s.send(Op::Answer {
        request_id: id.clone(),
        answers: answers(json!({"answers": {"Which database?": "SQLite"}})),
    });
    s.wait_for(|e| matches!(e, Event::Warning { message } if message.contains(&id)))
        .await;
    s.close().await;
}
