//! A long session whose context outgrows a small window: compaction runs in the middle, the
//! summary request is answered by its own scripted server, and the session completes.

use std::sync::Arc;

use kimi_llm::scripted::ScriptTurn;
use kimi_llm::{ChatRequest, DeltaStream, LlmError, Provider, ProviderType};
use kimi_protocol::ops::{Event, TurnEndReason};
use kimi_test_support::ScriptServer;
use pretty_assertions::assert_eq;

use crate::harness::{Dirs, Options, Session, assert_paired, provider_for, record_kind};

/// Sends summary requests (the ones without tools) to `summary`, the rest to `main`.
struct SplitProvider {
    main: Arc<dyn Provider>,
    summary: Arc<dyn Provider>,
}

#[async_trait::async_trait]
impl Provider for SplitProvider {
    fn name(&self) -> &str {
        self.main.name()
    }
    fn model(&self) -> &str {
        self.main.model()
    }
    async fn stream(&self, request: ChatRequest) -> Result<DeltaStream, LlmError> {
        if request.tools.is_empty() {
            self.summary.stream(request).await
        } else {
            self.main.stream(request).await
        }
    }
}

const STEPS: usize = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sixty_step_session_compacts_in_the_middle_and_completes() {
    let format = ProviderType::OpenAi;
    let dirs = Dirs::new();
    // Distinct files so the repeat guard sees distinct calls; ~2 KB each.
    let mut script = Vec::new();
    for i in 0..STEPS - 1 {
        let name = format!("notes_{i:02}.txt");
        let body: String = (0..40)
            .map(|line| format!("file {i} line {line}: lorem ipsum dolor sit amet\n"))
            .collect();
        std::fs::write(dirs.file(&name), body).unwrap();
        let args = format!(r#"{{"path":"{name}"}}"#);
        let id = format!("call_{i:02}");
        script.push(ScriptTurn::tool_calls(&[(&id, "Read", &args)]));
    }
    script.push(ScriptTurn::text("All notes read."));

    let summaries = ScriptServer::start(
        (1..=4)
            .map(|n| {
                ScriptTurn::text(format!(
                    "SUMMARY-{n}: the user asked to read every notes file; files so far were read."
                ))
            })
            .collect(),
    )
    .await
    .unwrap();
    let summary_provider = provider_for(&summaries, format);
    let mut options = Options::new(format);
    options.max_context_tokens = 24_000;
    options.wrap = Some(Box::new(move |main| {
        Arc::new(SplitProvider {
            main,
            summary: summary_provider,
        })
    }));
    let mut s = Session::start_with(&dirs, options, script).await;
    let (reason, error) = s.run("Read every notes file, one at a time.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");

    let last_step = s
        .events
        .iter()
        .filter_map(|e| match e {
            Event::StepStarted { step, .. } => Some(*step),
            _ => None,
        })
        .max();
    assert_eq!(last_step, Some(STEPS as u32));
    let compactions = s.count(|e| matches!(e, Event::CompactionCompleted { .. }));
    assert!(compactions >= 1, "compaction ran");
    let summary_requests = summaries.requests().len();
    assert_eq!(
        summary_requests, compactions,
        "one summary request per compaction"
    );

    let requests = s.requests();
    assert_eq!(
        requests.len(),
        STEPS,
        "every step reached the main model once"
    );
    let first_with_summary = requests
        .iter()
        .position(|r| r.raw_body.contains("SUMMARY-1"))
        .expect("a request carries the summary");
    assert!(
        (5..STEPS - 1).contains(&first_with_summary),
        "compaction happened in the middle (request {first_with_summary})"
    );
    for (i, r) in requests.iter().enumerate().skip(first_with_summary) {
        assert!(
            r.raw_body.contains("SUMMARY-"),
            "request {i} after the compaction carries a summary"
        );
        assert!(
            !r.raw_body.contains("file 0 line 0:"),
            "request {i} no longer carries the first file's text"
        );
    }
    let first_prompt_dropped = requests.last().unwrap();
    assert!(first_prompt_dropped.raw_body.contains("notes_58.txt"));

    s.close().await;
    let journal = s.journal();
    let applied = journal
        .iter()
        .filter(|r| record_kind(r) == "context.apply_compaction")
        .count();
    assert_eq!(applied, compactions);
    assert_paired(&summaries);
}
