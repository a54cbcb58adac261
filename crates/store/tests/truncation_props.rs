//! Property: cutting a valid journal at any byte (a crash mid-write) always reopens to a prefix
//! of its complete records, keeps the cut-off bytes in a side file, and takes a new append.

// Test helpers outside `#[test]` functions unwrap too.
#![allow(clippy::unwrap_used)]

use kimi_store::{FsyncPolicy, Journal, JournalOptions, Repair};
use proptest::prelude::*;
use serde_json::{Value, json};

fn record(i: usize, text: &str) -> Value {
    json!({"type": "context.append_message", "agentId": "main", "message": {"role": "user", "content": [{"type": "text", "text": format!("{i}:{text}")}]}, "time": i})
}

fn fast() -> JournalOptions {
    JournalOptions {
        fsync: FsyncPolicy::Never,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn any_truncation_reopens_to_a_prefix(
        texts in prop::collection::vec("[a-zé🦀\"\\\\\n ]{0,40}", 1..12),
        cut_fraction in 0.0f64..=1.0,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wire.jsonl");
        let records: Vec<Value> = texts.iter().enumerate().map(|(i, t)| record(i, t)).collect();
        {
            let (mut journal, _) = Journal::open(&path, fast()).unwrap();
            journal.append_values(records.clone()).unwrap();
        }
        let full = std::fs::read(&path).unwrap();
        let cut = ((full.len() as f64) * cut_fraction) as usize;
        std::fs::write(&path, &full[..cut]).unwrap();

        let (mut journal, read) = Journal::open(&path, fast()).unwrap();
        prop_assert!(read.reported.is_empty());
        let got: Vec<Value> = read
            .entries
            .iter()
            .map(|e| e.value.clone())
            .filter(|v| v["type"] != "metadata")
            .collect();
        prop_assert!(got.len() <= records.len());
        prop_assert_eq!(&got[..], &records[..got.len()]);
        // Every complete line before the cut survives.
        let complete_lines = full[..cut].iter().filter(|&&b| b == b'\n').count();
        prop_assert!(got.len() + 1 >= complete_lines);
        for repair in &read.repairs {
            if let Repair::TornTail { side_file, .. } = repair {
                let start = full[..cut].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                prop_assert_eq!(std::fs::read(side_file).unwrap(), full[start..cut].to_vec());
            }
        }
        let extra = json!({"type": "turn.cancel", "time": 1});
        journal.append_values(vec![extra.clone()]).unwrap();
        drop(journal);
        let (_, again) = Journal::open(&path, fast()).unwrap();
        prop_assert!(again.repairs.is_empty());
        prop_assert_eq!(again.entries.last().map(|e| &e.value), Some(&extra));
        prop_assert_eq!(again.entries.len(), got.len() + 2);
    }
}
