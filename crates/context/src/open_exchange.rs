//! Fork seed (core.md §b.9): when an agent is forked while its last tool calls are still
//! running, the child inherits the conversation with those calls closed by an honest "outcome
//! unknown" result, so its first request is wire-valid and it does not wait for a result that
//! will never arrive in its own history.

use std::collections::HashSet;

use kimi_protocol::{ContentPart, Message, Role};

/// The result given to each call that was still running when the history was inherited. Not an
/// error: the outcome is unknown, not failed.
pub const INHERITED_IN_FLIGHT_RESULT: &str = "This tool call was still executing when this conversation snapshot was inherited from the source agent, so its result is not part of this context. The outcome is unknown \u{2014} do not assume it succeeded or failed, and do not wait for it.";

/// Close the trailing open tool exchange of `history` for a fork seed. Quirk kept from the
/// reference: a history with no non-tool message at all yields an empty seed.
pub fn close_trailing_open_tool_exchange(history: &[Message]) -> Vec<Message> {
    let Some(last) = history.iter().rposition(|m| m.role != Role::Tool) else {
        return Vec::new();
    };
    let Some(owner) = history.get(last) else {
        return Vec::new();
    };
    if owner.role != Role::Assistant || owner.tool_calls.is_empty() {
        return history.to_vec();
    }
    let answered: HashSet<&str> = history
        .get(last + 1..)
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let open: Vec<&str> = owner
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| !answered.contains(id))
        .collect();
    if open.is_empty() {
        return history.to_vec();
    }
    let mut seed = Vec::with_capacity(history.len() + open.len());
    seed.extend_from_slice(history);
    if let Some(assistant) = seed.get_mut(last) {
        assistant.partial = false;
    }
    for id in open {
        let mut result = Message::new(
            Role::Tool,
            vec![ContentPart::text(INHERITED_IN_FLIGHT_RESULT)],
        );
        result.tool_call_id = Some(id.to_owned());
        seed.push(result);
    }
    seed
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::ToolCall;
    use pretty_assertions::assert_eq;

    #[test]
    fn only_unanswered_calls_of_the_last_exchange_are_closed() {
        let mut assistant = Message::assistant(
            vec![],
            vec![
                ToolCall::new("a", "Read", None),
                ToolCall::new("b", "Read", None),
            ],
        );
        assistant.partial = true;
        let answered = Message::tool_result("a", vec![ContentPart::text("ok")], None);
        let seed = close_trailing_open_tool_exchange(&[
            Message::user_text("go"),
            assistant.clone(),
            answered.clone(),
        ]);
        let mut sealed = assistant;
        sealed.partial = false;
        let mut closed = Message::new(
            Role::Tool,
            vec![ContentPart::text(INHERITED_IN_FLIGHT_RESULT)],
        );
        closed.tool_call_id = Some("b".into());
        assert_eq!(
            seed,
            vec![Message::user_text("go"), sealed, answered, closed]
        );
    }

    #[test]
    fn tool_only_history_yields_an_empty_seed() {
        let only = Message::tool_result("x", vec![ContentPart::text("r")], None);
        assert_eq!(
            close_trailing_open_tool_exchange(&[only]),
            Vec::<Message>::new()
        );
    }
}
