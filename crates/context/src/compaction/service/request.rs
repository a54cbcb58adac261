//! What the summary request sends (core.md §d.6, core-2.1.md §3.2): history without dynamic
//! tool context, trimmed to the window, plus our instruction asking for a handoff note.

use kimi_protocol::{ContentPart, Message, Role};

use crate::tokens::estimate_message;

/// Injection variants that only exist to tell the model about extra tools; the summary request
/// uses the agent's normal tool list, so they are noise there.
pub const DYNAMIC_TOOL_VARIANTS: [&str; 3] =
    ["dynamic_tool_schema", "loadable_tools", "loadable-tools"];

/// Window share kept free for the summary when trimming before the request.
pub const PRE_TRIM_WINDOW_SHARE: f64 = 0.85;
/// Summary output cap when the profile sets none and the window is known.
pub const SUMMARY_OUTPUT_CAP: u64 = 131_072;

/// The instruction appended as the last user message of the summary request. Written for
/// kimi-rs (not the reference's text): a handoff note that survives on its own.
pub const COMPACTION_INSTRUCTION: &str = "\
This conversation is about to be compacted because the context window is nearly full. Afterwards \
you will see only the most recent user messages and the note you write now, so write it as a \
self-sufficient handoff note to yourself: first person, present tense, in the language the user \
has been writing in.

Cover, in this order:
1. Current intent: what the latest request really asks for, and which request governs the next \
move. If a long request may be cut from the kept messages, restate the parts that still matter.
2. Constraints and decisions: the instructions, preferences and constraints still in force. Keep \
settled decisions apart from open questions.
3. Work done: the exact commands, file paths, outcomes and key results. Quote error lines and \
identifiers exactly. Keep only the final version of any code, not the attempts before it.
4. Open questions: what is still unknown, and which claims you have not verified.
5. Next steps: the exact next action, the remaining sequence, decisions still to make, and \
obstacles you can foresee. If the final answer is already known, write it down.

The full conversation stays on disk and a pointer to the exact journal lines is attached after \
your note, so do not copy long outputs: keep exact identifiers, key values and error lines, and \
name what the next turn should look up. Do not transcribe the todo list (it is attached \
automatically), but do record the reasoning that links its items. Be concise and proportional \
to the work done. Reply with text only and do not call any tools.";

/// The instruction message, with the user's optional `/compact` instruction inserted.
pub fn instruction_message(user_instruction: Option<&str>) -> Message {
    let mut text = COMPACTION_INSTRUCTION.to_owned();
    if let Some(extra) = user_instruction.map(str::trim).filter(|s| !s.is_empty()) {
        text.push_str("\n\nOptional user instruction:\n");
        text.push_str(extra);
        text.push('\n');
    }
    let mut message = Message::new(Role::User, vec![ContentPart::text(text)]);
    message.origin = Some(kimi_protocol::Origin::injection("compaction_instruction"));
    message
}

fn is_dynamic_tool_context(message: &Message) -> bool {
    message.is_tool_declaration_only()
        || message.origin.as_ref().is_some_and(|o| {
            matches!(
                o.known(),
                Some(kimi_protocol::origin::KnownOrigin::Injection { variant, .. })
                    if DYNAMIC_TOOL_VARIANTS.contains(&variant.as_str())
            )
        })
}

/// History without dynamic tool schemas and loadable-tools announcements; other messages lose
/// any declared tools (and are dropped when nothing else is left).
pub fn strip_dynamic_tool_context(history: &[Message]) -> Vec<Message> {
    history
        .iter()
        .filter(|m| !is_dynamic_tool_context(m))
        .filter_map(|m| {
            if m.tools.is_none() {
                return Some(m.clone());
            }
            let mut stripped = m.clone();
            stripped.tools = None;
            (!stripped.content.is_empty() || !stripped.tool_calls.is_empty()).then_some(stripped)
        })
        .collect()
}

/// Keep the newest messages whose summed estimate fits `budget`, always dropping at least the
/// first message, then any tool results left leading (their calls are gone). Returns how many
/// messages were removed.
pub fn keep_recent_within_budget(messages: &mut Vec<Message>, budget: u64) -> usize {
    let len = messages.len();
    let mut total = 0u64;
    let mut keep_from = len;
    for (index, message) in messages.iter().enumerate().rev() {
        if index == 0 {
            break;
        }
        total += estimate_message(message);
        if total > budget {
            break;
        }
        keep_from = index;
    }
    while messages
        .get(keep_from)
        .is_some_and(|m| m.role == Role::Tool)
    {
        keep_from += 1;
    }
    messages.drain(..keep_from.min(len));
    keep_from.min(len)
}

/// Drop the oldest message and any tool results that become leading. Returns how many went.
pub fn drop_oldest(messages: &mut Vec<Message>) -> usize {
    if messages.is_empty() {
        return 0;
    }
    let mut cut = 1;
    while messages.get(cut).is_some_and(|m| m.role == Role::Tool) {
        cut += 1;
    }
    messages.drain(..cut);
    cut
}

/// The output cap of the summary request: the profile's, else min(window, 131,072) when the
/// window is known.
pub fn summary_output_cap(profile_max_output: Option<u64>, max_tokens: i64) -> Option<u64> {
    profile_max_output.or_else(|| {
        u64::try_from(max_tokens)
            .ok()
            .filter(|m| *m > 0)
            .map(|m| m.min(SUMMARY_OUTPUT_CAP))
    })
}

/// The 2.1 pre-trim budget for history in the summary request, or `None` when the window is
/// unknown: `floor((max − reserve) × 0.85) − overhead`, reserve = min(cap, max/8).
pub fn pre_trim_budget(max_tokens: i64, output_cap: Option<u64>, overhead: u64) -> Option<u64> {
    let max = u64::try_from(max_tokens).ok().filter(|m| *m > 0)?;
    let eighth = max / 8;
    let reserve = output_cap.map_or(eighth, |cap| cap.min(eighth));
    let budget = ((max - reserve) as f64 * PRE_TRIM_WINDOW_SHARE).floor() as u64;
    Some(budget.saturating_sub(overhead))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::{Origin, ToolCall, ToolSchema};

    #[test]
    fn dynamic_tool_context_is_removed() {
        let mut schema = Message::new(Role::System, vec![]);
        schema.tools = Some(vec![ToolSchema {
            name: "t".into(),
            description: String::new(),
            parameters: serde_json::Value::Null,
        }]);
        let mut announcement = Message::user_text("tools you can load: x");
        announcement.origin = Some(Origin::injection("loadable_tools"));
        let mut with_tools = Message::user_text("keep me");
        with_tools.tools = schema.tools.clone();
        let out = strip_dynamic_tool_context(&[schema, announcement, with_tools]);
        assert_eq!(out, vec![Message::user_text("keep me")]);
    }

    #[test]
    fn trimming_drops_the_first_message_and_leading_results() {
        let mut messages = vec![
            Message::user_text("aaaa"),
            Message::assistant(vec![], vec![ToolCall::new("c", "R", None)]),
            Message::tool_result("c", vec![ContentPart::text("r")], None),
            Message::user_text("bbbb"),
        ];
        let removed = keep_recent_within_budget(&mut messages, 3);
        assert_eq!(removed, 3);
        assert_eq!(messages, vec![Message::user_text("bbbb")]);
        let mut all = vec![Message::user_text("a"), Message::user_text("b")];
        assert_eq!(keep_recent_within_budget(&mut all, 1000), 1);
    }

    #[test]
    fn budgets_follow_the_window() {
        assert_eq!(summary_output_cap(None, 200_000), Some(131_072));
        assert_eq!(summary_output_cap(None, 0), None);
        assert_eq!(pre_trim_budget(80_000, Some(131_072), 1_000), Some(58_500));
        assert_eq!(pre_trim_budget(0, None, 0), None);
    }
}
