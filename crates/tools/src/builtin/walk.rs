//! Directory walking shared by Glob and Grep: ignore files respected unless asked otherwise,
//! hidden files included, VCS directories always skipped.

use std::path::Path;

/// Version-control directories that are never searched.
pub const VCS_DIRS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

pub fn walk_builder(root: &Path, include_ignored: bool) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(!include_ignored)
        .ignore(!include_ignored)
        .git_ignore(!include_ignored)
        .git_global(!include_ignored)
        .git_exclude(!include_ignored)
        // Respect .gitignore even outside a git repository, as the model expects.
        .require_git(false)
        .filter_entry(|entry| {
            !(entry.file_type().is_some_and(|t| t.is_dir())
                && VCS_DIRS.iter().any(|d| entry.file_name() == *d))
        });
    builder
}

pub fn mtime(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH)
}
