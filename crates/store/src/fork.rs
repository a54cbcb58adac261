//! Forking a session (`/fork`, `Op::Fork`): a copy under a new id in the same working
//! directory, with every agent's journal and files (plans) as they are now, and `forkedFrom`
//! naming the original. Background tasks, logs and lock files stay with the original. The copy
//! is assembled in `<home>/.staging/` and renamed into place, so a failure leaves no half session.

use std::path::Path;

use serde_json::json;

use crate::error::{Result, StoreError};
use crate::fsutil::now_ms;
use crate::home::new_session_id;
use crate::index::IndexEntry;
use crate::session::{Session, SessionStore, save_state};

/// Copy `from` into `to`, leaving out journal lock files.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(StoreError::io("create directory", to))?;
    for entry in std::fs::read_dir(from).map_err(StoreError::io("list directory", from))? {
        let entry = entry.map_err(StoreError::io("list directory", from))?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &target)?;
        } else if !entry.file_name().to_string_lossy().ends_with(".lock") {
            std::fs::copy(&path, &target).map_err(StoreError::io("copy file", &path))?;
        }
    }
    Ok(())
}

impl SessionStore {
    /// Fork `source` into a new session of the same directory and return it. The source should
    /// be idle (no append in flight); its journals are read as they are on disk.
    pub fn fork(&self, source: &Session) -> Result<Session> {
        let id = new_session_id();
        let parent = self.home().sessions_dir().join(&source.workdir_key);
        // Outside `sessions/`, so a failed fork leaves nothing a session scan would list.
        let staging = self
            .home()
            .root()
            .join(".staging")
            .join(format!("fork-{id}"));
        let dir = parent.join(&id);
        let result = (|| {
            copy_dir(&source.dir.join("agents"), &staging.join("agents"))?;
            let now = now_ms();
            let mut state = source.state.clone();
            state.id = id.clone();
            state.created_at = now;
            state.updated_at = now;
            state.archived = false;
            state.archived_at = None;
            state.forked_from = Some(json!({ "sessionId": source.state.id, "at": now }));
            if let Some(title) = &source.state.title {
                state.title = Some(format!("{title} (fork)"));
            }
            save_state(&staging, &state)?;
            std::fs::rename(&staging, &dir).map_err(StoreError::io("rename", &staging))?;
            Ok(state)
        })();
        let state = match result {
            Ok(state) => state,
            Err(err) => {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(err);
            }
        };
        let session = Session {
            dir,
            workdir_key: source.workdir_key.clone(),
            state,
        };
        self.index().append(&IndexEntry::from_session(&session))?;
        Ok(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::{Home, MAIN_AGENT};
    use crate::journal::{Journal, JournalOptions};
    use kimi_protocol::record::{Record, RecordPayload};

    #[test]
    fn a_fork_copies_the_journals_under_a_new_id() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let store = SessionStore::new(Home::new(home.path()));
        let mut source = store.create(cwd.path()).unwrap();
        source.state.title = Some("fix the bug".to_owned());
        store.update(&mut source).unwrap();
        let (mut journal, _) = source
            .open_journal(MAIN_AGENT, JournalOptions::default())
            .unwrap();
        let marker = Record::from_value(json!({"type": "custom.marker", "time": 5})).unwrap();
        assert!(matches!(marker.payload, RecordPayload::Other(_)));
        journal.append(&[marker]).unwrap();
        // The source stays open (locked) while it is forked, as in a running session.
        let fork = store.fork(&source).unwrap();
        drop(journal);

        assert_ne!(fork.state.id, source.state.id);
        assert_eq!(fork.state.title.as_deref(), Some("fix the bug (fork)"));
        assert_eq!(
            fork.state.forked_from.as_ref().unwrap()["sessionId"],
            source.state.id.as_str()
        );
        let copied = std::fs::read(fork.journal_path(MAIN_AGENT)).unwrap();
        assert_eq!(
            copied,
            std::fs::read(source.journal_path(MAIN_AGENT)).unwrap()
        );
        assert!(!fork.dir.join("agents/main/wire.jsonl.lock").exists());
        assert!(Journal::open(&fork.journal_path(MAIN_AGENT), JournalOptions::default()).is_ok());
        let reopened = store.open(&fork.workdir_key, &fork.state.id).unwrap();
        assert_eq!(reopened.state, fork.state);
        let listed = store.index().list().unwrap();
        assert!(listed.iter().any(|e| e.id == fork.state.id));
    }
}
