//! Stored sessions a front end manages without opening them (ACP `session/delete` and
//! `session/fork`): deleting one from disk, copying one into a new session.

use kimi_store::{Home, SessionStore};

use super::{HostError, SessionHost};

impl SessionHost {
    fn store(&self) -> SessionStore {
        SessionStore::new(Home::new(self.home()))
    }

    /// Remove a stored session: its directory and its index entry. Refused while it is open
    /// here or in use by another kimi-rs (its journal is locked).
    pub fn delete_session(&self, id: &str) -> Result<(), HostError> {
        if self.sessions().contains_key(id) {
            return Err(HostError::Rejected(format!(
                "session {id} is open; close it first, then delete it"
            )));
        }
        let store = self.store();
        let key = store.locate(id).ok_or_else(|| {
            HostError::Rejected(format!(
                "no stored session {id} under {}",
                self.home().display()
            ))
        })?;
        let dir = store.home().session_dir(&key, id);
        let journal = kimi_store::home::journal_path(&dir, kimi_store::MAIN_AGENT);
        if kimi_store::Journal::is_in_use(&journal) {
            return Err(HostError::Rejected(format!(
                "session {id} is in use by a running kimi-rs; quit it first"
            )));
        }
        std::fs::remove_dir_all(&dir).map_err(|err| {
            HostError::Rejected(format!("cannot remove {}: {err}", dir.display()))
        })?;
        store.index().rebuild()?;
        tracing::info!(session = id, "session deleted");
        Ok(())
    }

    /// Copy a stored session, as its files are now, into a new one; returns the new id. A
    /// session that is open here is copied only between turns.
    pub fn fork_session(&self, id: &str) -> Result<String, HostError> {
        if let Some(hosted) = self.sessions().get(id)
            && !matches!(
                hosted.handle.runtime().snapshot(),
                kimi_protocol::ops::AgentStatus::Idle { .. }
            )
        {
            return Err(HostError::Rejected(
                "a turn is running; wait for it to end (or cancel it), then fork".to_owned(),
            ));
        }
        let store = self.store();
        let key = store.locate(id).ok_or_else(|| {
            HostError::Rejected(format!(
                "no stored session {id} under {}",
                self.home().display()
            ))
        })?;
        let cannot = |err: kimi_store::StoreError| {
            HostError::Rejected(format!("cannot fork session {id}: {err}"))
        };
        let source = store.open(&key, id).map_err(cannot)?;
        let fork = store.fork(&source).map_err(cannot)?;
        tracing::info!(from = id, to = %fork.state.id, "session forked");
        Ok(fork.state.id)
    }
}
