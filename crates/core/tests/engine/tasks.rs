//! Ordinary work: a multi-step read/edit/run task in every wire format, and parallel reads.

use kimi_core::engine::log::AgentLog;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, TurnEndReason};
use kimi_store::{JournalOptions, MAIN_AGENT};
use pretty_assertions::assert_eq;

use crate::harness::{Dirs, Session, tool_results};

const FORMATS: [ProviderType; 5] = [
    ProviderType::Kimi,
    ProviderType::OpenAi,
    ProviderType::OpenAiResponses,
    ProviderType::Anthropic,
    ProviderType::GoogleGenAi,
];

fn read_edit_run_script() -> Vec<ScriptTurn> {
    vec![
        ScriptTurn::tool_calls(&[("call_read", "Read", r#"{"path":"calc.txt"}"#)]),
        ScriptTurn::tool_calls(&[(
            "call_edit",
            "Edit",
            r#"{"path":"calc.txt","old_string":"value = 1","new_string":"value = 2"}"#,
        )]),
        ScriptTurn::tool_calls(&[(
            "call_run",
            "Bash",
            r#"{"command":"cat calc.txt; echo ran-ok"}"#,
        )]),
        ScriptTurn::text("The value is 2 now."),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_step_read_edit_run_in_every_wire_format_and_the_journal_replays_to_the_same_history()
{
    for format in FORMATS {
        let dirs = Dirs::new();
        std::fs::write(dirs.file("calc.txt"), "value = 1\n").unwrap();
        let mut s = Session::start(&dirs, format, read_edit_run_script()).await;
        let (reason, error) = s.run("Set the value to 2 and show the file.").await;
        assert_eq!(reason, TurnEndReason::Completed, "{format:?}: {error:?}");

        assert_eq!(
            std::fs::read_to_string(dirs.file("calc.txt")).unwrap(),
            "value = 2\n",
            "{format:?}"
        );
        let requests = s.requests();
        assert_eq!(requests.len(), 4, "{format:?}: one request per step");
        let last = &requests[3].raw_body;
        assert!(
            last.contains("ran-ok") && last.contains("value = 2"),
            "{format:?}: the command's output reaches the model: {last}"
        );
        let tool_errors: Vec<_> = s
            .events
            .iter()
            .filter(|e| matches!(e, Event::ToolResult { is_error: true, .. }))
            .collect();
        assert!(tool_errors.is_empty(), "{format:?}: {tool_errors:#?}");
        assert_eq!(
            s.count(|e| matches!(e, Event::StepStarted { .. })),
            4,
            "{format:?}"
        );

        let live = s
            .opened
            .agent
            .handle
            .runtime()
            .log()
            .history()
            .messages()
            .to_vec();
        let journal = s.journal_path();
        s.close().await;
        drop(s); // releases the journal lock
        let (replayed, restored) =
            AgentLog::open(&journal, MAIN_AGENT, JournalOptions::default()).unwrap();
        assert!(restored.skipped.is_empty(), "{:?}", restored.skipped);
        assert_eq!(
            replayed.history().messages(),
            live.as_slice(),
            "{format:?}: replay == live"
        );
        // user, 3 × (assistant with a call, tool result), final assistant
        assert_eq!(live.len(), 8, "{format:?}: {live:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_reads_in_one_step_both_run_and_both_results_are_paired() {
    for format in [ProviderType::OpenAi, ProviderType::Anthropic] {
        let dirs = Dirs::new();
        std::fs::write(dirs.file("a.txt"), "alpha contents\n").unwrap();
        std::fs::write(dirs.file("b.txt"), "beta contents\n").unwrap();
        let script = vec![
            ScriptTurn::tool_calls(&[
                ("call_a", "Read", r#"{"path":"a.txt"}"#),
                ("call_b", "Read", r#"{"path":"b.txt"}"#),
            ]),
            ScriptTurn::text("Both read."),
        ];
        let mut s = Session::start(&dirs, format, script).await;
        let (reason, error) = s.run("Read a.txt and b.txt").await;
        assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
        assert_eq!(
            s.count(|e| matches!(e, Event::StepStarted { .. })),
            2,
            "both calls run in one step"
        );
        let requests = s.requests();
        assert_eq!(requests.len(), 2);
        let mut results = tool_results(&requests[1].body);
        results.sort_by(|x, y| x.id.cmp(&y.id));
        assert_eq!(results.len(), 2, "{format:?}: {results:#?}");
        assert_eq!(results[0].id, "call_a");
        assert!(results[0].text.contains("alpha contents"), "{results:#?}");
        assert_eq!(results[1].id, "call_b");
        assert!(results[1].text.contains("beta contents"), "{results:#?}");
        assert!(results.iter().all(|r| !r.reads_as_error()), "{results:#?}");
    }
}
