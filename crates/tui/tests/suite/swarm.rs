//! `/swarm`: in manual mode it first offers auto or yolo (Esc puts the command back), then
//! turns swarm mode on (`/swarm on`) or sends the task with the `task` trigger; outside manual
//! mode it goes straight on; the engine's `SwarmMode` event drives what the UI knows.

use crossterm::event::KeyCode;
use kimi_protocol::ops::{Event, Op, PermissionMode, SwarmTrigger};
use kimi_tui::UiAction;

use super::support::{Harness, text};

fn command(h: &mut Harness, line: &str) {
    h.type_str(line);
    // The completion popup takes the first Esc.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
}

#[test]
fn a_swarm_task_in_manual_mode_offers_yolo_first_then_sends_the_task() {
    let mut h = Harness::new();
    command(&mut h, "/swarm fix every lint warning");
    assert!(h.actions().is_empty(), "nothing happens before the choice");
    let screen = h.screen(100, 20);
    assert!(screen.contains("which permission mode"), "{screen}");
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    assert_eq!(
        h.actions(),
        [
            UiAction::Op(Op::SetPermissionMode {
                mode: PermissionMode::Yolo
            }),
            UiAction::Op(Op::SetSwarmMode {
                enabled: true,
                trigger: SwarmTrigger::Task
            }),
            UiAction::Op(Op::Submit {
                input: text("fix every lint warning"),
                origin: None,
                prompt_id: None
            }),
        ]
    );
}

#[test]
fn dismissing_the_choice_puts_the_command_back() {
    let mut h = Harness::new();
    command(&mut h, "/swarm on");
    h.key(KeyCode::Esc);
    assert!(h.actions().is_empty());
    let screen = h.screen(100, 20);
    assert!(screen.contains("Swarm mode not enabled."), "{screen}");
    assert!(screen.contains("/swarm on"), "{screen}");
}

#[test]
fn outside_manual_mode_swarm_toggles_at_once_and_follows_the_engine() {
    let mut h = Harness::new();
    command(&mut h, "/auto");
    h.actions();
    command(&mut h, "/swarm on");
    assert_eq!(
        h.actions(),
        [UiAction::Op(Op::SetSwarmMode {
            enabled: true,
            trigger: SwarmTrigger::Manual
        })]
    );
    h.event(Event::SwarmMode {
        active: true,
        trigger: Some(SwarmTrigger::Manual),
    });
    assert!(h.screen(100, 20).contains("Swarm mode on"));
    command(&mut h, "/swarm on");
    assert!(h.actions().is_empty());
    assert!(h.screen(100, 20).contains("Swarm mode is already on."));
    command(&mut h, "/swarm");
    assert_eq!(
        h.actions(),
        [UiAction::Op(Op::SetSwarmMode {
            enabled: false,
            trigger: SwarmTrigger::Manual
        })]
    );
    h.event(Event::SwarmMode {
        active: false,
        trigger: None,
    });
    command(&mut h, "/swarm off");
    assert!(h.actions().is_empty());
    assert!(h.screen(100, 24).contains("Swarm mode is already off."));
}
