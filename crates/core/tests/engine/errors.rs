//! Provider errors that are retried, and tool calls the executor refuses.

use std::sync::Arc;

use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, TurnEndReason};
use kimi_tools::{
    Execution, ProgressSink, Resolution, RuleSubject, Tool, ToolContext, ToolDisplay, ToolError,
    ToolPlan, ToolResult,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::harness::{Dirs, Options, Session, record_kind, tool_results};

/// A tool whose execution panics, added the way MCP tools are (the default profile allows
/// `mcp__*` extension tools).
struct Explode;

const EXPLODE: &str = "mcp__fixture__explode";

#[async_trait::async_trait]
impl Tool for Explode {
    fn name(&self) -> &str {
        EXPLODE
    }
    fn description(&self) -> String {
        "Panics when run.".to_owned()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn resolve(&self, _args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        Ok(Resolution::Run(Box::new(Explosion(ToolPlan {
            accesses: Some(Vec::new()),
            approval_rule: "Explode".to_owned(),
            subject: RuleSubject::NameOnly,
            display: ToolDisplay {
                kind: "generic".to_owned(),
                summary: "explode".to_owned(),
                detail: None,
                diff: None,
            },
            description: "explode".to_owned(),
            stop_batch_after_this: false,
        }))))
    }
}

struct Explosion(ToolPlan);

#[async_trait::async_trait]
impl Execution for Explosion {
    fn plan(&self) -> &ToolPlan {
        &self.0
    }
    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        _cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        panic!("tool blew up");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_fails_its_call_and_the_turn_goes_on() {
    let dirs = Dirs::new();
    let mut options = Options::new(ProviderType::OpenAi);
    options.extensions.tools = vec![Arc::new(Explode)];
    let script = vec![
        ScriptTurn::tool_calls(&[("x1", EXPLODE, "{}")]),
        ScriptTurn::text("It failed."),
    ];
    let mut s = Session::start_with(&dirs, options, script).await;
    let (reason, error) = s.run("explode").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1].body);
    assert_eq!(results.len(), 1);
    assert!(results[0].reads_as_error(), "{:?}", results[0]);
    assert!(
        results[0]
            .text
            .contains(&format!("Tool \"{EXPLODE}\" failed: tool blew up")),
        "{:?}",
        results[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_is_retried_within_the_same_step() {
    for format in [ProviderType::OpenAi, ProviderType::Anthropic] {
        let dirs = Dirs::new();
        let script = vec![
            ScriptTurn::Error {
                status: 429,
                body: r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#.to_owned(),
                headers: vec![("retry-after".to_owned(), "1".to_owned())],
            },
            ScriptTurn::text("Hello after the retry."),
        ];
        let mut s = Session::start(&dirs, format, script).await;
        let (reason, error) = s.run("hi").await;
        assert_eq!(reason, TurnEndReason::Completed, "{format:?}: {error:?}");
        assert_eq!(s.requests().len(), 2);

        let retries: Vec<&Event> = s
            .events
            .iter()
            .filter(|e| matches!(e, Event::StepRetrying { .. }))
            .collect();
        assert_eq!(retries.len(), 1, "{format:?}");
        let Event::StepRetrying {
            failed_attempt,
            next_attempt,
            delay_ms,
            status_code,
            ..
        } = retries[0]
        else {
            unreachable!()
        };
        assert_eq!(
            (*failed_attempt, *next_attempt, *delay_ms, *status_code),
            (1, 2, 1000, Some(429)),
            "{format:?}: the server's Retry-After is honoured"
        );
        let steps: Vec<u32> = s
            .events
            .iter()
            .filter_map(|e| match e {
                Event::StepStarted { step, .. } | Event::StepCompleted { step, .. } => Some(*step),
                _ => None,
            })
            .collect();
        assert_eq!(
            steps,
            vec![1, 1],
            "{format:?}: one step, started once, completed once"
        );
        let answer: String = s
            .events
            .iter()
            .filter_map(|e| match e {
                Event::AssistantMessage { message } => Some(message.text()),
                _ => None,
            })
            .collect();
        assert_eq!(answer, "Hello after the retry.");

        s.close().await;
        let journal = s.journal();
        let begins: Vec<u64> = journal
            .iter()
            .filter(|r| record_kind(r) == "loop:step.begin")
            .map(|r| r["event"]["step"].as_u64().unwrap())
            .collect();
        assert_eq!(begins, vec![1, 1], "{format:?}: the retry is the same step");
        let ends: Vec<&str> = journal
            .iter()
            .filter(|r| record_kind(r) == "loop:step.end")
            .map(|r| r["event"]["finishReason"].as_str().unwrap())
            .collect();
        assert_eq!(ends, vec!["error", "end_turn"], "{format:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_tool_arguments_go_back_to_the_model_as_errors_and_the_tool_does_not_run() {
    let dirs = Dirs::new();
    let script = vec![
        ScriptTurn::tool_calls(&[
            ("call_missing", "Write", r#"{"path":"missing.txt"}"#),
            ("call_broken", "Write", r#"{"path":"broken.txt","content":"#),
            ("call_unknown", "NoSuchTool", r#"{}"#),
        ]),
        ScriptTurn::text("I will fix the arguments."),
    ];
    let mut s = Session::start(&dirs, ProviderType::Anthropic, script).await;
    let (reason, error) = s.run("Write two files.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert!(
        !dirs.file("missing.txt").exists(),
        "Write without content did not run"
    );
    assert!(
        !dirs.file("broken.txt").exists(),
        "Write with broken JSON did not run"
    );

    let requests = s.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(&requests[1].body);
    assert_eq!(results.len(), 3, "{results:#?}");
    for r in &results {
        assert!(r.reads_as_error(), "{r:?}");
    }
    let missing = results.iter().find(|r| r.id == "call_missing").unwrap();
    assert!(
        missing.text.contains("content"),
        "names the missing field: {missing:?}"
    );
    let unknown = results.iter().find(|r| r.id == "call_unknown").unwrap();
    assert!(unknown.text.contains("NoSuchTool"), "{unknown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_broken_mid_answer_is_retried_without_the_broken_attempts_text() {
    use kimi_llm::FinishReason;
    use kimi_llm::scripted::ScriptEvent;
    for format in [ProviderType::OpenAi, ProviderType::Anthropic] {
        let dirs = Dirs::new();
        std::fs::write(dirs.file("a.txt"), "alpha\n").unwrap();
        let mut retried = vec![ScriptEvent::text("Let me read it.")];
        retried.extend(ScriptEvent::tool_call(
            0,
            "call_a",
            "Read",
            r#"{"path":"a.txt"}"#,
            2,
        ));
        retried.push(ScriptEvent::finish(FinishReason::ToolCalls));
        let script = vec![
            ScriptTurn::reply(vec![
                ScriptEvent::text("BROKEN-PARTIAL text that never finished"),
                ScriptEvent::Disconnect,
            ]),
            ScriptTurn::reply(retried),
            ScriptTurn::text("alpha it is."),
        ];
        let mut s = Session::start(&dirs, format, script).await;
        let (reason, error) = s.run("What is in a.txt?").await;
        assert_eq!(reason, TurnEndReason::Completed, "{format:?}: {error:?}");
        assert_eq!(s.count(|e| matches!(e, Event::StepRetrying { .. })), 1);
        let requests = s.requests();
        assert_eq!(requests.len(), 3);
        assert!(
            !requests[1].raw_body.contains("BROKEN-PARTIAL"),
            "{format:?}: the retry of a step does not carry its own broken attempt: {}",
            requests[1].raw_body
        );
        let last = &requests[2].body;
        let last_message = last["messages"].as_array().unwrap().last().unwrap();
        assert_ne!(last_message["role"], "assistant", "{format:?}: {last}");
    }
}

/// A server that sends its headers and one chunk, then nothing: with a 3 s idle limit and two
/// attempts the step is tried twice and the turn fails saying the stream stalled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_stalls_after_its_first_chunk_is_retried_then_fails() {
    use kimi_llm::scripted::ScriptEvent;
    use std::time::Duration;

    let dirs = Dirs::new();
    let stalled = || ScriptTurn::reply(vec![ScriptEvent::text("Let me"), ScriptEvent::stall()]);
    let mut options = crate::harness::Options::new(ProviderType::OpenAi);
    options.retry = kimi_llm::RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(10),
        jitter_ratio: 0.0,
        first_token_timeout: Duration::from_secs(3),
        stream_idle_timeout: Duration::from_secs(3),
        ..kimi_llm::RetryPolicy::default()
    };
    let mut s = Session::start_with(&dirs, options, vec![stalled(), stalled()]).await;
    let (reason, error) = s.run("hi").await;
    assert_eq!(reason, TurnEndReason::Failed);
    let error = error.unwrap_or_default();
    assert!(
        error.contains("stream stalled: no data for 3 s") && error.contains("2 attempts"),
        "{error}"
    );
    assert_eq!(s.requests().len(), 2, "tried twice");
    let retries: Vec<(u32, u32, String)> = s
        .events
        .iter()
        .filter_map(|e| match e {
            Event::StepRetrying {
                next_attempt,
                max_attempts,
                error_name,
                ..
            } => Some((*next_attempt, *max_attempts, error_name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(retries, vec![(2, 2, "stream_stalled".to_owned())]);
    s.close().await;
}
