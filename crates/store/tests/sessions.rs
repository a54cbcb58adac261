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

    let (recovered, kept) = store
        .recover(&session.workdir_key, &session.state.id)
        .unwrap();
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
