//! The strict passes (core.md §b.5) that run after the normal projection when a provider has
//! rejected the request's structure: call/result dedupe, assistant merging, and dropping
//! everything before the first user message.

use std::collections::{HashMap, HashSet};

use kimi_protocol::{Message, Role};

use super::Anomaly;
use super::pairing::Projected;

pub(super) fn apply(projected: &mut Projected, anomalies: &mut Vec<Anomaly>) {
    dedupe(projected, anomalies);
    drop_unpaired_results(&mut projected.messages, anomalies);
    merge_assistants(&mut projected.messages, anomalies);
    drop_leading_non_user(&mut projected.messages, anomalies);
}

/// Remove the messages whose `drop` flag is set, keeping order (one pass, no reallocation).
fn remove_flagged(messages: &mut Vec<Message>, drop: &[bool]) {
    let mut index = 0;
    messages.retain(|_| {
        let keep = !drop.get(index).copied().unwrap_or(false);
        index += 1;
        keep
    });
}

/// The first assistant to use a call id keeps it; later ones lose it. The first result for an
/// id is kept, except that a real result replaces a synthesized placeholder in place.
///
/// Decisions are made on a borrowed view first and applied afterwards, so ids are never copied.
fn dedupe(projected: &mut Projected, anomalies: &mut Vec<Anomaly>) {
    let messages = &mut projected.messages;
    let placeholder = &mut projected.placeholder;
    let mut drop = vec![false; messages.len()];
    // (message, calls to keep) for assistants that lost a call; (kept, replacement) results.
    let mut trimmed: Vec<(usize, Vec<bool>)> = Vec::new();
    let mut replaced: Vec<(usize, usize)> = Vec::new();
    {
        let mut seen_calls: HashSet<&str> = HashSet::with_capacity(messages.len());
        let mut results: HashMap<&str, usize> = HashMap::with_capacity(messages.len());
        for (index, message) in messages.iter().enumerate() {
            match message.role {
                Role::Assistant if !message.tool_calls.is_empty() => {
                    let keep: Vec<bool> = message
                        .tool_calls
                        .iter()
                        .map(|call| seen_calls.insert(call.id.as_str()))
                        .collect();
                    if keep.iter().all(|k| *k) {
                        continue;
                    }
                    for (call, _) in message.tool_calls.iter().zip(&keep).filter(|(_, k)| !**k) {
                        anomalies.push(Anomaly::DuplicateToolCallDropped {
                            tool_call_id: call.id.clone(),
                        });
                    }
                    if !keep.iter().any(|k| *k) && message.is_vacuous() {
                        if !message.content.is_empty() {
                            anomalies.push(Anomaly::VacuousMessageDropped { role: message.role });
                        }
                        if let Some(flag) = drop.get_mut(index) {
                            *flag = true;
                        }
                        continue;
                    }
                    trimmed.push((index, keep));
                }
                Role::Tool => {
                    let Some(id) = message.tool_call_id.as_deref() else {
                        continue;
                    };
                    let Some(&kept) = results.get(id) else {
                        results.insert(id, index);
                        continue;
                    };
                    let this_is_real = !placeholder.get(index).copied().unwrap_or(false);
                    if this_is_real && placeholder.get(kept).copied().unwrap_or(false) {
                        replaced.push((kept, index));
                        if let Some(flag) = placeholder.get_mut(kept) {
                            *flag = false;
                        }
                    } else {
                        anomalies.push(Anomaly::DuplicateToolResultDropped {
                            tool_call_id: id.to_owned(),
                        });
                    }
                    if let Some(flag) = drop.get_mut(index) {
                        *flag = true;
                    }
                }
                Role::Assistant | Role::User | Role::System => {}
            }
        }
    }
    for (kept, from) in replaced {
        let content = messages
            .get_mut(from)
            .map(|m| std::mem::take(&mut m.content))
            .unwrap_or_default();
        if let Some(target) = messages.get_mut(kept) {
            target.content = content;
        }
    }
    for (index, keep) in trimmed {
        if let Some(message) = messages.get_mut(index) {
            let mut k = keep.iter();
            message
                .tool_calls
                .retain(|_| k.next().copied().unwrap_or(true));
        }
    }
    remove_flagged(messages, &drop);
    let mut index = 0;
    placeholder.retain(|_| {
        let keep = !drop.get(index).copied().unwrap_or(false);
        index += 1;
        keep
    });
}

/// Beyond the reference: a bare slice of results projected in sizing mode (no assistant at all)
/// keeps results that answer no call; a provider that wanted strict structure rejects those, so
/// they go. After a normal projection with an assistant this pass never fires, because every
/// result already sits right behind its call.
fn drop_unpaired_results(messages: &mut Vec<Message>, anomalies: &mut Vec<Anomaly>) {
    let mut drop = vec![false; messages.len()];
    let mut any = false;
    let mut expected: Vec<&str> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool {
            expected.clear();
            expected.extend(message.tool_calls.iter().map(|c| c.id.as_str()));
            continue;
        }
        let id = message.tool_call_id.as_deref();
        if let Some(pos) = id.and_then(|id| expected.iter().position(|e| *e == id)) {
            expected.swap_remove(pos);
            continue;
        }
        if let Some(id) = id {
            anomalies.push(Anomaly::OrphanToolResultDropped {
                tool_call_id: id.to_owned(),
            });
        }
        if let Some(flag) = drop.get_mut(index) {
            *flag = true;
            any = true;
        }
    }
    if any {
        remove_flagged(messages, &drop);
    }
}

fn merge_assistants(messages: &mut Vec<Message>, anomalies: &mut Vec<Anomaly>) {
    messages.dedup_by(|current, previous| {
        if current.role != Role::Assistant || previous.role != Role::Assistant {
            return false;
        }
        previous.content.append(&mut current.content);
        previous.tool_calls.append(&mut current.tool_calls);
        anomalies.push(Anomaly::ConsecutiveAssistantsMerged);
        true
    });
}

fn drop_leading_non_user(messages: &mut Vec<Message>, anomalies: &mut Vec<Anomaly>) {
    let first_user = messages
        .iter()
        .position(|m| m.role == Role::User)
        .unwrap_or(messages.len());
    for message in messages.drain(..first_user) {
        anomalies.push(Anomaly::LeadingNonUserDropped { role: message.role });
    }
}
