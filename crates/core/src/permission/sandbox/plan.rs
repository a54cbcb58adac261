//! Which paths get write access under the workspace-write sandbox. Landlock can only grant, never
//! subtract: write access on a directory covers everything beneath it. So a directory holding a
//! protected path (`.git`, the kimi-rs home) is not granted itself; its other children are,
//! recursively, and the protected path is left read-only.

use std::path::{Path, PathBuf};

/// One Landlock write grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteGrant {
    pub path: PathBuf,
    /// Directories get the full write set; files only the file rights (write, truncate).
    pub is_dir: bool,
}

/// Plans the write grants for `roots` so that nothing under `protected` becomes writable.
/// `list_dir` returns a directory's children with whether each is a directory (a symlink counts
/// as a file: Landlock resolves it, and granting its target could escape the root).
pub fn plan_write_grants(
    roots: &[PathBuf],
    protected: &[PathBuf],
    list_dir: &dyn Fn(&Path) -> Vec<(PathBuf, bool)>,
) -> Vec<WriteGrant> {
    let mut grants = Vec::new();
    for root in roots {
        grant(root, true, protected, list_dir, &mut grants);
    }
    grants
}

fn grant(
    path: &Path,
    is_dir: bool,
    protected: &[PathBuf],
    list_dir: &dyn Fn(&Path) -> Vec<(PathBuf, bool)>,
    out: &mut Vec<WriteGrant>,
) {
    if protected.iter().any(|p| path.starts_with(p)) {
        return;
    }
    let holds_protected = protected.iter().any(|p| p.starts_with(path) && p != path);
    if !holds_protected || !is_dir {
        out.push(WriteGrant {
            path: path.to_path_buf(),
            is_dir,
        });
        return;
    }
    for (child, child_is_dir) in list_dir(path) {
        grant(&child, child_is_dir, protected, list_dir, out);
    }
}

/// Lists a directory for [`plan_write_grants`]; unreadable directories have no children.
pub fn list_dir_fs(dir: &Path) -> Vec<(PathBuf, bool)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut children: Vec<(PathBuf, bool)> = entries
        .flatten()
        .map(|e| {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (e.path(), is_dir)
        })
        .collect();
    children.sort();
    children
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_fs(dir: &Path) -> Vec<(PathBuf, bool)> {
        let children: &[(&str, bool)] = match dir.to_str() {
            Some("/ws") => &[
                ("/ws/.git", true),
                ("/ws/src", true),
                ("/ws/README.md", false),
            ],
            Some("/home/u") => &[
                ("/home/u/.kimi-rs", true),
                ("/home/u/proj", true),
                ("/home/u/.bashrc", false),
            ],
            _ => &[],
        };
        children
            .iter()
            .map(|(p, d)| (PathBuf::from(p), *d))
            .collect()
    }

    fn g(path: &str, is_dir: bool) -> WriteGrant {
        WriteGrant {
            path: PathBuf::from(path),
            is_dir,
        }
    }

    #[test]
    fn protected_paths_split_their_parents() {
        let grants = plan_write_grants(
            &[PathBuf::from("/ws"), PathBuf::from("/tmp")],
            &[PathBuf::from("/ws/.git"), PathBuf::from("/home/u/.kimi-rs")],
            &fake_fs,
        );
        assert_eq!(
            grants,
            vec![
                g("/ws/src", true),
                g("/ws/README.md", false),
                g("/tmp", true)
            ]
        );
        let grants = plan_write_grants(
            &[PathBuf::from("/home/u")],
            &[PathBuf::from("/home/u/.kimi-rs")],
            &fake_fs,
        );
        assert_eq!(
            grants,
            vec![g("/home/u/proj", true), g("/home/u/.bashrc", false)]
        );
        // A root that is itself protected gets nothing.
        assert_eq!(
            plan_write_grants(
                &[PathBuf::from("/ws/.git")],
                &[PathBuf::from("/ws/.git")],
                &fake_fs
            ),
            vec![]
        );
    }
}
