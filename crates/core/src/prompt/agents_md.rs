//! AGENTS.md discovery in the reference's load order, merged into one text with each file's
//! source named, so the model can tell which directory an instruction came from.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Above this many bytes of merged AGENTS.md text the user is warned (nothing is cut).
pub const AGENTS_MD_WARN_BYTES: usize = 32 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentsMdFile {
    pub path: PathBuf,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentsMd {
    pub files: Vec<AgentsMdFile>,
}

impl AgentsMd {
    /// Each file prefixed by an HTML comment naming its path; files joined by blank lines.
    pub fn render(&self) -> String {
        self.files
            .iter()
            .map(|f| {
                format!(
                    "<!-- From: {} -->\n{}",
                    f.path.display(),
                    f.content.trim_end()
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// A warning for the UI when the merged text is larger than the model should have to read.
    pub fn size_warning(&self) -> Option<String> {
        let total: usize = self.files.iter().map(|f| f.content.len()).sum();
        (total > AGENTS_MD_WARN_BYTES).then(|| {
            format!(
                "AGENTS.md files add up to {} KiB (more than {} KiB); consider trimming them, every request carries them",
                total / 1024,
                AGENTS_MD_WARN_BYTES / 1024
            )
        })
    }
}

/// The directory the project starts at: the git work-tree root above `cwd`, else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Load order (non-empty files only, each path once): `<kimi home>/AGENTS.md`; the first of
/// `~/.agents/AGENTS.md` / `~/.agents/agents.md`; then for every directory from the project
/// root down to `cwd`: `<dir>/.kimi-code/AGENTS.md`, `<dir>/.kimi-rs/AGENTS.md` and the first of
/// `<dir>/AGENTS.md` / `<dir>/agents.md`. Unreadable files are skipped, never fatal.
pub fn discover_agents_md(kimi_home: &Path, user_home: Option<&Path>, cwd: &Path) -> AgentsMd {
    read_candidates(candidates(kimi_home, user_home, cwd))
}

/// Every place an AGENTS.md may be, in load order; within a group the first file that exists
/// counts. Watching these (not only the files found) notices a file created later.
pub fn candidates(kimi_home: &Path, user_home: Option<&Path>, cwd: &Path) -> Vec<Vec<PathBuf>> {
    let mut candidates: Vec<Vec<PathBuf>> = vec![vec![kimi_home.join("AGENTS.md")]];
    if let Some(home) = user_home {
        let dir = home.join(".agents");
        candidates.push(vec![dir.join("AGENTS.md"), dir.join("agents.md")]);
    }
    let root = project_root(cwd);
    let mut chain: Vec<&Path> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .collect();
    chain.reverse();
    for dir in chain {
        candidates.extend(dir_candidates(dir));
    }
    candidates
}

/// The AGENTS.md places of one directory.
pub fn dir_candidates(dir: &Path) -> [Vec<PathBuf>; 3] {
    [
        vec![dir.join(".kimi-code").join("AGENTS.md")],
        vec![dir.join(".kimi-rs").join("AGENTS.md")],
        vec![dir.join("AGENTS.md"), dir.join("agents.md")],
    ]
}

/// The non-empty files of `candidates` (the first existing one per group, each path once).
pub fn read_candidates(candidates: Vec<Vec<PathBuf>>) -> AgentsMd {
    let mut seen = HashSet::new();
    let mut files = Vec::new();
    for group in candidates {
        for path in group {
            let Ok(content) = std::fs::read_to_string(&path) else {
                continue;
            };
            // On case-insensitive file systems AGENTS.md and agents.md are one file.
            let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if !seen.insert(key) {
                break;
            }
            if !content.trim().is_empty() {
                files.push(AgentsMdFile { path, content });
            }
            break;
        }
    }
    AgentsMd { files }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn load_order_is_home_then_user_then_root_to_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("kimi-home");
        let user = tmp.path().join("user");
        let repo = tmp.path().join("repo");
        let sub = repo.join("crates/a");
        for d in [
            &home,
            &user.join(".agents"),
            &sub,
            &repo.join(".git"),
            &repo.join(".kimi-code"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(home.join("AGENTS.md"), "home rules").unwrap();
        std::fs::write(user.join(".agents/agents.md"), "user rules").unwrap();
        std::fs::write(repo.join(".kimi-code/AGENTS.md"), "kimi rules").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "repo rules").unwrap();
        std::fs::write(repo.join("crates/AGENTS.md"), "   \n").unwrap();
        std::fs::write(sub.join("agents.md"), "crate rules").unwrap();
        // Above the project root: never read.
        std::fs::write(tmp.path().join("AGENTS.md"), "outside").unwrap();

        let found = discover_agents_md(&home, Some(&user), &sub);
        let texts: Vec<&str> = found.files.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "home rules",
                "user rules",
                "kimi rules",
                "repo rules",
                "crate rules"
            ]
        );
        let rendered = found.render();
        assert!(rendered.starts_with(&format!(
            "<!-- From: {} -->\nhome rules\n\n",
            home.join("AGENTS.md").display()
        )));
        assert_eq!(found.size_warning(), None);
    }

    #[test]
    fn oversized_text_warns() {
        let md = AgentsMd {
            files: vec![AgentsMdFile {
                path: "a".into(),
                content: "x".repeat(AGENTS_MD_WARN_BYTES + 1),
            }],
        };
        assert!(md.size_warning().is_some_and(|w| w.contains("32 KiB")));
    }
}
