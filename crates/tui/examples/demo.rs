//! A scripted stand-in for the engine, to try the UI by hand: `cargo run -p kimi-tui
//! --example demo` (add `-- --full` for the alternate screen). Every prompt gets a streamed
//! Markdown answer and an Edit that asks for approval.

use std::time::Duration;

use kimi_protocol::message::{ContentPart, ToolCall};
use kimi_protocol::ops::{ApprovalDecision, ApprovalRequest, Event, Op, TurnEndReason};
use kimi_tui::{AppOptions, HostUpdate, RunOptions, SessionChannels, SessionInfo};

const ANSWER: &str = "Sure. Here is the plan:\n\n1. read `src/lib.rs`\n2. change the **limit**\n\n```rust\nconst LIMIT: usize = 20;\n```\n";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let full_screen = std::env::args().any(|a| a == "--full");
    let (ui, mut host) = SessionChannels::pair(256);
    let events = host.events.clone();
    tokio::spawn(async move {
        let mut turn = 0;
        while let Some(op) = host.ops.recv().await {
            match op {
                Op::Submit { .. } | Op::Steer { .. } => {
                    turn += 1;
                    let _ = events.send(Event::TurnStarted { turn_id: turn }).await;
                    let _ = events
                        .send(Event::StepStarted {
                            turn_id: turn,
                            step: 1,
                        })
                        .await;
                    for word in ANSWER.split_inclusive(' ') {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        let _ = events
                            .send(Event::AssistantDelta { text: word.into() })
                            .await;
                    }
                    let args = r#"{"file_path":"src/lib.rs","old_string":"const LIMIT: usize = 10;","new_string":"const LIMIT: usize = 20;"}"#;
                    let _ = events
                        .send(Event::ToolStarted {
                            call: ToolCall::new("c1", "Edit", Some(args.into())),
                        })
                        .await;
                    let _ = events
                        .send(Event::ApprovalRequested(ApprovalRequest {
                            request_id: format!("r{turn}"),
                            tool_call_id: "c1".into(),
                            tool_name: "Edit".into(),
                            action: "edit file".into(),
                            summary: "src/lib.rs".into(),
                            detail: None,
                            diff: Some(
                                "-const LIMIT: usize = 10;\n+const LIMIT: usize = 20;".into(),
                            ),
                            danger: None,
                            policy: "manual-mode".into(),
                            options: Vec::new(),
                        }))
                        .await;
                }
                Op::Approve { decision, .. } => {
                    let rejected = matches!(
                        decision,
                        ApprovalDecision::Reject | ApprovalDecision::RejectWithFeedback { .. }
                    );
                    let _ = events
                        .send(Event::ToolResult {
                            tool_call_id: "c1".into(),
                            output: vec![ContentPart::text(if rejected {
                                "rejected by the user"
                            } else {
                                "ok"
                            })],
                            is_error: rejected,
                        })
                        .await;
                    let _ = events
                        .send(Event::TurnEnded {
                            turn_id: turn,
                            reason: TurnEndReason::Completed,
                            error: None,
                        })
                        .await;
                }
                Op::Cancel { .. } => {
                    let _ = events
                        .send(Event::TurnEnded {
                            turn_id: turn,
                            reason: TurnEndReason::Cancelled,
                            error: None,
                        })
                        .await;
                }
                Op::ListSessions { .. } => {
                    let _ = events
                        .send(Event::SessionList {
                            sessions: Vec::new(),
                        })
                        .await;
                }
                other => {
                    let _ = events
                        .send(Event::Warning {
                            message: format!("demo ignores {other:?}"),
                        })
                        .await;
                }
            }
        }
    });
    let updates = host.host_updates.clone();
    tokio::spawn(async move {
        while let Some(req) = host.host_requests.recv().await {
            let _ = updates
                .send(HostUpdate::Notice(format!("host would handle {req:?}")))
                .await;
        }
    });
    let info = SessionInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        session_id: "demo".into(),
        model: "demo-model".into(),
        cwd: std::env::current_dir()?.display().to_string(),
        context_window: 128_000,
        ..SessionInfo::default()
    };
    let opts = RunOptions {
        app: AppOptions {
            info,
            status_items: vec!["mode".into(), "model".into(), "cwd".into()],
            collapse_pastes: true,
            workdir: std::env::current_dir().ok(),
            prefs: kimi_tui::prefs::Prefs {
                editor_env: std::env::var("VISUAL")
                    .or_else(|_| std::env::var("EDITOR"))
                    .ok(),
                ..kimi_tui::prefs::Prefs::default()
            },
            ..AppOptions::default()
        },
        transcript: Vec::new(),
        clipboard: kimi_tui::clipboard::ClipboardSource::default(),
        full_screen,
        open_session_picker: false,
        terminal: kimi_tui::notify::TerminalInfo::from_env(),
    };
    kimi_tui::run(opts, ui).await?;
    Ok(())
}
