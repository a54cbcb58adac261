//! Undo cuts (core.md §g.7 with the 2.1 anchor rule of core-2.1.md §4.1): which history index
//! undoing N user turns cuts back to, and why an undo is refused.
//!
//! The cut is a pure function of history, so a `context.undo` record replays to the same cut.

use kimi_protocol::origin::TRIGGER_USER_SLASH;
use kimi_protocol::{Message, Origin, Role};
use serde_json::Value;

/// JavaScript's `Number.MAX_SAFE_INTEGER`: the largest count a journal may carry.
pub const MAX_UNDO_COUNT: u64 = (1 << 53) - 1;

/// Is a message with this origin (and role user) a turn a user started? Absent origin (legacy),
/// a real prompt, or a skill/plugin the user typed as `/name`. A steer that joined a running
/// turn (`inTurn: true`) is not: it is undone together with the turn it joined.
pub fn is_undo_anchor_origin(origin: Option<&Origin>) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    if origin.in_turn() {
        return false;
    }
    match origin.kind() {
        "user" => true,
        "skill_activation" | "plugin_command" => is_user_slash(origin),
        _ => false,
    }
}

/// `is_user_slash` that also reads origins kept verbatim because a field did not parse.
pub(crate) fn is_user_slash(origin: &Origin) -> bool {
    match origin {
        Origin::Known(_) => origin.is_user_slash(),
        Origin::Other(map) => {
            map.get("trigger").and_then(Value::as_str) == Some(TRIGGER_USER_SLASH)
        }
    }
}

pub fn is_undo_anchor(message: &Message) -> bool {
    message.role == Role::User && is_undo_anchor_origin(message.origin.as_ref())
}

/// An injection created on behalf of `prompt` (e.g. an image caption) sits right before it and
/// goes with it.
fn is_owned_by(candidate: &Message, prompt: &Message) -> bool {
    let Some(prompt_id) = prompt.id.as_deref() else {
        return false;
    };
    candidate
        .origin
        .as_ref()
        .is_some_and(|o| o.is_injection() && o.owner_prompt_id() == Some(prompt_id))
}

/// Where undoing `count` turns would cut history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndoCut {
    /// History keeps `[..cut_index]`; `None` when no anchor was reached.
    pub cut_index: Option<usize>,
    /// How many anchors (user turns) the cut removes.
    pub removed_count: u64,
    /// The scan met a compaction summary before it had counted `count` anchors.
    pub stopped_at_compaction: bool,
}

impl UndoCut {
    /// All `count` turns can be undone.
    pub fn is_fully_undoable(&self, count: u64) -> bool {
        self.cut_index.is_some() && self.removed_count >= count
    }
}

/// Scan from the end: injections are skipped, a compaction summary stops the scan, each anchor
/// counts one turn and moves the cut to it (and over the injections it owns just before it).
pub fn compute_undo_cut(history: &[Message], count: u64) -> UndoCut {
    let mut cut = UndoCut {
        cut_index: None,
        removed_count: 0,
        stopped_at_compaction: false,
    };
    let mut remaining = count;
    for (i, message) in history.iter().enumerate().rev() {
        if remaining == 0 {
            break;
        }
        let origin = message.origin.as_ref();
        if origin.is_some_and(Origin::is_injection) {
            continue;
        }
        if origin.is_some_and(Origin::is_compaction_summary) {
            cut.stopped_at_compaction = true;
            break;
        }
        if is_undo_anchor(message) {
            remaining -= 1;
            cut.removed_count += 1;
            cut.cut_index = Some(extend_over_owned(history, i, message));
        }
    }
    cut
}

fn extend_over_owned(history: &[Message], mut index: usize, prompt: &Message) -> usize {
    while index > 0 && is_owned_by(&history[index - 1], prompt) {
        index -= 1;
    }
    index
}

/// Why an undo cannot happen. The texts are the reference's, word for word.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UndoUnavailable {
    #[error("Nothing to undo: no user message to undo")]
    Empty { requested: u64 },
    #[error("Nothing to undo: would cross a compaction boundary")]
    CompactionBoundary { requested: u64, undoable: u64 },
    #[error("Nothing to undo: only {undoable} of {requested} requested turn(s) available")]
    Insufficient { requested: u64, undoable: u64 },
    /// Other undoable state (plan, todos, …) has no checkpoint for one of the turns.
    #[error("Nothing to undo: conversation state checkpoints are incomplete")]
    CheckpointsIncomplete { requested: u64 },
    #[error("Undo count must be a positive safe integer")]
    InvalidCount { requested: u64 },
}

impl UndoUnavailable {
    /// The machine-readable reason (`empty`, `compaction_boundary`, `insufficient`, …).
    pub fn reason(&self) -> &'static str {
        match self {
            UndoUnavailable::Empty { .. } => "empty",
            UndoUnavailable::CompactionBoundary { .. } => "compaction_boundary",
            UndoUnavailable::Insufficient { .. } => "insufficient",
            UndoUnavailable::CheckpointsIncomplete { .. } => "checkpoints_incomplete",
            UndoUnavailable::InvalidCount { .. } => "invalid_count",
        }
    }

    pub fn requested(&self) -> u64 {
        match self {
            UndoUnavailable::Empty { requested }
            | UndoUnavailable::CompactionBoundary { requested, .. }
            | UndoUnavailable::Insufficient { requested, .. }
            | UndoUnavailable::CheckpointsIncomplete { requested }
            | UndoUnavailable::InvalidCount { requested } => *requested,
        }
    }

    /// How many turns could have been undone.
    pub fn undoable(&self) -> u64 {
        match self {
            UndoUnavailable::CompactionBoundary { undoable, .. }
            | UndoUnavailable::Insufficient { undoable, .. } => *undoable,
            UndoUnavailable::Empty { .. }
            | UndoUnavailable::CheckpointsIncomplete { .. }
            | UndoUnavailable::InvalidCount { .. } => 0,
        }
    }
}

/// Check an undo of `count` turns against history; `Ok` carries the cut to apply.
pub fn precheck_undo(history: &[Message], count: u64) -> Result<UndoCut, UndoUnavailable> {
    let cut = compute_undo_cut(history, count);
    if cut.is_fully_undoable(count) {
        return Ok(cut);
    }
    Err(if cut.stopped_at_compaction {
        UndoUnavailable::CompactionBoundary {
            requested: count,
            undoable: cut.removed_count,
        }
    } else if cut.removed_count == 0 {
        UndoUnavailable::Empty { requested: count }
    } else {
        UndoUnavailable::Insufficient {
            requested: count,
            undoable: cut.removed_count,
        }
    })
}

/// The count check an undo request makes before anything else (core-2.1 §4.1 step 1).
pub fn validate_undo_count(count: u64) -> Result<u64, UndoUnavailable> {
    if (1..=MAX_UNDO_COUNT).contains(&count) {
        Ok(count)
    } else {
        Err(UndoUnavailable::InvalidCount { requested: count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::ContentPart;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn msg(v: Value) -> Message {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_steer_that_joined_a_turn_is_undone_with_it() {
        let history = vec![
            msg(json!({"role": "user", "content": "first", "origin": "user"})),
            msg(json!({"role": "assistant", "content": "a"})),
            msg(json!({"role": "user", "content": "do it", "origin": "user"})),
            msg(
                json!({"role": "user", "content": "also this", "origin": {"kind": "user", "inTurn": true}}),
            ),
            msg(json!({"role": "assistant", "content": "b"})),
        ];
        let cut = compute_undo_cut(&history, 1);
        assert_eq!(
            cut,
            UndoCut {
                cut_index: Some(2),
                removed_count: 1,
                stopped_at_compaction: false
            }
        );
        assert!(precheck_undo(&history, 2).is_ok());
        assert_eq!(
            precheck_undo(&history, 3).unwrap_err().to_string(),
            "Nothing to undo: only 2 of 3 requested turn(s) available"
        );
    }

    #[test]
    fn user_slash_skills_are_anchors_model_triggered_ones_are_not() {
        let slash = json!({"kind": "skill_activation", "activationId": "a", "skillName": "s", "trigger": "user-slash"});
        let model = json!({"kind": "skill_activation", "activationId": "a", "skillName": "s", "trigger": "model-tool"});
        assert!(is_undo_anchor(&msg(
            json!({"role": "user", "content": "x", "origin": slash})
        )));
        assert!(!is_undo_anchor(&msg(
            json!({"role": "user", "content": "x", "origin": model})
        )));
        // Legacy messages without origin are anchors; assistants never are.
        assert!(is_undo_anchor(&Message::new(
            Role::User,
            vec![ContentPart::text("x")]
        )));
        assert!(!is_undo_anchor(&Message::new(Role::Assistant, vec![])));
    }

    #[test]
    fn invalid_counts_are_refused_with_the_reference_text() {
        assert_eq!(
            validate_undo_count(0).unwrap_err().to_string(),
            "Undo count must be a positive safe integer"
        );
        assert_eq!(validate_undo_count(MAX_UNDO_COUNT), Ok(MAX_UNDO_COUNT));
        assert!(validate_undo_count(MAX_UNDO_COUNT + 1).is_err());
    }

    #[test]
    fn a_boundary_after_some_turns_reports_what_was_undoable() {
        let history = vec![
            msg(
                json!({"role": "user", "content": "sum", "origin": {"kind": "compaction_summary"}}),
            ),
            msg(json!({"role": "user", "content": "u", "origin": "user"})),
        ];
        let err = precheck_undo(&history, 2).unwrap_err();
        assert_eq!(
            (err.reason(), err.requested(), err.undoable()),
            ("compaction_boundary", 2, 1)
        );
    }
}
