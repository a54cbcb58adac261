//! Session layout, `state.json` handling and the session index, on a temporary home.

// Test helpers outside `#[test]` functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use kimi_store::{Home, SessionStore, StoreError, home::state_path, load_state, workdir_key};
use pretty_assertions::assert_eq;

fn store() -> (tempfile::TempDir, SessionStore) {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(Home::new(home.path().join("kimi-home")));
    (home, store)
}

#[test]
fn create_lays_out_the_session_and_indexes_it() {
    let (_home, store) = store();
    let cwd = tempfile::tempdir().unwrap();
    let session = store.create(cwd.path()).unwrap();
    let key = workdir_key(cwd.path());
    assert_eq!(
        session.dir,
        store.home().session_dir(&key, &session.state.id)
    );
    assert!(session.dir.join("agents/main/wire.jsonl").exists());
    let first_line = std::fs::read_to_string(session.journal_path("main")).unwrap();
    assert!(
        first_line.starts_with("{\"type\":\"metadata\",\"protocol_version\":\"1.5\""),
        "{first_line}"
    );
    assert_eq!(load_state(&session.dir).unwrap(), session.state);
    assert_eq!(
        session.state.agents.keys().collect::<Vec<_>>(),
        vec!["main"]
    );
    let listed = store.index().list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, session.state.id);
    assert_eq!(listed[0].workdir_key, key);
}

#[test]
fn updates_win_in_the_index_and_listing_survives_a_missing_or_stale_index() {
    let (_home, store) = store();
    let cwd = tempfile::tempdir().unwrap();
    let mut a = store.create(cwd.path()).unwrap();
    let b = store.create(Path::new("/nonexistent/elsewhere")).unwrap();
    a.state.title = Some("renamed".to_owned());
    store.update(&mut a).unwrap();
    let listed = store.index().list().unwrap();
    assert_eq!(listed.len(), 2);
    let entry = listed.iter().find(|e| e.id == a.state.id).unwrap();
    assert_eq!(entry.title.as_deref(), Some("renamed"));
    assert_eq!(store.index().list_for(&b.workdir_key).unwrap().len(), 1);

    // Missing index: rebuilt from a directory scan.
    std::fs::remove_file(store.home().index_path()).unwrap();
    assert_eq!(store.index().list().unwrap().len(), 2);
    assert!(store.home().index_path().exists());

    // Stale index (names a deleted session): rebuilt too.
    std::fs::remove_dir_all(&b.dir).unwrap();
    let listed = store.index().list().unwrap();
    assert_eq!(
        listed.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
        vec![a.state.id.as_str()]
    );
}

#[test]
fn corrupt_state_is_a_clear_error_never_overwritten_and_recoverable() {
    let (_home, store) = store();
    let cwd = tempfile::tempdir().unwrap();
    let session = store.create(cwd.path()).unwrap();
    let path = state_path(&session.dir);
    std::fs::write(&path, b"{\"id\": 12, garbage").unwrap();
    let err = store
        .open(&session.workdir_key, &session.state.id)
        .unwrap_err();
    assert!(matches!(err, StoreError::StateCorrupt { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("state.json") && message.contains("left untouched"),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"{\"id\": 12, garbage");

    assert!(
        message.contains(&format!("kimi-rs sessions recover {}", session.state.id)),
        "the advice names the command: {message}"
    );
    let (recovered, kept, rebuilt) = store
        .recover(&session.workdir_key, &session.state.id)
        .unwrap();
    assert!(rebuilt);
    assert_eq!(
        std::fs::read(kept.unwrap()).unwrap(),
        b"{\"id\": 12, garbage"
    );
    assert_eq!(
        recovered.state.agents.keys().collect::<Vec<_>>(),
        vec!["main"]
    );
    assert_eq!(
        store
            .open(&session.workdir_key, &session.state.id)
            .unwrap()
            .state,
        recovered.state
    );
}

#[test]
fn missing_home_is_created_on_first_session() {
    let (home, store) = store();
    assert!(!home.path().join("kimi-home").exists());
    assert_eq!(store.index().list().unwrap(), vec![]);
    store.create(home.path()).unwrap();
    assert!(home.path().join("kimi-home/sessions").is_dir());
}

#[test]
fn unknown_state_fields_are_kept_on_rewrite() {
    let (_home, store) = store();
    let cwd = tempfile::tempdir().unwrap();
    let session = store.create(cwd.path()).unwrap();
    let path = state_path(&session.dir);
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    value["futureField"] = serde_json::json!({"x": 1});
    std::fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
    let mut opened = store.open(&session.workdir_key, &session.state.id).unwrap();
    store.update(&mut opened).unwrap();
    let after: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(after["futureField"], serde_json::json!({"x": 1}));
}

/// A session with one user prompt journaled and recorded in `state.json`.
fn session_with_a_prompt(store: &SessionStore, cwd: &std::path::Path) -> kimi_store::Session {
    let mut session = store.create(cwd).unwrap();
    let (mut journal, _) = session
        .open_journal("main", kimi_store::JournalOptions::default())
        .unwrap();
    journal
        .append_values(vec![
            serde_json::json!({"type": "turn.prompt", "agentId": "main", "input": [{"type": "text", "text": "FIRST PROMPT\nmore"}], "origin": {"kind": "user"}, "time": 5}),
            serde_json::json!({"type": "turn.ended", "agentId": "main", "turnId": "t", "reason": "completed", "time": 9}),
        ])
        .unwrap();
    drop(journal);
    session.state.last_prompt = Some("FIRST PROMPT\nmore".to_owned());
    session.state.title = Some("FIRST PROMPT".to_owned());
    store.update(&mut session).unwrap();
    session
}

#[test]
fn a_missing_or_empty_main_journal_of_a_used_session_is_refused_a_new_one_is_not() {
    let (_home, store) = store();
    let cwd = tempfile::tempdir().unwrap();
    let fresh = store.create(cwd.path()).unwrap();
    std::fs::remove_file(fresh.journal_path("main")).unwrap();
    fresh
        .ensure_resumable()
        .expect("a session that never had a prompt resumes");

    let session = session_with_a_prompt(&store, cwd.path());
    session.ensure_resumable().unwrap();
    let journal = session.journal_path("main");
    std::fs::write(&journal, b"").unwrap();
    let err = session.ensure_resumable().unwrap_err().to_string();
    assert!(
        err.contains("wire.jsonl is empty") && err.contains("new session"),
        "{err}"
    );
    std::fs::write(
        &journal,
        b"{\"type\":\"metadata\",\"protocol_version\":\"1.5\",\"created_at\":1}\n",
    )
    .unwrap();
    assert!(
        session.ensure_resumable().is_err(),
        "metadata only: the records are gone"
    );
    std::fs::remove_file(&journal).unwrap();
    let err = session.ensure_resumable().unwrap_err().to_string();
    assert!(
        err.contains(&journal.display().to_string()) && err.contains("is missing"),
        "{err}"
    );
}

#[test]
fn a_newer_protocol_journal_is_refused_for_replay_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wire.jsonl");
    let text = "{\"type\":\"metadata\",\"protocol_version\":\"99.0\",\"created_at\":1}\n{\"type\":\"turn.prompt\",\"future\":true,\"time\":2}\n";
    std::fs::write(&path, text).unwrap();
    let err = match kimi_store::Journal::open_replay(
        &path,
        kimi_store::JournalOptions::default(),
        "main",
    ) {
        Ok(_) => panic!("a protocol 99.0 journal must not be replayed"),
        Err(err) => err.to_string(),
    };
    assert!(
        err.contains("written by a newer kimi-rs/Kimi Code (protocol 99.0")
            && err.contains("upgrade kimi-rs to resume it"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn recover_rebuilds_a_deleted_state_from_the_journal_and_refuses_without_one() {
    let (_home, store) = store();
    let cwd = tempfile::tempdir().unwrap();
    let session = session_with_a_prompt(&store, cwd.path());
    let id = session.state.id.clone();
    std::fs::remove_file(state_path(&session.dir)).unwrap();
    assert_eq!(
        store.locate(&id).as_deref(),
        Some(session.workdir_key.as_str())
    );
    assert_eq!(store.locate("../x"), None);
    let (recovered, kept, rebuilt) = store.recover(&session.workdir_key, &id).unwrap();
    assert!(rebuilt && kept.is_none());
    assert_eq!(recovered.state.title.as_deref(), Some("FIRST PROMPT"));
    assert_eq!(
        recovered.state.last_turn_reason.as_deref(),
        Some("completed")
    );
    recovered.ensure_resumable().unwrap();
    assert!(store.index().list().unwrap().iter().any(|e| e.id == id));

    std::fs::remove_file(session.journal_path("main")).unwrap();
    std::fs::remove_file(state_path(&session.dir)).unwrap();
    let err = store
        .recover(&session.workdir_key, &id)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("missing") && err.contains("nothing to rebuild"),
        "{err}"
    );
    assert!(!state_path(&session.dir).exists(), "nothing written");
}
