//! File checkpoints (issue #17): before a tool call that can change files, keep what a rewind
//! needs to put them back.
//!
//! - Write/Edit declare the files they write: their pre-images are stored before the call.
//! - Bash and every other process-running tool (no declared accesses) get a before/after scan
//!   of the workspace. A command's pre-images must exist *before* it runs, so the checkpointer
//!   keeps a content snapshot of the workspace's files, brought up to date before each such
//!   call by re-reading only the files whose size, mtime or inode changed since it last looked
//!   (the first call reads them all). After the call a second scan tells what was created,
//!   changed or deleted; the pre-images come from the snapshot.
//!
//! Content is stored once per session by sha256 ([`blobs::BlobStore`]); the journal's
//! `checkpoint.step` records hold only hashes. Limits (`[checkpoint]` in config.toml) skip
//! content loudly: every skipped change is in the record and shown. No git is involved and the
//! user's repository is never touched.

pub mod blobs;
pub mod prune;
pub mod restore;
pub mod scan;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use kimi_protocol::checkpoint::{
    CheckpointMethod, CheckpointStep, FileChange, FileImage, SkippedChange,
};
use kimi_tools::ToolPlan;
use kimi_tools::access::Access;

use self::blobs::BlobStore;
use self::scan::{Scan, ScanScope, Stat, stat_path};

/// The `[checkpoint]` limits, resolved.
#[derive(Debug, Clone)]
pub struct CheckpointSettings {
    pub max_file_bytes: u64,
    pub max_checkpoint_bytes: u64,
    pub max_scan_files: u64,
    pub retain_turns: u64,
    pub retain_days: u64,
    pub exclude: Vec<String>,
}

impl From<&kimi_config::Checkpoint> for CheckpointSettings {
    fn from(c: &kimi_config::Checkpoint) -> Self {
        Self {
            max_file_bytes: c.max_file_bytes(),
            max_checkpoint_bytes: c.max_checkpoint_bytes(),
            max_scan_files: c.max_scan_files(),
            retain_turns: c.retain_turns(),
            retain_days: c.retain_days(),
            exclude: c.exclude(),
        }
    }
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        Self::from(&kimi_config::Checkpoint::default())
    }
}

/// Tools with no declared accesses that never change files: no scan for them.
const NO_FILE_EFFECTS: &[&str] = &[
    "TodoList",
    "AskUserQuestion",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "WaitFor",
    "EnterPlanMode",
    "ExitPlanMode",
    "CronList",
    "CronCreate",
    "CronDelete",
    "WebSearch",
    "FetchURL",
];

/// What to do for a call, from its plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureKind {
    None,
    Declared(Vec<PathBuf>),
    Scan,
}

/// Tools that run other agents: what their agents change is found by a scan around them.
const RUNS_AGENTS: &[&str] = &["Agent", "AgentSwarm"];

pub fn capture_kind(tool: &str, plan: &ToolPlan) -> CaptureKind {
    if RUNS_AGENTS.contains(&tool) {
        return CaptureKind::Scan;
    }
    match &plan.accesses {
        None if NO_FILE_EFFECTS.contains(&tool) => CaptureKind::None,
        None => CaptureKind::Scan,
        Some(accesses) => {
            let mut paths = Vec::new();
            for access in accesses {
                match access {
                    Access::All => return CaptureKind::Scan,
                    Access::File {
                        operation,
                        recursive,
                        ..
                    } if operation.writes() && *recursive => return CaptureKind::Scan,
                    // A relative path names no file for sure: scan instead.
                    Access::File {
                        operation, path, ..
                    } if operation.writes() && !Path::new(path).is_absolute() => {
                        return CaptureKind::Scan;
                    }
                    Access::File {
                        operation, path, ..
                    } if operation.writes() => paths.push(PathBuf::from(path)),
                    Access::File { .. } => {}
                }
            }
            if paths.is_empty() {
                CaptureKind::None
            } else {
                CaptureKind::Declared(paths)
            }
        }
    }
}

/// What the checkpointer knows of a file's content at a given stat.
#[derive(Debug, Clone)]
struct Known {
    stat: Stat,
    /// `Err(reason)`: no pre-image (over a limit, unreadable).
    image: Result<FileImage, String>,
}

#[derive(Debug, Default)]
struct State {
    /// The content snapshot of the workspace's files (Bash pre-images come from here).
    snapshot: HashMap<PathBuf, Known>,
    dirs: BTreeSet<PathBuf>,
    /// Whether `snapshot` has been filled by a scan in this process.
    scanned: bool,
    /// Blobs a `checkpoint.step` names (this process's steps and the ones kept at open).
    /// Everything else in the store is snapshot-only content, released when the session
    /// closes so a closed session does not keep a copy of the whole workspace.
    referenced: HashSet<String>,
}

/// Taken before a call runs; turned into a `checkpoint.step` after it.
#[derive(Debug)]
pub struct Ticket {
    kind: TicketKind,
    skipped: Vec<SkippedChange>,
}

#[derive(Debug)]
enum TicketKind {
    Declared {
        before: Vec<(PathBuf, Result<Option<FileImage>, String>)>,
        /// The first ancestor of each path that did not exist (removed again by a rewind).
        missing_dirs: Vec<PathBuf>,
    },
    Scan {
        files: HashMap<PathBuf, Stat>,
        dirs: BTreeSet<PathBuf>,
    },
}

/// One session's checkpointer.
#[derive(Debug)]
pub struct Checkpoints {
    settings: CheckpointSettings,
    scope: ScanScope,
    blobs: BlobStore,
    state: Mutex<State>,
}

/// Bytes a checkpoint may still store before `max_checkpoint_bytes` stops it.
struct Budget {
    left: u64,
}

impl Checkpoints {
    /// The checkpointer of a session whose data is in `session_dir`, for the workspace `roots`
    /// (the working directory and the added directories). `home` (kimi-rs's data) is never
    /// scanned.
    pub fn new(
        settings: CheckpointSettings,
        session_dir: &Path,
        roots: Vec<PathBuf>,
        home: &Path,
    ) -> Self {
        let scope = ScanScope {
            roots,
            exclude_names: settings.exclude.clone(),
            exclude_paths: vec![home.to_path_buf(), session_dir.to_path_buf()],
            max_files: settings.max_scan_files,
        };
        Self {
            blobs: BlobStore::for_session(session_dir),
            settings,
            scope,
            state: Mutex::new(State::default()),
        }
    }

    /// Count every blob now in the store as named by a checkpoint: called at session open,
    /// after retention pruning, when only kept checkpoints' content is left.
    pub fn keep_existing_blobs(&self) {
        let existing = self.blobs.list();
        let mut state = self.state();
        state
            .referenced
            .extend(existing.into_iter().map(|(sha, _)| sha));
    }

    /// Delete the snapshot-only content (blobs no checkpoint names). Returns how many blobs
    /// were removed. The snapshot is forgotten, so a later Bash call re-reads the workspace.
    pub fn release_snapshot(&self) -> u64 {
        let mut state = self.state();
        state.snapshot.clear();
        state.scanned = false;
        let mut removed = 0;
        for (sha, path) in self.blobs.list() {
            if state.referenced.contains(&sha) {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(err) => tracing::warn!(
                    path = %path.display(),
                    %err,
                    "snapshot-only checkpoint content could not be removed"
                ),
            }
        }
        removed
    }

    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    pub fn settings(&self) -> &CheckpointSettings {
        &self.settings
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Store the content of `path` (whose stat is `stat`) within the limits.
    fn keep(&self, path: &Path, stat: Stat, budget: &mut Budget) -> Result<FileImage, String> {
        if stat.size > self.settings.max_file_bytes {
            return Err(format!(
                "{} bytes, over checkpoint.max_file_bytes ({})",
                stat.size, self.settings.max_file_bytes
            ));
        }
        if stat.size > budget.left {
            return Err(format!(
                "this checkpoint reached checkpoint.max_checkpoint_bytes ({})",
                self.settings.max_checkpoint_bytes
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| format!("could not be read: {e}"))?;
        let (sha256, written) = self
            .blobs
            .put(&bytes)
            .map_err(|e| format!("could not be stored in {}: {e}", self.blobs.dir().display()))?;
        budget.left = budget.left.saturating_sub(written);
        Ok(FileImage {
            sha256,
            size: bytes.len() as u64,
            mode: (stat.mode != 0).then_some(stat.mode),
        })
    }

    fn budget(&self) -> Budget {
        Budget {
            left: self.settings.max_checkpoint_bytes,
        }
    }

    /// Before a call runs: take its pre-images. `None` when the call cannot change files.
    /// Blocking (reads files): run it off the async runtime.
    pub fn before(&self, kind: &CaptureKind) -> Option<Ticket> {
        match kind {
            CaptureKind::None => None,
            CaptureKind::Declared(paths) => Some(self.before_declared(paths)),
            CaptureKind::Scan => Some(self.before_scan()),
        }
    }

    fn before_declared(&self, paths: &[PathBuf]) -> Ticket {
        let mut budget = self.budget();
        let mut before = Vec::new();
        let mut missing_dirs = Vec::new();
        for path in paths {
            let image = match stat_path(path) {
                None => Ok(None),
                Some(stat) => self.keep(path, stat, &mut budget).map(Some),
            };
            let mut first_missing = None;
            let mut dir = path.parent();
            while let Some(d) = dir {
                if d.exists() {
                    break;
                }
                first_missing = Some(d.to_path_buf());
                dir = d.parent();
            }
            missing_dirs.extend(first_missing);
            before.push((path.clone(), image));
        }
        Ticket {
            kind: TicketKind::Declared {
                before,
                missing_dirs,
            },
            skipped: Vec::new(),
        }
    }

    /// Bring the snapshot up to date with the workspace and remember what it looked like.
    fn before_scan(&self) -> Ticket {
        let now = scan::scan(&self.scope);
        let mut skipped = scan_limits(&now, self.settings.max_scan_files);
        let mut budget = self.budget();
        let mut state = self.state();
        state
            .snapshot
            .retain(|path, _| now.files.contains_key(path));
        for (path, stat) in &now.files {
            // An entry a limit kept out is retried: the budget is per checkpoint.
            let fresh = state
                .snapshot
                .get(path)
                .is_some_and(|k| k.stat == *stat && k.image.is_ok());
            if fresh {
                continue;
            }
            let image = self.keep(path, *stat, &mut budget);
            state
                .snapshot
                .insert(path.clone(), Known { stat: *stat, image });
        }
        if !state.scanned {
            tracing::info!(
                files = now.files.len(),
                "checkpoint: first workspace snapshot taken"
            );
        }
        state.scanned = true;
        state.dirs = now.dirs.clone();
        // Errors of the walk itself are reported once per checkpoint, not per file.
        skipped.extend(now.errors.iter().take(20).map(|e| SkippedChange {
            path: String::new(),
            reason: format!("workspace scan: {e}"),
        }));
        Ticket {
            kind: TicketKind::Scan {
                files: now.files,
                dirs: now.dirs,
            },
            skipped,
        }
    }

    /// After the call: what it changed, as a `checkpoint.step` (`None` when nothing changed
    /// and nothing was skipped).
    pub fn after(
        &self,
        ticket: Ticket,
        turn_id: u64,
        tool_call_id: &str,
        tool: &str,
    ) -> Option<CheckpointStep> {
        let mut budget = self.budget();
        let mut skipped = ticket.skipped;
        let mut changes = Vec::new();
        let (method, created_dirs) = match ticket.kind {
            TicketKind::Declared {
                before,
                missing_dirs,
            } => {
                for (path, before) in before {
                    let after = match stat_path(&path) {
                        None => None,
                        Some(stat) => match self.keep(&path, stat, &mut budget) {
                            Ok(image) => Some(image),
                            Err(reason) => {
                                skipped.push(skip(&path, reason));
                                continue;
                            }
                        },
                    };
                    match before {
                        Ok(before) if before != after => changes.push(FileChange {
                            path: path.display().to_string(),
                            before,
                            after,
                        }),
                        Ok(_) => {}
                        Err(reason) => skipped.push(skip(&path, reason)),
                    }
                }
                let created: Vec<String> = missing_dirs
                    .into_iter()
                    .filter(|d| d.is_dir())
                    .map(|d| d.display().to_string())
                    .collect();
                (CheckpointMethod::Declared, created)
            }
            TicketKind::Scan { files, dirs } => {
                let now = scan::scan(&self.scope);
                skipped.extend(scan_limits(&now, self.settings.max_scan_files));
                let mut state = self.state();
                let mut paths: BTreeSet<&PathBuf> = files.keys().collect();
                paths.extend(now.files.keys());
                for path in paths {
                    let was = files.get(path);
                    let is = now.files.get(path);
                    if was == is {
                        continue;
                    }
                    let before = match was {
                        None => Ok(None),
                        Some(_) => match state.snapshot.get(path) {
                            Some(known) => known.image.clone().map(Some),
                            None => Err("no snapshot of it was taken".to_owned()),
                        },
                    };
                    let after = match is {
                        None => Ok(None),
                        Some(stat) => self.keep(path, *stat, &mut budget).map(Some),
                    };
                    // The snapshot follows the workspace: what the call left is the next
                    // call's pre-image.
                    match (is, &after) {
                        (Some(stat), Ok(Some(image))) => {
                            let known = Known {
                                stat: *stat,
                                image: Ok(image.clone()),
                            };
                            state.snapshot.insert(path.clone(), known);
                        }
                        (Some(stat), Err(reason)) => {
                            let known = Known {
                                stat: *stat,
                                image: Err(reason.clone()),
                            };
                            state.snapshot.insert(path.clone(), known);
                        }
                        (None, _) | (Some(_), Ok(None)) => {
                            state.snapshot.remove(path);
                        }
                    }
                    match (before, after) {
                        (Ok(before), Ok(after)) => {
                            if before != after {
                                changes.push(FileChange {
                                    path: path.display().to_string(),
                                    before,
                                    after,
                                });
                            }
                        }
                        (Err(reason), _) | (_, Err(reason)) => skipped.push(skip(path, reason)),
                    }
                }
                let created: Vec<String> = now
                    .dirs
                    .difference(&dirs)
                    .map(|d| d.display().to_string())
                    .collect();
                state.dirs = now.dirs;
                (CheckpointMethod::Scan, created)
            }
        };
        if changes.is_empty() && skipped.is_empty() && created_dirs.is_empty() {
            return None;
        }
        let mut state = self.state();
        for change in &changes {
            for image in [&change.before, &change.after].into_iter().flatten() {
                state.referenced.insert(image.sha256.clone());
            }
        }
        drop(state);
        Some(CheckpointStep {
            turn_id,
            tool_call_id: tool_call_id.to_owned(),
            tool: tool.to_owned(),
            method,
            changes,
            created_dirs,
            skipped,
        })
    }
}

impl Drop for Checkpoints {
    /// The session is closing: its snapshot of the workspace is only needed while it runs.
    fn drop(&mut self) {
        let removed = self.release_snapshot();
        if removed > 0 {
            tracing::info!(
                blobs = removed,
                "checkpoint: snapshot-only content released"
            );
        }
    }
}

fn skip(path: &Path, reason: String) -> SkippedChange {
    SkippedChange {
        path: path.display().to_string(),
        reason,
    }
}

fn scan_limits(scan: &Scan, max_files: u64) -> Vec<SkippedChange> {
    if scan.truncated {
        vec![SkippedChange {
            path: String::new(),
            reason: format!(
                "the workspace has more than checkpoint.max_scan_files ({max_files}) files; changes to files past that were not checkpointed"
            ),
        }]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
