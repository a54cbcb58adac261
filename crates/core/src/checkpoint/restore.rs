//! Putting files back from checkpoints, as a transaction: every file is checked first (a file
//! changed outside the agent since its checkpoint is a conflict, and with any conflict nothing
//! is written unless forced), the current content of each file is kept before it is replaced,
//! and a failure midway puts back what was already written.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use kimi_protocol::checkpoint::{
    CheckpointStep, FileImage, RewindConflict, RewindReport, SkippedChange,
};

use super::blobs::{BlobStore, sha256_hex};

/// One file's way back: what it must be now (the agent's last write) and what it becomes.
#[derive(Debug, Clone)]
struct Target {
    expected: Option<FileImage>,
    restore: Option<FileImage>,
}

#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(
        "restoring {path} failed ({source}); the {done} file(s) restored before it were put back as they were, so nothing changed"
    )]
    RolledBack {
        path: String,
        source: std::io::Error,
        done: usize,
    },
    #[error(
        "restoring {path} failed ({source}) and putting back what was already restored failed too ({rollback}); check these files by hand: {touched}"
    )]
    RollbackFailed {
        path: String,
        source: std::io::Error,
        rollback: String,
        touched: String,
    },
}

/// What a rewind of `steps` (in journal order) would do.
#[derive(Debug, Default)]
pub struct RestorePlan {
    targets: BTreeMap<PathBuf, Target>,
    created_dirs: Vec<PathBuf>,
    pub conflicts: Vec<RewindConflict>,
    pub unrestorable: Vec<SkippedChange>,
}

impl RestorePlan {
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty() && self.created_dirs.is_empty()
    }
}

/// The error says the file is not there (also when a parent is no longer a directory).
fn absent(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if absent(&e) => Ok(()),
        other => other,
    }
}

/// The current content of `path` as an image (`None` when absent). Reads the file.
fn current(path: &Path) -> std::io::Result<Option<(FileImage, Vec<u8>)>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let bytes = std::fs::read(path)?;
    let mode = super::scan::mode(&meta);
    Ok(Some((
        FileImage {
            sha256: sha256_hex(&bytes),
            size: bytes.len() as u64,
            mode: (mode != 0).then_some(mode),
        },
        bytes,
    )))
}

/// Plan the rewind of `steps` and check every file against what the agent left.
pub fn plan(steps: &[CheckpointStep], blobs: &BlobStore) -> RestorePlan {
    let mut out = RestorePlan::default();
    for step in steps {
        for change in &step.changes {
            let path = PathBuf::from(&change.path);
            out.targets
                .entry(path)
                .and_modify(|t| t.expected.clone_from(&change.after))
                .or_insert_with(|| Target {
                    expected: change.after.clone(),
                    restore: change.before.clone(),
                });
        }
        for skipped in &step.skipped {
            out.unrestorable.push(SkippedChange {
                path: skipped.path.clone(),
                reason: format!(
                    "{} (by {} {})",
                    skipped.reason, step.tool, step.tool_call_id
                ),
            });
        }
        out.created_dirs
            .extend(step.created_dirs.iter().map(PathBuf::from));
    }
    let mut missing = Vec::new();
    for (path, target) in &out.targets {
        if let Some(image) = &target.restore
            && !blobs.contains(&image.sha256)
        {
            missing.push(path.clone());
            continue;
        }
        let reason = match current(path) {
            Err(e) => Some(format!("cannot be read: {e}")),
            Ok(now) => match (&target.expected, now) {
                (None, None) => None,
                (None, Some(_)) => Some("the agent deleted it, and it exists again".to_owned()),
                (Some(_), None) => Some("deleted since the agent changed it".to_owned()),
                (Some(expected), Some((now, _))) => (expected.sha256 != now.sha256)
                    .then(|| "changed since the agent last wrote it".to_owned()),
            },
        };
        if let Some(reason) = reason {
            out.conflicts.push(RewindConflict {
                path: path.display().to_string(),
                reason,
            });
        }
    }
    for path in missing {
        out.targets.remove(&path);
        out.unrestorable.push(SkippedChange {
            path: path.display().to_string(),
            reason: "its checkpoint content was pruned (checkpoint.retain_turns / retain_days)"
                .to_owned(),
        });
    }
    out
}

/// Write `image` (from the store) to `path`, or remove `path` when `image` is `None`.
fn put(path: &Path, image: Option<&FileImage>, blobs: &BlobStore) -> std::io::Result<()> {
    let Some(image) = image else {
        return remove_if_present(path);
    };
    let bytes = blobs.get(&image.sha256)?.ok_or_else(|| {
        std::io::Error::other(format!("checkpoint content {} is missing", image.sha256))
    })?;
    write_bytes(path, &bytes, image.mode)
}

fn write_bytes(path: &Path, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| std::io::Error::other("path has no parent directory"))?;
    std::fs::create_dir_all(parent)?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
    tmp.write_all(bytes)?;
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A file as it was before the restore touched it: its content and mode, or absent.
type Saved = (PathBuf, Option<(Vec<u8>, Option<u32>)>);

/// Apply `plan` (conflicts overwritten: the caller decided to force or there were none).
/// Fills the report's `restored` and `forced`.
pub fn apply(
    plan: &RestorePlan,
    blobs: &BlobStore,
    report: &mut RewindReport,
) -> Result<(), RestoreError> {
    // What each file was before we touched it: the rollback's material.
    let mut undo: Vec<Saved> = Vec::new();
    for (path, target) in &plan.targets {
        let step = current(path).and_then(|now| {
            undo.push((path.clone(), now.map(|(image, bytes)| (bytes, image.mode))));
            put(path, target.restore.as_ref(), blobs)
        });
        if let Err(source) = step {
            let done = undo.len().saturating_sub(1);
            return Err(rollback(path, source, undo, done));
        }
    }
    // Directories the agent created go when empty (deepest first); one holding a file someone
    // else put there stays.
    let mut dirs = plan.created_dirs.clone();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    for dir in dirs {
        remove_empty_tree(&dir);
    }
    let conflicted: std::collections::HashSet<&str> =
        plan.conflicts.iter().map(|c| c.path.as_str()).collect();
    for path in plan.targets.keys() {
        let shown = path.display().to_string();
        if conflicted.contains(shown.as_str()) {
            report.forced.push(shown.clone());
        }
        report.restored.push(shown);
    }
    Ok(())
}

/// Remove `dir` and the empty directories under it; stop at anything non-empty.
fn remove_empty_tree(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_empty_tree(&entry.path());
        }
    }
    // Fails (and so keeps it) when something is still inside.
    let _ = std::fs::remove_dir(dir);
}

fn rollback(path: &Path, source: std::io::Error, undo: Vec<Saved>, done: usize) -> RestoreError {
    let mut failures = Vec::new();
    let touched: Vec<String> = undo.iter().map(|(p, _)| p.display().to_string()).collect();
    for (p, was) in undo.into_iter().rev() {
        let result = match was {
            Some((bytes, mode)) => write_bytes(&p, &bytes, mode),
            None => remove_if_present(&p),
        };
        if let Err(e) = result {
            failures.push(format!("{}: {e}", p.display()));
        }
    }
    let path = path.display().to_string();
    if failures.is_empty() {
        RestoreError::RolledBack { path, source, done }
    } else {
        RestoreError::RollbackFailed {
            path,
            source,
            rollback: failures.join("; "),
            touched: touched.join(", "),
        }
    }
}
