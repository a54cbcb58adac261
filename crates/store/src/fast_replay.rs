//! The resume fast path: a journal this version wrote cleanly is decoded line by line straight
//! into typed records ([`Record::from_line`]) and its branch chain computed on those records,
//! without building a JSON tree of the whole file first.
//!
//! It takes only what needs no decision: a file ending in `\n`, this protocol version's metadata on
//! line 1, every other line a record in this version's shape, and well-formed branch edges. For
//! anything else — an empty, torn, corrupt, legacy, older or newer journal, a record that does not
//! fit its schema, a malformed `agent.switched` — it declines and the caller takes the general
//! path ([`crate::Journal::open`] + [`crate::replay_input_owned`]), which repairs, migrates and
//! reports. Where it answers, it answers exactly what the general path would (tested against it).

use kimi_protocol::{Record, WIRE_PROTOCOL_VERSION};
use serde_json::Value;

use crate::envelope::Entry;
use crate::replay::{LineRecord, OwnedReplayInput, admit};
use crate::tree::{parse_tree, restorable_chain};

/// What the fast path read.
#[derive(Debug)]
pub(crate) struct FastRead {
    pub input: OwnedReplayInput,
    /// Physical lines in the file (metadata included).
    pub line_count: u64,
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// True for `{"type":"metadata","protocol_version":<this version>,"created_at":<number>}`.
fn is_current_metadata(line: &[u8]) -> bool {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    map.get("type").and_then(Value::as_str) == Some("metadata")
        && map.get("protocol_version").and_then(Value::as_str) == Some(WIRE_PROTOCOL_VERSION)
        && map.get("created_at").is_some_and(Value::is_number)
}

/// Decode `bytes` (a whole journal) for `agent_id`'s replay, or `None` when the general path
/// must read it.
pub(crate) fn fast_replay(bytes: &[u8], agent_id: &str) -> Option<FastRead> {
    if bytes.last() != Some(&b'\n') {
        return None;
    }
    // Every line, metadata excepted, before the agent filter: the chain is computed on the same
    // lines the general path sees.
    let mut lines: Vec<LineRecord> = Vec::with_capacity(bytes.len() / 200);
    let mut switches: Vec<Entry> = Vec::new();
    let mut number = 0u64;
    let mut start = 0usize;
    while start < bytes.len() {
        let offset = bytes[start..].iter().position(|&b| b == b'\n')?;
        number += 1;
        let mut end = start + offset;
        if end > start && bytes[end - 1] == b'\r' {
            end -= 1;
        }
        let line = &bytes[start..end];
        start += offset + 1;
        if number == 1 {
            if !is_current_metadata(line) {
                return None;
            }
            continue;
        }
        if is_blank(line) {
            continue;
        }
        let record = Record::from_line(line)?;
        if record.type_name() == "agent.switched" {
            // Edges are read exactly as the general path reads them.
            switches.push(Entry {
                line: number,
                value: serde_json::from_slice(line).ok()?,
            });
        }
        lines.push(LineRecord {
            line: number,
            record,
        });
    }
    let tree = parse_tree(&switches);
    if !tree.reported.is_empty() {
        return None;
    }
    // Sorted by line, so membership is a binary search.
    let chain: Vec<u64> = restorable_chain(&tree, &lines)
        .ok()?
        .into_iter()
        .map(|r| r.line)
        .collect();
    let mut input = OwnedReplayInput {
        all: Vec::with_capacity(lines.len()),
        undoable: Vec::with_capacity(lines.len()),
        skipped: Vec::new(),
    };
    for LineRecord { line, record } in lines {
        if let Some(record) = admit(line, record, agent_id, &mut input.skipped) {
            input.undoable.push(chain.binary_search(&line).is_ok());
            input.all.push(record);
        }
    }
    Some(FastRead {
        input,
        line_count: number,
    })
}

#[cfg(test)]
#[path = "fast_replay_tests.rs"]
mod tests;
