//! Entry points for the `wire_restore` conformance cases (shared by the `kimi-rs debug
//! conformance` adapter and this crate's tests): journal reading, line parsing, migration steps,
//! record serialisation and the turn clock, each run through the real store code. Inputs and
//! outputs are the case JSON shapes of `tests/conformance/wire_restore.json`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use kimi_protocol::Record;
use serde_json::{Map, Value, json};

use kimi_store::journal::{Journal, JournalOptions, Repair};
use kimi_store::lines::read_lines;
use kimi_store::migrate::migrate_step;
use kimi_store::{StoreError, TurnClock};

pub fn run(input: &Value) -> Result<Value, String> {
    match input.get("fn").and_then(Value::as_str) {
        Some("replayContext") => super::wire_restore_replay::replay_context(input),
        Some("readJournal") => read_journal(input),
        Some("readLines") => {
            let raw = input
                .get("raw")
                .and_then(Value::as_str)
                .ok_or("readLines needs `raw`")?;
            let (records, corrupt) = read_lines(raw);
            if corrupt.is_empty() {
                return Ok(json!({"records": records}));
            }
            // A corrupt middle line is skipped, never silently: one warning names each line.
            let warnings: Vec<String> = corrupt
                .iter()
                .map(|line| {
                    format!("corrupted wire journal: line {line} is not valid JSON and was skipped")
                })
                .collect();
            Ok(json!({"records": records, "warnings": warnings}))
        }
        Some("migrateStep") => {
            let from = input
                .get("from_version")
                .and_then(Value::as_str)
                .ok_or("migrateStep needs `from_version`")?;
            let (_, records) = migrate_step(from, records_of(input)?).map_err(|e| e.to_string())?;
            Ok(json!({"records": records}))
        }
        Some("serialize") => serialize(input),
        Some("turnClock") => {
            let records: Vec<Record> = records_of(input)?
                .into_iter()
                .filter_map(|v| Record::from_value(v).ok())
                .collect();
            let clock = TurnClock::fold(records.iter().map(|r| &r.payload));
            let state = serde_json::to_value(&clock).map_err(|e| e.to_string())?;
            Ok(json!({"state": state}))
        }
        other => Err(format!("wire_restore: unknown fn {other:?}")),
    }
}

fn records_of(input: &Value) -> Result<Vec<Value>, String> {
    input
        .get("records")
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| "case needs a `records` list".to_owned())
}

/// A scratch directory for one case, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Self, String> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kimi-conformance-wire-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read_journal(input: &Value) -> Result<Value, String> {
    let stored = input
        .get("stored_records")
        .and_then(Value::as_array)
        .ok_or("readJournal needs `stored_records`")?;
    let scratch = Scratch::new()?;
    let path = scratch.0.join("wire.jsonl");
    let mut text = String::new();
    for record in stored {
        // Non-objects model garbage lines: their JSON text is the line.
        text.push_str(&record.to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))?;
    let (journal, read) = match Journal::open(&path, JournalOptions::default()) {
        Ok(opened) => opened,
        Err(StoreError::Wire { source, .. }) => {
            return Ok(json!({"error_code": source.code(), "error_message": source.to_string()}));
        }
        Err(err) => return Err(err.to_string()),
    };
    drop(journal);
    let rewritten = if read
        .repairs
        .iter()
        .any(|r| matches!(r, Repair::Rewritten { .. }))
    {
        let on_disk = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        Value::Array(read_lines(&on_disk).0)
    } else {
        Value::Null
    };
    let mut out = Map::new();
    out.insert(
        "yielded".to_owned(),
        Value::Array(read.entries.into_iter().map(|e| e.value).collect()),
    );
    out.insert("rewritten".to_owned(), rewritten);
    if !read.reported.is_empty() {
        let reported = read
            .reported
            .iter()
            .map(|r| json!({"code": r.code, "index": r.index}))
            .collect();
        out.insert("reported".to_owned(), Value::Array(reported));
    }
    Ok(Value::Object(out))
}

/// `{class, payload, time}` → the journal line the event becomes.
fn serialize(input: &Value) -> Result<Value, String> {
    let event = input.get("event").ok_or("serialize needs `event`")?;
    let class = event
        .get("class")
        .and_then(Value::as_str)
        .ok_or("event needs `class`")?;
    let mut map = Map::new();
    map.insert("type".to_owned(), Value::from(class));
    if let Some(Value::Object(payload)) = event.get("payload") {
        for (k, v) in payload {
            map.insert(k.clone(), v.clone());
        }
    }
    if let Some(time) = event.get("time") {
        map.insert("time".to_owned(), time.clone());
    }
    let record = Record::from_value(Value::Object(map)).map_err(|e| e.to_string())?;
    Ok(json!({"record": record.to_value()}))
}
