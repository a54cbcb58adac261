//! The hook events that fire from timers and from subagents and tasks: SessionHeartbeat,
//! SubagentStart, SubagentStop and TaskStarted, each with its payload as a real hook process
//! receives it on stdin (the other sixteen are covered in `hooks_events.rs`,
//! `engine_guards.rs` and `hooks_runner.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kimi_core::engine::hooks::EngineHooks;
use kimi_core::hooks::{CommonPayload, HookDef, HookEvent, HookRunner, HookSet};
use kimi_llm::ProviderType;
use kimi_llm::scripted::ScriptTurn;
use kimi_protocol::ops::TurnEndReason;
use serde_json::Value;

use super::harness::{Dirs, Options, Session, WAIT};

const SUMMARY: &str = "Looked at the workspace as asked: there is nothing in it yet, so there was nothing to change. No files were read or written and no command was run; nothing is left open, and no follow-up is needed from anyone for this request.";

/// Append each payload (one JSON object per line) to `<dir>/<event>.jsonl`.
fn recorder(dir: &Path, event: &str) -> String {
    format!(
        "[[hooks]]\nevent = \"{event}\"\ncommand = \"cat >> '{}'; echo >> '{}'\"\n",
        dir.join(format!("{event}.jsonl")).display(),
        dir.join(format!("{event}.jsonl")).display()
    )
}

fn config_with(dir: &Path, events: &[&str]) -> Arc<kimi_config::Config> {
    let text: String = events.iter().map(|e| recorder(dir, e)).collect();
    Arc::new(kimi_config::Config::parse(&text, &dir.join("config.toml")))
}

/// The payloads recorded for `event`, once at least `count` arrived (bounded wait).
async fn payloads(dir: &Path, event: &str, count: usize) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(dir.join(format!("{event}.jsonl"))).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines.len() >= count {
            return lines;
        }
        if started.elapsed() >= WAIT {
            // Say what the hooks left, so a failure under load explains itself.
            let files: Vec<String> = std::fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            panic!(
                "{event}: {} of {count} payloads within {WAIT:?}; files in {}: {files:?}; text: {text:?}",
                lines.len(),
                dir.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subagent_start_and_stop_carry_the_agent_name_prompt_and_response() {
    let dirs = Dirs::new();
    let out = tempfile::tempdir().unwrap();
    let mut options = Options::new(ProviderType::OpenAi);
    options.config = config_with(out.path(), &["SubagentStart", "SubagentStop"]);
    let script = vec![
        ScriptTurn::tool_calls(&[(
            "call_agent",
            "Agent",
            r#"{"prompt":"Look around the workspace.","description":"look around","subagent_type":"explore"}"#,
        )]),
        ScriptTurn::text(SUMMARY),
        ScriptTurn::text("The subagent found nothing."),
    ];
    let mut s = Session::start_with(&dirs, options, script).await;
    let (reason, error) = s.run("Delegate a look around.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let start = payloads(out.path(), "SubagentStart", 1).await;
    assert_eq!(start[0]["hook_event_name"], "SubagentStart");
    assert_eq!(start[0]["agent_name"], "explore");
    assert!(
        start[0]["prompt"]
            .as_str()
            .unwrap()
            .contains("Look around the workspace."),
        "{}",
        start[0]
    );
    assert_eq!(start[0]["session_id"], s.opened.session.state.id.as_str());
    let stop = payloads(out.path(), "SubagentStop", 1).await;
    assert_eq!(stop[0]["agent_name"], "explore");
    assert_eq!(stop[0]["response"], SUMMARY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_started_fires_for_background_commands_and_agents() {
    let dirs = Dirs::new();
    let out = tempfile::tempdir().unwrap();
    let mut options = Options::new(ProviderType::OpenAi);
    options.config = config_with(out.path(), &["TaskStarted"]);
    let script = vec![
        ScriptTurn::tool_calls(&[(
            "call_bash",
            "Bash",
            r#"{"command":"echo started","run_in_background":true,"description":"say started"}"#,
        )]),
        ScriptTurn::tool_calls(&[(
            "call_agent",
            "Agent",
            r#"{"prompt":"Look around.","description":"background look","subagent_type":"explore","run_in_background":true}"#,
        )]),
        ScriptTurn::text(SUMMARY),
        ScriptTurn::text("Both are running."),
    ];
    let mut s = Session::start_with(&dirs, options, script).await;
    let (reason, error) = s.run("Start two background jobs.").await;
    assert_eq!(reason, TurnEndReason::Completed, "{error:?}");
    let mut started = payloads(out.path(), "TaskStarted", 2).await;
    started.sort_by_key(|p| p["kind"].as_str().unwrap_or_default().to_owned());
    let kinds: Vec<&str> = started.iter().filter_map(|p| p["kind"].as_str()).collect();
    assert_eq!(kinds, ["agent", "process"]);
    for payload in &started {
        assert_eq!(payload["hook_event_name"], "TaskStarted");
        assert_eq!(payload["status"], "running");
        assert_eq!(payload["detached"], true);
        assert!(payload["started_at"].as_u64().unwrap() > 1_600_000_000_000);
        assert!(
            payload["task_id"]
                .as_str()
                .unwrap()
                .starts_with(if payload["kind"] == "agent" {
                    "agent-"
                } else {
                    ""
                })
        );
    }
    assert_eq!(started[0]["description"], "background look");
    assert_eq!(started[1]["description"], "say started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_heartbeat_fires_on_its_timer_with_the_uptime_and_stops() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("SessionHeartbeat.jsonl");
    let command = format!("cat >> '{}'; echo >> '{}'", file.display(), file.display());
    let set = HookSet::new(vec![HookDef::new(
        HookEvent::SessionHeartbeat,
        None,
        &command,
        5,
    )]);
    let common = CommonPayload {
        session_id: "s-beat".into(),
        cwd: out.path().display().to_string(),
        client_type: "kimi_rs_cli".into(),
        session_title: None,
    };
    let hooks = Arc::new(EngineHooks::new(
        set,
        HookRunner::new(out.path()),
        common,
        None,
    ));
    let interval = Duration::from_millis(150);
    hooks.start_heartbeat(interval);
    assert!(hooks.heartbeat_running());
    let beats = payloads(out.path(), "SessionHeartbeat", 2).await;
    hooks.stop_heartbeat();
    assert!(!hooks.heartbeat_running());
    assert_eq!(beats[0]["hook_event_name"], "SessionHeartbeat");
    assert_eq!(beats[0]["session_id"], "s-beat");
    let first = beats[0]["uptime_ms"].as_u64().unwrap();
    let second = beats[1]["uptime_ms"].as_u64().unwrap();
    assert!(first >= 150, "{first}");
    // Beats keep the timer's cadence (the n-th at n intervals), so the gap between two
    // may be a little under one interval when the first ran late.
    assert!(second >= 300 && second > first, "{first} then {second}");

    // Without a SessionHeartbeat hook no timer is armed.
    let idle = Arc::new(EngineHooks::new(
        HookSet::new(Vec::new()),
        HookRunner::new(out.path()),
        CommonPayload {
            session_id: "s-idle".into(),
            cwd: String::new(),
            client_type: "kimi_rs_cli".into(),
            session_title: None,
        },
        None,
    ));
    idle.start_heartbeat(interval);
    assert!(!idle.heartbeat_running());
}
