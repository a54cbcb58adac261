//! Worktree isolation (beyond the reference; Claude Code does the same): a subagent started
//! with `isolation: "worktree"` works in its own `git worktree` under the session's directory
//! (`<session>/worktrees/<agent-id>`), on its own branch (`kimi-rs/<session-id>/<agent-id>`)
//! from the caller's `HEAD`. Its tools' workspace root is that worktree, so parallel agents
//! editing the same file never see each other's changes. When it ends, what it left
//! uncommitted is committed to its branch, the diff against the base is summarised for its
//! report, and the worktree is removed; the branch stays for the caller to review and merge.
//!
//! Every git command runs with `core.fsmonitor` off, hooks pointed at nothing, no external diff
//! and the repository's content filters (smudge/clean/process drivers) replaced by `cat`:
//! isolating an agent must not run programs a repository's own configuration names. (A filtered
//! file, e.g. a Git LFS pointer, therefore stays in its stored form in the worktree.)

use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Why a worktree could not be made or finished.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorktreeError {
    #[error(
        "isolation \"worktree\" needs a git repository, and {0} is not inside one; run without `isolation`, or start kimi-rs in a git repository"
    )]
    NotARepository(PathBuf),
    #[error(
        "isolation \"worktree\" needs a commit to branch from, and the repository at {0} has none yet; commit once, or run without `isolation`"
    )]
    NoCommit(PathBuf),
    #[error(
        "isolation \"worktree\" is not available while the OS sandbox is on ([sandbox] mode = \"workspace-write\"): worktrees live in the session's directory, which the sandbox keeps read-only for Bash; run without `isolation`"
    )]
    Sandboxed,
    #[error("`git {command}` failed: {message}")]
    Git { command: String, message: String },
}

/// A live worktree of one subagent.
#[derive(Debug, Clone)]
pub struct Worktree {
    /// The repository's top directory (the caller's checkout).
    pub repo: PathBuf,
    /// The worktree's directory.
    pub path: PathBuf,
    pub branch: String,
    /// The commit the branch started from (what the diff summary is against).
    pub base: String,
    /// The directory inside the worktree that matches the caller's working directory.
    pub cwd: PathBuf,
    /// `-c` pairs neutralising the repository's content filters.
    overrides: Vec<String>,
}

/// What the subagent's branch holds when it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeReport {
    pub branch: String,
    pub base: String,
    /// `git diff --stat <base> <branch>`; empty when nothing changed.
    pub diff_stat: String,
    /// Why the worktree could not be committed or removed, when it could not.
    pub problem: Option<String>,
}

impl WorktreeReport {
    /// The block the subagent's report carries.
    pub fn describe(&self) -> String {
        let short = &self.base[..self.base.len().min(12)];
        let mut text = format!("worktree_branch: {}\nworktree_base: {short}\n", self.branch);
        if self.diff_stat.trim().is_empty() {
            text.push_str("worktree_diff: (no changes)\n");
        } else {
            text.push_str(&format!(
                "worktree_diff (git diff --stat {short} {}):\n{}\n",
                self.branch,
                self.diff_stat.trim_end()
            ));
        }
        if let Some(problem) = &self.problem {
            text.push_str(&format!("worktree_problem: {problem}\n"));
        }
        text.push_str(
            "The subagent's changes are on that branch only (the worktree was removed); review and merge it into your checkout if you want them.",
        );
        text
    }
}

/// Run git in `dir` with `overrides` (`-c` pairs); stdout on success.
async fn git_with(
    dir: &Path,
    overrides: &[String],
    args: &[&str],
) -> Result<String, WorktreeError> {
    let output = tokio::process::Command::new("git")
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(overrides)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|err| WorktreeError::Git {
            command: args.join(" "),
            message: format!("cannot run git: {err}; install git or run without `isolation`"),
        })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned())
    } else {
        Err(WorktreeError::Git {
            command: args.join(" "),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

async fn git(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    git_with(dir, &[], args).await
}

/// `-c` pairs that turn every content filter the repository configures into `cat`.
async fn filter_overrides(repo: &Path) -> Vec<String> {
    let listed = git(
        repo,
        &["config", "--name-only", "--get-regexp", r"^filter\."],
    )
    .await
    .unwrap_or_default();
    let mut names: Vec<&str> = listed
        .lines()
        .filter_map(|key| {
            key.strip_prefix("filter.")?
                .rsplit_once('.')
                .map(|(n, _)| n)
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .flat_map(|name| {
            [
                format!("filter.{name}.smudge=cat"),
                format!("filter.{name}.clean=cat"),
                format!("filter.{name}.process="),
                format!("filter.{name}.required=false"),
            ]
        })
        .flat_map(|pair| ["-c".to_owned(), pair])
        .collect()
}

/// The repository's top directory around `cwd`, or why there is none (checked before a call
/// is accepted, so no subagent starts for a call that cannot be isolated).
pub fn repository_of(cwd: &Path) -> Result<PathBuf, WorktreeError> {
    crate::permission::GitInfo::detect(cwd)
        .map(|info| info.work_tree)
        .ok_or_else(|| WorktreeError::NotARepository(cwd.to_owned()))
}

/// A branch name part: the characters git accepts everywhere, anything else replaced.
fn branch_part(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The branch of agent `agent_id` of session `session_id`.
pub fn branch_name(session_id: &str, agent_id: &str) -> String {
    format!(
        "kimi-rs/{}/{}",
        branch_part(session_id),
        branch_part(agent_id)
    )
}

impl Worktree {
    /// Make the worktree of `agent_id` under `session_dir`: a new branch from the caller's
    /// `HEAD`, or (for a resumed agent whose branch exists) that branch again.
    pub async fn create(
        cwd: &Path,
        session_dir: &Path,
        session_id: &str,
        agent_id: &str,
    ) -> Result<Worktree, WorktreeError> {
        let repo = repository_of(cwd)?;
        let repo = PathBuf::from(git(&repo, &["rev-parse", "--show-toplevel"]).await?);
        let overrides = filter_overrides(&repo).await;
        let o = overrides.as_slice();
        let head = git(&repo, &["rev-parse", "--verify", "HEAD^{commit}"])
            .await
            .map_err(|_| WorktreeError::NoCommit(repo.clone()))?;
        let branch = branch_name(session_id, agent_id);
        let path = session_dir.join("worktrees").join(agent_id);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| WorktreeError::Git {
                command: "worktree add".to_owned(),
                message: format!("cannot create {}: {err}", parent.display()),
            })?;
        }
        // A worktree left behind by a crash is dropped first (its branch holds what was
        // committed; uncommitted work of a crashed run is gone either way).
        if path.exists() {
            let shown = path.display().to_string();
            let _ = git_with(&repo, o, &["worktree", "remove", "--force", &shown]).await;
            let _ = std::fs::remove_dir_all(&path);
            let _ = git(&repo, &["worktree", "prune"]).await;
        }
        let shown = path.display().to_string();
        let exists = git(
            &repo,
            &["rev-parse", "--verify", &format!("refs/heads/{branch}")],
        )
        .await
        .is_ok();
        let base = if exists {
            git_with(&repo, o, &["worktree", "add", &shown, &branch]).await?;
            git(&repo, &["merge-base", "HEAD", &branch])
                .await
                .unwrap_or(head)
        } else {
            git_with(&repo, o, &["worktree", "add", "-b", &branch, &shown, &head]).await?;
            head
        };
        // The agent starts where the caller works, inside the worktree's copy of it.
        let canonical_repo = std::fs::canonicalize(&repo).unwrap_or_else(|_| repo.clone());
        let canonical_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
        let cwd = canonical_cwd
            .strip_prefix(&canonical_repo)
            .map(|rel| path.join(rel))
            .ok()
            .filter(|dir| dir.is_dir())
            .unwrap_or_else(|| path.clone());
        Ok(Worktree {
            repo,
            path,
            branch,
            base,
            cwd,
            overrides,
        })
    }

    /// Commit what the agent left uncommitted, summarise the branch against the base and
    /// remove the worktree (the branch stays). Never fails: problems go into the report.
    pub async fn finish(self, message: &str) -> WorktreeReport {
        let mut problems = Vec::new();
        if let Err(err) = self.commit_leftovers(message).await {
            problems.push(format!(
                "could not commit the agent's changes: {err}; they were left in {}",
                self.path.display()
            ));
        }
        let diff_stat = git_with(
            &self.repo,
            &self.overrides,
            &["diff", "--no-ext-diff", "--stat", &self.base, &self.branch],
        )
        .await
        .unwrap_or_else(|err| {
            problems.push(err.to_string());
            String::new()
        });
        // Only a worktree whose work is safe on the branch is removed.
        if problems.is_empty() {
            let shown = self.path.display().to_string();
            if let Err(err) = git_with(
                &self.repo,
                &self.overrides,
                &["worktree", "remove", "--force", &shown],
            )
            .await
            {
                problems.push(format!("could not remove the worktree: {err}"));
            }
        }
        let problem = (!problems.is_empty()).then(|| problems.join("; "));
        if let Some(problem) = &problem {
            tracing::warn!(branch = %self.branch, "subagent worktree: {problem}");
        }
        WorktreeReport {
            branch: self.branch,
            base: self.base,
            diff_stat,
            problem,
        }
    }

    async fn commit_leftovers(&self, message: &str) -> Result<(), WorktreeError> {
        let o = self.overrides.as_slice();
        let status = git_with(&self.path, o, &["status", "--porcelain"]).await?;
        if status.trim().is_empty() {
            return Ok(());
        }
        git_with(&self.path, o, &["add", "-A"]).await?;
        // A repository without a configured identity still gets the agent's commit.
        let mut args: Vec<&str> = Vec::new();
        let has_identity = git(&self.path, &["config", "user.email"]).await.is_ok();
        if !has_identity {
            args.extend([
                "-c",
                "user.name=kimi-rs",
                "-c",
                "user.email=kimi-rs@localhost",
            ]);
        }
        args.extend([
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--no-verify",
            "-q",
            "-m",
            message,
        ]);
        git_with(&self.path, o, &args).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// A repository whose own config names a smudge filter, a clean filter, an fsmonitor and a
    /// post-checkout hook: making, committing and removing an agent's worktree runs none of
    /// them, yet the agent's change lands on its branch.
    #[tokio::test]
    async fn a_worktree_runs_none_of_the_repositorys_programs() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let session = dir.path().join("session");
        std::fs::create_dir_all(&repo).unwrap();
        let marker = dir.path().join("ran");
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .args(args)
                .current_dir(&repo)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["config", "user.name", "t"]);
        git(&["config", "user.email", "t@example.invalid"]);
        std::fs::write(repo.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
        std::fs::write(repo.join("a.txt"), "a\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "init"]);
        let run = format!("sh -c 'touch {}; cat'", marker.display());
        git(&["config", "filter.evil.smudge", &run]);
        git(&["config", "filter.evil.clean", &run]);
        git(&[
            "config",
            "core.fsmonitor",
            &format!("touch {}; false", marker.display()),
        ]);
        let hook = repo.join(".git/hooks/post-checkout");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();

        let tree = Worktree::create(&repo, &session, "s1", "agent-0")
            .await
            .unwrap();
        assert_eq!(tree.branch, "kimi-rs/s1/agent-0");
        std::fs::write(tree.path.join("a.txt"), "a\nb\n").unwrap();
        let path = tree.path.clone();
        let report = tree.finish("agent-0: add b").await;
        assert_eq!(report.problem, None);
        assert!(report.diff_stat.contains("a.txt | 1 +"), "{report:?}");
        assert!(!path.exists(), "the worktree was removed");
        assert!(
            !marker.exists(),
            "kimi-rs ran a program the repository configured"
        );

        let show = Command::new("git")
            .args(["show", "kimi-rs/s1/agent-0:a.txt"])
            .current_dir(&repo)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&show.stdout), "a\nb\n");
        // Control: git itself runs the repository's filter.
        git(&["-c", "core.fsmonitor=false", "add", "--renormalize", "."]);
        assert!(marker.exists(), "the fixture's filter never runs");
    }

    #[tokio::test]
    async fn outside_a_repository_or_before_a_commit_the_reason_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let err = Worktree::create(dir.path(), dir.path(), "s", "agent-0")
            .await
            .unwrap_err();
        assert!(matches!(err, WorktreeError::NotARepository(_)), "{err}");
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        let err = Worktree::create(dir.path(), &dir.path().join("s"), "s", "agent-0")
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("has none yet; commit once"),
            "{err}"
        );
    }
}
