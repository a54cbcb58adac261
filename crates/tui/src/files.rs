//! The `@` file completion index: one ignore-aware walk of the working directory (`.git`
//! skipped, folders end with `/`), then matching in memory on every keystroke.

use std::path::Path;

/// Upper bound on indexed paths so a huge tree cannot stall the UI.
const MAX_FILES: usize = 50_000;

/// Walks `root` honouring `.gitignore`/`.ignore`; hidden files other than `.git` are kept.
pub fn index_files(root: &Path) -> Vec<String> {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    let mut out = Vec::new();
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let mut s = rel.to_string_lossy().replace('\\', "/");
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            s.push('/');
        }
        out.push(s);
        if out.len() >= MAX_FILES {
            break;
        }
    }
    out.sort();
    out
}

/// Paths matching `query` (case-insensitive): basename prefix first, then path prefix, then
/// substring; shorter paths first within a rank.
pub fn match_files<'a>(files: &'a [String], query: &str, limit: usize) -> Vec<&'a str> {
    let q = query.to_lowercase();
    let mut scored: Vec<(u8, usize, &str)> = files
        .iter()
        .filter_map(|f| {
            let lower = f.to_lowercase();
            let base = lower
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default();
            let rank = if base.starts_with(&q) {
                0
            } else if lower.starts_with(&q) {
                1
            } else if lower.contains(&q) {
                2
            } else {
                return None;
            };
            Some((rank, f.len(), f.as_str()))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(limit).map(|(_, _, f)| f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_git_and_ignored_and_marks_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(root.join("target/x"), "").unwrap();
        // `ignore` only applies .gitignore inside a git repository.
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let files = index_files(root);
        assert_eq!(files, vec![".gitignore", "src/", "src/main.rs"]);
        assert_eq!(match_files(&files, "main", 5), vec!["src/main.rs"]);
        assert_eq!(match_files(&files, "SRC", 5), vec!["src/", "src/main.rs"]);
    }
}
