//! A steer while a tool runs, and a cancel while a tool runs (then resume).

use kimi_core::session::Resume;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ContentPart;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::harness::{
    Dirs, Options, Session, WAIT, mkfifo, record_kind, release_fifo, tool_results, user_texts,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_sent_while_a_tool_runs_reaches_the_next_request_as_a_user_message() {
    for format in [ProviderType::OpenAi, ProviderType::Anthropic] {
        let dirs = Dirs::new();
        let fifo = dirs.file("gate.fifo");
        mkfifo(&fifo);
        let script = vec![
            ScriptTurn::tool_calls(&[("call_wait", "Bash", r#"{"command":"cat gate.fifo"}"#)]),
            ScriptTurn::text("Noted the steer."),
        ];
        let mut s = Session::start(&dirs, format, script).await;
        s.submit("Wait for the gate.");
        s.wait_for(|e| matches!(e, Event::ToolStarted { .. })).await;
        s.send(Op::Steer {
            input: vec![ContentPart::text("STEER: also check the README")],
        });
        s.barrier().await;
        release_fifo(fifo, "gate-open\n").await;
        let (reason, error) = s.turn_end().await;
        assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
        assert_eq!(s.count(|e| matches!(e, Event::PromptSteered { .. })), 1);
        assert_eq!(
            s.count(|e| matches!(e, Event::TurnStarted { .. })),
            1,
            "the steer joined the running turn"
        );

        let requests = s.requests();
        assert_eq!(requests.len(), 2);
        let users = user_texts(&requests[1].body);
        assert_eq!(
            users.last().map(String::as_str),
            Some("STEER: also check the README"),
            "{format:?}: {users:#?}"
        );
        let results = tool_results(&requests[1].body);
        assert_eq!(results.len(), 1);
        assert!(results[0].text.contains("gate-open"), "{results:#?}");
        assert!(!requests[0].raw_body.contains("STEER"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_bash_runs_answers_every_call_and_a_resumed_session_sees_an_error() {
    let dirs = Dirs::new();
    let fifo = dirs.file("never.fifo");
    mkfifo(&fifo);
    std::fs::write(dirs.file("a.txt"), "alpha\n").unwrap();
    let script = vec![ScriptTurn::tool_calls(&[
        ("call_block", "Bash", r#"{"command":"cat never.fifo"}"#),
        ("call_read", "Read", r#"{"path":"a.txt"}"#),
    ])];
    let mut s = Session::start(&dirs, ProviderType::Anthropic, script).await;
    s.submit("Read from the pipe.");
    s.wait_for(|e| matches!(e, Event::ToolStarted { .. })).await;
    // Opening the write end returns once `cat` has the pipe open: the command is running.
    let writer_path = fifo.clone();
    let writer = tokio::time::timeout(
        WAIT,
        tokio::task::spawn_blocking(move || {
            std::fs::OpenOptions::new()
                .write(true)
                .open(writer_path)
                .unwrap()
        }),
    )
    .await
    .expect("the command never opened the pipe")
    .unwrap();
    s.send(Op::Cancel { queued: false });
    let (reason, _) = s.turn_end().await;
    drop(writer);
    assert_eq!(reason, TurnEndReason::Cancelled);
    let block_result = s
        .events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult {
                tool_call_id,
                is_error,
                ..
            } if tool_call_id == "call_block" => Some(*is_error),
            _ => None,
        })
        .expect("the cancelled call got a result event");
    assert!(
        block_result,
        "a cancelled call is an error, never a success"
    );

    let session_id = s.session_id();
    s.close().await;
    let journal = s.journal();
    let kinds: Vec<String> = journal.iter().map(record_kind).collect();
    let calls: Vec<&str> = journal
        .iter()
        .filter(|r| record_kind(r) == "loop:tool.call")
        .map(|r| r["event"]["toolCallId"].as_str().unwrap())
        .collect();
    let results: Vec<(&str, bool)> = journal
        .iter()
        .filter(|r| record_kind(r) == "loop:tool.result")
        .map(|r| {
            (
                r["event"]["toolCallId"].as_str().unwrap(),
                r["event"]["result"]["isError"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(calls.len(), 2, "{kinds:#?}");
    for call in &calls {
        assert_eq!(
            results.iter().filter(|(id, _)| id == call).count(),
            1,
            "exactly one journaled result for {call}: {results:?}"
        );
    }
    assert!(results.contains(&("call_block", true)), "{results:?}");
    let step_end = journal
        .iter()
        .rev()
        .find(|r| record_kind(r) == "loop:step.end")
        .unwrap();
    assert_eq!(step_end["event"]["finishReason"], "interrupted");
    let ended = journal
        .iter()
        .rev()
        .find(|r| record_kind(r) == "turn.ended")
        .unwrap();
    assert_eq!(ended["reason"], "cancelled");
    let last_kinds: Vec<&str> = kinds.iter().rev().take(3).map(String::as_str).collect();
    assert!(
        last_kinds.contains(&"turn.ended") && last_kinds.contains(&"loop:step.end"),
        "the journal ends with the step end and the turn end: {kinds:#?}"
    );
    drop(s);

    let mut options = Options::new(ProviderType::Anthropic);
    options.resume = Resume::Id(session_id.clone());
    let mut resumed = Session::start_with(&dirs, options, vec![ScriptTurn::text("Resumed.")]).await;
    assert!(resumed.opened.resumed);
    assert_eq!(resumed.session_id(), session_id);
    let (reason, error) = resumed.run("Carry on.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let requests = resumed.requests();
    let body: &Value = &requests[0].body;
    let results = tool_results(body);
    let block = results
        .iter()
        .find(|r| r.id == "call_block")
        .unwrap_or_else(|| panic!("the interrupted call is projected: {results:#?}"));
    assert!(
        block.reads_as_error(),
        "the interrupted call's result is an error: {block:?}"
    );
    let messages = serde_json::to_string_pretty(&body["messages"]).unwrap();
    assert!(
        user_texts(body).iter().any(|t| t == "Read from the pipe."),
        "{messages}"
    );
    assert!(user_texts(body).iter().any(|t| t == "Carry on."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_cancel_the_next_turn_of_the_same_session_sends_the_cancelled_call_as_an_error() {
    for format in [ProviderType::OpenAi, ProviderType::Anthropic] {
        let dirs = Dirs::new();
        let fifo = dirs.file("never.fifo");
        mkfifo(&fifo);
        let script = vec![
            ScriptTurn::tool_calls(&[("call_block", "Bash", r#"{"command":"cat never.fifo"}"#)]),
            ScriptTurn::text("Fine, stopping."),
        ];
        let mut s = Session::start(&dirs, format, script).await;
        s.submit("Block on the pipe.");
        s.wait_for(|e| matches!(e, Event::ToolStarted { .. })).await;
        let writer_path = fifo.clone();
        let writer = tokio::time::timeout(
            WAIT,
            tokio::task::spawn_blocking(move || {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(writer_path)
                    .unwrap()
            }),
        )
        .await
        .expect("the command never opened the pipe")
        .unwrap();
        s.send(Op::Cancel { queued: false });
        assert_eq!(s.turn_end().await.0, TurnEndReason::Cancelled);
        drop(writer);

        let (reason, error) = s.run("Stop that, please.").await;
        assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
        let requests = s.requests();
        assert_eq!(requests.len(), 2);
        let results = tool_results(&requests[1].body);
        assert_eq!(results.len(), 1, "{format:?}: {results:#?}");
        assert_eq!(results[0].id, "call_block");
        assert!(results[0].reads_as_error(), "{format:?}: {results:#?}");
        let users = user_texts(&requests[1].body);
        assert!(
            users.iter().any(|u| u.contains("Stop that, please.")),
            "{users:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_sent_while_the_final_answer_streams_still_reaches_the_model() {
    use kimi_llm::FinishReason;
    use kimi_llm::scripted::ScriptEvent;
    let dirs = Dirs::new();
    let script = vec![
        ScriptTurn::reply(vec![
            ScriptEvent::text("Almost done"),
            // Pacing only: whether the steer lands before or after this answer ends, it must
            // reach the model (joining this turn or starting the next one).
            ScriptEvent::Delay { ms: 200 },
            ScriptEvent::text(", done."),
            ScriptEvent::finish(FinishReason::Stop),
        ]),
        ScriptTurn::text("Handled the late steer."),
    ];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    s.submit("Finish up.");
    s.wait_for(|e| matches!(e, Event::AssistantDelta { .. }))
        .await;
    s.send(Op::Steer {
        input: vec![ContentPart::text("LATE STEER: one more thing")],
    });
    // Turn ends until the steer's request has been answered (one turn or two).
    while s.requests().len() < 2 || s.server.remaining_turns() > 0 {
        s.turn_end().await;
    }
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let users = user_texts(&requests[1].body);
    assert_eq!(
        users.last().map(String::as_str),
        Some("LATE STEER: one more thing"),
        "{users:#?}"
    );
}
