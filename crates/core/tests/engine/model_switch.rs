//! `/effort` and `/btw` at the engine: the effort reaches the next request and survives resume
//! (`model.set`); a side question gets a tool-less request with the conversation so far and
//! leaves nothing in the history, even while a turn runs.

use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, Op, TurnEndReason};

use crate::harness::{Dirs, Options, Session};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effort_switch_reaches_the_next_request_and_survives_resume() {
    let dirs = Dirs::new();
    let mut s = Session::start(
        &dirs,
        ProviderType::OpenAi,
        vec![ScriptTurn::text("first"), ScriptTurn::text("second")],
    )
    .await;
    s.send(Op::SetEffort {
        effort: "nonsense".into(),
    });
    s.wait_for(
        |e| matches!(e, Event::Error { message } if message.contains("not a thinking effort")),
    )
    .await;
    s.send(Op::SetEffort {
        effort: "low".into(),
    });
    let changed = s
        .wait_for(|e| matches!(e, Event::ModelChanged { .. }))
        .await;
    let Event::ModelChanged { effort, .. } = changed else {
        unreachable!()
    };
    assert_eq!(effort.as_deref(), Some("low"));
    // Without a model catalog the session cannot switch models, and says so.
    s.send(Op::SetModel {
        alias: "other".into(),
    });
    s.wait_for(
        |e| matches!(e, Event::Error { message } if message.contains("cannot switch models")),
    )
    .await;
    assert_eq!(s.run("go").await.0, TurnEndReason::Completed);
    assert_eq!(s.requests()[0].body["reasoning_effort"], "low");
    let journal = s.journal();
    let set = journal.iter().rfind(|r| r["type"] == "model.set").unwrap();
    assert_eq!(set["effort"], "low");
    let id = s.session_id();
    s.close().await;
    let server_requests = s.requests().len();
    drop(s);
    assert_eq!(server_requests, 1);

    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = Resume::Id(id);
    let mut s = Session::start_with(&dirs, options, vec![ScriptTurn::text("again")]).await;
    assert!(s.opened.warnings.is_empty(), "{:?}", s.opened.warnings);
    assert_eq!(s.run("more").await.0, TurnEndReason::Completed);
    assert_eq!(s.requests()[0].body["reasoning_effort"], "low");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_question_sees_the_conversation_without_tools_and_leaves_no_trace() {
    let dirs = Dirs::new();
    let mut s = Session::start(
        &dirs,
        ProviderType::OpenAi,
        vec![
            ScriptTurn::text("Noted the codeword."),
            ScriptTurn::text("Four."),
            ScriptTurn::text("Back to work."),
        ],
    )
    .await;
    assert_eq!(
        s.run("the codeword is TANGERINE").await.0,
        TurnEndReason::Completed
    );
    s.send(Op::Btw {
        question: "what is 2+2".into(),
    });
    let answered = s.wait_for(|e| matches!(e, Event::BtwAnswered { .. })).await;
    let Event::BtwAnswered {
        question,
        answer,
        error,
    } = answered
    else {
        unreachable!()
    };
    assert_eq!(
        (question.as_str(), answer.as_str()),
        ("what is 2+2", "Four.")
    );
    assert_eq!(error, None);
    assert_eq!(s.run("continue").await.0, TurnEndReason::Completed);
    let requests = s.requests();
    assert_eq!(requests.len(), 3);
    let side = &requests[1];
    assert!(side.body.get("tools").is_none(), "{}", side.raw_body);
    assert!(side.raw_body.contains("TANGERINE"), "{}", side.raw_body);
    assert!(side.raw_body.contains("what is 2+2"), "{}", side.raw_body);
    assert!(requests[2].body.get("tools").is_some());
    assert!(
        !requests[2].raw_body.contains("2+2"),
        "{}",
        requests[2].raw_body
    );
    assert!(
        !requests[2].raw_body.contains("Four."),
        "{}",
        requests[2].raw_body
    );
    let journal = std::fs::read_to_string(s.journal_path()).unwrap();
    assert!(
        !journal.contains("2+2"),
        "the side question is not journaled"
    );

    s.send(Op::Btw {
        question: "   ".into(),
    });
    s.wait_for(
        |e| matches!(e, Event::Error { message } if message.contains("/btw needs a question")),
    )
    .await;
}
