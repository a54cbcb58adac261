//! Journal behaviour on disk: creation, repairs on open, migration rewrite, failed appends.

use super::*;
use crate::envelope::{CORRUPT_LINE, UNKNOWN_RECORD};
use pretty_assertions::assert_eq;
use serde_json::json;

fn journal_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("agents/main/wire.jsonl")
}

fn open(path: &Path) -> (Journal, JournalRead) {
    Journal::open(path, JournalOptions::default()).unwrap()
}

fn values(read: &JournalRead) -> Vec<Value> {
    read.entries.iter().map(|e| e.value.clone()).collect()
}

fn write_raw(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

const META: &str = "{\"type\":\"metadata\",\"protocol_version\":\"1.5\",\"created_at\":1}\n";

#[test]
fn new_journal_gets_a_metadata_line_and_appends_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let (mut journal, read) = open(&path);
    assert!(read.entries.is_empty());
    assert_eq!(journal.line_count(), 1);
    let ack = journal
        .append_values(vec![
            json!({"type": "a", "time": 1}),
            json!({"type": "b", "time": 2}),
        ])
        .unwrap();
    assert_eq!(
        ack,
        AppendAck {
            first_line: 2,
            last_line: 3
        }
    );
    drop(journal);
    let (_, read) = open(&path);
    assert_eq!(read.repairs, vec![]);
    let lines: Vec<u64> = read.entries.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![1, 2, 3]);
    assert_eq!(read.entries[0].value["protocol_version"], json!("1.5"));
    assert_eq!(
        values(&read)[1..],
        [
            json!({"type": "a", "time": 1}),
            json!({"type": "b", "time": 2})
        ]
    );
}

#[test]
fn second_open_of_the_same_journal_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let (_held, _) = open(&path);
    let err = Journal::open(&path, JournalOptions::default())
        .err()
        .unwrap();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
}

#[test]
fn torn_tail_goes_to_a_side_file_and_the_journal_ends_at_the_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let torn = b"{\"type\":\"x\",\"text\":\"\xe3\x83";
    write_raw(
        &path,
        &[META.as_bytes(), b"{\"type\":\"a\",\"time\":1}\n", torn].concat(),
    );
    let (mut journal, read) = open(&path);
    let [Repair::TornTail { bytes, side_file }] = read.repairs.as_slice() else {
        panic!("expected one torn-tail repair: {:?}", read.repairs);
    };
    assert_eq!(*bytes, torn.len());
    assert_eq!(std::fs::read(side_file).unwrap(), torn);
    assert_eq!(read.entries.len(), 2);
    journal
        .append_values(vec![json!({"type": "b", "time": 2})])
        .unwrap();
    drop(journal);
    let (_, read) = open(&path);
    assert_eq!(read.repairs, vec![]);
    assert_eq!(
        values(&read)[1..],
        [
            json!({"type": "a", "time": 1}),
            json!({"type": "b", "time": 2})
        ]
    );
}

#[test]
fn complete_last_record_without_newline_only_gets_the_newline() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    write_raw(
        &path,
        format!("{META}{{\"type\":\"a\",\"time\":1}}").as_bytes(),
    );
    let (mut journal, read) = open(&path);
    assert_eq!(read.repairs, vec![Repair::NewlineAdded]);
    assert_eq!(read.entries.len(), 2);
    journal.append_values(vec![json!({"type": "b"})]).unwrap();
    drop(journal);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{META}{{\"type\":\"a\",\"time\":1}}\n{{\"type\":\"b\"}}\n")
    );
}

#[test]
fn corrupt_middle_line_is_reported_backed_up_and_later_records_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let original = format!(
        "{META}{{\"type\":\"a\"}}\n{{\"type\":\"broken\n{{\"type\":\"c\"}}\n\"just a string\"\n"
    );
    write_raw(&path, original.as_bytes());
    let (mut journal, read) = open(&path);
    assert_eq!(
        values(&read)[1..],
        [json!({"type": "a"}), json!({"type": "c"})]
    );
    assert_eq!(
        read.reported,
        vec![
            Reported {
                code: CORRUPT_LINE,
                index: 1,
                line: 3
            },
            Reported {
                code: UNKNOWN_RECORD,
                index: 3,
                line: 5
            },
        ]
    );
    let backup = side_path(&path, "bak");
    assert_eq!(
        read.repairs,
        vec![Repair::CorruptLines {
            lines: vec![3],
            backup: backup.clone()
        }]
    );
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);
    // Line numbers do not shift: the bad line stays where it was.
    assert_eq!(
        read.entries.iter().map(|e| e.line).collect::<Vec<_>>(),
        vec![1, 2, 4]
    );
    let ack = journal.append_values(vec![json!({"type": "d"})]).unwrap();
    assert_eq!(ack.first_line, 6);
}

#[test]
fn failed_partial_append_is_kept_pending_and_the_boundary_restored() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let (mut journal, _) = open(&path);
    journal.append_values(vec![json!({"type": "a"})]).unwrap();
    journal.fault = Some(5);
    let err = journal
        .append_values(vec![json!({"type": "b"}), json!({"type": "c"})])
        .unwrap_err();
    assert!(
        matches!(err, StoreError::AppendFailed { records: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("kept pending"), "{err}");
    assert_eq!(journal.pending_records(), 2);
    // The next append writes the pending batch first, in order, after cutting the partial bytes.
    let ack = journal.append_values(vec![json!({"type": "d"})]).unwrap();
    assert_eq!(
        ack,
        AppendAck {
            first_line: 3,
            last_line: 5
        }
    );
    assert_eq!(journal.pending_records(), 0);
    drop(journal);
    let (_, read) = open(&path);
    assert_eq!(read.repairs, vec![]);
    assert_eq!(
        values(&read)[1..],
        [
            json!({"type": "a"}),
            json!({"type": "b"}),
            json!({"type": "c"}),
            json!({"type": "d"})
        ]
    );
}

#[test]
fn old_journal_is_migrated_rewritten_and_the_original_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let original = "{\"type\":\"metadata\",\"protocol_version\":\"1.4\",\"created_at\":3}\n{\"type\":\"goal.create\",\"goalId\":\"g\",\"time\":7}\n";
    write_raw(&path, original.as_bytes());
    let (_, read) = open(&path);
    let expected = vec![
        json!({"type": "metadata", "protocol_version": "1.5", "created_at": 3}),
        json!({"type": "goal.create", "goalId": "g", "time": 7, "wallClockResumedAt": 7}),
    ];
    assert_eq!(values(&read), expected);
    let [
        Repair::Rewritten {
            from_version,
            backup: Some(backup),
        },
    ] = read.repairs.as_slice()
    else {
        panic!("{:?}", read.repairs);
    };
    assert_eq!(from_version.as_deref(), Some("1.4"));
    assert_eq!(std::fs::read_to_string(backup).unwrap(), original);
    let on_disk: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(on_disk, expected);
}

#[test]
fn newer_journal_is_read_untouched_and_appends_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let original = "{\"type\":\"metadata\",\"protocol_version\":\"9.9\",\"created_at\":3}\n{\"type\":\"x\"}\n{\"ty";
    write_raw(&path, original.as_bytes());
    let (mut journal, read) = open(&path);
    assert_eq!(read.entries.len(), 2);
    let err = journal
        .append_values(vec![json!({"type": "y"})])
        .unwrap_err();
    assert!(matches!(err, StoreError::NewerJournal { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
}

#[test]
fn malformed_metadata_fails_and_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let original = "{\"type\":\"metadata\",\"protocol_version\":1.5}\n{\"type\":\"x\"}\n{\"ty";
    write_raw(&path, original.as_bytes());
    let err = Journal::open(&path, JournalOptions::default())
        .err()
        .unwrap();
    let StoreError::Wire { source, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(source.code(), "storage.corrupted");
    assert!(err.to_string().contains("wire.jsonl"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
}

#[test]
fn undo_switch_triple_and_active_branch() {
    use crate::tree::{parse_tree, restorable_chain};
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    let (mut journal, _) = open(&path);
    let user = |text: &str| json!({"type": "context.append_message", "agentId": "main", "message": {"role": "user", "content": text, "origin": {"kind": "user"}}});
    let assistant = |text: &str| json!({"type": "context.append_message", "agentId": "main", "message": {"role": "assistant", "content": text}});
    journal
        .append_values(vec![
            user("one"),
            assistant("r1"),
            user("two"),
            assistant("r2"),
        ])
        .unwrap();
    let switch = journal.append_undo_switch("main", 1, Some(1), 99).unwrap();
    assert_eq!(
        switch,
        crate::undo::UndoSwitch {
            branch: "b1".into(),
            fork_line: 3,
            edge_line: 6
        }
    );
    journal.append_values(vec![user("three")]).unwrap();
    let entries = journal.read_entries().unwrap();
    assert_eq!(entries.len(), 9, "nothing was deleted");
    assert_eq!(
        entries[5].value,
        json!({"type": "agent.switched", "agentId": "main", "branch": "b1", "reason": "undo", "base": {"branch": "main", "line": 3}, "turns": 1, "legacyUndoLine": 7, "time": 99})
    );
    let tree = parse_tree(&entries);
    let chain: Vec<u64> = restorable_chain(&tree, &entries)
        .unwrap()
        .iter()
        .map(|e| e.line)
        .collect();
    assert_eq!(chain, vec![2, 3, 9]);
    let err = journal
        .append_undo_switch("main", 5, None, 100)
        .unwrap_err();
    assert!(err.to_string().contains("only 2 of 5"), "{err}");
}

#[test]
fn record_glued_to_a_torn_fragment_is_salvaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = journal_in(&dir);
    write_raw(
        &path,
        format!("{META}{{\"type\":\"a\",\"te{{\"type\":\"b\"}}\n{{\"type\":\"c\"}}\n").as_bytes(),
    );
    let (_, read) = open(&path);
    assert_eq!(
        values(&read)[1..],
        [json!({"type": "b"}), json!({"type": "c"})]
    );
    assert_eq!(read.reported, vec![]);
    assert_eq!(
        read.repairs,
        vec![Repair::Salvaged {
            line: 2,
            dropped_bytes: 15
        }]
    );
    assert!(side_path(&path, "bak").exists());
}
