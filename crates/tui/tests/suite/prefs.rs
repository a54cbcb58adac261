//! Notifications follow `[notifications]` and the focus reports; `/web` asks the host for the
//! running servers, offers them and starting one, and ends the UI with the choice.

use crossterm::event::KeyCode;
use kimi_protocol::ops::{Event, TurnEndReason};
use kimi_tui::notify::{Notification, NotifySettings};
use kimi_tui::web_handoff::WebHandoff;
use kimi_tui::{HostRequest, HostUpdate, UiAction};

use super::support::Harness;

fn turn(h: &mut Harness, id: u64, answer: &str) {
    h.event(Event::TurnStarted { turn_id: id });
    h.event(Event::AssistantDelta {
        text: answer.to_owned(),
    });
    h.event(Event::TurnEnded {
        turn_id: id,
        reason: TurnEndReason::Completed,
        error: None,
    });
}

#[test]
fn notifications_need_unfocused_unless_always_and_not_when_disabled() {
    let mut h = Harness::new();
    turn(&mut h, 1, "focused answer");
    assert_eq!(h.app.take_notifications(), Vec::new());
    h.app.set_focused(false);
    turn(&mut h, 2, "second answer\nmore");
    assert_eq!(
        h.app.take_notifications(),
        vec![Notification {
            kind: "turn_ended",
            title: "kimi-rs".to_owned(),
            body: "second answer".to_owned(),
        }]
    );
    // An approval waiting while unfocused is one too.
    h.event(Event::ApprovalRequested(
        kimi_protocol::ops::ApprovalRequest {
            request_id: "r1".into(),
            tool_call_id: "c1".into(),
            tool_name: "Bash".into(),
            action: "run command".into(),
            summary: "make test".into(),
            detail: None,
            diff: None,
            danger: None,
            policy: "manual-mode".into(),
            options: Vec::new(),
        },
    ));
    assert_eq!(
        h.app.take_notifications(),
        vec![Notification {
            kind: "approval",
            title: "kimi-rs".to_owned(),
            body: "Approval needed: Bash make test".to_owned(),
        }]
    );
    let mut always = Harness::with_notifications(NotifySettings {
        always: true,
        ..NotifySettings::default()
    });
    turn(&mut always, 1, "done");
    assert_eq!(always.app.take_notifications().len(), 1);
    let mut off = Harness::with_notifications(NotifySettings {
        enabled: false,
        always: true,
        command: None,
    });
    off.app.set_focused(false);
    turn(&mut off, 1, "done");
    assert_eq!(off.app.take_notifications(), Vec::new());
}

#[test]
fn web_offers_running_servers_and_starting_one() {
    let mut h = Harness::new();
    h.type_str("/web");
    h.key(KeyCode::Enter);
    assert!(
        h.actions()
            .contains(&UiAction::Host(HostRequest::WebServers))
    );
    h.app.handle_host(HostUpdate::WebServers(vec![
        "http://127.0.0.1:58627/".to_owned(),
    ]));
    let screen = h.screen(80, 16);
    assert!(
        screen.contains("http://127.0.0.1:58627/  open in this running kimi-rs web")
            && screen.contains("Start kimi-rs web here"),
        "{screen}"
    );
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    assert!(h.app.should_exit());
    assert_eq!(h.app.web_handoff(), Some(&WebHandoff::Start));
}
