//! `/undo` and Esc Esc with file checkpoints: after the prompt is picked, what to put back
//! (conversation, files, or both); a rewind stopped by files changed outside the agent asks
//! before overwriting them; and the notice that says what a rewind did.

use kimi_protocol::checkpoint::{RewindReport, RewindScope};

use crate::cells::NoticeLevel;
use crate::dialogs::{Picker, PickerItem, PickerKind};

fn scope_name(scope: RewindScope) -> &'static str {
    match scope {
        RewindScope::Both => "both",
        RewindScope::Files => "files",
        RewindScope::Conversation => "conversation",
    }
}

/// The value of a scope or force picker row: `<scope>:<turns>`.
pub fn parse_choice(value: &str) -> Option<(RewindScope, u32)> {
    let (scope, turns) = value.split_once(':')?;
    let scope = match scope {
        "both" => RewindScope::Both,
        "files" => RewindScope::Files,
        "conversation" => RewindScope::Conversation,
        _ => return None,
    };
    Some((scope, turns.parse().ok()?))
}

fn item(label: &str, detail: &str, scope: RewindScope, turns: u32) -> PickerItem {
    PickerItem {
        label: label.to_owned(),
        detail: detail.to_owned(),
        value: format!("{}:{turns}", scope_name(scope)),
        this_dir: true,
    }
}

pub fn scope_picker(turns: u32) -> Picker {
    let s = if turns == 1 { "" } else { "s" };
    Picker::new(
        PickerKind::UndoScope,
        &format!("Undo {turns} prompt{s}: put back…"),
        vec![
            item(
                "Conversation and files",
                "the model forgets the turns; files they changed are restored",
                RewindScope::Both,
                turns,
            ),
            item(
                "Conversation only",
                "files stay as they are now",
                RewindScope::Conversation,
                turns,
            ),
            item(
                "Files only",
                "the model still sees the turns",
                RewindScope::Files,
                turns,
            ),
        ],
    )
}

/// Conflicts stopped the rewind: offer to restore anyway.
pub fn force_picker(report: &RewindReport) -> Option<Picker> {
    if report.applied || report.conflicts.is_empty() {
        return None;
    }
    let turns = u32::try_from(report.turns).unwrap_or(u32::MAX);
    let n = report.conflicts.len();
    let mut picker = Picker::new(
        PickerKind::RewindForce,
        &format!("{n} file(s) changed outside the agent since: restore anyway?"),
        vec![
            item(
                "Restore anyway",
                "overwrite the files listed above with their checkpoint",
                report.scope,
                turns,
            ),
            PickerItem {
                label: "Cancel".to_owned(),
                detail: "change nothing".to_owned(),
                value: String::new(),
                this_dir: true,
            },
        ],
    );
    picker.selected = 1;
    Some(picker)
}

/// The notice for a rewind's report.
pub fn summary(report: &RewindReport) -> (NoticeLevel, String) {
    let mut lines = Vec::new();
    if !report.applied {
        lines.push("Rewind stopped: these files changed outside the agent since its checkpoint (nothing was changed):".to_owned());
        lines.extend(
            report
                .conflicts
                .iter()
                .map(|c| format!("  {} — {}", c.path, c.reason)),
        );
        return (NoticeLevel::Warning, lines.join("\n"));
    }
    let files = report.restored.len();
    lines.push(format!(
        "Rewound {} turn(s): {} file(s) restored{}.",
        report.turns,
        files,
        if report.conversation_undone {
            ", the model no longer sees those turns"
        } else {
            ""
        }
    ));
    lines.extend(report.restored.iter().map(|p| format!("  {p}")));
    if !report.forced.is_empty() {
        lines.push(format!(
            "Overwritten although changed outside the agent: {}",
            report.forced.join(", ")
        ));
    }
    if !report.unrestorable.is_empty() {
        lines.push("Not restorable (limits or pruned content):".to_owned());
        lines.extend(
            report
                .unrestorable
                .iter()
                .map(|u| format!("  {} — {}", u.path, u.reason)),
        );
        return (NoticeLevel::Warning, lines.join("\n"));
    }
    (NoticeLevel::Info, lines.join("\n"))
}
