//! Hook processes for real: `sh -c` scripts in temp dirs, payload on stdin, exit codes, JSON
//! and garbage output, timeouts that kill the whole process group, and de-duplication.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap fixture I/O

use std::path::Path;
use std::time::{Duration, Instant};

use kimi_core::hooks::{
    CommonPayload, EventResult, HookDef, HookEvent, HookEventData, HookRunner, HookSet, RunStatus,
    load_hooks_from_str,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn common(cwd: &Path) -> CommonPayload {
    CommonPayload {
        session_id: "sess-1".into(),
        cwd: cwd.to_string_lossy().into_owned(),
        client_type: "kimi_code_cli".into(),
        session_title: Some("t".into()),
    }
}

fn pre_tool(tool: &str) -> HookEventData {
    HookEventData::PreToolUse {
        tool_name: tool.into(),
        tool_input: json!({"command": "ls"}),
        tool_call_id: "call-1".into(),
    }
}

fn set(hooks: &[(HookEvent, Option<&str>, &str, u64)]) -> HookSet {
    HookSet::new(
        hooks
            .iter()
            .map(|(e, m, c, t)| HookDef::new(*e, *m, c, *t))
            .collect(),
    )
}

async fn run(dir: &Path, hooks: &HookSet, data: &HookEventData) -> EventResult {
    HookRunner::new(dir)
        .run_event(hooks, data, &common(dir))
        .await
}

#[tokio::test]
async fn payload_arrives_on_stdin_and_cwd_is_the_session_dir() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = set(&[(
        HookEvent::PreToolUse,
        Some("^Bash$"),
        "cat > payload.json; pwd > cwd.txt",
        10,
    )]);
    let result = run(dir.path(), &hooks, &pre_tool("Bash")).await;
    assert_eq!(result, EventResult::default());
    let payload: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("payload.json")).unwrap())
            .unwrap();
    assert_eq!(
        payload,
        json!({
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_call_id": "call-1",
            "session_id": "sess-1",
            "cwd": dir.path().to_string_lossy(),
            "client_type": "kimi_code_cli",
            "session_title": "t",
        })
    );
    let cwd = std::fs::read_to_string(dir.path().join("cwd.txt")).unwrap();
    assert_eq!(
        std::fs::canonicalize(cwd.trim()).unwrap(),
        std::fs::canonicalize(dir.path()).unwrap()
    );
    // The matcher is a regex: `^Bash$` does not match `BashOutput`, so nothing runs.
    std::fs::remove_file(dir.path().join("payload.json")).unwrap();
    run(dir.path(), &hooks, &pre_tool("BashOutput")).await;
    assert!(!dir.path().join("payload.json").exists());
}

#[tokio::test]
async fn exit_codes_and_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, HookEvent, EventResult)> = vec![
        (
            "echo 'do not touch prod' >&2; exit 2",
            HookEvent::PreToolUse,
            EventResult {
                blocked: Some("do not touch prod".into()),
                ..EventResult::default()
            },
        ),
        (
            // Blocking is not honoured for observer events.
            "echo nope >&2; exit 2",
            HookEvent::PostToolUse,
            EventResult::default(),
        ),
        (
            r#"echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"json says no"}}'"#,
            HookEvent::PreToolUse,
            EventResult {
                blocked: Some("json says no".into()),
                ..EventResult::default()
            },
        ),
        (
            // Garbage JSON is plain text.
            r#"printf '{"hookSpecificOutput": {oops'"#,
            HookEvent::PreToolUse,
            EventResult {
                messages: vec![r#"{"hookSpecificOutput": {oops"#.into()],
                ..EventResult::default()
            },
        ),
        (
            "echo context for the model",
            HookEvent::UserPromptSubmit,
            EventResult {
                messages: vec!["context for the model".into()],
                ..EventResult::default()
            },
        ),
    ];
    for (command, event, expected) in cases {
        let data = match event {
            HookEvent::PreToolUse => pre_tool("Bash"),
            HookEvent::PostToolUse => HookEventData::PostToolUse {
                tool_name: "Bash".into(),
                tool_input: json!({}),
                tool_call_id: "c".into(),
                tool_output: "out".into(),
            },
            _ => HookEventData::UserPromptSubmit {
                prompt: vec![kimi_protocol::ContentPart::text("hi")],
                is_steer: false,
            },
        };
        let hooks = set(&[(event, None, command, 10)]);
        assert_eq!(run(dir.path(), &hooks, &data).await, expected, "{command}");
    }
    // Any other exit code fails open with a warning that names the hook.
    let hooks = set(&[(HookEvent::PreToolUse, None, "echo boom >&2; exit 7", 10)]);
    let result = run(dir.path(), &hooks, &pre_tool("Bash")).await;
    assert_eq!(result.blocked, None);
    assert_eq!(result.warnings.len(), 1);
    assert!(
        result.warnings[0].contains("exited with code 7"),
        "{:?}",
        result.warnings
    );
    assert!(result.warnings[0].contains("boom"));
}

fn live_members_of_group(pgid: u32) -> Vec<String> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the parenthesised command name: state, ppid, pgrp, …
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2) == Some(&pgid.to_string().as_str()) && !matches!(fields[0], "Z" | "X") {
            live.push(stat);
        }
    }
    live
}

#[tokio::test]
async fn a_hanging_hook_is_killed_with_its_whole_group_and_fails_open() {
    let dir = tempfile::tempdir().unwrap();
    // The hook starts a background child (same group), records it, and hangs.
    let command = "sleep 300 & echo $! > bg.pid; sleep 300";
    let hook = HookDef::new(HookEvent::PreToolUse, None, command, 1);
    let runner = HookRunner::new(dir.path());
    let started = Instant::now();
    let finished = runner.run_one(&hook, "{}").await;
    let elapsed = started.elapsed();
    assert_eq!(finished.status, RunStatus::TimedOut { after_secs: 1 });
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    let pgid = finished.pid.unwrap();
    let bg: u32 = std::fs::read_to_string(dir.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(bg, pgid);
    // SIGKILL has been sent to the group and the pipes its members held are closed; /proc may
    // take a moment to report the last member dead.
    assert_group_gone(pgid).await;

    // Through run_event the caller gets a fail-open result with a warning.
    let hooks = HookSet::new(vec![HookDef::new(
        HookEvent::PreToolUse,
        None,
        "sleep 300",
        1,
    )]);
    let result = run(dir.path(), &hooks, &pre_tool("Bash")).await;
    assert_eq!(result.blocked, None);
    assert!(
        result.warnings[0].contains("did not finish within 1 s"),
        "{:?}",
        result.warnings
    );
}

/// Polls until no live process is left in the group, failing after a deadline.
async fn assert_group_gone(pgid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let live = live_members_of_group(pgid);
        if live.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "still alive: {live:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn an_abandoned_hook_run_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let hook = HookDef::new(
        HookEvent::PreToolUse,
        None,
        "sleep 300 & echo $$ > pgid.tmp && mv pgid.tmp pgid; sleep 300",
        600,
    );
    let runner = HookRunner::new(dir.path());
    let mut pending = Box::pin(runner.run_one(&hook, "{}"));
    let pgid_file = dir.path().join("pgid");
    let deadline = Instant::now() + Duration::from_secs(10);
    // Drive the run until the hook has written its group id (the file appears atomically).
    let pgid: u32 = loop {
        tokio::select! {
            finished = &mut pending => panic!("hook finished early: {finished:?}"),
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
        if let Ok(text) = std::fs::read_to_string(&pgid_file) {
            break text.trim().parse().unwrap();
        }
        assert!(Instant::now() < deadline, "hook never started");
    };
    assert!(!live_members_of_group(pgid).is_empty());
    // The turn is cancelled: the caller drops the future.
    drop(pending);
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn a_leader_that_exits_early_does_not_leave_the_turn_waiting_on_its_children() {
    let dir = tempfile::tempdir().unwrap();
    // The shell exits at once, but its background child keeps stdout open and hangs.
    let hook = HookDef::new(HookEvent::Stop, None, "sleep 300 & echo early", 1);
    let started = Instant::now();
    let run = HookRunner::new(dir.path()).run_one(&hook, "{}").await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(run.status, RunStatus::TimedOut { after_secs: 1 });
}

#[tokio::test]
async fn duplicate_hooks_run_once_and_different_ones_all_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"
[[hooks]]
event = "SessionStart"
command = "echo ran >> log.txt"

[[hooks]]
event = "SessionStart"
matcher = "startup"
command = "echo ran >> log.txt"

[[hooks]]
event = "SessionStart"
matcher = "resume"
command = "echo other >> other.txt"
"#;
    let loaded = load_hooks_from_str(config).unwrap();
    assert_eq!(loaded.errors, vec![]);
    let data = HookEventData::SessionStart {
        source: "startup".into(),
        model: "m".into(),
        profile: "default".into(),
    };
    run(dir.path(), &loaded.hooks, &data).await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("log.txt")).unwrap(),
        "ran\n"
    );
    assert!(!dir.path().join("other.txt").exists());
}

#[tokio::test]
async fn runner_env_and_missing_shell() {
    let dir = tempfile::tempdir().unwrap();
    let mut runner = HookRunner::new(dir.path());
    runner
        .env
        .push(("KIMI_CODE_HOME".into(), "/kimi-home".into()));
    let hook = HookDef::new(HookEvent::Stop, None, "printf %s \"$KIMI_CODE_HOME\"", 5);
    let run = runner.run_one(&hook, "{}").await;
    assert_eq!(run.status, RunStatus::Exited(0));
    assert_eq!(run.stdout, "/kimi-home");

    runner.shell = dir.path().join("no-such-shell");
    let run = runner.run_one(&hook, "{}").await;
    assert!(
        matches!(run.status, RunStatus::SpawnFailed(_)),
        "{:?}",
        run.status
    );
}
