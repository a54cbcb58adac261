//! File checkpoint records (kimi-rs's own, issue #17): what a tool call changed on disk and the
//! pre-images needed to put it back, and what a rewind restored. Content lives in the session's
//! content-addressed blob store (`<session>/checkpoints/blobs/<sha256>`); the journal holds only
//! hashes, so a record stays small whatever the files weigh.

use serde::{Deserialize, Serialize};

/// A file's content at one moment: its sha256 (hex), size and Unix permission bits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileImage {
    pub sha256: String,
    pub size: u64,
    /// Permission bits (`st_mode & 0o7777`); `None` where the platform has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
}

/// One file a tool call changed: its state before the call (`None` = it did not exist) and
/// after it (`None` = the call deleted it). `before` is what a rewind writes back; `after` is
/// what the file must still be for the rewind to proceed without `--force`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Absolute path.
    pub path: String,
    pub before: Option<FileImage>,
    pub after: Option<FileImage>,
}

/// A change a limit kept out of the checkpoint: the rewind cannot restore it and says so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedChange {
    pub path: String,
    /// Which limit, in words the user can act on (names the config key).
    pub reason: String,
}

/// How the call's changes were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointMethod {
    /// The tool declared the files it writes (Write, Edit): their pre-images were kept.
    Declared,
    /// A process ran (Bash and other tools without declared accesses): the workspace was
    /// scanned before and after.
    Scan,
}

/// `checkpoint.step`: the file changes of one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointStep {
    pub turn_id: u64,
    pub tool_call_id: String,
    pub tool: String,
    pub method: CheckpointMethod,
    #[serde(default)]
    pub changes: Vec<FileChange>,
    /// Directories the call created (absolute); a rewind removes those left empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedChange>,
}

/// `checkpoint.rewind`: a rewind put files back. `steps` are the journal lines of the
/// `checkpoint.step` records it reverted, so a later files-only rewind does not revert them
/// twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRewind {
    pub turns: u64,
    #[serde(default)]
    pub steps: Vec<u64>,
    #[serde(default)]
    pub restored: Vec<String>,
    /// Restored although changed outside the agent (`--force`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forced: Vec<String>,
    /// Changes the checkpoints could not restore (limits, pruned blobs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrestorable: Vec<SkippedChange>,
}

/// What a rewind puts back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindScope {
    /// Files and conversation together.
    #[default]
    Both,
    /// Only the files the agent changed; the conversation stays.
    Files,
    /// Only the conversation (what `/undo` did before checkpoints); files stay.
    Conversation,
}

impl RewindScope {
    pub fn files(self) -> bool {
        matches!(self, RewindScope::Both | RewindScope::Files)
    }
    pub fn conversation(self) -> bool {
        matches!(self, RewindScope::Both | RewindScope::Conversation)
    }
}

/// A file a rewind will not overwrite without `force`: it changed outside the agent since
/// the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindConflict {
    pub path: String,
    pub reason: String,
}

/// The outcome of a rewind (CLI, TUI, web and ACP show the same report).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindReport {
    pub turns: u64,
    pub scope: RewindScope,
    /// `false` when conflicts stopped the rewind: nothing was changed, files or conversation.
    pub applied: bool,
    pub conversation_undone: bool,
    /// Files written back (or removed, when the agent had created them).
    #[serde(default)]
    pub restored: Vec<String>,
    /// Restored although changed outside the agent (`force`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forced: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<RewindConflict>,
    /// Changes the checkpoints cannot restore (limits, pruned content).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrestorable: Vec<SkippedChange>,
}
