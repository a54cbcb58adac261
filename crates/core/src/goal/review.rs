//! The goal-start review (surface.md §3.2): outside auto mode a `CreateGoal` call asks the
//! user, who approves by choosing the permission mode the goal runs in (auto, yolo or
//! manual) — or rejects it. The chain's own verdict on the call comes first; the review is an
//! ask on top of an approval.

use kimi_protocol::RecordPayload;
use kimi_protocol::ops::{ApprovalOption, Event, PermissionMode};

use crate::engine::executor::{GateDecision, UserAnswer};
use crate::engine::runtime::Runtime;
use crate::permission::{CallFacts, ListenerVerdict, goal_start_review};

/// The policy name a goal-start review carries in its approval request.
pub const REVIEW_POLICY: &str = "goal-start-review-ask";

/// The review on top of the permission decision for `tool_name`.
pub fn guard(tool_name: &str, gate: GateDecision, mode: PermissionMode) -> GateDecision {
    if matches!(gate, GateDecision::Deny(_)) {
        return gate;
    }
    let facts = CallFacts::name_only(tool_name);
    match goal_start_review(&facts, mode) {
        ListenerVerdict::Ask(_) => GateDecision::Ask {
            action: "start goal".to_owned(),
            policy: REVIEW_POLICY.to_owned(),
            danger: None,
        },
        _ => gate,
    }
}

/// The choices the review offers.
pub fn options() -> Vec<ApprovalOption> {
    vec![
        ApprovalOption {
            label: "auto".to_owned(),
            description: "Run the goal unattended: every tool call is approved.".to_owned(),
        },
        ApprovalOption {
            label: "yolo".to_owned(),
            description: "Approve regular tool calls; still ask for sensitive paths.".to_owned(),
        },
        ApprovalOption {
            label: "manual".to_owned(),
            description: "Keep asking before each tool call that needs approval.".to_owned(),
        },
    ]
}

/// The user approved the goal, maybe choosing its permission mode: switch to it (journaled
/// like `/permission`).
pub fn settle(rt: &Runtime, answer: &UserAnswer) {
    let UserAnswer::ApproveOption(label) = answer else {
        return;
    };
    let mode = match label.as_str() {
        "auto" => PermissionMode::Auto,
        "yolo" => PermissionMode::Yolo,
        "manual" => PermissionMode::Manual,
        other => {
            rt.emit(Event::Warning {
                message: format!(
                    "goal start: unknown permission mode {other:?}; the mode is unchanged"
                ),
            });
            return;
        }
    };
    if rt.config.permissions.mode() == mode {
        return;
    }
    rt.config.permissions.set_mode(mode);
    rt.commit(vec![RecordPayload::PermissionSetMode(
        kimi_protocol::record::PermissionSetMode {
            agent_id: None,
            mode: label.clone(),
        },
    )]);
}
