//! The workspace scan behind Bash checkpoints: every regular file under the workspace roots
//! with its size, modification time and inode, `.gitignore`-aware (also outside a git
//! repository), skipping `.git`, kimi-rs's own session data and the configured build-output
//! directories. Two scans compared tell which files a command created, changed or deleted.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// What a scan remembers of one file: enough to tell that it changed without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub size: u64,
    pub mtime_ns: i128,
    pub ino: u64,
    /// Permission bits (0 where the platform has none).
    pub mode: u32,
}

impl Stat {
    pub fn of(meta: &std::fs::Metadata) -> Stat {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Stat {
            size: meta.len(),
            mtime_ns,
            ino: inode(meta),
            mode: mode(meta),
        }
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}
#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}
#[cfg(unix)]
pub(crate) fn mode(meta: &std::fs::Metadata) -> u32 {
    std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777
}
#[cfg(not(unix))]
pub(crate) fn mode(_meta: &std::fs::Metadata) -> u32 {
    0
}

/// What to scan and what to leave out.
#[derive(Debug, Clone)]
pub struct ScanScope {
    pub roots: Vec<PathBuf>,
    /// Directory names skipped wherever they appear (`target`, `node_modules`).
    pub exclude_names: Vec<String>,
    /// Directories skipped by path (kimi-rs's home when it lies inside a root).
    pub exclude_paths: Vec<PathBuf>,
    pub max_files: u64,
}

/// One scan's result.
#[derive(Debug, Default)]
pub struct Scan {
    pub files: HashMap<PathBuf, Stat>,
    pub dirs: BTreeSet<PathBuf>,
    /// The scan stopped at `max_files`: files past it were not looked at.
    pub truncated: bool,
    /// Entries that could not be read (permission denied, vanished mid-walk), with why.
    pub errors: Vec<String>,
}

pub fn scan(scope: &ScanScope) -> Scan {
    let mut out = Scan::default();
    for root in &scope.roots {
        if out.truncated {
            break;
        }
        let names = scope.exclude_names.clone();
        let paths = scope.exclude_paths.clone();
        let walker = ignore::WalkBuilder::new(root)
            .hidden(false)
            .parents(true)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(true)
            .ignore(true)
            // `.gitignore` also counts outside a git repository: the rules are the user's.
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |entry| {
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                if !is_dir {
                    return true;
                }
                let name = entry.file_name().to_string_lossy();
                if name == ".git" || names.iter().any(|n| *n == name) {
                    return false;
                }
                !paths.iter().any(|p| entry.path() == p)
            })
            .build();
        for entry in walker {
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    out.errors.push(err.to_string());
                    continue;
                }
            };
            let Some(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                out.dirs.insert(entry.into_path());
                continue;
            }
            // Symlinks and special files are not checkpointed: only regular files' content.
            if !kind.is_file() {
                continue;
            }
            if out.files.len() as u64 >= scope.max_files {
                out.truncated = true;
                break;
            }
            match entry.metadata() {
                Ok(meta) => {
                    out.files.insert(entry.into_path(), Stat::of(&meta));
                }
                Err(err) => out.errors.push(err.to_string()),
            }
        }
    }
    out
}

/// The current stat of one path, `None` when it is not a regular file.
pub fn stat_path(path: &Path) -> Option<Stat> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_file().then(|| Stat::of(&meta))
}
