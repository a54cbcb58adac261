//! Shared fixture: a temp kimi home, OS home and git project, plus file writers.

mod builtins;
mod discover;
mod expand;
mod inline;
mod listing;
mod slash;
mod tool;

use std::path::{Path, PathBuf};

use kimi_skills::{DiscoverOptions, SkillCatalog, discover};

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub kimi_home: PathBuf,
    pub user_home: PathBuf,
    pub project: PathBuf,
    pub cwd: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        // Canonical paths so skill paths compare equal to what discovery reports.
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let kimi_home = base.join("kimi-home");
        let user_home = base.join("home");
        let project = base.join("project");
        let cwd = project.join("crates/app");
        for d in [&kimi_home, &user_home, &cwd, &project.join(".git")] {
            std::fs::create_dir_all(d).unwrap();
        }
        Self {
            _dir: dir,
            kimi_home,
            user_home,
            project,
            cwd,
        }
    }

    pub fn options(&self) -> DiscoverOptions {
        DiscoverOptions {
            kimi_home: self.kimi_home.clone(),
            user_home: Some(self.user_home.clone()),
            cwd: self.cwd.clone(),
            skills_dirs: Vec::new(),
            extra_dirs: Vec::new(),
            plugin_skills: Vec::new(),
            // Only what the tests write: the built-ins have their own test.
            builtins: kimi_skills::BuiltinSkills::None,
        }
    }

    pub fn discover(&self) -> (SkillCatalog, Vec<String>) {
        discover(&self.options())
    }

    pub fn user_root(&self) -> PathBuf {
        self.kimi_home.join("skills")
    }

    pub fn project_root(&self) -> PathBuf {
        self.project.join(".kimi-code/skills")
    }
}

pub fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// A directory skill `<root>/<dir>/SKILL.md`.
pub fn dir_skill(root: &Path, dir: &str, name: &str, description: &str, body: &str) -> PathBuf {
    write(
        &root.join(dir).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    )
}

/// A catalog holding one user skill with the given frontmatter lines and body.
pub fn catalog_with(frontmatter: &str, body: &str) -> (Fixture, SkillCatalog) {
    let fx = Fixture::new();
    write(
        &fx.user_root().join("demo/SKILL.md"),
        &format!("---\nname: demo\ndescription: Demo skill\n{frontmatter}---\n{body}"),
    );
    let (catalog, warnings) = fx.discover();
    assert_eq!(warnings, Vec::<String>::new());
    (fx, catalog)
}
