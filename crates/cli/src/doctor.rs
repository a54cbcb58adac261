//! `kimi-rs doctor`: validates the configuration files without modifying anything and says,
//! per file, whether it is fine, absent, or what is wrong with it and how to fix it
//! (surface.md §1.3 `kimi doctor`, §4, §10).
//!
//! Every check goes through the loader a session uses (kimi-config's one parse of config.toml
//! and tui.toml, `LlmConfig`, the permission-rule and hook validators, the `mcp.json` parser,
//! skill discovery and the agent-profile catalog), so doctor and a session never disagree
//! about a file, and every problem of a file is reported in one run. Problems (the file, or
//! part of it, will not work; a session refuses to start on a config error) make the exit
//! status 1; warnings (something is ignored: an unknown, deprecated or unsupported key) do not.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kimi_config::Config;
use kimi_config::tui::TuiFile;
use kimi_core::hooks::load_hooks;
use kimi_core::permission::load_rules;
use kimi_core::permission::sandbox::{SandboxMode, SandboxSupport, kernel_support, sandbox_mode};
use kimi_core::profile::ProfileCatalog;
use kimi_llm::config::LlmConfig;

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
            let (config_check, config) = check_config_with(&home.join("config.toml"), false);
            checks.push(config_check);
            checks.push(check_tui(&home.join("tui.toml"), false));
            checks.extend(check_extensions(home, cwd, &config));
        }
        Target::Config(None) => {
            let (config_check, config) = check_config_with(&home.join("config.toml"), false);
            checks.push(config_check);
            checks.extend(check_extensions(home, cwd, &config));
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
    match kimi_config::read_regular_file(path) {
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

/// config.toml through the parser a session uses ([`kimi_config::Config`]): syntax, every
/// unknown key at any depth (with its line and the closest known key), wrong types, values out
/// of range, deprecated keys and settings kimi-rs does not act on, all in one run; then the
/// models and providers, the default model, permission rules, hooks and the sandbox.
pub fn check_config(path: &Path, explicit: bool) -> Check {
    check_config_with(path, explicit).0
}

fn check_config_with(path: &Path, explicit: bool) -> (Check, Config) {
    let mut check = Check::new("config.toml", Some(path));
    let Some(text) = read(&mut check, path, explicit) else {
        return (check, Config::empty(path));
    };
    let mut config = Config::parse(&text, path);
    config.apply_env(&|name| std::env::var(name).ok());
    for diagnostic in &config.diagnostics {
        if diagnostic.is_error() {
            check.problems.push(diagnostic.brief());
        } else {
            check.warnings.push(diagnostic.brief());
        }
    }
    if config
        .errors()
        .any(|d| d.message.starts_with("not valid TOML"))
    {
        return (check, config);
    }
    check_models(&mut check, &text, &config);
    check
        .problems
        .extend(load_rules(&config.permission).errors.iter().map(|e| {
            if e.is_fatal() {
                format!(
                    "{e}; kimi-rs refuses to start until this deny/ask rule is fixed (see \
                     [[permission.rules]] in the docs)"
                )
            } else {
                format!(
                    "{e}; this allow rule is left out until it is fixed (see [[permission.rules]] \
                     in the docs)"
                )
            }
        }));
    check.problems.extend(
        load_hooks(&config.hooks)
            .errors
            .iter()
            .map(|e| format!("{e}; fix the entry (keys: event, matcher, command, timeout)")),
    );
    if let Ok(SandboxMode::WorkspaceWrite) = sandbox_mode(config.sandbox.mode.as_deref()) {
        let support = kernel_support();
        match support.support() {
            SandboxSupport::Unavailable { reason } => check.warnings.push(format!(
                "[sandbox] mode = \"workspace-write\", but the OS sandbox is not available here ({reason}); commands will run with the permission chain only"
            )),
            SandboxSupport::Available => check.warnings.extend(support.missing()),
        }
    }
    (check, config)
}

fn at_line(text: &str, key: &str) -> String {
    kimi_config::key_line(text, &[key])
        .map(|l| format!(" (line {l})"))
        .unwrap_or_default()
}

/// Models and providers through `LlmConfig` (what a session loads), then the default model
/// resolved as a session resolves it when neither `-m` nor `KIMI_MODEL_NAME` is given.
fn check_models(check: &mut Check, text: &str, parsed: &Config) {
    let config = match LlmConfig::from_config(parsed) {
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
            // A login model checks that the login is there (the token itself is not used).
            let home = config.path.parent().unwrap_or(std::path::Path::new("."));
            crate::accounts::provider_for(home, &model)
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
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

/// tui.toml through the parser the terminal UI's settings come from ([`TuiFile`]): syntax,
/// types, unknown keys (with did-you-mean), settings kimi-rs's UI does not have, custom themes
/// and status-line items that show nothing.
pub fn check_tui(path: &Path, explicit: bool) -> Check {
    let mut check = Check::new("tui.toml", Some(path));
    let Some(text) = read(&mut check, path, explicit) else {
        return check;
    };
    let file = TuiFile::parse(&text, path);
    for diagnostic in &file.diagnostics {
        if diagnostic.is_error() {
            check.problems.push(diagnostic.brief());
        } else {
            check.warnings.push(diagnostic.brief());
        }
    }
    let items = file
        .keys
        .status_line
        .as_ref()
        .and_then(|s| s.items.clone())
        .unwrap_or_default();
    for name in items {
        if !STATUS_ITEMS.contains(&name.as_str()) {
            check.warnings.push(format!(
                "[status_line] items: `{name}` is not a status-line item and shows nothing; use {}",
                STATUS_ITEMS.join(", ")
            ));
        }
    }
    check
}

/// The `mcp.json` files, skills and agent files a session in `cwd` would load.
fn check_extensions(home: &Path, cwd: &Path, config: &Config) -> Vec<Check> {
    let mut checks = check_mcp(home, cwd);
    checks.push(check_skills(home, cwd, config));
    checks.push(check_plugins(home, cwd));
    checks.push(check_agents(home, cwd, config));
    checks
}

/// Each `mcp.json` on its own, through the parser sessions use: every bad entry (each
/// disables only itself), the servers whose stdio command is not on PATH, and project files
/// whose folder is not trusted (their servers do not start).
fn check_mcp(home: &Path, cwd: &Path) -> Vec<Check> {
    let trusted = kimi_config::trust::is_trusted(home, cwd);
    let mut checks = Vec::new();
    for file in kimi_mcp::config_files(home, cwd) {
        let path = &file.path;
        let label = if file.stdio_cwd_base.is_some() {
            ".mcp.json"
        } else {
            "mcp.json"
        };
        let mut check = Check::new(label, Some(path));
        if let Some(text) = read(&mut check, path, false) {
            match kimi_mcp::config::parse_file(&text, path, file.stdio_cwd_base.as_deref()) {
                Ok(parsed) => {
                    let n = parsed.servers.len();
                    check.summary = Some(format!("{n} server{}", if n == 1 { "" } else { "s" }));
                    check
                        .problems
                        .extend(parsed.problems.iter().map(ToString::to_string));
                    check.warnings.extend(parsed.warnings);
                    for (name, server) in &parsed.servers {
                        if let kimi_mcp::TransportConfig::Stdio { command, .. } = &server.transport
                            && server.enabled
                            && kimi_mcp::find_command(server, cwd).is_none()
                        {
                            check.problems.push(format!(
                                "MCP server `{name}`: command `{command}` was not found (not an executable file{}). Install it or fix `command` (an absolute path works too).",
                                if command.contains('/') { "" } else { " on PATH" }
                            ));
                        }
                    }
                    if file.project && n > 0 {
                        match &trusted {
                            Ok(true) => {}
                            Ok(false) => check.warnings.push(format!(
                                "this folder is not trusted, so these servers do not start; run `kimi-rs trust {}` to allow them",
                                crate::trust::folder_for(cwd).display()
                            )),
                            Err(err) => check.problems.push(err.to_string()),
                        }
                    }
                }
                Err(err) => check.problems.push(format!(
                    "{err} No MCP server of this file starts until it is fixed."
                )),
            }
        }
        checks.push(check);
    }
    checks
}

/// Skill files discovery would skip, and configured skill directories that are missing.
fn check_skills(home: &Path, cwd: &Path, config: &Config) -> Check {
    let mut check = Check::new("skills", None);
    let plugins = crate::extensions::load_plugins(
        home,
        cwd,
        kimi_config::trust::is_trusted(home, cwd).unwrap_or(false),
    );
    let options = crate::extensions::skill_options(home, cwd, &[], config, &plugins);
    let (catalog, warnings) = kimi_skills::discover(&options);
    let n = catalog.list().len();
    check.summary = Some(format!("{n} skill{} found", if n == 1 { "" } else { "s" }));
    check.problems = warnings;
    check
}

/// Installed plugins that cannot be loaded and what the enabled ones ignore.
fn check_plugins(home: &Path, cwd: &Path) -> Check {
    let state = kimi_plugins::PluginState::path(home);
    let mut check = Check::new("plugins", Some(&state));
    let plugins = crate::extensions::load_plugins(
        home,
        cwd,
        kimi_config::trust::is_trusted(home, cwd).unwrap_or(false),
    );
    let n = plugins.plugins.len();
    check.summary = Some(format!(
        "{n} plugin{} enabled",
        if n == 1 { "" } else { "s" }
    ));
    check.problems = plugins.warnings;
    check
}

/// Agent files the profile catalog would skip (bad frontmatter, clashes with built-ins), and
/// tool names in them that never match.
fn check_agents(home: &Path, cwd: &Path, config: &Config) -> Check {
    let mut check = Check::new("agent files", None);
    let dirs = kimi_core::session::agent_dirs(home, cwd, config);
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
    fn deprecated_and_unknown_keys_are_warnings_not_problems() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "default_thinking = true\nfrobnicate = 1\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let check = check_config(&path, true);
        assert!(check.problems.is_empty(), "{check:?}");
        assert_eq!(check.warnings.len(), 2, "{check:?}");
        assert!(
            check.warnings[0].starts_with("line 1: `default_thinking`: deprecated"),
            "{check:?}"
        );
        assert!(
            check.warnings[1].starts_with("line 2: `frobnicate`: unknown key"),
            "{check:?}"
        );
    }
}
