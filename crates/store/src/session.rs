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

    /// True when `state.json` records a conversation (a prompt was sent, or a turn ended).
    pub fn has_history(&self) -> bool {
        self.state.last_prompt.is_some()
            || self.state.last_turn_reason.is_some()
            || self.state.title_kind.as_deref() == Some("replaceable")
    }

    /// Refuse to resume when the main journal is missing or holds no record although
    /// `state.json` records a conversation: opening it would start an empty conversation and the
    /// next append would bury the evidence. A session that never had a prompt passes.
    pub fn ensure_resumable(&self) -> Result<()> {
        if !self.has_history() {
            return Ok(());
        }
        let path = self.journal_path(MAIN_AGENT);
        let lost = |what| StoreError::JournalLost {
            path: path.clone(),
            session_id: self.state.id.clone(),
            what,
        };
        let len = match std::fs::metadata(&path) {
            Ok(meta) => meta.len(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(lost("missing"));
            }
            Err(source) => {
                return Err(StoreError::Io {
                    action: "inspect journal",
                    path,
                    source,
                });
            }
        };
        // A journal with records is far larger than a metadata line; only small files are read.
        if len > 4096 {
            return Ok(());
        }
        let bytes = std::fs::read(&path).map_err(StoreError::io("read journal", &path))?;
        let records = crate::lines::scan(&bytes)
            .lines
            .iter()
            .filter(|l| {
                !matches!(&l.parsed, Ok(v) if v.get("type").and_then(Value::as_str) == Some("metadata"))
            })
            .count();
        match (bytes.iter().all(u8::is_ascii_whitespace), records) {
            (true, _) => Err(lost("empty")),
            (false, 0) => Err(lost("left with no records")),
            _ => Ok(()),
        }
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
        session_id: session_id_of(session_dir),
        reason: err.to_string(),
    })
}

/// The session id is the name of the session's directory.
fn session_id_of(session_dir: &Path) -> String {
    session_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub fn save_state(session_dir: &Path, state: &SessionState) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(state).map_err(|err| StoreError::StateCorrupt {
        path: state_path(session_dir),
        session_id: state.id.clone(),
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

    /// The workdir key of the directory holding session `session_id`
    /// (`sessions/*/<id>/`), found by scanning: the index may not list it.
    pub fn locate(&self, session_id: &str) -> Option<String> {
        if session_id.is_empty() || session_id.contains(['/', '\\']) || session_id.starts_with('.')
        {
            return None;
        }
        let keys = std::fs::read_dir(self.home.sessions_dir()).ok()?;
        keys.flatten()
            .filter(|key| key.path().join(session_id).is_dir())
            .map(|key| key.file_name().to_string_lossy().into_owned())
            .next()
    }

    /// Rebuild `state.json` from the session's journals (`kimi-rs sessions recover`): an
    /// unreadable file is copied to `state.json.corrupt-<ms>` first; a readable one is kept
    /// as it is. The rebuilt document lists every agent with a journal and takes its title,
    /// last prompt and times from the main journal. The session is recorded in the index
    /// either way. Returns the session, the kept copy (if any) and whether it was rebuilt.
    pub fn recover(
        &self,
        workdir_key: &str,
        session_id: &str,
    ) -> Result<(Session, Option<PathBuf>, bool)> {
        let dir = self.home.session_dir(workdir_key, session_id);
        let path = state_path(&dir);
        let failed = |reason: String| StoreError::RecoverFailed {
            session_id: session_id.to_owned(),
            reason,
        };
        let main = journal_path(&dir, MAIN_AGENT);
        if !main.is_file() {
            return Err(failed(format!(
                "its main journal {} is missing, so there is nothing to rebuild from; start a new \
                 session (kimi-rs without -S)",
                main.display()
            )));
        }
        if let Ok(state) = load_state(&dir) {
            let session = Session {
                dir,
                workdir_key: workdir_key.to_owned(),
                state,
            };
            self.index().append(&IndexEntry::from_session(&session))?;
            return Ok((session, None, false));
        }
        // Read (and repair) the journal before touching state.json: a journal we cannot read
        // leaves everything as it was.
        let (journal, read) = Journal::open(&main, JournalOptions::default()).map_err(|err| {
            failed(format!(
                "its main journal cannot be read: {err}; nothing was changed"
            ))
        })?;
        drop(journal);
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
        let summary = JournalSummary::of(&read);
        let now = now_ms();
        let created_at = summary.created_at.unwrap_or(now);
        let state = SessionState {
            id: session_id.to_owned(),
            version: STATE_VERSION,
            title_kind: summary
                .first_prompt
                .as_ref()
                .map(|_| "replaceable".to_owned()),
            title: summary
                .first_prompt
                .map(|p| first_line(&p).chars().take(60).collect()),
            last_prompt: summary.last_prompt.map(|p| p.chars().take(200).collect()),
            created_at,
            updated_at: summary.last_time.unwrap_or(now).max(created_at),
            archived: false,
            archived_at: None,
            cwd: None,
            forked_from: None,
            agents,
            custom: None,
            last_turn_reason: summary.last_turn_reason,
            extra: Map::new(),
        };
        save_state(&dir, &state)?;
        let session = Session {
            dir,
            workdir_key: workdir_key.to_owned(),
            state,
        };
        self.index().append(&IndexEntry::from_session(&session))?;
        Ok((session, kept, true))
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// What `state.json` records about a conversation, read back from its main journal.
#[derive(Debug, Default)]
struct JournalSummary {
    created_at: Option<u64>,
    first_prompt: Option<String>,
    last_prompt: Option<String>,
    last_time: Option<u64>,
    last_turn_reason: Option<String>,
}

impl JournalSummary {
    fn of(read: &JournalRead) -> Self {
        let mut out = JournalSummary::default();
        for entry in &read.entries {
            let value = &entry.value;
            if let Some(time) = value.get("time").and_then(Value::as_u64) {
                out.last_time = Some(time);
            }
            match value.get("type").and_then(Value::as_str) {
                Some("metadata") => {
                    out.created_at = value.get("created_at").and_then(Value::as_u64)
                }
                Some("turn.prompt") if is_user(value.get("origin")) => {
                    let text: String = value
                        .get("input")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|part| part.get("text").and_then(Value::as_str))
                        .collect();
                    if !text.trim().is_empty() {
                        out.first_prompt.get_or_insert_with(|| text.clone());
                        out.last_prompt = Some(text);
                    }
                }
                Some("turn.ended") => {
                    out.last_turn_reason = value
                        .get("reason")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                _ => {}
            }
        }
        out
    }
}

/// A prompt the user typed (no origin is the oldest journals' user prompt).
fn is_user(origin: Option<&Value>) -> bool {
    match origin {
        None | Some(Value::Null) => true,
        Some(Value::String(kind)) => kind == "user",
        Some(other) => other.get("kind").and_then(Value::as_str) == Some("user"),
    }
}
