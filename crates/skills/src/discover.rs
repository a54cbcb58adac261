//! Skill discovery: which roots to scan (user, project, extra, `--skills-dir`), how a root is
//! walked (directory skills, flat files, sub-skill bundles) and how sources are merged by
//! precedence Project > User > Extra.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::catalog::SkillCatalog;
use crate::skill::{Skill, SkillSource, parse_skill_text};

/// Where to look for skills.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoverOptions {
    /// `$KIMI_RS_HOME`; its `skills/` folder is a user root.
    pub kimi_home: PathBuf,
    /// The OS home; `~/.agents/skills/` is a user root and `~` in configured dirs expands to it.
    pub user_home: Option<PathBuf>,
    /// The session's working directory; the project root is its nearest ancestor with `.git`.
    pub cwd: PathBuf,
    /// `--skills-dir`: when non-empty these replace the user and project roots.
    pub skills_dirs: Vec<PathBuf>,
    /// `extra_skill_dirs` from the config.
    pub extra_dirs: Vec<PathBuf>,
    /// Skills of the enabled plugins (ranked below every folder, above the built-ins).
    pub plugin_skills: Vec<Skill>,
    /// Which built-in skills join (`builtin_product_skills = false` → without the product ones).
    pub builtins: BuiltinSkills,
}

/// Which built-in skills a catalog gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinSkills {
    All,
    /// Without the product skills (`builtin_product_skills = false`).
    NoProduct,
    /// None at all (a catalog of only what is on disk).
    None,
}

impl DiscoverOptions {
    /// The standard roots for `cwd`, no plugins, every built-in skill.
    pub fn new(kimi_home: &Path, user_home: Option<PathBuf>, cwd: &Path) -> DiscoverOptions {
        DiscoverOptions {
            kimi_home: kimi_home.to_path_buf(),
            user_home,
            cwd: cwd.to_path_buf(),
            skills_dirs: Vec::new(),
            extra_dirs: Vec::new(),
            plugin_skills: Vec::new(),
            builtins: BuiltinSkills::All,
        }
    }
}

/// How deep a root is walked looking for nested `SKILL.md` folders.
const MAX_SCAN_DEPTH: usize = 8;

/// Folders never walked into: dependencies and hidden folders (`.git`, caches…).
fn excluded(entry: &str) -> bool {
    entry == "node_modules" || entry.starts_with('.')
}

/// The nearest ancestor of `cwd` (itself included) containing `.git`, else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// One root to scan.
#[derive(Debug, Clone)]
struct Root {
    path: PathBuf,
    source: SkillSource,
}

/// Add `dir` if it is a directory, by its canonical path, once.
fn push_existing(out: &mut Vec<Root>, dir: &Path, source: SkillSource) -> bool {
    if !dir.is_dir() {
        return false;
    }
    let path = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !out.iter().any(|r| r.path == path) {
        out.push(Root { path, source });
    }
    true
}

/// `~`, `~/…`, absolute, or relative to the project root.
fn resolve_configured(dir: &Path, project: &Path, home: Option<&Path>) -> PathBuf {
    if let Some(home) = home {
        if dir == Path::new("~") {
            return home.to_path_buf();
        }
        if let Ok(rest) = dir.strip_prefix("~") {
            return home.join(rest);
        }
    }
    if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        project.join(dir)
    }
}

fn configured_roots(
    dirs: &[PathBuf],
    project: &Path,
    home: Option<&Path>,
    source: SkillSource,
    what: &str,
    warnings: &mut Vec<String>,
) -> Vec<Root> {
    let mut roots = Vec::new();
    for dir in dirs {
        let resolved = resolve_configured(dir, project, home);
        if !push_existing(&mut roots, &resolved, source) {
            warnings.push(format!(
                "Skills directory {} (from {what}) does not exist or is not a directory; it was ignored. Create it or fix the path.",
                resolved.display()
            ));
        }
    }
    roots
}

/// The roots of each source, lowest precedence first.
fn source_roots(opts: &DiscoverOptions, warnings: &mut Vec<String>) -> Vec<Vec<Root>> {
    let project = project_root(&opts.cwd);
    let home = opts.user_home.as_deref();
    let extra = configured_roots(
        &opts.extra_dirs,
        &project,
        home,
        SkillSource::Extra,
        "extra_skill_dirs",
        warnings,
    );
    if !opts.skills_dirs.is_empty() {
        // `--skills-dir` stands in for both the user and the project roots.
        let explicit = configured_roots(
            &opts.skills_dirs,
            &project,
            home,
            SkillSource::User,
            "--skills-dir",
            warnings,
        );
        return vec![extra, explicit];
    }

    // Within a source the first root wins a name clash: the product folder before the generic
    // `.agents/skills` one.
    let mut user = Vec::new();
    push_existing(&mut user, &opts.kimi_home.join("skills"), SkillSource::User);
    if let Some(home) = home {
        push_existing(&mut user, &home.join(".agents/skills"), SkillSource::User);
    }
    let mut project_roots = Vec::new();
    push_existing(
        &mut project_roots,
        &project.join(".kimi-code/skills"),
        SkillSource::Project,
    );
    push_existing(
        &mut project_roots,
        &project.join(".agents/skills"),
        SkillSource::Project,
    );
    vec![extra, user, project_roots]
}

/// The skills of one source, keyed by lower-cased name; the first registration wins.
#[derive(Default)]
struct SourceScan {
    skills: BTreeMap<String, Skill>,
}

impl SourceScan {
    fn register(&mut self, skill: Skill) {
        self.skills
            .entry(skill.name.to_lowercase())
            .or_insert(skill);
    }
}

fn sorted_entries(dir: &Path) -> Option<Vec<String>> {
    let read = std::fs::read_dir(dir).ok()?;
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Some(names)
}

/// Read and parse one file; on failure, say which file and why, and return `None`.
fn parse_file(
    path: &Path,
    fallback_name: &str,
    root: &Root,
    sub_skill_parent: Option<&str>,
    warnings: &mut Vec<String>,
) -> Option<(Skill, bool)> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            warnings.push(format!(
                "Skipping skill at {}: it could not be read as UTF-8 text ({e}).",
                path.display()
            ));
            return None;
        }
    };
    match parse_skill_text(path, fallback_name, root.source, &text) {
        Ok(parsed) => {
            let mut skill = parsed.skill;
            if let Some(parent) = sub_skill_parent {
                let qualified =
                    skill.name == parent || skill.name.starts_with(&format!("{parent}."));
                if !qualified {
                    skill.name = format!("{parent}.{}", skill.name);
                }
                skill.is_sub_skill = true;
            }
            Some((skill, parsed.has_sub_skill))
        }
        Err(e) => {
            warnings.push(format!("Skipping invalid skill: {e}"));
            None
        }
    }
}

/// Walk one folder of a root. Folders holding a `SKILL.md` are skills; other folders are
/// walked further (grouping folders), as are skills that declare `has-sub-skill`, whose nested
/// skills become `parent.child`. Flat `<name>.md` files count only at the top of a root.
fn walk(
    dir: &Path,
    root: &Root,
    depth: usize,
    sub_skill_parent: Option<&str>,
    scan: &mut SourceScan,
    warnings: &mut Vec<String>,
) {
    if depth > MAX_SCAN_DEPTH {
        return;
    }
    let Some(entries) = sorted_entries(dir) else {
        return;
    };
    let mut directory_skills: Vec<&str> = Vec::new();
    let mut subdirs: Vec<&str> = Vec::new();
    for entry in &entries {
        let path = dir.join(entry);
        if path.join("SKILL.md").is_file() {
            directory_skills.push(entry);
        }
        if !excluded(entry) && path.is_dir() {
            subdirs.push(entry);
        }
    }

    // Bundle folder -> the parent skill's name, for folders whose children are sub-skills.
    let mut bundles: HashMap<&str, String> = HashMap::new();
    for entry in &directory_skills {
        let path = dir.join(entry).join("SKILL.md");
        if let Some((skill, has_sub)) = parse_file(&path, entry, root, sub_skill_parent, warnings) {
            if has_sub {
                bundles.insert(entry, skill.name.clone());
            }
            scan.register(skill);
        }
    }

    if depth == 0 {
        for entry in &entries {
            let Some(stem) = entry.strip_suffix(".md") else {
                continue;
            };
            // A folder skill of the same name wins over the flat file.
            if entry == "SKILL.md" || directory_skills.contains(&stem) {
                continue;
            }
            let path = dir.join(entry);
            if !path.is_file() {
                continue;
            }
            if let Some((skill, _)) = parse_file(&path, stem, root, None, warnings) {
                scan.register(skill);
            }
        }
    }

    for entry in subdirs {
        let is_skill = directory_skills.contains(&entry);
        let bundle = bundles.get(entry).map(String::as_str);
        if is_skill && bundle.is_none() {
            continue;
        }
        walk(
            &dir.join(entry),
            root,
            depth + 1,
            bundle.or(sub_skill_parent),
            scan,
            warnings,
        );
    }
}

/// Discover every skill. Returns the catalog and warnings (skipped files, missing configured
/// directories) for the front end to show.
pub fn discover(opts: &DiscoverOptions) -> (SkillCatalog, Vec<String>) {
    let mut warnings = Vec::new();
    let mut catalog = SkillCatalog::default();
    for roots in source_roots(opts, &mut warnings) {
        let mut scan = SourceScan::default();
        for root in &roots {
            walk(&root.path, root, 0, None, &mut scan, &mut warnings);
        }
        // Later sources have higher precedence and replace same-named skills.
        for skill in scan.skills.into_values() {
            catalog.insert(skill);
        }
        catalog.add_roots(roots.into_iter().map(|r| r.path));
    }
    for skill in &opts.plugin_skills {
        catalog.insert_fallback(skill.clone());
    }
    catalog.add_roots(opts.plugin_skills.iter().map(|s| s.dir.clone()));
    let builtins = match opts.builtins {
        BuiltinSkills::All => crate::builtin::builtin_skills(true),
        BuiltinSkills::NoProduct => crate::builtin::builtin_skills(false),
        BuiltinSkills::None => Vec::new(),
    };
    for skill in builtins {
        catalog.insert_fallback(skill);
    }
    (catalog, warnings)
}

/// The skills at one path a plugin names: a skill file, a folder holding a `SKILL.md` (one
/// skill), or a folder of skills walked like a root. Warnings name what was skipped.
pub fn discover_path(path: &Path, source: SkillSource) -> (Vec<Skill>, Vec<String>) {
    let mut warnings = Vec::new();
    let root = Root {
        path: path.to_path_buf(),
        source,
    };
    let single = if path.is_file() {
        Some(path.to_path_buf())
    } else if path.join("SKILL.md").is_file() {
        Some(path.join("SKILL.md"))
    } else {
        None
    };
    if let Some(file) = single {
        let fallback = match file.file_stem().and_then(|s| s.to_str()) {
            Some("SKILL") => file
                .parent()
                .and_then(Path::file_name)
                .and_then(|n| n.to_str())
                .unwrap_or("skill")
                .to_owned(),
            Some(stem) => stem.to_owned(),
            None => "skill".to_owned(),
        };
        let skills = parse_file(&file, &fallback, &root, None, &mut warnings)
            .map(|(skill, _)| vec![skill])
            .unwrap_or_default();
        return (skills, warnings);
    }
    let mut scan = SourceScan::default();
    walk(path, &root, 0, None, &mut scan, &mut warnings);
    (scan.skills.into_values().collect(), warnings)
}
