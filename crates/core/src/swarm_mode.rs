//! Swarm mode (surface.md §2 `/swarm`, §3.1): an orthogonal flag of the main agent that asks it
//! to delegate through `AgentSwarm`. `manual` (`/swarm on`) stays until `/swarm off`; `task`
//! (`/swarm <task>`) and `tool` (an AgentSwarm call made outside swarm mode) end with the turn
//! they started in.
//!
//! The model hears about it through injected reminders: the enter reminder while the mode is
//! active (not for the `tool` trigger: the agent is already swarming), the exit reminder once it
//! ends. A change is reminded at once (the reminder is journaled like any message), and the
//! step gate re-syncs whenever history and state disagree (after an undo). Because the state
//! is what the last reminder says, a resumed session reads it back from its history.

use kimi_protocol::ops::{Event, SwarmTrigger};
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Message, Origin, Role};

use crate::engine::runtime::Runtime;

pub const VARIANT_ENTER: &str = "swarm_mode";
pub const VARIANT_EXIT: &str = "swarm_mode_exit";

const ENTER: &str = "## Swarm Mode — Parallel Execution Required

You are now in \"agent swarm\" mode. The user may send tasks that require a large number of parallel subagents. All work that requires subagents MUST use AgentSwarm — never use the Agent tool to launch individual subagents in swarm mode.

Plan mode compatibility: if plan mode is also active, plan mode's read-only constraint is absolute. Subagents must only read and analyze — no file writes, edits, or system modifications. AgentSwarm is still preferred for parallel exploration under plan mode.

## Workflow

1. Explore first. You may do a small amount of exploratory work (reading files, grepping) to understand the task scope. Do not create subagents during this phase — you may not need them at all.
2. Decide whether subagents are needed. If after exploring you are convinced none is needed, tell the user why and wait for further instructions; otherwise delegate.
3. Partition the work into the largest number of independent, non-conflicting items. AgentSwarm runs up to 128 subagents with automatic queuing.
4. Delegate with one AgentSwarm call: `prompt_template` with the `{{item}}` placeholder and an `items` array, each item a distinct part of the work. Pass `subagent_type` when the whole swarm should use a non-default profile. When several agents edit files of one git repository, `isolation: \"worktree\"` keeps their edits apart on branches of their own.
5. Collect and present results: synthesize the per-agent reports for the user.

## Rules

- AgentSwarm is the only subagent tool in swarm mode; do not call Agent.
- Maximum parallelism: unless the user sets a lower limit, split into as many items as the task naturally allows; combine only inseparable work.
- One AgentSwarm call per task; fit everything into it.
- Distinct scopes only: never give two subagents the same or conflicting work. Read-only scopes may overlap slightly.
- Subagents have your full capabilities: describe only the necessary background and each one's specific task. You do not need TodoList for this workflow.";

const EXIT: &str =
    "Swarm mode is off. Use subagents (Agent or AgentSwarm) only when a task calls for them.";

/// Which swarm reminder the conversation last received: `Some(true)` enter, `Some(false)`
/// exit, `None` never.
pub fn rendered(history: &[Message]) -> Option<bool> {
    history
        .iter()
        .rev()
        .find_map(|m| match m.origin.as_ref()?.known()? {
            KnownOrigin::Injection { variant, .. } if variant == VARIANT_ENTER => Some(true),
            KnownOrigin::Injection { variant, .. } if variant == VARIANT_EXIT => Some(false),
            _ => None,
        })
}

/// Whether `trigger` wants the enter reminder shown.
fn reminded(trigger: Option<SwarmTrigger>) -> bool {
    matches!(trigger, Some(SwarmTrigger::Manual | SwarmTrigger::Task))
}

fn reminder(enter: bool, owner: Option<&str>) -> Message {
    let body = if enter { ENTER } else { EXIT };
    let mut message = Message::new(
        Role::User,
        vec![ContentPart::text(format!(
            "<system-reminder>\n{body}\n</system-reminder>"
        ))],
    );
    message.origin = Some(Origin::Known(KnownOrigin::Injection {
        variant: if enter { VARIANT_ENTER } else { VARIANT_EXIT }.to_owned(),
        owner_prompt_id: owner.map(str::to_owned),
        disclosure: None,
    }));
    message
}

/// Bring the conversation in line with the state: add the reminder that is due, if any.
pub fn sync(rt: &Runtime, owner: Option<&str>) {
    let want = reminded(rt.shared().swarm);
    let have = rendered(rt.log().history().messages()).unwrap_or(false);
    if want != have {
        rt.commit(vec![crate::engine::records::message(reminder(want, owner))]);
    }
}

/// The state a resumed session starts in: on (`manual`) when its history last heard the enter
/// reminder. A `task` mode the crash interrupted comes back as `manual`; `/swarm off` ends it.
pub fn restore(rt: &Runtime) {
    if rendered(rt.log().history().messages()) == Some(true) {
        rt.shared().swarm = Some(SwarmTrigger::Manual);
    }
}

fn announce(rt: &Runtime) {
    let trigger = rt.shared().swarm;
    rt.emit(Event::SwarmMode {
        active: trigger.is_some(),
        trigger,
    });
}

/// `Op::SetSwarmMode`: only while idle (a turn's reminders must not change under it).
pub fn set(rt: &Runtime, enabled: bool, trigger: SwarmTrigger, idle: bool) {
    if !idle {
        rt.emit(Event::Error {
            message: "Swarm mode can only be changed while the agent is idle; wait for the turn to end (or interrupt it), then run /swarm again.".to_owned(),
        });
        announce(rt);
        return;
    }
    {
        let mut shared = rt.shared();
        match (enabled, shared.swarm) {
            // Already on: a `/swarm <task>` keeps a manual mode manual.
            (true, Some(_)) => {}
            (true, None) => shared.swarm = Some(trigger),
            (false, _) => shared.swarm = None,
        }
    }
    sync(rt, None);
    announce(rt);
}

/// An AgentSwarm call outside swarm mode enters it until the turn ends (no reminder: the agent
/// is already swarming).
pub fn enter_for_tool(rt: &Runtime) {
    let changed = {
        let mut shared = rt.shared();
        let changed = shared.swarm.is_none();
        if changed {
            shared.swarm = Some(SwarmTrigger::Tool);
        }
        changed
    };
    if changed {
        announce(rt);
    }
}

/// A turn ended: `task` and `tool` modes end with it (the exit reminder, when one is due, is
/// owned by that turn's prompt).
pub fn turn_ended(rt: &Runtime, prompt_id: &str) {
    let ended = {
        let mut shared = rt.shared();
        let ends = matches!(shared.swarm, Some(SwarmTrigger::Task | SwarmTrigger::Tool));
        if ends {
            shared.swarm = None;
        }
        ends
    };
    if ended {
        sync(rt, Some(prompt_id));
        announce(rt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rendered_state_is_the_last_swarm_reminder() {
        let user = Message::new(Role::User, vec![ContentPart::text("hi")]);
        let mut history = vec![user.clone()];
        assert_eq!(rendered(&history), None);
        history.push(reminder(true, None));
        history.push(user);
        assert_eq!(rendered(&history), Some(true));
        history.push(reminder(false, Some("p1")));
        assert_eq!(rendered(&history), Some(false));
        assert!(reminded(Some(SwarmTrigger::Task)));
        assert!(!reminded(Some(SwarmTrigger::Tool)));
        assert!(!reminded(None));
    }
}
