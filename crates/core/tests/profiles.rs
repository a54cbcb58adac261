//! Custom agent file discovery on real directories: where files are found, which one wins a
//! name (explicit > project > user > built-in; a built-in only with `override: true`), and
//! that invalid files are skipped with a warning while an invalid explicit file is an error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use kimi_core::profile::{AgentDirs, ProfileCatalog, ProfileSource};
use pretty_assertions::assert_eq;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn agent(description: &str, extra: &str) -> String {
    format!("---\ndescription: {description}\n{extra}---\nYou are {description}.\n")
}

struct Tree {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    user_home: PathBuf,
    repo: PathBuf,
    cwd: PathBuf,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let repo = root.join("repo");
    let cwd = repo.join("crates/app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    Tree {
        home: root.join("kimi-home"),
        user_home: root.join("user"),
        repo,
        cwd,
        _tmp: tmp,
    }
}

impl Tree {
    fn dirs(&self) -> AgentDirs {
        AgentDirs::standard(&self.home, Some(&self.user_home), &self.cwd)
    }
}

#[test]
fn discovery_finds_every_standard_directory_recursively_from_the_repository_root() {
    let t = tree();
    write(&t.home.join("agents/a-home.md"), &agent("home agent", ""));
    write(
        &t.user_home.join(".agents/agents/nested/deeper/a-user.md"),
        &agent("user agent", ""),
    );
    write(
        &t.repo.join(".kimi-code/agents/a-kimi.md"),
        &agent("kimi project agent", ""),
    );
    write(
        &t.repo.join(".agents/agents/a-shared.md"),
        &agent("shared project agent", ""),
    );
    write(&t.repo.join(".kimi-code/agents/notes.txt"), "not an agent");
    let (catalog, warnings) = ProfileCatalog::load(&t.dirs(), None).unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    let names: Vec<(&str, bool)> = catalog
        .profiles()
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                matches!(p.source, ProfileSource::Project(_)),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("agent", false),
            ("coder", false),
            ("explore", false),
            ("plan", false),
            ("a-user", false),
            ("a-home", false),
            ("a-shared", true),
            ("a-kimi", true),
        ]
    );
}

#[test]
fn precedence_table() {
    // (files as (place, name-in-frontmatter, description, extra), expected description of
    // `reviewer`/`coder`, expected warning fragment)
    type Case = (
        &'static [(&'static str, &'static str)],
        &'static str,
        &'static str,
        Option<&'static str>,
    );
    let cases: &[Case] = &[
        (
            &[("user", "user version")],
            "reviewer",
            "user version",
            None,
        ),
        (
            &[("user", "user version"), ("project", "project version")],
            "reviewer",
            "project version",
            None,
        ),
        (
            &[
                ("user", "user version"),
                ("project", "project version"),
                ("explicit", "explicit version"),
            ],
            "reviewer",
            "explicit version",
            None,
        ),
        // A file named like a built-in is skipped unless it overrides.
        (
            &[("project-coder", "my coder")],
            "coder",
            "General software engineering; the only built-in type that edits files.",
            Some("add `override: true`"),
        ),
        (
            &[("project-coder-override", "my coder")],
            "coder",
            "my coder",
            None,
        ),
    ];
    for (files, name, expected, warning) in cases {
        let t = tree();
        let mut explicit = None;
        for (place, description) in *files {
            match *place {
                "user" => write(&t.home.join("agents/reviewer.md"), &agent(description, "")),
                "project" => write(
                    &t.repo.join(".kimi-code/agents/reviewer.md"),
                    &agent(description, ""),
                ),
                "explicit" => {
                    let path = t.repo.join("elsewhere/reviewer.md");
                    write(&path, &agent(description, ""));
                    explicit = Some(path);
                }
                "project-coder" => write(
                    &t.repo.join(".agents/agents/coder.md"),
                    &agent(description, ""),
                ),
                "project-coder-override" => write(
                    &t.repo.join(".agents/agents/coder.md"),
                    &agent(description, "override: true\n"),
                ),
                other => panic!("unknown place {other}"),
            }
        }
        let (catalog, warnings) = ProfileCatalog::load(&t.dirs(), explicit.as_deref()).unwrap();
        assert_eq!(
            catalog.get(name).unwrap().description,
            *expected,
            "{files:?}"
        );
        match warning {
            Some(fragment) => assert!(
                warnings.iter().any(|w| w.contains(fragment)),
                "{files:?}: {warnings:?}"
            ),
            None => assert_eq!(warnings, Vec::<String>::new(), "{files:?}"),
        }
    }
}

#[test]
fn invalid_discovered_files_are_skipped_with_a_warning_but_an_invalid_explicit_file_fails() {
    let t = tree();
    write(&t.home.join("agents/good.md"), &agent("good one", ""));
    write(
        &t.home.join("agents/no-desc.md"),
        "---\nname: no-desc\n---\nbody\n",
    );
    write(
        &t.repo.join(".agents/agents/Bad_Name.md"),
        &agent("bad", ""),
    );
    let (catalog, warnings) = ProfileCatalog::load(&t.dirs(), None).unwrap();
    assert!(catalog.get("good").is_some());
    assert!(catalog.get("no-desc").is_none());
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0].contains("no-desc.md") && warnings[0].contains("`description` is required")
    );
    assert!(warnings[1].contains("Bad_Name.md") && warnings[1].contains("kebab-case"));

    let explicit = t.home.join("agents/no-desc.md");
    let err = ProfileCatalog::load(&t.dirs(), Some(&explicit))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`description` is required"), "{err}");
}

#[test]
fn without_a_repository_the_project_is_the_working_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("plain");
    std::fs::create_dir_all(&cwd).unwrap();
    let dirs = AgentDirs::standard(&tmp.path().join("home"), None, &cwd);
    assert_eq!(
        dirs.project,
        vec![cwd.join(".agents/agents"), cwd.join(".kimi-code/agents")]
    );
}
