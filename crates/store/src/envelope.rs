//! The journal envelope (core.md §g.4 `readJournal`): find the metadata line, decide between
//! current, newer, older and legacy journals, migrate, and say whether the file must be
//! rewritten. Pure: the caller does the I/O.

use std::cmp::Ordering;

use kimi_protocol::WIRE_PROTOCOL_VERSION;
use serde_json::{Map, Value};

use crate::error::WireError;
use crate::migrate::{compare_versions, migrate_chain};

/// One parsed journal line with its physical 1-based line number.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub line: u64,
    pub value: Value,
}

/// Something skipped while reading, reported rather than failing the read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// `wire.unknown_record` (not an object or no string `type`) or `wire.corrupt_line`
    /// (not JSON, in the middle of the file).
    pub code: &'static str,
    /// Position among non-metadata records, skipped ones included (the reference's `index`).
    pub index: usize,
    /// Physical line number in the file.
    pub line: u64,
}

pub const UNKNOWN_RECORD: &str = "wire.unknown_record";
pub const CORRUPT_LINE: &str = "wire.corrupt_line";

#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeRead {
    /// Metadata (restamped when migrated) followed by the records, as they should be replayed.
    pub yielded: Vec<Entry>,
    /// The full replacement file when the journal must be rewritten (empty, legacy or migrated).
    pub rewrite: Option<Vec<Value>>,
    pub reported: Vec<Reported>,
    /// The version the journal was written with (`None` for an empty journal).
    pub stored_version: Option<String>,
}

impl EnvelopeRead {
    /// True when the journal was written by a newer protocol than this build's.
    pub fn is_newer(&self) -> bool {
        self.stored_version
            .as_deref()
            .is_some_and(|v| compare_versions(v, WIRE_PROTOCOL_VERSION).is_gt())
    }
}

pub fn fresh_metadata(created_at: u64) -> Value {
    let mut map = Map::new();
    map.insert("type".to_owned(), Value::from("metadata"));
    map.insert(
        "protocol_version".to_owned(),
        Value::from(WIRE_PROTOCOL_VERSION),
    );
    map.insert("created_at".to_owned(), Value::from(created_at));
    Value::Object(map)
}

fn is_record(value: &Value) -> bool {
    value.get("type").is_some_and(Value::is_string)
}

/// Read the envelope of parsed lines. `corrupt_lines` (lines that were not JSON) are reported in
/// their place in the index sequence. `now_ms` stamps a fresh metadata line.
pub fn read_envelope(
    lines: Vec<Entry>,
    corrupt_lines: &[u64],
    now_ms: u64,
) -> Result<EnvelopeRead, WireError> {
    let mut reported = Vec::new();
    let mut metadata: Option<Entry> = None;
    let mut records: Vec<Entry> = Vec::new();
    let mut index = 0usize;
    let mut corrupt = corrupt_lines.iter().copied().peekable();
    let mut seen_first_record = false;
    for entry in lines {
        while let Some(line) = corrupt.next_if(|&l| l < entry.line) {
            reported.push(Reported {
                code: CORRUPT_LINE,
                index,
                line,
            });
            index += 1;
        }
        if !is_record(&entry.value) {
            reported.push(Reported {
                code: UNKNOWN_RECORD,
                index,
                line: entry.line,
            });
            index += 1;
            continue;
        }
        if !seen_first_record {
            seen_first_record = true;
            if entry.value.get("type").and_then(Value::as_str) == Some("metadata") {
                metadata = Some(entry);
                continue;
            }
        }
        records.push(entry);
        index += 1;
    }
    for line in corrupt {
        reported.push(Reported {
            code: CORRUPT_LINE,
            index,
            line,
        });
        index += 1;
    }

    let Some(metadata) = metadata else {
        if records.is_empty() {
            // Empty journal: nothing to replay, the file becomes a single fresh metadata line.
            let fresh = fresh_metadata(now_ms);
            return Ok(EnvelopeRead {
                yielded: Vec::new(),
                rewrite: Some(vec![fresh]),
                reported,
                stored_version: None,
            });
        }
        // Legacy journal without metadata: it is a 1.4 journal.
        let migrated = migrate_chain("1.4", records.into_iter().map(|e| e.value).collect())?;
        // The reference yields only the records here, not the metadata line it adds.
        let mut read = rewritten(fresh_metadata(now_ms), migrated, reported, "1.4");
        read.yielded.remove(0);
        return Ok(read);
    };

    let (version, created_at) = match (
        metadata.value.get("protocol_version"),
        metadata.value.get("created_at"),
    ) {
        (Some(Value::String(v)), Some(created @ Value::Number(_))) => (v.clone(), created.clone()),
        _ => {
            return Err(WireError::CorruptedMetadata {
                line: metadata.line,
                reason: "metadata needs a string `protocol_version` and a numeric `created_at`"
                    .to_owned(),
            });
        }
    };
    match compare_versions(&version, WIRE_PROTOCOL_VERSION) {
        Ordering::Equal | Ordering::Greater => {
            let mut yielded = vec![metadata];
            yielded.extend(records);
            Ok(EnvelopeRead {
                yielded,
                rewrite: None,
                reported,
                stored_version: Some(version),
            })
        }
        Ordering::Less => {
            let migrated = migrate_chain(&version, records.into_iter().map(|e| e.value).collect())?;
            let mut restamped = metadata.value;
            if let Some(map) = restamped.as_object_mut() {
                map.insert(
                    "protocol_version".to_owned(),
                    Value::from(WIRE_PROTOCOL_VERSION),
                );
                map.insert("created_at".to_owned(), created_at);
            }
            Ok(rewritten(restamped, migrated, reported, &version))
        }
    }
}

fn rewritten(
    metadata: Value,
    records: Vec<Value>,
    reported: Vec<Reported>,
    version: &str,
) -> EnvelopeRead {
    let mut file = Vec::with_capacity(records.len() + 1);
    file.push(metadata);
    file.extend(records);
    let yielded = file
        .iter()
        .enumerate()
        .map(|(i, value)| Entry {
            line: i as u64 + 1,
            value: value.clone(),
        })
        .collect();
    EnvelopeRead {
        yielded,
        rewrite: Some(file),
        reported,
        stored_version: Some(version.to_owned()),
    }
}
