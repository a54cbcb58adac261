//! Session metadata `state.json` (core.md §g.1): an atomic document, never overwritten when it
//! cannot be read. Recovery keeps a copy of the unreadable file before rebuilding it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Result, StoreError};
use crate::fsutil::{atomic_write, now_ms, write_side_file};
use crate::home::{Home, MAIN_AGENT, journal_path, new_session_id, state_path, workdir_key};
use crate::index::{IndexEntry, SessionIndex};
use crate::journal::{Journal, JournalOptions, JournalRead};

pub const STATE_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homedir: Option<String>,
    /// `main` | `sub` | `independent`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm_item: Option<Value>,
}

impl AgentEntry {
    pub fn main() -> Self {
        AgentEntry {
            homedir: None,
            kind: "main".to_owned(),
            parent_agent_id: None,
            forked_from: None,
            labels: None,
            swarm_item: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    pub id: String,
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `replaceable` | `generated` | `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_prompt: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    #[serde(default)]
    pub archived: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<Value>,
    #[serde(default)]
    pub agents: BTreeMap<String, AgentEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_turn_reason: Option<String>,
    /// Fields written by other versions, kept on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A session on disk: its directory and metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub dir: PathBuf,
    pub workdir_key: String,
    pub state: SessionState,
}

impl Session {
    pub fn journal_path(&self, agent_id: &str) -> PathBuf {
        journal_path(&self.dir, agent_id)
    }

    /// Open an agent's journal (created with a metadata line when new).
    pub fn open_journal(
        &self,
        agent_id: &str,
        options: JournalOptions,
    ) -> Result<(Journal, JournalRead)> {
        Journal::open(&self.journal_path(agent_id), options)
    }
}

/// Read `state.json`. An unreadable file is an error naming it; it is never replaced here.
pub fn load_state(session_dir: &Path) -> Result<SessionState> {
    let path = state_path(session_dir);
    let bytes = std::fs::read(&path).map_err(StoreError::io("read session metadata", &path))?;
    serde_json::from_slice(&bytes).map_err(|err| StoreError::StateCorrupt {
        path,
        reason: err.to_string(),
    })
}

pub fn save_state(session_dir: &Path, state: &SessionState) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(state).map_err(|err| StoreError::StateCorrupt {
        path: state_path(session_dir),
        reason: format!("cannot serialise: {err}"),
    })?;
    bytes.push(b'\n');
    atomic_write(&state_path(session_dir), &bytes)
}

/// Sessions under a home directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    home: Home,
}

impl SessionStore {
    pub fn new(home: Home) -> Self {
        SessionStore { home }
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    pub fn index(&self) -> SessionIndex {
        SessionIndex::new(self.home.clone())
    }

    /// Create a session for `cwd` with a main agent whose journal holds the metadata line.
    pub fn create(&self, cwd: &Path) -> Result<Session> {
        let key = workdir_key(cwd);
        let id = new_session_id();
        let dir = self.home.session_dir(&key, &id);
        let now = now_ms();
        let state = SessionState {
            id,
            version: STATE_VERSION,
            title: None,
            title_kind: None,
            last_prompt: None,
            created_at: now,
            updated_at: now,
            archived: false,
            archived_at: None,
            cwd: Some(cwd.to_string_lossy().into_owned()),
            forked_from: None,
            agents: BTreeMap::from([(MAIN_AGENT.to_owned(), AgentEntry::main())]),
            custom: None,
            last_turn_reason: None,
            extra: Map::new(),
        };
        // Seal the main journal before registering the agent (core.md §g.6 creation order).
        drop(Journal::open(
            &journal_path(&dir, MAIN_AGENT),
            JournalOptions::default(),
        )?);
        save_state(&dir, &state)?;
        let session = Session {
            dir,
            workdir_key: key,
            state,
        };
        self.index().append(&IndexEntry::from_session(&session))?;
        Ok(session)
    }

    pub fn open(&self, workdir_key: &str, session_id: &str) -> Result<Session> {
        let dir = self.home.session_dir(workdir_key, session_id);
        let state = load_state(&dir)?;
        Ok(Session {
            dir,
            workdir_key: workdir_key.to_owned(),
            state,
        })
    }

    /// Save changed metadata (bumping `updatedAt`) and record it in the index.
    pub fn update(&self, session: &mut Session) -> Result<()> {
        session.state.updated_at = now_ms().max(session.state.updated_at);
        save_state(&session.dir, &session.state)?;
        self.index().append(&IndexEntry::from_session(session))
    }

    /// Rebuild an unreadable `state.json` from the directory: the old file is copied to
    /// `state.json.corrupt-<ms>` first, then a fresh document lists every agent with a journal.
    /// Returns the rebuilt session and the path of the kept copy (if there was a file).
    pub fn recover(
        &self,
        workdir_key: &str,
        session_id: &str,
    ) -> Result<(Session, Option<PathBuf>)> {
        let dir = self.home.session_dir(workdir_key, session_id);
        let path = state_path(&dir);
        let kept = match std::fs::read(&path) {
            Ok(bytes) => Some(write_side_file(
                &PathBuf::from(format!("{}.corrupt-{}", path.display(), now_ms())),
                &bytes,
            )?),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(StoreError::Io {
                    action: "read session metadata",
                    path,
                    source,
                });
            }
        };
        let mut agents = BTreeMap::new();
        let agents_dir = dir.join("agents");
        if let Ok(read) = std::fs::read_dir(&agents_dir) {
            for entry in read.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.path().join("wire.jsonl").exists() {
                    let mut agent = AgentEntry::main();
                    if name != MAIN_AGENT {
                        agent.kind = "sub".to_owned();
                        agent.parent_agent_id = Some(MAIN_AGENT.to_owned());
                    }
                    agents.insert(name, agent);
                }
            }
        }
        let now = now_ms();
        let state = SessionState {
            id: session_id.to_owned(),
            version: STATE_VERSION,
            title: None,
            title_kind: None,
            last_prompt: None,
            created_at: now,
            updated_at: now,
            archived: false,
            archived_at: None,
            cwd: None,
            forked_from: None,
            agents,
            custom: None,
            last_turn_reason: None,
            extra: Map::new(),
        };
        save_state(&dir, &state)?;
        let session = Session {
            dir,
            workdir_key: workdir_key.to_owned(),
            state,
        };
        self.index().append(&IndexEntry::from_session(&session))?;
        Ok((session, kept))
    }
}
