//! `session_index.jsonl`: one line per session created or updated, so sessions can be listed
//! without walking every directory. The last line for an id wins. When the index is missing,
//! unreadable or names sessions that no longer exist, a directory scan rebuilds it.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::fsutil::atomic_write;
use crate::home::{Home, state_path};
use crate::lines::scan;
use crate::session::{Session, load_state};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexEntry {
    pub id: String,
    pub workdir_key: String,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    #[serde(default)]
    pub archived: bool,
}

impl IndexEntry {
    pub fn from_session(session: &Session) -> Self {
        IndexEntry {
            id: session.state.id.clone(),
            workdir_key: session.workdir_key.clone(),
            cwd: session.state.cwd.clone(),
            title: session.state.title.clone(),
            created_at: session.state.created_at,
            updated_at: session.state.updated_at,
            archived: session.state.archived,
        }
    }
}

pub struct SessionIndex {
    home: Home,
}

impl SessionIndex {
    pub fn new(home: Home) -> Self {
        SessionIndex { home }
    }

    /// Append one entry. A single `write` of one short line with `O_APPEND`, so concurrent
    /// processes do not interleave; the index is a cache, so it is not fsynced.
    pub fn append(&self, entry: &IndexEntry) -> Result<()> {
        let path = self.home.index_path();
        let mut line = serde_json::to_vec(entry).unwrap_or_default();
        line.push(b'\n');
        std::fs::create_dir_all(self.home.root())
            .and_then(|()| OpenOptions::new().create(true).append(true).open(&path))
            .and_then(|mut file| file.write_all(&line))
            .map_err(StoreError::io("append to session index", &path))
    }

    /// Entries from the index file, latest per id, or `None` when the index is missing.
    fn read_index(&self) -> Option<Vec<IndexEntry>> {
        let bytes = std::fs::read(self.home.index_path()).ok()?;
        let mut latest: HashMap<String, IndexEntry> = HashMap::new();
        for line in scan(&bytes).lines {
            let Ok(value) = line.parsed else { continue };
            if let Ok(entry) = serde_json::from_value::<IndexEntry>(value) {
                latest.insert(entry.id.clone(), entry);
            }
        }
        Some(latest.into_values().collect())
    }

    /// Every session, newest first. Uses the index when it is present and every entry it names
    /// still exists; otherwise scans the directories and rewrites the index.
    pub fn list(&self) -> Result<Vec<IndexEntry>> {
        let fresh = self.read_index().filter(|entries| {
            entries
                .iter()
                .all(|e| state_path(&self.home.session_dir(&e.workdir_key, &e.id)).exists())
        });
        let mut entries = match fresh {
            Some(entries) => entries,
            None => self.rebuild()?,
        };
        entries.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(entries)
    }

    /// Sessions of one working directory, newest first.
    pub fn list_for(&self, workdir_key: &str) -> Result<Vec<IndexEntry>> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|e| e.workdir_key == workdir_key)
            .collect())
    }

    /// Scan `sessions/*/*/state.json` and rewrite the index from what is there. Sessions whose
    /// metadata is unreadable are left out.
    pub fn rebuild(&self) -> Result<Vec<IndexEntry>> {
        let mut entries = Vec::new();
        let sessions = self.home.sessions_dir();
        let Ok(keys) = std::fs::read_dir(&sessions) else {
            return Ok(entries);
        };
        for key in keys.flatten() {
            let workdir_key = key.file_name().to_string_lossy().into_owned();
            let Ok(ids) = std::fs::read_dir(key.path()) else {
                continue;
            };
            for id in ids.flatten() {
                if let Ok(state) = load_state(&id.path()) {
                    entries.push(IndexEntry::from_session(&Session {
                        dir: id.path(),
                        workdir_key: workdir_key.clone(),
                        state,
                    }));
                }
            }
        }
        let mut bytes = Vec::new();
        for entry in &entries {
            bytes.extend(serde_json::to_vec(entry).unwrap_or_default());
            bytes.push(b'\n');
        }
        atomic_write(&self.home.index_path(), &bytes)?;
        Ok(entries)
    }
}
