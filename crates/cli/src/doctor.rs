//! `kimi-rs doctor`: validates the configuration files without modifying anything and says,
//! per file, whether it is fine, absent, or what is wrong with it and how to fix it
//! (surface.md §1.3 `kimi doctor`, §4, §10).
//!
//! Every check goes through the loader a session uses (`LlmConfig`, the permission-rule and
//! hook loaders, the sandbox section, `TuiConfig`, the `mcp.json` parser, skill discovery and
//! the agent-profile catalog), so doctor and a session never disagree about a file. Problems
//! (the file, or part of it, will not work) make the exit status 1; warnings (something is
//! ignored but harmless, e.g. a key that is not a Kimi Code setting) do not.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kimi_core::permission::sandbox::{
    SandboxMode, SandboxSupport, probe, sandbox_mode_from_config,
};
use kimi_core::profile::{AgentDirs, ProfileCatalog};
use kimi_llm::config::LlmConfig;
use kimi_skills::DiscoverOptions;

/// Which files `kimi-rs doctor` checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// No argument: config.toml, tui.toml, the MCP files, skills and agent files.
    All,
    /// `doctor config [PATH]`: config.toml (and, for the home's own file, what it points to:
    /// MCP files, skills, agent files).
    Config(Option<PathBuf>),
    /// `doctor tui [PATH]`: tui.toml only.
    Tui(Option<PathBuf>),
}

/// The result of checking one file (or one group of files, such as the skills).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Check {
    pub label: String,
    pub path: Option<PathBuf>,
    /// Set when the file is not there and that is fine (built-in defaults apply).
    pub skipped: bool,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
    /// Extra facts shown under an ok line (e.g. how many servers a file defines).
    pub summary: Option<String>,
}

impl Check {
    fn new(label: &str, path: Option<&Path>) -> Check {
        Check {
            label: label.to_owned(),
            path: path.map(Path::to_path_buf),
            ..Check::default()
        }
    }

    fn status(&self) -> String {
        if !self.problems.is_empty() {
            let n = self.problems.len();
            format!("{n} problem{}", if n == 1 { "" } else { "s" })
        } else if self.skipped {
            "skipped (not present; built-in defaults apply)".to_owned()
        } else {
            match &self.summary {
                Some(summary) => format!("ok ({summary})"),
                None => "ok".to_owned(),
            }
        }
    }
}

/// Runs the checks for `target` with the home `home` and the working directory `cwd`.
pub fn check(target: &Target, home: &Path, cwd: &Path) -> Vec<Check> {
    let resolve = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        }
    };
    let mut checks = Vec::new();
    match target {
        Target::All => {
            checks.push(check_config(&home.join("config.toml"), false));
            checks.push(check_tui(&home.join("tui.toml"), false));
            checks.extend(check_extensions(home, cwd));
        }
        Target::Config(None) => {
            checks.push(check_config(&home.join("config.toml"), false));
            checks.extend(check_extensions(home, cwd));
        }
        Target::Config(Some(path)) => checks.push(check_config(&resolve(path), true)),
        Target::Tui(None) => checks.push(check_tui(&home.join("tui.toml"), false)),
        Target::Tui(Some(path)) => checks.push(check_tui(&resolve(path), true)),
    }
    checks
}

/// The command: prints the report on stdout; 0 when nothing present has a problem, else 1.
pub fn run(target: &Target) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let cwd = std::env::current_dir()
        .map_err(|e| anyhow::anyhow!("cannot read the current directory: {e}"))?;
    let checks = check(target, &home, &cwd);
    print!("{}", render(&checks));
    Ok(if checks.iter().all(|c| c.problems.is_empty()) {
        0
    } else {
        1
    })
}

/// The report: one status line per check, its problems and warnings indented below, and a
/// closing line with the totals.
pub fn render(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.label.len()).max().unwrap_or(0);
    let mut out = String::from("kimi-rs doctor\n\n");
    for check in checks {
        let place = check
            .path
            .as_ref()
            .map(|p| format!("{}: ", p.display()))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:width$}  {place}{}",
            check.label,
            check.status(),
            width = width
        );
        for problem in &check.problems {
            let _ = writeln!(out, "  error: {}", indent(problem));
        }
        for warning in &check.warnings {
            let _ = writeln!(out, "  warning: {}", indent(warning));
        }
    }
    let problems: usize = checks.iter().map(|c| c.problems.len()).sum();
    let files = checks.iter().filter(|c| !c.problems.is_empty()).count();
    out.push('\n');
    if problems == 0 {
        out.push_str("Everything present is valid.\n");
    } else {
        let _ = writeln!(
            out,
            "Found {problems} problem{} in {files} file{}; fix them as described above and run `kimi-rs doctor` again.",
            if problems == 1 { "" } else { "s" },
            if files == 1 { "" } else { "s" },
        );
    }
    out
}

fn indent(text: &str) -> String {
    text.replace('\n', "\n    ")
}

/// Reads `path`; `None` when it does not exist (after recording a skip, or a problem when the
/// path was given explicitly).
fn read(check: &mut Check, path: &Path, explicit: bool) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            if explicit {
                check
                    .problems
                    .push("the file does not exist; check the path you passed".to_owned());
            } else {
                check.skipped = true;
            }
            None
        }
        Err(err) => {
            check.problems.push(format!(
                "cannot read the file: {err}; check that it is a readable file"
            ));
            None
        }
    }
}

/// Top-level keys of Kimi Code's config.toml (surface.md §4.2) plus kimi-rs's `[sandbox]`.
const KNOWN_TOP_LEVEL: &[&str] = &[
    "default_model",
    "default_permission_mode",
    "default_plan_mode",
    "merge_all_available_skills",
    "extra_skill_dirs",
    "extra_agent_dirs",
    "builtin_product_skills",
    "telemetry",
    "providers",
    "models",
    "secondary_model",
    "thinking",
    "loop_control",
    "token_counting",
    "background",
    "task",
    "subagent",
    "mcp",
    "identity",
    "tools",
    "image",
    "services",
    "permission",
    "hooks",
    "cron",
    "experimental",
    "model_catalog",
    "sandbox",
];

/// Old keys Kimi Code ignores with a warning: (table or "" for the top level, key).
const DEPRECATED: &[(&str, &str)] = &[
    ("", "default_thinking"),
    ("thinking", "mode"),
    ("loop_control", "max_retries_per_step"),
    ("loop_control", "max_steps_per_run"),
];

/// The 1-based line where `key` is first set or opened as a table, if it can be found.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            let header = line.trim_start_matches('[').trim_start();
            let candidates = [line, header];
            candidates.iter().any(|c| {
                let rest = c
                    .strip_prefix(key)
                    .or_else(|| c.strip_prefix(&format!("\"{key}\"")));
                rest.is_some_and(|r| {
                    let r = r.trim_start();
                    r.starts_with('=') || r.starts_with('.') || r.starts_with(']')
                })
            })
        })
        .map(|i| i + 1)
}

fn at_line(text: &str, key: &str) -> String {
    line_of_key(text, key)
        .map(|l| format!(" (line {l})"))
        .unwrap_or_default()
}

/// config.toml: TOML syntax, models and providers, the default model, permission rules,
/// hooks, the sandbox section, and keys that are not settings at all.
pub fn check_config(path: &Path, explicit: bool) -> Check {
    let mut check = Check::new("config.toml", Some(path));
    let Some(text) = read(&mut check, path, explicit) else {
        return check;
    };
    let value: toml::Table = match toml::from_str(&text) {
        Ok(value) => value,
        Err(err) => {
            check.problems.push(format!(
                "not valid TOML: {}; fix the syntax (nothing else in the file can be checked until then)",
                err.to_string().trim_end()
            ));
            return check;
        }
    };
    for key in value.keys() {
        if !KNOWN_TOP_LEVEL.contains(&key.as_str()) && key != "default_thinking" {
            check.warnings.push(format!(
                "unknown key `{key}`{} is not a Kimi Code setting and is ignored; check its spelling or remove it",
                at_line(&text, key)
            ));
        }
    }
    for (table, key) in DEPRECATED {
        let present = if table.is_empty() {
            value.contains_key(*key)
        } else {
            value
                .get(*table)
                .and_then(toml::Value::as_table)
                .is_some_and(|t| t.contains_key(*key))
        };
        if present {
            let name = if table.is_empty() {
                (*key).to_owned()
            } else {
                format!("{table}.{key}")
            };
            check.warnings.push(format!(
                "`{name}`{} is deprecated and ignored; remove it",
                at_line(&text, key)
            ));
        }
    }
    check_models(&mut check, &text, path);
    match kimi_core::permission::load_rules_from_str(&text) {
        Ok(loaded) => {
            check.problems.extend(loaded.errors.iter().map(|e| {
                format!("{e}; this rule is left out until it is fixed (see [[permission.rules]] in the docs)")
            }));
        }
        Err(err) => check.problems.push(err.to_string()),
    }
    match kimi_core::hooks::load_hooks_from_str(&text) {
        Ok(loaded) => {
            check.problems.extend(
                loaded.errors.iter().map(|e| {
                    format!("{e}; fix the entry (keys: event, matcher, command, timeout)")
                }),
            );
        }
        Err(err) => check.problems.push(err.to_string()),
    }
    match sandbox_mode_from_config(&toml::Value::Table(value.clone())) {
        Ok(SandboxMode::WorkspaceWrite) => {
            if let SandboxSupport::Unavailable { reason } = probe() {
                check.warnings.push(format!(
                    "[sandbox] mode = \"workspace-write\", but the OS sandbox is not available here ({reason}); commands will run with the permission chain only"
                ));
            }
        }
        Ok(SandboxMode::Off) => {}
        Err(err) => check
            .problems
            .push(format!("{err}{}", at_line(&text, "sandbox"))),
    }
    for key in ["extra_skill_dirs", "extra_agent_dirs"] {
        if let Some(v) = value.get(key) {
            let ok = v
                .as_array()
                .is_some_and(|a| a.iter().all(toml::Value::is_str));
            if !ok {
                check.problems.push(format!(
                    "`{key}`{} must be a list of directory paths (strings); it is ignored as written",
                    at_line(&text, key)
                ));
            }
        }
    }
    check
}

/// Models and providers through `LlmConfig` (what a session loads), then the default model
/// resolved as a session resolves it when neither `-m` nor `KIMI_MODEL_NAME` is given.
fn check_models(check: &mut Check, text: &str, path: &Path) {
    let config = match LlmConfig::parse(text, path) {
        Ok(config) => config,
        Err(err) => {
            check.problems.push(err.to_string());
            return;
        }
    };
    let Some(alias) = config.default_model.clone() else {
        let env_model = std::env::var("KIMI_MODEL_NAME").is_ok_and(|n| !n.trim().is_empty());
        if !config.models.is_empty() && !env_model {
            check.warnings.push(
                "no `default_model`: sessions need -m <alias> or KIMI_MODEL_NAME; set default_model to one of the [models] aliases".to_owned(),
            );
        }
        return;
    };
    // The environment a session sees, minus the temporary env model, so `default_model` itself
    // is what gets resolved.
    let env = |name: &str| {
        if name == "KIMI_MODEL_NAME" {
            None
        } else {
            std::env::var(name).ok()
        }
    };
    let resolved = config
        .resolve_model(None, &env)
        .map_err(|e| e.to_string())
        .and_then(|model| {
            kimi_llm::build_provider(&model)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
    if let Err(err) = resolved {
        check.problems.push(format!(
            "default_model `{alias}`{}: {err}",
            at_line(text, "default_model")
        ));
    }
}

/// Kimi Code's status-line items (surface.md §4.3).
const STATUS_ITEMS: &[&str] = &["mode", "goal", "model", "tasks", "cwd", "git", "tips"];

/// tui.toml through `TuiConfig` (what the terminal UI loads), plus values it would ignore.
pub fn check_tui(path: &Path, explicit: bool) -> Check {
    let mut check = Check::new("tui.toml", Some(path));
    if read(&mut check, path, explicit).is_none() {
        return check;
    }
    if let Err(err) = kimi_tui::TuiConfig::load(path) {
        let detail = match &err {
            kimi_tui::TuiError::Config { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        check.problems.push(format!(
            "{}; the terminal UI falls back to its defaults until it is fixed",
            detail.trim_end()
        ));
        return check;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return check;
    };
    let Ok(value) = toml::from_str::<toml::Table>(&text) else {
        return check;
    };
    if let Some(theme) = value.get("theme").and_then(toml::Value::as_str)
        && !matches!(theme, "auto" | "dark" | "light")
    {
        check.warnings.push(format!(
            "theme `{theme}`{}: custom themes are not supported by kimi-rs yet; the automatic theme is used (use auto, dark or light)",
            at_line(&text, "theme")
        ));
    }
    let items = value
        .get("status_line")
        .and_then(|s| s.get("items"))
        .and_then(toml::Value::as_array);
    for item in items.into_iter().flatten() {
        let name = item.as_str().unwrap_or_default();
        if !STATUS_ITEMS.contains(&name) {
            check.warnings.push(format!(
                "[status_line] items: `{}` is not a status-line item and shows nothing; use {}",
                item.as_str()
                    .map_or_else(|| item.to_string(), str::to_owned),
                STATUS_ITEMS.join(", ")
            ));
        }
    }
    check
}

/// The `mcp.json` files, skills and agent files a session in `cwd` would load.
fn check_extensions(home: &Path, cwd: &Path) -> Vec<Check> {
    let mut checks = check_mcp(home, cwd);
    checks.push(check_skills(home, cwd));
    checks.push(check_agents(home, cwd));
    checks
}

/// Each `mcp.json` on its own (kimi_mcp's loader stops at the first bad file; doctor reports
/// every one). Same files and parser as `kimi_mcp::load_config`.
fn check_mcp(home: &Path, cwd: &Path) -> Vec<Check> {
    let project_root = kimi_skills::project_root(cwd);
    let layers = [
        (home.join("mcp.json"), None),
        (project_root.join(".mcp.json"), Some(project_root.as_path())),
        (cwd.join(".kimi-code").join("mcp.json"), None),
    ];
    let mut checks = Vec::new();
    for (path, base) in layers {
        let label = if base.is_some() {
            ".mcp.json"
        } else {
            "mcp.json"
        };
        let mut check = Check::new(label, Some(&path));
        if let Some(text) = read(&mut check, &path, false) {
            match kimi_mcp::config::parse_file(&text, &path, base) {
                Ok(servers) => {
                    let n = servers.len();
                    check.summary = Some(format!("{n} server{}", if n == 1 { "" } else { "s" }));
                }
                Err(err) => check.problems.push(format!(
                    "{err} No MCP server starts until this file is fixed."
                )),
            }
        }
        checks.push(check);
    }
    checks
}

/// Skill files discovery would skip, and configured skill directories that are missing.
fn check_skills(home: &Path, cwd: &Path) -> Check {
    let mut check = Check::new("skills", None);
    let extra_dirs = std::fs::read_to_string(home.join("config.toml"))
        .ok()
        .and_then(|text| toml::from_str::<toml::Table>(&text).ok())
        .and_then(|t| t.get("extra_skill_dirs").cloned())
        .and_then(|v| v.as_array().cloned())
        .map(|dirs| {
            dirs.iter()
                .filter_map(toml::Value::as_str)
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    let (catalog, warnings) = kimi_skills::discover(&DiscoverOptions {
        kimi_home: home.to_owned(),
        user_home: std::env::home_dir(),
        cwd: cwd.to_owned(),
        skills_dirs: Vec::new(),
        extra_dirs,
    });
    let n = catalog.list().len();
    check.summary = Some(format!("{n} skill{} found", if n == 1 { "" } else { "s" }));
    check.problems = warnings;
    check
}

/// Agent files the profile catalog would skip (bad frontmatter, clashes with built-ins), and
/// tool names in them that never match.
fn check_agents(home: &Path, cwd: &Path) -> Check {
    let mut check = Check::new("agent files", None);
    let dirs = AgentDirs::standard(home, std::env::home_dir().as_deref(), cwd);
    match ProfileCatalog::load(&dirs, None) {
        Ok((catalog, warnings)) => {
            let n = catalog.profiles().len();
            check.summary = Some(format!(
                "{n} profile{} available",
                if n == 1 { "" } else { "s" }
            ));
            for warning in warnings {
                if warning.to_lowercase().contains("skipped") {
                    check.problems.push(warning);
                } else {
                    check.warnings.push(warning);
                }
            }
        }
        Err(err) => check.problems.push(err.to_string()),
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_line_of_keys_and_tables() {
        let text = "a = 1\n\n[sandbox]\nmode = 2\n[[hooks]]\n\"quoted\" = 3\nfoo.bar = 1\n";
        assert_eq!(line_of_key(text, "a"), Some(1));
        assert_eq!(line_of_key(text, "sandbox"), Some(3));
        assert_eq!(line_of_key(text, "hooks"), Some(5));
        assert_eq!(line_of_key(text, "quoted"), Some(6));
        assert_eq!(line_of_key(text, "foo"), Some(7));
        assert_eq!(line_of_key(text, "missing"), None);
    }

    #[test]
    fn deprecated_and_unknown_keys_are_warnings_not_problems() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "default_thinking = true\nfrobnicate = 1\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let check = check_config(&path, true);
        assert!(check.problems.is_empty(), "{check:?}");
        assert_eq!(check.warnings.len(), 2, "{check:?}");
        assert!(
            check.warnings[0].contains("`frobnicate` (line 2)"),
            "{check:?}"
        );
        assert!(check.warnings[1].contains("deprecated"), "{check:?}");
    }
}
