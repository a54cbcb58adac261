//! Turning journal entries into typed records for restore (core.md §g.6 step 1, core-2.1 §4.2):
//! metadata skipped, missing `agentId` filled, records of other agents and records that do not fit
//! their schema reported and skipped. Two record lists come out: the restorable chain of the active
//! branch (for undoable state such as history) and the whole journal (for everything else, e.g.
//! the turn clock). Pure: no I/O, no side effects.

use kimi_protocol::{Record, RecordPayload};
use serde_json::Value;

use crate::envelope::Entry;
use kimi_protocol::Origin;

use crate::tree::{ChainLine, TreeError, parse_tree, prompt_ids_of, restorable_chain};

/// A typed record with the journal line it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LineRecord {
    pub line: u64,
    pub record: Record,
}

/// Why a journal line was left out of replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub line: u64,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplayInput {
    /// The active branch's restorable chain: what history and other undoable states fold.
    pub undoable: Vec<LineRecord>,
    /// Every record of the journal, abandoned branches included.
    pub all: Vec<LineRecord>,
    pub skipped: Vec<Skipped>,
}

/// Like [`ReplayInput`], from [`replay_input_owned`]: every record once, with a flag per record
/// saying whether it is on the active branch's restorable chain (so nothing is copied).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OwnedReplayInput {
    /// Every record of the journal, abandoned branches included, in journal order.
    pub all: Vec<LineRecord>,
    /// `undoable[i]` is true when `all[i]` is on the restorable chain (same length as `all`).
    pub undoable: Vec<bool>,
    pub skipped: Vec<Skipped>,
}

impl OwnedReplayInput {
    /// The records of the restorable chain, in order, moved out of `all`.
    pub fn into_undoable(self) -> impl Iterator<Item = Record> {
        self.all
            .into_iter()
            .zip(self.undoable)
            .filter_map(|(record, on_chain)| on_chain.then_some(record.record))
    }
}

fn typed(
    line: u64,
    value: Value,
    agent_id: &str,
    skipped: &mut Vec<Skipped>,
) -> Option<LineRecord> {
    match Record::from_value(value) {
        Ok(record) => admit(line, record, agent_id, skipped),
        Err(err) => {
            skipped.push(Skipped {
                line,
                reason: err.to_string(),
            });
            None
        }
    }
}

/// Keep a decoded record for `agent_id`'s replay: metadata dropped, a missing `agentId` filled,
/// another agent's record reported and skipped.
pub(crate) fn admit(
    line: u64,
    mut record: Record,
    agent_id: &str,
    skipped: &mut Vec<Skipped>,
) -> Option<LineRecord> {
    if matches!(record.payload, RecordPayload::Metadata(_)) {
        return None;
    }
    match record.payload.agent_id() {
        Some(other) if other != agent_id => {
            skipped.push(Skipped {
                line,
                reason: format!("record of agent {other} in the journal of agent {agent_id}"),
            });
            None
        }
        _ => {
            record.payload.fill_agent_id(agent_id);
            Some(LineRecord { line, record })
        }
    }
}

impl ChainLine for LineRecord {
    fn line(&self) -> u64 {
        self.line
    }

    fn kind(&self) -> Option<&str> {
        Some(self.record.type_name())
    }

    fn message_origin(&self) -> Option<Origin> {
        match &self.record.payload {
            RecordPayload::AppendMessage(m) => m.message.origin.clone(),
            _ => None,
        }
    }

    fn prompt_ids(&self) -> Vec<String> {
        // Only asked for when injections sit off the chain (rare): the JSON form answers it.
        prompt_ids_of(&self.record.to_value())
    }
}

/// Prepare the entries read from `agent_id`'s journal for replay.
pub fn replay_input(entries: &[Entry], agent_id: &str) -> Result<ReplayInput, TreeError> {
    let tree = parse_tree(entries);
    let chain = restorable_chain(&tree, entries)?;
    let mut input = ReplayInput::default();
    // Each line is decoded once (the whole-journal pass, which also reports skips); the chain
    // of the active branch then picks its records by line number.
    input.all = entries
        .iter()
        .filter_map(|e| typed(e.line, e.value.clone(), agent_id, &mut input.skipped))
        .collect();
    let by_line: std::collections::HashMap<u64, &LineRecord> =
        input.all.iter().map(|r| (r.line, r)).collect();
    input.undoable = chain
        .into_iter()
        .filter_map(|e| by_line.get(&e.line).map(|r| (*r).clone()))
        .collect();
    Ok(input)
}

/// [`replay_input`] taking the entries by value: each line is decoded by moving its JSON into
/// the typed record, and the chain is given as flags instead of copies.
pub fn replay_input_owned(
    entries: Vec<Entry>,
    agent_id: &str,
) -> Result<OwnedReplayInput, TreeError> {
    let tree = parse_tree(&entries);
    // Sorted by line (restorable_chain sorts), so membership is a binary search.
    let chain: Vec<u64> = restorable_chain(&tree, &entries)?
        .into_iter()
        .map(|e| e.line)
        .collect();
    let mut input = OwnedReplayInput {
        all: Vec::with_capacity(entries.len()),
        undoable: Vec::with_capacity(entries.len()),
        skipped: Vec::new(),
    };
    for entry in entries {
        let line = entry.line;
        if let Some(record) = typed(line, entry.value, agent_id, &mut input.skipped) {
            input.undoable.push(chain.binary_search(&line).is_ok());
            input.all.push(record);
        }
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn fills_agent_ids_and_skips_foreign_or_invalid_records() {
        let entries: Vec<Entry> = [
            json!({"type": "metadata", "protocol_version": "1.5", "created_at": 1}),
            json!({"type": "context.clear", "time": 2}),
            json!({"type": "context.clear", "agentId": "agent-1", "time": 3}),
            json!({"type": "turn.ended", "turnId": "x", "reason": "completed", "time": 4}),
            json!({"type": "llm.request", "time": 5}),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, value)| Entry {
            line: i as u64 + 1,
            value,
        })
        .collect();
        let input = replay_input(&entries, "main").unwrap();
        assert_eq!(
            input.all.iter().map(|r| r.line).collect::<Vec<_>>(),
            vec![2, 5]
        );
        assert_eq!(input.all[0].record.payload.agent_id(), Some("main"));
        assert_eq!(input.undoable, input.all);
        assert_eq!(
            input.skipped.iter().map(|s| s.line).collect::<Vec<_>>(),
            vec![3, 4]
        );
    }
}
