//! The normal projection (core.md §b.1–§b.4): a layout pre-pass, a pairing pass that groups each
//! assistant's calls with their results, and a flattening pass that emits wire messages.

use std::collections::HashMap;

use kimi_protocol::{ContentPart, Message, Role};

use super::{Anomaly, TOOL_RESULT_UNAVAILABLE};
use crate::render::render_tool_result;

/// Wire messages plus, per message, whether it is a synthesized "not available" result (the
/// strict pass lets a real result replace such a placeholder).
#[derive(Debug, Default)]
pub(super) struct Projected {
    pub messages: Vec<Message>,
    pub placeholder: Vec<bool>,
}

impl Projected {
    fn push(&mut self, message: Message, placeholder: bool) {
        self.messages.push(message);
        self.placeholder.push(placeholder);
    }
}

enum SlotState {
    Open,
    /// Index into the answers arena (results are kept out of line so slots stay small).
    Answered(usize),
    /// Force-closed because a later exchange reused the id: it gets the placeholder.
    Closed,
}

struct Slot<'h> {
    id: &'h str,
    state: SlotState,
    /// Value of the foreign-content counter when the slot opened; a result that closes the slot
    /// after the counter moved on was separated from its call and gets reordered.
    opened_at: u64,
}

enum Block<'h> {
    Plain {
        source: &'h Message,
        content: Vec<ContentPart>,
    },
    Exchange {
        owner: usize,
        source: &'h Message,
        content: Vec<ContentPart>,
        slots: Vec<Slot<'h>>,
    },
}

/// Remove blank text parts; a removed part that held whitespace is reported (§b.3).
fn clean(content: &mut Vec<ContentPart>, role: Role, anomalies: &mut Vec<Anomaly>) {
    content.retain(|part| match part {
        ContentPart::Text { text } if text.trim().is_empty() => {
            if !text.is_empty() {
                anomalies.push(Anomaly::WhitespaceTextDropped { role });
            }
            false
        }
        ContentPart::Text { .. }
        | ContentPart::Think { .. }
        | ContentPart::Image(_)
        | ContentPart::Audio(_)
        | ContentPart::Video(_) => true,
    });
}

fn rendered_tool_content(message: &Message, anomalies: &mut Vec<Anomaly>) -> Vec<ContentPart> {
    let mut content = render_tool_result(
        &message.content,
        message.is_error.unwrap_or(false),
        message.note.as_deref(),
    );
    clean(&mut content, Role::Tool, anomalies);
    content
}

/// The provider-facing copy of a message: origin, error flag, note and ids are not sent.
fn wire(source: &Message, content: Vec<ContentPart>) -> Message {
    let mut out = Message::new(source.role, content);
    out.name.clone_from(&source.name);
    out.tool_calls.clone_from(&source.tool_calls);
    out.tool_call_id.clone_from(&source.tool_call_id);
    out.tools.clone_from(&source.tools);
    out
}

fn placeholder(id: &str) -> Message {
    let mut out = Message::new(Role::Tool, vec![ContentPart::text(TOOL_RESULT_UNAVAILABLE)]);
    out.tool_call_id = Some(id.to_owned());
    out
}

fn declares_tools(message: &Message) -> bool {
    message.tools.as_ref().is_some_and(|t| !t.is_empty())
}

fn mergeable(message: &Message) -> bool {
    message.role == Role::User && message.origin.as_ref().is_some_and(|o| o.kind() == "user")
}

pub(super) fn project_blocks(history: &[Message], anomalies: &mut Vec<Anomaly>) -> Projected {
    project_tail(history, false, anomalies).0
}

/// A point of a projection that later messages cannot change: `history[..history]` projects to
/// the first `messages` wire messages and the first `anomalies` anomalies, whatever follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Checkpoint {
    pub history: usize,
    pub messages: usize,
    pub anomalies: usize,
}

/// Project `history` as the tail of a longer one whose head ended at a [`Checkpoint`]
/// (`assistant_before`: the head held an assistant message; `false` and an empty head give the
/// plain projection). Also returns the last checkpoint inside `history`, with positions
/// relative to it (`anomalies` counts what the vector already held).
///
/// A position is a checkpoint when what precedes it is final: every call there is answered or
/// closed (so no later message can pair with it), the last block is not a user prompt a later
/// one could merge into, an assistant message was seen (so the `sizing` layout is off for every
/// history that starts this way), and no `trailing` flag there depends on what follows (a
/// synthesized result's owner is before the last non-tool message).
pub(super) fn project_tail(
    history: &[Message],
    assistant_before: bool,
    anomalies: &mut Vec<Anomaly>,
) -> (Projected, Option<Checkpoint>) {
    // §b.1: layout pre-pass over non-partial, non-tool messages.
    let mut last_non_tool: Option<usize> = None;
    let mut has_assistant = assistant_before;
    for (index, message) in history.iter().enumerate() {
        if message.partial || message.role == Role::Tool {
            continue;
        }
        last_non_tool = Some(index);
        has_assistant |= message.role == Role::Assistant;
    }
    let sizing = !has_assistant;
    let is_trailing = |owner: usize| last_non_tool.is_some_and(|last| owner >= last);

    // §b.2: pairing pass.
    let mut blocks: Vec<Block<'_>> = Vec::with_capacity(history.len());
    let mut open: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut answers: Vec<Option<Message>> = Vec::new();
    let mut foreign: u64 = 0;
    // Checkpoint bookkeeping (see the doc comment): what the pairing pass has seen so far.
    let mut seen_assistant = assistant_before;
    let mut seen_non_tool: Option<usize> = None;
    let mut synthesized_owner: Option<usize> = None;
    let mut seen_partial = false;
    let mut checkpoint: Option<(usize, usize, usize)> = None;
    for (index, message) in history.iter().enumerate() {
        if !seen_partial
            && is_checkpoint(
                &blocks,
                &open,
                seen_assistant,
                seen_non_tool,
                synthesized_owner,
            )
        {
            checkpoint = Some((index, blocks.len(), anomalies.len()));
        }
        if message.partial {
            // A partial message is still being written: a head that includes it would be
            // invalidated by the next streamed part, so checkpoints stop before it.
            seen_partial = true;
            continue;
        }
        if message.role != Role::Tool {
            seen_non_tool = Some(index);
            seen_assistant |= message.role == Role::Assistant;
        }
        if message.role == Role::Tool && !sizing {
            let Some(id) = message.tool_call_id.as_deref() else {
                continue;
            };
            let Some((block, slot)) = open.remove(id) else {
                foreign += 1;
                anomalies.push(Anomaly::OrphanToolResultDropped {
                    tool_call_id: id.to_owned(),
                });
                continue;
            };
            let content = rendered_tool_content(message, anomalies);
            if let Some(Block::Exchange { slots, .. }) = blocks.get_mut(block)
                && let Some(slot) = slots.get_mut(slot)
            {
                if slot.opened_at != foreign {
                    anomalies.push(Anomaly::ToolResultReordered {
                        tool_call_id: id.to_owned(),
                    });
                }
                slot.state = SlotState::Answered(answers.len());
                answers.push(Some(wire(message, content)));
            }
            continue;
        }

        let content = if message.role == Role::Tool {
            rendered_tool_content(message, anomalies)
        } else {
            let mut content = message.content.clone();
            clean(&mut content, message.role, anomalies);
            content
        };
        if message.tool_calls.is_empty() && !declares_tools(message) {
            if content.is_empty() {
                continue;
            }
            if content.iter().all(ContentPart::is_vacuous) {
                anomalies.push(Anomaly::VacuousMessageDropped { role: message.role });
                continue;
            }
        }
        foreign += 1;
        if message.tool_calls.is_empty() {
            blocks.push(Block::Plain {
                source: message,
                content,
            });
            continue;
        }
        let block_index = blocks.len();
        let mut slots: Vec<Slot<'_>> = Vec::with_capacity(message.tool_calls.len());
        for call in &message.tool_calls {
            let id = call.id.as_str();
            if let Some((earlier_block, earlier_slot)) = open.remove(id) {
                let owner = match blocks.get_mut(earlier_block) {
                    Some(Block::Exchange { owner, slots, .. }) => {
                        if let Some(slot) = slots.get_mut(earlier_slot) {
                            slot.state = SlotState::Closed;
                        }
                        Some(*owner)
                    }
                    Some(Block::Plain { .. }) | None => None,
                };
                // The earlier slot may sit in this very exchange (an id repeated within one
                // message); it is closed below, once the exchange exists.
                let owner = owner.unwrap_or(index);
                if earlier_block == block_index
                    && let Some(slot) = slots.get_mut(earlier_slot)
                {
                    slot.state = SlotState::Closed;
                }
                anomalies.push(Anomaly::ToolResultSynthesized {
                    tool_call_id: id.to_owned(),
                    trailing: is_trailing(owner),
                });
                synthesized_owner = synthesized_owner.max(Some(owner));
            }
            open.insert(id, (block_index, slots.len()));
            slots.push(Slot {
                id,
                state: SlotState::Open,
                opened_at: foreign,
            });
        }
        blocks.push(Block::Exchange {
            owner: index,
            source: message,
            content,
            slots,
        });
    }

    if !seen_partial
        && is_checkpoint(
            &blocks,
            &open,
            seen_assistant,
            seen_non_tool,
            synthesized_owner,
        )
    {
        checkpoint = Some((history.len(), blocks.len(), anomalies.len()));
    }

    // §b.4: flattening pass.
    let mut out = Projected {
        messages: Vec::with_capacity(history.len()),
        placeholder: Vec::with_capacity(history.len()),
    };
    let mut group: Vec<(&Message, Vec<ContentPart>)> = Vec::new();
    let mut checkpoint_out = None;
    let block_count = blocks.len();
    for (block_index, block) in blocks.into_iter().enumerate() {
        // At a checkpoint the group is empty (its last block was not a mergeable prompt), so
        // what was emitted so far is exactly the head's output.
        if let Some((at, blocks_before, anomalies_before)) = checkpoint
            && blocks_before == block_index
        {
            checkpoint_out = Some(Checkpoint {
                history: at,
                messages: out.messages.len(),
                anomalies: anomalies_before,
            });
        }
        match block {
            Block::Plain { source, content } if mergeable(source) => {
                group.push((source, content));
            }
            Block::Plain { source, content } => {
                flush_group(&mut group, &mut out);
                out.push(wire(source, content), false);
            }
            Block::Exchange {
                owner,
                source,
                content,
                slots,
            } => {
                flush_group(&mut group, &mut out);
                out.push(wire(source, content), false);
                for slot in slots {
                    match slot.state {
                        SlotState::Answered(answer) => {
                            match answers.get_mut(answer).and_then(Option::take) {
                                Some(result) => out.push(result, false),
                                None => out.push(placeholder(slot.id), true),
                            }
                        }
                        SlotState::Closed => out.push(placeholder(slot.id), true),
                        SlotState::Open => {
                            anomalies.push(Anomaly::ToolResultSynthesized {
                                tool_call_id: slot.id.to_owned(),
                                trailing: is_trailing(owner),
                            });
                            out.push(placeholder(slot.id), true);
                        }
                    }
                }
            }
        }
    }
    if let Some((at, blocks_before, anomalies_before)) = checkpoint
        && blocks_before == block_count
    {
        // The checkpoint follows the last block (not a prompt, so nothing is grouped).
        checkpoint_out = Some(Checkpoint {
            history: at,
            messages: out.messages.len(),
            anomalies: anomalies_before,
        });
    }
    flush_group(&mut group, &mut out);
    (out, checkpoint_out)
}

/// Whether the position after the messages paired so far is a checkpoint (see
/// [`project_tail`]).
fn is_checkpoint(
    blocks: &[Block<'_>],
    open: &HashMap<&str, (usize, usize)>,
    seen_assistant: bool,
    seen_non_tool: Option<usize>,
    synthesized_owner: Option<usize>,
) -> bool {
    let last_is_prompt =
        matches!(blocks.last(), Some(Block::Plain { source, .. }) if mergeable(source));
    let trailing_settled = match synthesized_owner {
        None => true,
        Some(owner) => seen_non_tool.is_some_and(|last| owner < last),
    };
    seen_assistant && open.is_empty() && !last_is_prompt && trailing_settled
}

/// Emit a run of plain user prompts as one message: their texts joined by a blank line in one
/// leading text part, then every non-text part in order. A run of one passes unchanged.
fn flush_group(group: &mut Vec<(&Message, Vec<ContentPart>)>, out: &mut Projected) {
    match group.len() {
        0 => {}
        1 => {
            if let Some((source, content)) = group.pop() {
                out.push(wire(source, content), false);
            }
        }
        _ => {
            let mut text = String::new();
            let mut others = Vec::new();
            let mut first: Option<&Message> = None;
            for (source, content) in group.drain(..) {
                first.get_or_insert(source);
                let mut own = String::new();
                for part in content {
                    match part {
                        ContentPart::Text { text: t } => own.push_str(&t),
                        other @ (ContentPart::Think { .. }
                        | ContentPart::Image(_)
                        | ContentPart::Audio(_)
                        | ContentPart::Video(_)) => others.push(other),
                    }
                }
                if !own.is_empty() {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(&own);
                }
            }
            let mut content = Vec::with_capacity(others.len() + 1);
            if !text.is_empty() {
                content.push(ContentPart::text(text));
            }
            content.extend(others);
            let mut merged = Message::new(Role::User, content);
            merged.name = first.and_then(|m| m.name.clone());
            out.push(merged, false);
        }
    }
}
