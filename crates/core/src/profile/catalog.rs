//! The profiles a session can use: the built-ins, then agent files from the user's directories,
//! then the project's, then an explicit `--agent-file` — a later source replaces an earlier
//! profile of the same name (a built-in only when the file sets `override: true`).

use std::path::{Path, PathBuf};

use super::builtin::builtin_profiles;
use super::file::parse_agent_file;
use super::{Profile, ProfileError, ProfileSource};

/// How deep the recursive `.md` scan goes; agent folders are shallow, and a bound keeps a
/// symlink loop from running away.
const MAX_DEPTH: usize = 8;

/// Directories scanned for agent files, lowest precedence first within each group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentDirs {
    pub user: Vec<PathBuf>,
    pub project: Vec<PathBuf>,
}

impl AgentDirs {
    /// The standard places: `<home>/agents/` and `~/.agents/agents/` for the user;
    /// `.agents/agents/` and `.kimi-code/agents/` of the project root (the nearest ancestor of
    /// `cwd` holding `.git`, else `cwd`).
    pub fn standard(home: &Path, user_home: Option<&Path>, cwd: &Path) -> AgentDirs {
        let mut user = Vec::new();
        if let Some(user_home) = user_home {
            user.push(user_home.join(".agents").join("agents"));
        }
        user.push(home.join("agents"));
        let root = cwd
            .ancestors()
            .find(|dir| dir.join(".git").exists())
            .unwrap_or(cwd);
        let project = vec![
            root.join(".agents").join("agents"),
            root.join(".kimi-code").join("agents"),
        ];
        AgentDirs { user, project }
    }
}

fn collect_md(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            if depth < MAX_DEPTH {
                collect_md(&path, depth + 1, out);
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Load one agent file from disk.
pub fn load_agent_file(
    path: &Path,
    source: ProfileSource,
) -> Result<(Profile, Vec<String>), ProfileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_agent_file(path, &text, source)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileCatalog {
    profiles: Vec<Profile>,
}

impl Default for ProfileCatalog {
    fn default() -> Self {
        ProfileCatalog {
            profiles: builtin_profiles(),
        }
    }
}

impl ProfileCatalog {
    /// Built-ins plus every valid agent file under `dirs`; invalid files are skipped and
    /// reported in the returned warnings. `explicit` (`--agent-file`) must be valid.
    pub fn load(
        dirs: &AgentDirs,
        explicit: Option<&Path>,
    ) -> Result<(ProfileCatalog, Vec<String>), ProfileError> {
        let mut catalog = ProfileCatalog::default();
        let mut warnings = Vec::new();
        type Source = fn(PathBuf) -> ProfileSource;
        let groups: [(&[PathBuf], Source); 2] = [
            (&dirs.user, ProfileSource::User),
            (&dirs.project, ProfileSource::Project),
        ];
        for (group, source) in groups {
            for dir in group {
                let mut files = Vec::new();
                collect_md(dir, 0, &mut files);
                for path in files {
                    match load_agent_file(&path, source(path.clone())) {
                        Ok((profile, found)) => {
                            warnings.extend(found);
                            catalog.insert(profile, &mut warnings);
                        }
                        Err(err) => warnings.push(format!("skipped agent file: {err}")),
                    }
                }
            }
        }
        if let Some(path) = explicit {
            let (profile, found) = load_agent_file(path, ProfileSource::Explicit(path.to_owned()))?;
            warnings.extend(found);
            catalog.insert(profile, &mut warnings);
        }
        Ok((catalog, warnings))
    }

    /// Add or replace by name; a built-in is replaced only on `override: true`.
    pub fn insert(&mut self, profile: Profile, warnings: &mut Vec<String>) {
        match self.profiles.iter_mut().find(|p| p.name == profile.name) {
            Some(slot) if slot.source == ProfileSource::Builtin && !profile.is_override => {
                let shown = profile
                    .file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                warnings.push(format!(
                    "skipped agent file {shown}: `{}` is a built-in profile; add `override: true` to its frontmatter to replace it",
                    profile.name
                ));
            }
            Some(slot) => *slot = profile,
            None => self.profiles.push(profile),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    pub fn profiles(&self) -> &[Profile] {
        &self.profiles
    }

    /// The named profile, or an error listing the names that exist.
    pub fn require(&self, name: &str) -> Result<&Profile, ProfileError> {
        self.get(name).ok_or_else(|| ProfileError::Unknown {
            name: name.to_owned(),
            available: self
                .profiles
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}
