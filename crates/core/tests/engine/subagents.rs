//! Subagents end to end: the main agent calls `Agent`, the subagent's own requests reach the
//! server with its profile's prompt and tools, it works on real files, its journal lives under
//! `agents/<id>/`, and its final text comes back as the tool result. Also resume by id, the
//! summary policy, cancellation, and binding the main agent to a custom profile.

use kimi_core::session::AgentChoice;
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::{Event, Op, TurnEndReason};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::harness::{
    Dirs, Options, Session, mkfifo, read_journal, release_fifo, tool_results, user_texts,
};

const LONG_SUMMARY: &str = "Changed calc.txt: the value line now reads `value = 2` instead of `value = 1`. I read the file first, replaced the single occurrence with Edit, and did not touch anything else. Nothing is left open; no tests exist for this file.";

/// Tool names a request offered (OpenAI Chat body).
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn agent_call(id: &str, args: &str) -> ScriptTurn {
    ScriptTurn::tool_calls(&[(id, "Agent", args)])
}

fn agent_journal(s: &Session, agent_id: &str) -> Vec<Value> {
    read_journal(&s.opened.session.journal_path(agent_id))
}

fn bound_profile(journal: &[Value]) -> Option<String> {
    journal
        .iter()
        .find(|r| r["type"] == "profile.bind")
        .and_then(|r| r["profile"].as_str().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coder_subagent_edits_a_file_returns_its_summary_and_can_be_resumed() {
    let dirs = Dirs::new();
    std::fs::write(dirs.file("calc.txt"), "value = 1\n").unwrap();
    let script = vec![
        // Main agent delegates.
        agent_call(
            "call_agent",
            r#"{"prompt":"Set the value in calc.txt to 2.","description":"edit calc value"}"#,
        ),
        // agent-0 works.
        ScriptTurn::tool_calls(&[("sub_read", "Read", r#"{"path":"calc.txt"}"#)]),
        ScriptTurn::tool_calls(&[(
            "sub_edit",
            "Edit",
            r#"{"path":"calc.txt","old_string":"value = 1","new_string":"value = 2"}"#,
        )]),
        ScriptTurn::text(LONG_SUMMARY),
        // Main agent answers.
        ScriptTurn::text("Done: the value is 2."),
        // Second prompt: resume agent-0.
        agent_call(
            "call_resume",
            r#"{"prompt":"What did you change?","description":"ask about change","resume":"agent-0"}"#,
        ),
        ScriptTurn::text(format!("Again: {LONG_SUMMARY}")),
        ScriptTurn::text("It changed the value."),
    ];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    let (reason, error) = s.run("Make the value 2.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    assert_eq!(
        std::fs::read_to_string(dirs.file("calc.txt")).unwrap(),
        "value = 2\n"
    );

    let requests = s.requests();
    assert_eq!(requests.len(), 5);
    let main_tools = tool_names(&requests[0].body);
    assert!(main_tools.contains(&"Agent".to_owned()), "{main_tools:?}");
    let sub = &requests[1].body;
    assert_eq!(
        tool_names(sub),
        [
            "Read",
            "Write",
            "Edit",
            "Glob",
            "Grep",
            "Bash",
            "TaskList",
            "TaskOutput",
            "TaskStop",
            "WaitFor",
            "TodoList",
            "FetchURL",
            "ReadMediaFile"
        ]
    );
    assert!(system_prompt(sub).contains("You are running as a subagent"));
    assert!(system_prompt(sub).contains("You are the delegate that may change files"));
    assert!(!system_prompt(&requests[0].body).contains("running as a subagent"));
    assert_eq!(
        user_texts(sub),
        vec!["Set the value in calc.txt to 2.".to_owned()]
    );
    let results = tool_results(&requests[4].body);
    let agent_result = results.iter().find(|r| r.id == "call_agent").unwrap();
    assert!(!agent_result.reads_as_error(), "{}", agent_result.text);
    assert!(
        agent_result.text.contains("agent_id: agent-0")
            && agent_result.text.contains("actual_subagent_type: coder")
            && agent_result.text.contains("status: completed")
            && agent_result.text.contains(LONG_SUMMARY)
            && agent_result.text.contains("usage: input 30, output 15"),
        "{}",
        agent_result.text
    );
    let journal = agent_journal(&s, "agent-0");
    assert_eq!(bound_profile(&journal).as_deref(), Some("coder"));
    assert!(
        s.opened
            .session
            .dir
            .join("agents/agent-0/wire.jsonl")
            .is_file()
    );

    // Resume: the subagent sees its own earlier history, and keeps its tools.
    let (reason, error) = s.run("What exactly changed?").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let requests = s.requests();
    assert_eq!(requests.len(), 8);
    let resumed = &requests[6].body;
    assert_eq!(
        user_texts(resumed),
        vec![
            "Set the value in calc.txt to 2.".to_owned(),
            "What did you change?".to_owned()
        ]
    );
    assert_eq!(tool_names(resumed), tool_names(&requests[1].body));
    assert!(resumed.to_string().contains("value = 2"));
    let results = tool_results(&requests[7].body);
    let resumed_result = results.iter().find(|r| r.id == "call_resume").unwrap();
    assert!(resumed_result.text.contains("agent_id: agent-0"));
    assert!(resumed_result.text.contains("Again: Changed calc.txt"));
    assert!(!s.opened.session.dir.join("agents/agent-1").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_is_read_only_and_a_short_answer_is_sent_back_once() {
    let dirs = Dirs::new();
    let script = vec![
        agent_call(
            "call_explore",
            r#"{"prompt":"Where is the config parsed?","description":"find config","subagent_type":"explore"}"#,
        ),
        ScriptTurn::text("In src/config.rs."),
        ScriptTurn::text("Still short."),
        ScriptTurn::text("Found it."),
    ];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    let (reason, error) = s.run("Find the config parser.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let requests = s.requests();
    assert_eq!(requests.len(), 4, "one re-ask, not two");
    let sub = &requests[1].body;
    assert_eq!(
        tool_names(sub),
        ["Read", "Glob", "Grep", "Bash", "FetchURL", "ReadMediaFile"]
    );
    assert!(system_prompt(sub).contains("You explore and report; you never change anything"));
    let reask = user_texts(&requests[2].body);
    assert_eq!(reask.len(), 2);
    assert!(reask[1].contains("too short"), "{reask:?}");
    let result = tool_results(&requests[3].body)
        .into_iter()
        .find(|r| r.id == "call_explore")
        .unwrap();
    assert!(
        result.text.contains("actual_subagent_type: explore")
            && result.text.ends_with("Still short."),
        "{}",
        result.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_or_disallowed_types_and_bad_resumes_are_tool_errors() {
    let dirs = Dirs::new();
    let script = vec![
        ScriptTurn::tool_calls(&[
            (
                "c_unknown",
                "Agent",
                r#"{"prompt":"x","description":"x","subagent_type":"nosuch"}"#,
            ),
            (
                "c_main",
                "Agent",
                r#"{"prompt":"x","description":"x","subagent_type":"agent"}"#,
            ),
            (
                "c_resume",
                "Agent",
                r#"{"prompt":"x","description":"x","resume":"agent-7"}"#,
            ),
            (
                "c_both",
                "Agent",
                r#"{"prompt":"x","description":"x","resume":"agent-0","subagent_type":"coder"}"#,
            ),
        ]),
        ScriptTurn::text("ok"),
    ];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    let (reason, _) = s.run("go").await;
    assert_eq!(reason, TurnEndReason::Completed);
    let results = tool_results(&s.requests()[1].body);
    let text = |id: &str| results.iter().find(|r| r.id == id).unwrap().text.clone();
    assert!(
        text("c_unknown")
            .contains("`nosuch` is not available here. Use one of: coder, explore, plan.")
    );
    assert!(text("c_main").contains("`agent` is not available"));
    assert!(text("c_resume").contains("agent `agent-7` does not exist"));
    assert!(text("c_both").contains("drop `subagent_type`"));
    assert!(
        results
            .iter()
            .all(crate::harness::WireResult::reads_as_error)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_main_turn_cancels_the_running_subagent() {
    let dirs = Dirs::new();
    let fifo = dirs.file("gate.fifo");
    mkfifo(&fifo);
    let script = vec![
        agent_call(
            "call_agent",
            r#"{"prompt":"Wait for the gate.","description":"wait on gate"}"#,
        ),
        ScriptTurn::tool_calls(&[("sub_cat", "Bash", r#"{"command":"cat gate.fifo"}"#)]),
    ];
    let mut s = Session::start(&dirs, ProviderType::OpenAi, script).await;
    s.submit("Delegate the wait.");
    // The subagent's `cat` has the fifo open once this open-for-writing returns; the writer is
    // held open (without writing) so `cat` keeps blocking until it is killed.
    let writer = tokio::task::spawn_blocking({
        let fifo = fifo.clone();
        move || std::fs::OpenOptions::new().write(true).open(fifo).unwrap()
    });
    let writer = tokio::time::timeout(crate::harness::WAIT, writer)
        .await
        .expect("the subagent never started cat")
        .unwrap();
    s.send(Op::Cancel { queued: true });
    let (reason, _) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Cancelled);
    drop(writer);
    let result = s
        .events
        .iter()
        .find_map(|e| match e {
            Event::ToolResult {
                tool_call_id,
                output,
                is_error,
            } if tool_call_id == "call_agent" => Some((output.clone(), *is_error)),
            _ => None,
        })
        .expect("the Agent call got a result");
    assert!(result.1);
    // The subagent's own turn ended as cancelled in its journal.
    s.close().await;
    let journal = agent_journal(&s, "agent-0");
    assert!(
        journal
            .iter()
            .any(|r| r["type"] == "turn.ended" && r["reason"] == "cancelled"),
        "{journal:#?}"
    );
    // Nothing more was asked of the model after the cancel.
    assert_eq!(s.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_agent_can_be_bound_to_a_project_agent_file() {
    let dirs = Dirs::new();
    let agents = dirs.cwd().join(".kimi-code/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\ndescription: Reviews code\ntools: [Read, Grep]\n---\nYou review code in ${cwd}.\n\n${base_prompt}\n",
    )
    .unwrap();
    std::fs::write(agents.join("broken.md"), "no frontmatter here").unwrap();
    let mut options = Options::new(ProviderType::OpenAi);
    options.agent = AgentChoice::Named("reviewer".to_owned());
    let mut s = Session::start_with(&dirs, options, vec![ScriptTurn::text("Looks fine.")]).await;
    assert!(
        s.opened
            .warnings
            .iter()
            .any(|w| w.contains("broken.md") && w.contains("no YAML frontmatter")),
        "{:?}",
        s.opened.warnings
    );
    let (reason, _) = s.run("Review.").await;
    assert_eq!(reason, TurnEndReason::Completed);
    let body = &s.requests()[0].body;
    assert_eq!(tool_names(body), ["Read", "Grep"]);
    let prompt = system_prompt(body);
    assert!(
        prompt.starts_with(&format!("You review code in {}.", dirs.cwd().display())),
        "{prompt}"
    );
    assert!(
        prompt.contains("You are kimi-rs,"),
        "the base prompt is embedded"
    );
    assert_eq!(bound_profile(&s.journal()).as_deref(), Some("reviewer"));

    // Resumed, it keeps the profile (the request for `reviewer` must not change).
    let id = s.session_id();
    s.close().await;
    drop(s);
    let mut options = Options::new(ProviderType::OpenAi);
    options.resume = kimi_core::session::Resume::Id(id);
    let mut s = Session::start_with(&dirs, options, vec![ScriptTurn::text("Still fine.")]).await;
    assert_eq!(s.opened.profile.name, "reviewer");
    let (reason, _) = s.run("Again.").await;
    assert_eq!(reason, TurnEndReason::Completed);
    assert_eq!(tool_names(&s.requests()[0].body), ["Read", "Grep"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_agent_name_or_invalid_agent_file_fails_to_open() {
    let dirs = Dirs::new();
    let bad = dirs.file("bad.md");
    std::fs::write(&bad, "---\nname: Bad Name\ndescription: d\n---\nbody").unwrap();
    for (choice, needle) in [
        (
            AgentChoice::Named("nosuch".to_owned()),
            "no agent profile named `nosuch`; available profiles: agent, coder, explore, plan",
        ),
        (AgentChoice::File(bad.clone()), "is not kebab-case"),
        (
            AgentChoice::File(dirs.file("missing.md")),
            "cannot read the agent file",
        ),
    ] {
        let server = kimi_test_support::ScriptServer::start(Vec::new())
            .await
            .unwrap();
        let setup = kimi_core::session::SessionSetup {
            home: dirs.home.path().to_owned(),
            cwd: dirs.cwd(),
            resume: kimi_core::session::Resume::New,
            provider: crate::harness::provider_for(&server, ProviderType::OpenAi),
            params: Default::default(),
            max_context_tokens: 0,
            max_steps_per_turn: None,
            retry: Default::default(),
            permissions: std::sync::Arc::new(kimi_core::engine::runtime::ApproveAll),
            permission_chain: None,
            additional_dirs: Vec::new(),
            tool_env: Vec::new(),
            fsync: kimi_store::FsyncPolicy::Never,
            extensions: Default::default(),
            agent: choice,
            config: Default::default(),
            model_pool: Default::default(),
            model_alias: None,
            models: None,
        };
        let err = match kimi_core::session::open_session(setup) {
            Ok(_) => panic!("opened with a bad agent"),
            Err(err) => err.to_string(),
        };
        assert!(err.contains(needle), "{err}");
    }
    // No session was created by the failed attempts.
    assert!(!dirs.home.path().join("sessions").exists());
}

/// Marks the requests of a subagent (its system prompt), so its script turns are served to it
/// while the main agent runs concurrently.
const SUBAGENT: &str = "You are running as a subagent";

/// A session whose first answer launches a background subagent that blocks in Bash on a fifo
/// (returned) until the test writes to it.
async fn with_blocked_background_subagent(dirs: &Dirs) -> (Session, std::path::PathBuf) {
    let fifo = dirs.file("gate");
    mkfifo(&fifo);
    let launch = serde_json::json!({
        "prompt": "Wait for the gate, then report.",
        "description": "wait and report",
        "run_in_background": true,
    });
    let script = vec![
        agent_call("call_bg", &launch.to_string()),
        ScriptTurn::text("Started it; I will tell you when it reports."),
    ];
    let s = Session::start(dirs, ProviderType::OpenAi, script).await;
    let gate = serde_json::json!({"command": format!("cat {}", fifo.display())});
    s.server.push_for(
        SUBAGENT,
        ScriptTurn::tool_calls(&[("sub_gate", "Bash", &gate.to_string())]),
    );
    (s, fifo)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_subagent_reports_when_it_finishes_and_starts_a_turn_of_its_own() {
    let dirs = Dirs::new();
    let (mut s, fifo) = with_blocked_background_subagent(&dirs).await;
    s.server.push_for(SUBAGENT, ScriptTurn::text(LONG_SUMMARY));
    s.server
        .push(ScriptTurn::text("The subagent has reported."));

    let (reason, error) = s.run("Delegate the waiting.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let started = tool_results(
        &s.requests()
            .iter()
            .rfind(|r| !r.raw_body.contains(SUBAGENT))
            .unwrap()
            .body,
    )
    .into_iter()
    .find(|r| r.id == "call_bg")
    .unwrap();
    assert!(
        started.text.contains("in the background as task agent-"),
        "{}",
        started.text
    );
    let tasks = s
        .opened
        .agent
        .handle
        .runtime()
        .config
        .tool_ctx
        .tasks
        .clone();
    let listed = tasks.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].kind, "agent");
    assert_eq!(
        listed[0].status.as_str(),
        "running",
        "the turn ended before the subagent"
    );

    // Let the subagent finish: its report starts a turn of the main agent.
    release_fifo(fifo, "open\n").await;
    let (reason, error) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let last = s
        .requests()
        .into_iter()
        .rfind(|r| !r.raw_body.contains(SUBAGENT))
        .unwrap();
    let notice = user_texts(&last.body).join("\n");
    assert!(
        notice.contains("Background subagent task agent-")
            && notice.contains("ended: completed")
            && notice.contains(LONG_SUMMARY)
            && notice.contains("agent_id: agent-0"),
        "{notice}"
    );
    assert_eq!(tasks.list()[0].status.as_str(), "completed");
    assert!(
        agent_journal(&s, "agent-0")
            .iter()
            .any(|r| r["type"] == "turn.ended")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_background_subagent_cancels_its_turn() {
    let dirs = Dirs::new();
    let (mut s, fifo) = with_blocked_background_subagent(&dirs).await;
    s.server.push(ScriptTurn::text("It was stopped."));
    let (reason, error) = s.run("Start the waiter.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let tasks = s
        .opened
        .agent
        .handle
        .runtime()
        .config
        .tool_ctx
        .tasks
        .clone();
    let id = tasks.list()[0].id.clone();
    // The subagent is inside its Bash call once the command holds the fifo open.
    let reader = tokio::task::spawn_blocking({
        let fifo = fifo.clone();
        move || std::fs::OpenOptions::new().write(true).open(fifo)
    });
    let writer = reader.await.unwrap().unwrap();
    let stopped = tasks.stop(&id, "no longer needed").await.unwrap();
    drop(writer);
    assert_eq!(stopped.status.as_str(), "killed");
    assert_eq!(stopped.reason.as_deref(), Some("no longer needed"));
    let (reason, _) = s.turn_end().await;
    assert_eq!(reason, TurnEndReason::Completed);
    let last = s
        .requests()
        .into_iter()
        .rfind(|r| !r.raw_body.contains(SUBAGENT))
        .unwrap();
    assert!(user_texts(&last.body).join("\n").contains("ended: killed"));
    let journal = agent_journal(&s, "agent-0");
    assert!(
        journal
            .iter()
            .any(|r| r["type"] == "turn.ended" && r["reason"] == "cancelled"),
        "the subagent's turn was cancelled"
    );
}
