//! `<project>/.kimi-code/local.toml` (surface.md §4.1): per-checkout settings that are not
//! meant to be committed. Today it holds the extra workspace directories `/add-dir` remembers:
//!
//! ```toml
//! [workspace]
//! additional_dir = ["/abs/path", "../sibling", "~/notes"]
//! ```
//!
//! Relative entries are resolved from the project root (the git work-tree root, else the
//! working directory), `~` from the user's home. An entry must be an existing directory and
//! neither the filesystem root nor the home directory (or an ancestor of it). The file is edited
//! in place (comments and other keys stay), and the first time kimi-rs creates it it also
//! writes `.kimi-code/.gitignore` naming it, unless that file exists.

use std::path::{Path, PathBuf};

use crate::prompt::agents_md::project_root;

/// The project's `local.toml`.
pub fn local_toml_path(cwd: &Path) -> PathBuf {
    project_root(cwd).join(".kimi-code").join("local.toml")
}

/// `input` as an absolute directory, or why it cannot be a workspace directory.
pub fn resolve_dir(base: &Path, input: &str, home: Option<&Path>) -> Result<PathBuf, String> {
    let input = input.trim();
    if input.is_empty() {
        return Err("no directory given".to_owned());
    }
    let expanded = match (input.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(input),
    };
    let path = base.join(expanded);
    let dir = std::fs::canonicalize(&path)
        .map_err(|err| format!("{} is not an existing directory ({err})", path.display()))?;
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    if dir.parent().is_none() {
        return Err("the filesystem root cannot be a workspace directory".to_owned());
    }
    if let Some(home) = home {
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_owned());
        if home.starts_with(&dir) {
            return Err(format!(
                "{} is your home directory or contains it; add a narrower directory",
                dir.display()
            ));
        }
    }
    Ok(dir)
}

/// The directories `local.toml` lists, resolved; each entry that cannot be used is a warning
/// (naming the file and the entry), never fatal.
pub fn read_dirs(cwd: &Path, home: Option<&Path>) -> (Vec<PathBuf>, Vec<String>) {
    let path = local_toml_path(cwd);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return (Vec::new(), Vec::new());
    };
    let table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(err) => {
            return (
                Vec::new(),
                vec![format!(
                    "{}: not valid TOML ({err}); its directories were not added",
                    path.display()
                )],
            );
        }
    };
    let Some(entries) = table.get("workspace").and_then(|w| w.get("additional_dir")) else {
        return (Vec::new(), Vec::new());
    };
    let Some(entries) = entries.as_array() else {
        return (
            Vec::new(),
            vec![format!(
                "{}: workspace.additional_dir must be an array of strings",
                path.display()
            )],
        );
    };
    let root = project_root(cwd);
    let mut dirs = Vec::new();
    let mut warnings = Vec::new();
    for entry in entries {
        let Some(text) = entry.as_str() else {
            warnings.push(format!(
                "{}: workspace.additional_dir entry {entry} is not a string; ignored",
                path.display()
            ));
            continue;
        };
        match resolve_dir(&root, text, home) {
            Ok(dir) if !dirs.contains(&dir) => dirs.push(dir),
            Ok(_) => {}
            Err(err) => warnings.push(format!(
                "{}: workspace.additional_dir \"{text}\" ignored: {err}",
                path.display()
            )),
        }
    }
    (dirs, warnings)
}

/// Add `dir` to `local.toml` (created when missing); returns the file's path.
pub fn remember_dir(cwd: &Path, dir: &Path) -> Result<PathBuf, String> {
    let path = local_toml_path(cwd);
    let existed = path.exists();
    let text = if existed {
        std::fs::read_to_string(&path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?
    } else {
        String::new()
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|err| format!("{} is not valid TOML ({err}); fix it first", path.display()))?;
    let workspace = doc
        .entry("workspace")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| {
            format!(
                "{}: `workspace` is not a table; fix it first",
                path.display()
            )
        })?;
    let entry = workspace
        .entry("additional_dir")
        .or_insert(toml_edit::value(toml_edit::Array::new()));
    let list = entry.as_array_mut().ok_or_else(|| {
        format!(
            "{}: workspace.additional_dir is not an array; fix it first",
            path.display()
        )
    })?;
    let shown = dir.display().to_string();
    if !list.iter().any(|v| v.as_str() == Some(shown.as_str())) {
        list.push(shown);
    }
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
    std::fs::write(&path, doc.to_string())
        .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    let ignore = parent.join(".gitignore");
    if !existed && !ignore.exists() {
        // Per-checkout settings: keep them out of commits. Failing here loses nothing.
        if let Err(err) = std::fs::write(&ignore, "local.toml\n") {
            tracing::warn!(file = %ignore.display(), "cannot write: {err}");
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn remembered_dirs_are_read_back_and_comments_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let repo = root.join("repo");
        let other = root.join("other");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();

        let file = remember_dir(&repo.join("src"), &other).unwrap();
        assert_eq!(file, repo.join(".kimi-code/local.toml"));
        assert_eq!(
            std::fs::read_to_string(repo.join(".kimi-code/.gitignore")).unwrap(),
            "local.toml\n"
        );
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(
            &file,
            format!("# my dirs\n{text}").replace("\"]", "\", \"../missing\", \"~\"]"),
        )
        .unwrap();
        remember_dir(&repo, &other).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("# my dirs\n"), "{text}");
        assert_eq!(text.matches("other").count(), 1, "{text}");

        let (dirs, warnings) = read_dirs(&repo.join("src"), Some(&home));
        assert_eq!(dirs, vec![other]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("../missing"), "{warnings:?}");
        assert!(warnings[1].contains("home directory"), "{warnings:?}");
    }

    #[test]
    fn broad_or_missing_directories_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(tmp.path()).unwrap();
        assert!(resolve_dir(&home, "/", None).is_err());
        assert!(resolve_dir(&home, "~", Some(&home)).is_err());
        assert!(resolve_dir(&home, "nope", Some(&home)).is_err());
        std::fs::create_dir(home.join("proj")).unwrap();
        assert_eq!(
            resolve_dir(&home, "~/proj", Some(&home)).unwrap(),
            home.join("proj")
        );
    }
}
