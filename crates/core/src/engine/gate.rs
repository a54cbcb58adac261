//! What joins the conversation at a turn's step gate — steers and background-task notices —
//! and what happens to steers that arrive after the last gate (they start the next turn).

use kimi_protocol::ops::Event;
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Message, Origin, Role};

use super::records as rec;
use super::runtime::{Pending, Runtime};
use crate::hooks::HookEventData;

/// How much of a background subagent's report a task notice carries.
const AGENT_REPORT_LIMIT: u64 = 32 * 1024;

/// The message that tells the model a background task ended. A background subagent's notice
/// carries its report (the reference delivers the result as a message); a shell task's points
/// at TaskOutput.
pub fn task_notice(
    task: &kimi_tools::tasks::TaskInfo,
    tasks: &kimi_tools::tasks::TaskManager,
) -> Message {
    let what = if task.description.is_empty() {
        task.command.clone()
    } else {
        task.description.clone()
    };
    let exit = task
        .exit_code
        .map(|c| format!(", exit code {c}"))
        .unwrap_or_default();
    let text = if task.kind == "agent" {
        let (report, total) = tasks.tail_output(&task.id, AGENT_REPORT_LIMIT);
        let cut = if total > AGENT_REPORT_LIMIT {
            format!(" (last {AGENT_REPORT_LIMIT} bytes of {total}; TaskOutput has it all)")
        } else {
            String::new()
        };
        format!(
            "<system-reminder>\nBackground subagent task {} ({what}) ended: {}. Its report{cut}:\n\n{report}\n</system-reminder>",
            task.id,
            task.status.as_str()
        )
    } else {
        format!(
            "<system-reminder>\nBackground task {} ({what}) ended: {}{exit}. Read its output with TaskOutput if you need it.\n</system-reminder>",
            task.id,
            task.status.as_str()
        )
    };
    let mut message = Message::new(Role::User, vec![ContentPart::text(text)]);
    message.origin = Some(Origin::Known(KnownOrigin::Task {
        task_id: task.id.clone(),
        status: task.status.as_str().to_owned(),
        notification_id: rec::new_id("ntf_"),
    }));
    message
}

/// Finished background tasks join the conversation at the gate (the model hears about them
/// before its next request).
pub(super) fn consume_task_notices(rt: &Runtime) {
    let finished = rt.config.tool_ctx.tasks.drain_notifications();
    if finished.is_empty() {
        return;
    }
    let records = finished
        .iter()
        .map(|t| rec::message(task_notice(t, &rt.config.tool_ctx.tasks)))
        .collect();
    rt.commit(records);
    if let Some(hooks) = &rt.config.hooks {
        for task in &finished {
            hooks.fire_and_forget(HookEventData::Notification {
                sink: "context".to_owned(),
                agent_id: rt.log().agent_id().to_owned(),
                notification_type: format!("task.{}", task.status.as_str()),
                title: format!("Background task {} ended", task.id),
                body: task.description.clone(),
                severity: "info".to_owned(),
                source_kind: "task".to_owned(),
                source_id: task.id.clone(),
            });
        }
    }
}

/// Steers that arrived since the last gate join the conversation now, in arrival order.
pub(super) fn consume_steers(rt: &Runtime, turn_id: u64) {
    let steers: Vec<Pending> = std::mem::take(&mut rt.shared().steers);
    for steer in steers {
        // Cron fires keep their own origin; user steers are marked as joining the turn.
        let origin = if steer.origin.is_user() {
            Origin::Known(KnownOrigin::User {
                skill_activations: None,
                in_turn: Some(true),
            })
        } else {
            steer.origin.clone()
        };
        let mut message = Message::new(Role::User, steer.input.clone());
        message.origin = Some(origin.clone());
        message.id = Some(steer.prompt_id.clone());
        let steer_record =
            kimi_protocol::RecordPayload::TurnSteer(kimi_protocol::record::TurnSteer {
                agent_id: None,
                input: steer.input.clone(),
                origin: Some(origin),
                message_id: Some(steer.prompt_id.clone()),
                prompt_ids: Some(vec![steer.prompt_id.clone()]),
                turn_id: Some(turn_id),
            });
        rt.commit(vec![steer_record, rec::message(message)]);
        rt.emit(Event::PromptSteered {
            prompt_id: steer.prompt_id,
        });
    }
}

/// Steers that arrived after the turn's last gate start the next turn, ahead of other work.
/// Done in the same lock that marks the turn over, so every steer lands either here or (the
/// agent now idle) as a new prompt — whichever job the turn ran for (a prompt, background-task
/// notices), none waits for some later turn's gate.
pub(super) fn requeue_late_steers(shared: &mut super::runtime::Shared) {
    let late: Vec<Pending> = std::mem::take(&mut shared.steers);
    for (i, steer) in late.into_iter().enumerate() {
        shared.jobs.insert(i, super::runtime::Job::Prompt(steer));
    }
    shared.machine.queued = shared.jobs.len();
}
