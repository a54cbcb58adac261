//! Typed errors of the store. Each message names the file involved and says what to do.

use std::io;
use std::path::PathBuf;

/// Errors of the journal envelope (core.md §g.4–§g.5). `code()` gives the reference's error code;
/// the display text of `MigrationMissing` is the reference's message verbatim.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    #[error("Missing wire migration for version {version}")]
    MigrationMissing { version: String },
    #[error("corrupted journal metadata on line {line}: {reason}")]
    CorruptedMetadata { line: u64, reason: String },
}

impl WireError {
    pub fn code(&self) -> &'static str {
        match self {
            WireError::MigrationMissing { .. } => "wire.migration_missing",
            WireError::CorruptedMetadata { .. } => "storage.corrupted",
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
         or run recovery, which keeps a copy and rebuilds it from the agents' journals"
    )]
    StateCorrupt { path: PathBuf, reason: String },
    #[error("{path}: {source} (the file was not changed)")]
    Wire {
        path: PathBuf,
        #[source]
        source: WireError,
    },
    #[error(
        "{path} was written by a newer kimi protocol ({version}); it can be read but not appended \
         to: use a newer kimi-rs for this session"
    )]
    NewerJournal { path: PathBuf, version: String },
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
