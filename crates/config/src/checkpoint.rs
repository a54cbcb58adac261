//! `[checkpoint]`: the limits of file checkpoints (what a rewind can restore). Every limit a
//! checkpoint hits is journaled and shown with the file it skipped, never dropped silently.

use serde::Deserialize;

/// Default of `max_file_bytes`: larger files get no pre-image.
pub const DEFAULT_CHECKPOINT_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Default of `max_checkpoint_bytes`: new content one checkpoint may store.
pub const DEFAULT_CHECKPOINT_MAX_BYTES: u64 = 512 * 1024 * 1024;
/// Default of `max_scan_files`: files a workspace scan looks at.
pub const DEFAULT_CHECKPOINT_MAX_SCAN_FILES: u64 = 200_000;
/// Default of `retain_turns`: turns whose checkpoints are kept.
pub const DEFAULT_CHECKPOINT_RETAIN_TURNS: u64 = 50;
/// Default of `retain_days`: age after which a checkpoint's content is pruned.
pub const DEFAULT_CHECKPOINT_RETAIN_DAYS: u64 = 14;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Checkpoint {
    /// `false` = no checkpoints (rewind then restores the conversation only).
    pub enabled: Option<bool>,
    /// Files larger than this get no pre-image (a change to one is reported as skipped).
    pub max_file_bytes: Option<u64>,
    /// New content one tool call's checkpoint may store (the first workspace snapshot too).
    pub max_checkpoint_bytes: Option<u64>,
    /// Files a workspace scan (Bash and other process-running tools) looks at.
    pub max_scan_files: Option<u64>,
    /// Checkpoint content of turns older than the last `retain_turns` is pruned.
    pub retain_turns: Option<u64>,
    /// Checkpoint content older than this many days is pruned.
    pub retain_days: Option<u64>,
    /// Directory names a scan skips besides `.git` and what `.gitignore` ignores.
    pub exclude: Option<Vec<String>>,
}

impl Checkpoint {
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
            .unwrap_or(DEFAULT_CHECKPOINT_MAX_FILE_BYTES)
    }
    pub fn max_checkpoint_bytes(&self) -> u64 {
        self.max_checkpoint_bytes
            .unwrap_or(DEFAULT_CHECKPOINT_MAX_BYTES)
    }
    pub fn max_scan_files(&self) -> u64 {
        self.max_scan_files
            .unwrap_or(DEFAULT_CHECKPOINT_MAX_SCAN_FILES)
    }
    pub fn retain_turns(&self) -> u64 {
        self.retain_turns.unwrap_or(DEFAULT_CHECKPOINT_RETAIN_TURNS)
    }
    pub fn retain_days(&self) -> u64 {
        self.retain_days.unwrap_or(DEFAULT_CHECKPOINT_RETAIN_DAYS)
    }
    /// Build outputs skipped by default: `target`, `node_modules`.
    pub fn exclude(&self) -> Vec<String> {
        self.exclude
            .clone()
            .unwrap_or_else(|| vec!["target".to_owned(), "node_modules".to_owned()])
    }
}
