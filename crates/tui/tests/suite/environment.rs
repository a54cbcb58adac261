//! `/environment` and where the tools run: the footer names a remote target, the command goes
//! to the host with its arguments when the session is idle and is refused while a turn runs
//! (switching happens at a turn boundary), and an approval names the target it acts on.

use crossterm::event::KeyCode;
use kimi_protocol::ops::{ApprovalRequest, Event};
use kimi_tui::{HostRequest, HostUpdate, SessionInfo, UiAction};

use super::support::{Harness, info};

fn bound(h: &mut Harness, label: &str) {
    h.app.handle_host(HostUpdate::Info(SessionInfo {
        environment: Some(label.to_owned()),
        ..info()
    }));
}

#[test]
fn the_footer_names_the_remote_target_and_local_shows_none() {
    let mut h = Harness::new();
    assert!(!h.screen(80, 6).contains("ssh:"), "{}", h.screen(80, 6));
    bound(&mut h, "ssh:dev-box");
    let screen = h.screen(80, 6);
    let footer = screen
        .lines()
        .find(|l| l.contains("/help"))
        .unwrap_or_default();
    assert!(
        footer.trim_start_matches('"').starts_with("ssh:dev-box · "),
        "{screen}"
    );
}

#[test]
fn environment_commands_go_to_the_host_between_turns_only() {
    let mut h = Harness::new();
    h.type_str("/environment pod-1");
    h.key(KeyCode::Enter);
    h.type_str("/env reconnect");
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        vec![
            UiAction::Host(HostRequest::Environment {
                args: "pod-1".into()
            }),
            UiAction::Host(HostRequest::Environment {
                args: "reconnect".into()
            }),
        ]
    );
    // A turn is running: the switch waits for its end (the command is refused, not queued).
    h.type_str("list the files");
    h.key(KeyCode::Enter);
    h.event(Event::TurnStarted { turn_id: 1 });
    h.actions();
    h.type_str("/environment local");
    h.key(KeyCode::Enter);
    let sent = h.actions();
    assert!(
        !sent
            .iter()
            .any(|a| matches!(a, UiAction::Host(HostRequest::Environment { .. }))),
        "{sent:?}"
    );
}

#[test]
fn an_approval_names_the_target() {
    let mut h = Harness::new();
    bound(&mut h, "ssh:dev-box");
    h.event(Event::ApprovalRequested(ApprovalRequest {
        request_id: "r1".into(),
        tool_call_id: "c1".into(),
        tool_name: "Bash".into(),
        action: "run command on ssh:dev-box".into(),
        summary: "make test".into(),
        detail: None,
        diff: None,
        danger: None,
        policy: "fallback-ask".into(),
        options: Vec::new(),
    }));
    let screen = h.screen(80, 14);
    assert!(screen.contains("run command on ssh:dev-box?"), "{screen}");
    assert!(screen.contains("make test"), "{screen}");
}
