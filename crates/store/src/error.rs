//! Typed errors of the store. Each message names the file involved and says what to do.

use std::io;
use std::path::PathBuf;

/// Errors of the journal envelope (core.md §g.4–§g.5). `code()` gives the reference's error code;
/// the display texts are the reference's messages verbatim (`detail()` adds where and why, for
/// the messages the user sees).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    #[error("Missing wire migration for version {version}")]
    MigrationMissing { version: String },
    /// The metadata line lacks a string `protocol_version` or a numeric `created_at`
    /// (core.md §g.4: `storage.corrupted`, restore fails).
    #[error("Agent wire metadata is malformed")]
    CorruptedMetadata { line: u64, reason: String },
}

impl WireError {
    pub fn code(&self) -> &'static str {
        match self {
            WireError::MigrationMissing { .. } => "wire.migration_missing",
            WireError::CorruptedMetadata { .. } => "storage.corrupted",
        }
    }

    /// Where and why, appended to the reference's message in user-facing errors.
    pub fn detail(&self) -> String {
        match self {
            WireError::MigrationMissing { .. } => {
                "; this build cannot read journals of that version".to_owned()
            }
            WireError::CorruptedMetadata { line, reason } => format!(" (line {line}: {reason})"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("no home directory for kimi-rs: set KIMI_RS_HOME (or HOME) to a writable directory")]
    NoHome,
    #[error(
        "{path} is in use by another kimi-rs process; close that session first or open another one"
    )]
    Locked { path: PathBuf },
    #[error(
        "session metadata {path} is unreadable ({reason}); it was left untouched. Fix it by hand, \
         or run `kimi-rs sessions recover {session_id}`, which keeps a copy and rebuilds it from \
         the agents' journals"
    )]
    StateCorrupt {
        path: PathBuf,
        session_id: String,
        reason: String,
    },
    #[error("{path}: {source}{detail} (the file was not changed)", detail = .source.detail())]
    Wire {
        path: PathBuf,
        #[source]
        source: WireError,
    },
    #[error(
        "{path} was written by a newer kimi-rs/Kimi Code (protocol {version}; this build \
         understands up to {ours}); upgrade kimi-rs to resume it. The file was not changed",
        ours = kimi_protocol::WIRE_PROTOCOL_VERSION
    )]
    NewerJournal { path: PathBuf, version: String },
    /// Resuming a session whose main journal is gone or empty while `state.json` records a
    /// conversation: starting it empty would silently lose that conversation.
    #[error(
        "{path} is {what}, but session {session_id} has a conversation recorded in its \
         state.json; it was not resumed, so nothing was overwritten. If a copy of the journal \
         exists (wire.jsonl.bak or wire.jsonl.torn-* next to it, or a backup), copy it back to \
         {path} and resume again; otherwise start a new session (kimi-rs without -S/-c)"
    )]
    JournalLost {
        path: PathBuf,
        session_id: String,
        what: &'static str,
    },
    /// `kimi-rs sessions recover`: nothing to rebuild from.
    #[error("cannot recover session {session_id}: {reason}")]
    RecoverFailed { session_id: String, reason: String },
    #[error(
        "appending {records} record(s) to {path} failed: {source}; the records are kept pending \
         and will be written by the next append or `retry_pending`"
    )]
    AppendFailed {
        path: PathBuf,
        records: usize,
        #[source]
        source: io::Error,
    },
    #[error("{path}: {reason}")]
    UndoUnavailable { path: PathBuf, reason: String },
    #[error(
        "{path}: the undo branch tree is invalid ({reason}); the file was left untouched: inspect \
         its agent.switched records or start a new session"
    )]
    BadTree { path: PathBuf, reason: String },
    #[error("{path}: {reason}")]
    SwitchVerifyFailed { path: PathBuf, reason: String },
}

impl StoreError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| StoreError::Io {
            action,
            path,
            source,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
