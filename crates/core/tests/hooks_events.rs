//! Every one of the 20 hook events: its payload keys on stdin and its matcher value.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap fixture I/O

use std::collections::BTreeSet;

use kimi_core::hooks::{
    CommonPayload, HookEvent, HookEventData, PermissionRequestInfo, clip_tool_output,
};
use kimi_protocol::ContentPart;
use pretty_assertions::assert_eq;
use serde_json::json;

fn request() -> PermissionRequestInfo {
    PermissionRequestInfo {
        id: "req1".into(),
        agent_id: "main".into(),
        turn_id: json!(2),
        tool_call_id: "call1".into(),
        tool_name: "Bash".into(),
        action: "run command".into(),
        display: json!({"kind": "shell", "summary": "ls"}),
        tool_input: json!({"command": "ls"}),
    }
}

fn samples() -> Vec<(HookEventData, &'static [&'static str], &'static str)> {
    let prompt = vec![
        ContentPart::text("fix the bug"),
        ContentPart::text("please"),
    ];
    let tool = |extra| -> HookEventData {
        match extra {
            0 => HookEventData::PreToolUse {
                tool_name: "Write".into(),
                tool_input: json!({"path": "a"}),
                tool_call_id: "c1".into(),
            },
            1 => HookEventData::PostToolUse {
                tool_name: "Write".into(),
                tool_input: json!({"path": "a"}),
                tool_call_id: "c1".into(),
                tool_output: clip_tool_output(&"x".repeat(5000)),
            },
            _ => HookEventData::PostToolUseFailure {
                tool_name: "Write".into(),
                tool_input: json!({"path": "a"}),
                tool_call_id: "c1".into(),
                error: json!({"name": "Error", "message": "disk full"}),
            },
        }
    };
    vec![
        (
            tool(0),
            &["tool_name", "tool_input", "tool_call_id"],
            "Write",
        ),
        (
            tool(1),
            &["tool_name", "tool_input", "tool_call_id", "tool_output"],
            "Write",
        ),
        (
            tool(2),
            &["tool_name", "tool_input", "tool_call_id", "error"],
            "Write",
        ),
        (
            HookEventData::PermissionRequest { request: request() },
            &[
                "id",
                "agent_id",
                "turn_id",
                "tool_call_id",
                "tool_name",
                "action",
                "display",
                "tool_input",
            ],
            "Bash",
        ),
        (
            HookEventData::PermissionResult {
                request: request(),
                decision: "approved".into(),
                scope: Some("session".into()),
                feedback: None,
                selected_label: None,
                error: None,
            },
            &[
                "id",
                "agent_id",
                "turn_id",
                "tool_call_id",
                "tool_name",
                "action",
                "display",
                "tool_input",
                "decision",
                "scope",
            ],
            "Bash",
        ),
        (
            HookEventData::UserPromptSubmit {
                prompt: prompt.clone(),
                is_steer: false,
            },
            &["prompt", "is_steer"],
            "fix the bug\nplease",
        ),
        (
            HookEventData::UserPromptQueued {
                prompt_id: "p1".into(),
                prompt: prompt.clone(),
                queue_length: 2,
            },
            &["prompt_id", "prompt", "queue_length"],
            "fix the bug\nplease",
        ),
        (
            HookEventData::TurnStarted {
                turn_id: json!(3),
                origin_kind: "user".into(),
                origin_name: None,
                prompt,
            },
            &["turn_id", "origin_kind", "prompt"],
            "user",
        ),
        (
            HookEventData::Stop {
                stop_hook_active: false,
            },
            &["stop_hook_active"],
            "",
        ),
        (
            HookEventData::StopFailure {
                error_type: "rate_limit".into(),
                error_message: "429".into(),
            },
            &["error_type", "error_message"],
            "rate_limit",
        ),
        (
            HookEventData::Interrupt {
                turn_id: json!(3),
                reason: "cancelled".into(),
            },
            &["turn_id", "reason"],
            "",
        ),
        (
            HookEventData::SessionStart {
                source: "resume".into(),
                model: "kimi-k2".into(),
                profile: "default".into(),
            },
            &["source", "model", "profile"],
            "resume",
        ),
        (
            HookEventData::SessionEnd {
                reason: "exit".into(),
            },
            &["reason"],
            "exit",
        ),
        (
            HookEventData::SessionHeartbeat { uptime_ms: 60_000 },
            &["uptime_ms"],
            "",
        ),
        (
            HookEventData::SubagentStart {
                agent_name: "coder".into(),
                prompt: "do it".into(),
            },
            &["agent_name", "prompt"],
            "coder",
        ),
        (
            HookEventData::SubagentStop {
                agent_name: "coder".into(),
                response: "done".into(),
            },
            &["agent_name", "response"],
            "coder",
        ),
        (
            HookEventData::TaskStarted {
                task_id: "t1".into(),
                kind: "process".into(),
                description: "build".into(),
                status: "running".into(),
                detached: true,
                started_at: json!(1_700_000_000_000u64),
            },
            &[
                "task_id",
                "kind",
                "description",
                "status",
                "detached",
                "started_at",
            ],
            "process",
        ),
        (
            HookEventData::PreCompact {
                trigger: "auto".into(),
                token_count: 100_000,
            },
            &["trigger", "token_count"],
            "auto",
        ),
        (
            HookEventData::PostCompact {
                trigger: "manual".into(),
                estimated_token_count: 9_000,
            },
            &["trigger", "estimated_token_count"],
            "manual",
        ),
        (
            HookEventData::Notification {
                sink: "context".into(),
                agent_id: "main".into(),
                notification_type: "task.completed".into(),
                title: "done".into(),
                body: "build finished".into(),
                severity: "info".into(),
                source_kind: "task".into(),
                source_id: "t1".into(),
            },
            &[
                "sink",
                "agent_id",
                "notification_type",
                "title",
                "body",
                "severity",
                "source_kind",
                "source_id",
            ],
            "task.completed",
        ),
    ]
}

#[test]
fn all_twenty_events_have_their_payload_keys() {
    let common = CommonPayload {
        session_id: "s1".into(),
        cwd: "/w".into(),
        client_type: "kimi_code_cli".into(),
        session_title: Some("title".into()),
    };
    let samples = samples();
    let events: BTreeSet<HookEvent> = samples.iter().map(|(d, _, _)| d.event()).collect();
    assert_eq!(events, HookEvent::ALL.into_iter().collect::<BTreeSet<_>>());
    for (data, extra, matcher) in samples {
        let payload = data.payload(&common);
        let keys: BTreeSet<&str> = payload
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut expected: BTreeSet<&str> = extra.iter().copied().collect();
        expected.extend([
            "hook_event_name",
            "session_id",
            "cwd",
            "client_type",
            "session_title",
        ]);
        assert_eq!(keys, expected, "{:?}", data.event());
        assert_eq!(payload["hook_event_name"], json!(data.event().as_str()));
        assert_eq!(data.matcher_value(), matcher, "{:?}", data.event());
        assert_eq!(HookEvent::parse(data.event().as_str()), Some(data.event()));
    }
}

#[test]
fn payload_details() {
    let post = HookEventData::PostToolUse {
        tool_name: "Bash".into(),
        tool_input: json!({}),
        tool_call_id: "c".into(),
        tool_output: clip_tool_output(&"é".repeat(3000)),
    };
    let common = CommonPayload {
        session_id: "s".into(),
        cwd: "/".into(),
        client_type: "kimi_code_cli".into(),
        session_title: None,
    };
    let payload = post.payload(&common);
    assert_eq!(
        payload["tool_output"].as_str().unwrap().chars().count(),
        2000
    );
    assert!(payload.get("session_title").is_none());
    let submit = HookEventData::UserPromptSubmit {
        prompt: vec![ContentPart::text("hi")],
        is_steer: true,
    };
    assert_eq!(
        submit.payload(&common)["prompt"],
        serde_json::to_value(vec![ContentPart::text("hi")]).unwrap()
    );
    let blocking: Vec<HookEvent> = HookEvent::ALL
        .into_iter()
        .filter(|e| e.honours_block())
        .collect();
    assert_eq!(
        blocking,
        vec![
            HookEvent::PreToolUse,
            HookEvent::UserPromptSubmit,
            HookEvent::Stop
        ]
    );
}
