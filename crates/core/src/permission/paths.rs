//! Where a tool call's paths really point: the workspace (cwd plus added dirs), `~` expansion,
//! `..` and symlink resolution against the real file system, sensitive-file names and `.git`
//! control paths (surface.md §2.0, §3.2 policies 7, 8 and 11).
//!
//! Resolution does I/O once, when the engine builds a call's facts; every policy afterwards is a
//! pure function over the resolved paths.

use std::path::{Component, Path, PathBuf};

use super::floor::Protected;

/// The directories a session may work in, resolved once at session start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The session working directory as given (used to resolve relative paths and patterns).
    pub cwd: PathBuf,
    /// Canonical cwd followed by canonical `--add-dir` directories.
    pub roots: Vec<PathBuf>,
    /// The home directory used for `~` expansion; `None` leaves `~` untouched.
    pub home: Option<PathBuf>,
    /// The git work tree containing cwd, if any.
    pub git: Option<GitInfo>,
    /// Whether the host is POSIX (policy 11 only auto-approves there).
    pub posix: bool,
    /// What the protected floor guards besides the workspace.
    pub protected: Protected,
    /// The execution environment these paths are on (`local` for this machine): path-based
    /// session approvals hold on it only.
    pub environment: String,
}

/// The git work tree around the cwd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitInfo {
    /// The work tree's top directory.
    pub work_tree: PathBuf,
    /// The control directory: `<work_tree>/.git`, or where a `.git` file (worktree, submodule)
    /// points.
    pub control_dir: PathBuf,
}

impl Workspace {
    /// Builds a workspace, canonicalising every root so that symlinked spellings of the same
    /// directory compare equal. `home` is passed in so tests never read the process environment.
    pub fn new(cwd: &Path, additional_dirs: &[PathBuf], home: Option<&Path>) -> Workspace {
        let mut roots = vec![canonical_or_lexical(cwd)];
        for dir in additional_dirs {
            let abs = if dir.is_absolute() {
                dir.clone()
            } else {
                cwd.join(dir)
            };
            roots.push(canonical_or_lexical(&abs));
        }
        Workspace {
            cwd: cwd.to_path_buf(),
            roots,
            home: home.map(canonical_or_lexical),
            git: GitInfo::detect(cwd),
            posix: cfg!(unix),
            protected: Protected {
                temp_dirs: vec![canonical_or_lexical(&std::env::temp_dir())],
                ..Protected::default()
            },
            environment: crate::session::LOCAL_ENVIRONMENT.to_owned(),
        }
    }

    /// These paths are on execution environment `id`.
    pub fn on_environment(mut self, id: &str) -> Workspace {
        id.clone_into(&mut self.environment);
        self
    }

    /// The session's facts for the protected floor: kimi-rs's home, the session directory
    /// (whose plan files stay writable) and whether the OS sandbox is on.
    pub fn with_floor(mut self, kimi_home: &Path, session_dir: &Path, sandbox: bool) -> Workspace {
        self.protected.kimi_home = Some(canonical_or_lexical(kimi_home));
        self.protected.session_dir = Some(canonical_or_lexical(session_dir));
        self.protected.sandbox = sandbox;
        self
    }

    /// The same workspace with `worktree` (an isolated subagent's git worktree, `cwd` inside
    /// it) in place of the first root: the other roots, the home and the floor's facts stay,
    /// and the worktree itself is writable although it lies in the session directory.
    pub fn rebased(&self, worktree: &Path, cwd: &Path) -> Workspace {
        let mut ws = self.clone();
        let root = canonical_or_lexical(worktree);
        match ws.roots.first_mut() {
            Some(first) => *first = root.clone(),
            None => ws.roots.push(root.clone()),
        }
        ws.cwd = cwd.to_path_buf();
        ws.git = GitInfo::detect(cwd);
        ws.protected.worktree = Some(root);
        ws
    }

    /// Resolves a path the model sent: `~` expanded, relative paths joined to cwd, `..` and
    /// symlinks followed as far as the path exists. A `..` or a symlink leading outside the
    /// workspace therefore ends up outside.
    pub fn resolve(&self, raw: &str) -> PathBuf {
        let expanded = expand_tilde(raw, self.home.as_deref());
        let abs = if expanded.is_absolute() {
            expanded
        } else {
            self.cwd.join(expanded)
        };
        resolve_real(&abs)
    }

    /// Whether a resolved path lies in one of the workspace roots.
    pub fn contains(&self, resolved: &Path) -> bool {
        self.roots.iter().any(|root| resolved.starts_with(root))
    }

    /// The canonical cwd (the first root).
    pub fn canonical_cwd(&self) -> &Path {
        self.roots
            .first()
            .map_or(self.cwd.as_path(), PathBuf::as_path)
    }
}

impl GitInfo {
    /// Walks up from `start` looking for `.git` (a directory, or a file with `gitdir: …`).
    pub fn detect(start: &Path) -> Option<GitInfo> {
        let start = canonical_or_lexical(start);
        for dir in start.ancestors() {
            let dot_git = dir.join(".git");
            if dot_git.is_dir() {
                return Some(GitInfo {
                    work_tree: dir.to_path_buf(),
                    control_dir: dot_git,
                });
            }
            if dot_git.is_file() {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let target = text.trim().strip_prefix("gitdir:")?.trim();
                let target = Path::new(target);
                let control_dir = if target.is_absolute() {
                    target.to_path_buf()
                } else {
                    dir.join(target)
                };
                return Some(GitInfo {
                    work_tree: dir.to_path_buf(),
                    control_dir: canonical_or_lexical(&control_dir),
                });
            }
        }
        None
    }
}

/// Expands a leading `~` or `~/` with `home`.
pub fn expand_tilde(raw: &str, home: Option<&Path>) -> PathBuf {
    match (raw, home) {
        ("~", Some(home)) => home.to_path_buf(),
        (_, Some(home)) if raw.starts_with("~/") => home.join(&raw[2..]),
        _ => PathBuf::from(raw),
    }
}

/// Removes `.` and applies `..` textually (for paths that do not exist on disk).
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// Follows the path component by component so that `link/..` means the parent of the link's
/// target, as the kernel sees it; components that do not exist yet are appended as written.
fn resolve_real(abs: &Path) -> PathBuf {
    let mut cur = PathBuf::new();
    let mut exists = true;
    for comp in abs.components() {
        match comp {
            Component::Prefix(p) => cur.push(p.as_os_str()),
            Component::RootDir => cur.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                cur.pop();
            }
            Component::Normal(name) => {
                cur.push(name);
                if exists {
                    match std::fs::canonicalize(&cur) {
                        Ok(real) => cur = real,
                        Err(_) => exists = false,
                    }
                }
            }
        }
    }
    cur
}

fn canonical_or_lexical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| normalize_lexically(path))
}

/// `isSensitiveFile` (surface.md §2.0): one rule for the file tools and the permission chain.
pub use kimi_tools::path::is_sensitive_path;

/// Policy 8's test: a `.git` component below the cwd, or a path inside the work tree's `.git`
/// entry or its control directory (which may live elsewhere for worktrees).
pub fn is_git_control_path(path: &Path, workspace: &Workspace) -> bool {
    if let Ok(rel) = path.strip_prefix(workspace.canonical_cwd()) {
        let has_git = rel.components().any(|c| match c {
            Component::Normal(n) => n.to_string_lossy().eq_ignore_ascii_case(".git"),
            Component::Prefix(_)
            | Component::RootDir
            | Component::CurDir
            | Component::ParentDir => false,
        });
        if has_git {
            return true;
        }
    }
    workspace.git.as_ref().is_some_and(|git| {
        path.starts_with(git.work_tree.join(".git")) || path.starts_with(&git.control_dir)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitive_names() {
        let yes = [
            "/p/.env",
            "/p/.ENV.local",
            "/p/.env.production",
            "/h/.ssh/id_rsa",
            "/h/.ssh/id_ed25519.bak",
            "/h/.ssh/id_ecdsa-old",
            "/h/credentials_prod",
            "/h/credentials.bak",
            "/h/.aws/credentials",
            "/h/.gcp/credentials/x.json",
            "/h/Credentials.pem",
            // The reference counts any `id_rsa_…` / `id_rsa-…` name as a variant.
            "/p/id_rsa_helper.txt",
        ];
        let no = [
            "/p/.env.example",
            "/p/.env.sample",
            "/p/.env.template",
            "/h/.ssh/id_rsa.pub",
            "/h/.ssh/id_ed25519.pub",
            "/p/env",
            "/p/my.env",
            "/p/src/credentials.rs",
            "/p/.aws/config",
            "/p/id_rsa.txt",
        ];
        for p in yes {
            assert!(is_sensitive_path(Path::new(p)), "{p} should be sensitive");
        }
        for p in no {
            assert!(
                !is_sensitive_path(Path::new(p)),
                "{p} should not be sensitive"
            );
        }
    }

    #[test]
    fn tilde_and_lexical() {
        let home = Path::new("/home/u");
        assert_eq!(expand_tilde("~", Some(home)), PathBuf::from("/home/u"));
        assert_eq!(expand_tilde("~/a", Some(home)), PathBuf::from("/home/u/a"));
        assert_eq!(
            expand_tilde("~user/a", Some(home)),
            PathBuf::from("~user/a")
        );
        assert_eq!(expand_tilde("~/a", None), PathBuf::from("~/a"));
        assert_eq!(
            normalize_lexically(Path::new("/a/./b/../c")),
            PathBuf::from("/a/c")
        );
    }
}
