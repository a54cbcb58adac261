//! `AgentSwarm` end to end: the main agent fans a prompt template out over items, each
//! subagent's request carries its own rendered prompt (the scripted server tells them apart by
//! a marker in the item), and the report lists every agent in item order. Also the argument
//! checks made before anything starts, the sole-call rule, resuming earlier subagents, and
//! cancelling the caller's turn.

use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Dirs, Session, WireResult, mkfifo, read_journal, tool_results, user_texts};

const SUBAGENT: &str = "You are running as a subagent";

/// A hand-off long enough (≥ 200 chars) that the summary policy does not send it back.
fn summary(marker: &str) -> String {
    format!(
        "Report for {marker}: I read the module, described its purpose and public functions, and found nothing that needs changing. No files were modified and no commands were run; the findings above are complete and nothing is left open for this item."
    )
}

fn swarm_call(id: &str, args: &Value) -> ScriptTurn {
    ScriptTurn::tool_calls(&[(id, "AgentSwarm", &args.to_string())])
}

/// Requests sent by subagents (their system prompt opens with the subagent preamble).
fn subagent_requests(s: &Session) -> Vec<Value> {
    s.requests()
        .into_iter()
        .filter(|r| r.raw_body.contains(SUBAGENT))
        .map(|r| r.body)
        .collect()
}

/// The result of call `id` in the last request of the main agent.
fn main_result(s: &Session, id: &str) -> WireResult {
    let requests = s.requests();
    let last = requests
        .iter()
        .rfind(|r| !r.raw_body.contains(SUBAGENT))
        .unwrap();
    tool_results(&last.body)
        .into_iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

fn position(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("`{needle}` missing from:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swarm_runs_one_subagent_per_item_and_reports_them_in_item_order() {
    let dirs = Dirs::new();
    let items = ["module ALPHA-7", "module BETA-7", "module GAMMA-7"];
    let args = json!({
        "description": "summarise modules",
        "prompt_template": "Summarise {{item}} and report its purpose.",
        "items": items,
    });
    let script = vec![swarm_call("call_swarm", &args)];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    for marker in ["ALPHA-7", "BETA-7", "GAMMA-7"] {
        s.server.push_for(marker, ScriptTurn::text(summary(marker)));
    }
    s.server.push(ScriptTurn::text("All three are summarised."));

    let (reason, error) = s.run("Summarise the three modules.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");

    // The main agent was offered the tool.
    let first = &s.requests()[0].body;
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"AgentSwarm"), "{offered:?}");

    // Each subagent got exactly its rendered prompt, and none was offered AgentSwarm.
    let subs = subagent_requests(&s);
    assert_eq!(subs.len(), 3);
    let mut prompts: Vec<String> = subs.iter().flat_map(user_texts).collect();
    prompts.sort();
    assert_eq!(
        prompts,
        items.map(|i| format!("Summarise {i} and report its purpose."))
    );
    for sub in &subs {
        assert!(!sub.to_string().contains("\"AgentSwarm\""));
    }

    // The report lists all three in item order, ids in the same order.
    let result = main_result(&s, "call_swarm");
    assert!(!result.reads_as_error(), "{}", result.text);
    let text = &result.text;
    assert!(text.contains("summary: completed 3"), "{text}");
    let a = position(text, "agent_id=\"agent-0\" item=\"module ALPHA-7\"");
    let b = position(text, "agent_id=\"agent-1\" item=\"module BETA-7\"");
    let c = position(text, "agent_id=\"agent-2\" item=\"module GAMMA-7\"");
    assert!(a < b && b < c, "{text}");
    for marker in ["ALPHA-7", "BETA-7", "GAMMA-7"] {
        assert!(text.contains(&summary(marker)), "{text}");
    }
    assert_eq!(text.matches("status=\"completed\"").count(), 3, "{text}");
    assert!(!text.contains("resume_hint"), "{text}");

    // Each agent has its own journal holding its prompt.
    s.close().await;
    for (n, item) in items.iter().enumerate() {
        let journal = read_journal(&s.opened.session.journal_path(&format!("agent-{n}")));
        assert!(
            journal.iter().any(|r| r.to_string().contains(item)),
            "agent-{n}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_swarm_arguments_are_refused_before_any_agent_starts() {
    let dirs = Dirs::new();
    let many: Vec<String> = (0..129).map(|n| format!("item number {n}")).collect();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "no_placeholder",
            json!({"description": "d", "prompt_template": "Review the item.", "items": ["a.rs", "b.rs"]}),
            "must contain the {{item}} placeholder",
        ),
        (
            "one_item",
            json!({"description": "d", "prompt_template": "Review {{item}}.", "items": ["a.rs"]}),
            "at least 2 items",
        ),
        (
            "duplicates",
            json!({"description": "d", "prompt_template": "Review {{item}}.", "items": ["a.rs", "b.rs", " a.rs "]}),
            "Items 1 and 3 give the same prompt",
        ),
        (
            "too_many",
            json!({"description": "d", "prompt_template": "Review {{item}}.", "items": many}),
            "must NOT have more than 128 items",
        ),
        (
            "too_many_in_total",
            json!({"description": "d", "prompt_template": "Review {{item}}.", "items": &many[..127], "resume_agent_ids": {"agent-0": "continue", "agent-1": "continue"}}),
            "at most 128 agents in one call, and this one asks for 129",
        ),
        (
            "no_template",
            json!({"description": "d", "items": ["a.rs", "b.rs"]}),
            "`prompt_template` is required",
        ),
        (
            "bad_type",
            json!({"description": "d", "subagent_type": "nope", "prompt_template": "Review {{item}}.", "items": ["a.rs", "b.rs"]}),
            "Agent type `nope` is not available here",
        ),
        (
            "bad_resume",
            json!({"description": "d", "resume_agent_ids": {"agent-9": "continue"}}),
            "`agent-9` is not a subagent of this session",
        ),
    ];
    let script: Vec<ScriptTurn> = cases
        .iter()
        .map(|(id, args, _)| swarm_call(id, args))
        .chain([ScriptTurn::text("I will fix the arguments.")])
        .collect();
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    let (reason, error) = s.run("Run a swarm.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert!(subagent_requests(&s).is_empty());
    assert_eq!(s.requests().len(), cases.len() + 1);
    for (id, _, expected) in &cases {
        let result = main_result(&s, id);
        assert!(result.reads_as_error(), "{id}: {}", result.text);
        assert!(result.text.contains(expected), "{id}: {}", result.text);
    }
    assert!(!s.opened.session.dir.join("agents").join("agent-0").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swarm_beside_other_calls_in_one_response_is_vetoed() {
    let dirs = Dirs::new();
    std::fs::write(dirs.file("notes.txt"), "hello\n").unwrap();
    let args = json!({
        "description": "d",
        "prompt_template": "Review {{item}}.",
        "items": ["a.rs", "b.rs"],
    });
    let script = vec![
        ScriptTurn::tool_calls(&[
            ("call_swarm", "AgentSwarm", &args.to_string()),
            ("call_read", "Read", r#"{"path":"notes.txt"}"#),
        ]),
        ScriptTurn::text("Understood."),
    ];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    let (reason, error) = s.run("Go.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert!(subagent_requests(&s).is_empty());
    let swarm = main_result(&s, "call_swarm");
    assert!(swarm.reads_as_error(), "{}", swarm.text);
    assert!(
        swarm.text.contains("must be the only tool call"),
        "{}",
        swarm.text
    );
    let read = main_result(&s, "call_read");
    assert!(
        !read.reads_as_error() && read.text.contains("hello"),
        "{}",
        read.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumed_agents_start_first_and_keep_their_history() {
    let dirs = Dirs::new();
    let script = vec![
        ScriptTurn::tool_calls(&[(
            "call_agent",
            "Agent",
            r#"{"prompt":"Inspect FIRST-TASK-3 closely.","description":"inspect first"}"#,
        )]),
        ScriptTurn::text("The first agent reported."),
    ];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    s.server
        .push_for("FIRST-TASK-3", ScriptTurn::text(summary("FIRST-TASK-3")));
    let (reason, error) = s.run("Inspect the first task.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");

    // One item is enough when an agent is resumed.
    let args = json!({
        "description": "continue and extend",
        "prompt_template": "Inspect {{item}} closely.",
        "items": ["NEW-ITEM-3"],
        "resume_agent_ids": {"agent-0": "Continue with RESUME-MARK-3."},
    });
    s.server.push(swarm_call("call_swarm", &args));
    s.server
        .push_for("RESUME-MARK-3", ScriptTurn::text(summary("RESUME-MARK-3")));
    s.server
        .push_for("NEW-ITEM-3", ScriptTurn::text(summary("NEW-ITEM-3")));
    s.server.push(ScriptTurn::text("Both are done."));
    let (reason, error) = s.run("Continue it and add one more.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");

    let subs = subagent_requests(&s);
    assert_eq!(subs.len(), 3);
    let resumed = subs
        .iter()
        .find(|b| b.to_string().contains("RESUME-MARK-3"))
        .unwrap();
    assert_eq!(
        user_texts(resumed),
        vec![
            "Inspect FIRST-TASK-3 closely.".to_owned(),
            "Continue with RESUME-MARK-3.".to_owned()
        ]
    );
    let fresh = subs
        .iter()
        .find(|b| b.to_string().contains("NEW-ITEM-3"))
        .unwrap();
    assert_eq!(
        user_texts(fresh),
        vec!["Inspect NEW-ITEM-3 closely.".to_owned()]
    );

    let text = main_result(&s, "call_swarm").text;
    let first = position(&text, "index=\"1\" agent_id=\"agent-0\" mode=\"resume\"");
    let second = position(
        &text,
        "index=\"2\" agent_id=\"agent-1\" item=\"NEW-ITEM-3\"",
    );
    assert!(first < second, "{text}");
    assert!(text.contains("summary: completed 2"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_turn_cancels_every_swarm_agent() {
    let dirs = Dirs::new();
    let gates = [dirs.file("gate-a"), dirs.file("gate-b")];
    for gate in &gates {
        mkfifo(gate);
    }
    let args = json!({
        "description": "wait on gates",
        "prompt_template": "Wait on {{item}}.",
        "items": ["GATE-A-5", "GATE-B-5"],
    });
    let script = vec![swarm_call("call_swarm", &args)];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    for (marker, gate) in [("GATE-A-5", "gate-a"), ("GATE-B-5", "gate-b")] {
        let cat = json!({"command": format!("cat {gate}")});
        s.server.push_for(
            marker,
            ScriptTurn::tool_calls(&[(&format!("sub_{gate}"), "Bash", &cat.to_string())]),
        );
    }
    s.submit("Wait on both gates.");
    // Both subagents are inside `cat` once these opens-for-writing return; the writers stay
    // open (without writing) so `cat` keeps blocking until it is killed.
    let mut writers = Vec::new();
    for gate in &gates {
        let gate = gate.clone();
        let writer = tokio::task::spawn_blocking(move || {
            std::fs::OpenOptions::new().write(true).open(gate).unwrap()
        });
        writers.push(
            tokio::time::timeout(crate::harness::WAIT, writer)
                .await
                .expect("a subagent never started cat")
                .unwrap(),
        );
    }
    s.send(Op::Cancel { queued: true });
    let (reason, _) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Cancelled);
    drop(writers);
    let (_, is_error) = s
        .events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult {
                tool_call_id,
                output,
                is_error,
            } if tool_call_id == "call_swarm" => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("the AgentSwarm call got a result");
    assert!(is_error);
    s.close().await;
    for id in ["agent-0", "agent-1"] {
        let journal = read_journal(&s.opened.session.journal_path(id));
        assert!(
            journal
                .iter()
                .any(|r| r["type"] == "turn.ended" && r["reason"] == "cancelled"),
            "{id}: {journal:#?}"
        );
    }
    // Nothing more was asked of the model after the cancel.
    assert_eq!(s.requests().len(), 3);
}
