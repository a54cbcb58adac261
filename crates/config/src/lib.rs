//! kimi-rs's configuration, read once: `config.toml` (surface.md §4.2) into one typed
//! [`Config`], and `tui.toml` (§4.3) into [`tui::TuiFile`]. The binary loads them at start-up
//! and passes the values down; no other crate reads these files.
//!
//! Nothing is silent: every problem is a [`Diagnostic`] with the file, the line, the key path
//! and what to do. Unknown keys at any depth are warnings with a did-you-mean; deprecated keys
//! and Kimi Code settings kimi-rs does not act on are warnings; invalid TOML, a value of the
//! wrong type and a value out of range are errors ([`Config::check`]), which stop start-up.

mod checkpoint;
mod diag;
mod env;
pub mod environments;
pub mod experimental;
mod file;
mod parse;
mod providers;
mod redacted;
pub mod schema;
mod sections;
pub mod trust;
pub mod tui;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub use checkpoint::*;
pub use diag::{ConfigErrors, Diagnostic, Severity, did_you_mean, line_of};
pub use file::read_regular_file;
pub use providers::{ModelEntry, ModelOverrides, OAuthRef, ProviderEntry, ProviderType};
pub use sections::*;

/// The parsed `config.toml`, environment overrides applied. `Default` is "no file".
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file this came from (also when it does not exist).
    pub path: PathBuf,
    /// Whether the file exists.
    pub present: bool,
    pub default_model: Option<String>,
    pub default_permission_mode: Option<String>,
    pub default_plan_mode: Option<bool>,
    pub merge_all_available_skills: Option<bool>,
    pub extra_skill_dirs: Vec<String>,
    pub extra_agent_dirs: Vec<String>,
    pub builtin_product_skills: Option<bool>,
    pub telemetry: Option<bool>,
    pub providers: BTreeMap<String, ProviderEntry>,
    pub models: BTreeMap<String, ModelEntry>,
    pub secondary_model: Option<SecondaryModel>,
    pub thinking: Option<ThinkingSection>,
    pub loop_control: LoopControl,
    pub token_counting: TokenCounting,
    /// `[background]`, or its alias `[task]`.
    pub background: Background,
    pub subagent: Subagent,
    pub mcp: Mcp,
    pub identity: Identity,
    pub tools: Tools,
    pub image: Image,
    pub services: Services,
    pub permission: Permission,
    pub hooks: Vec<RawEntry>,
    pub cron: Cron,
    /// `[experimental]` as written in the file; read flags through [`Config::flag_enabled`].
    pub experimental: BTreeMap<String, bool>,
    /// The experimental flags set by environment variables (they win over the file).
    pub experimental_env: experimental::EnvOverrides,
    pub model_catalog: ModelCatalog,
    pub sandbox: Sandbox,
    /// kimi-rs's `[checkpoint]` (file checkpoints for rewind).
    pub checkpoint: Checkpoint,
    /// kimi-rs's `[feedback]` (where `/feedback` sends its bundle).
    pub feedback: Feedback,
    /// `[environments]`: where sessions' tools may run besides this machine.
    pub environments: environments::Environments,
    /// Every problem found, in file order (environment problems last).
    pub diagnostics: Vec<Diagnostic>,
    /// Modification time when read, for [`Config::reload_if_changed`].
    stamp: Option<SystemTime>,
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl Config {
    /// Every experimental flag with its value and where that comes from.
    pub fn flags(&self) -> Vec<experimental::FlagState> {
        experimental::resolve(&self.experimental, &self.experimental_env)
    }

    /// Whether the experimental flag `id` is on (false for an id that is not a flag).
    pub fn flag_enabled(&self, id: &str) -> bool {
        self.flags()
            .iter()
            .any(|s| s.flag.id == id && s.enabled && s.flag.unsupported.is_none())
    }

    /// `[tools]` with what experimental flags take away (WaitFor when `wait_for` is off).
    pub fn effective_tools(&self) -> Tools {
        let mut tools = self.tools.clone();
        if !self.flag_enabled("wait_for") {
            tools
                .disabled
                .get_or_insert_with(Vec::new)
                .push("WaitFor".to_owned());
        }
        tools
    }

    /// No file at `path`: every key at its default.
    pub fn empty(path: &Path) -> Config {
        Config {
            path: path.to_owned(),
            ..Config::default()
        }
    }

    /// Parses `text` as the contents of `path` (no environment overrides).
    pub fn parse(text: &str, path: &Path) -> Config {
        let mut config = Config {
            path: path.to_owned(),
            present: true,
            ..Config::default()
        };
        parse::parse_into(&mut config, text);
        config.validate(text);
        // Sections are visited in key order; the report reads in file order.
        config
            .diagnostics
            .sort_by_key(|d| d.line.unwrap_or(usize::MAX));
        config
    }

    /// Reads `path`; a missing file is the empty configuration (first run), an unreadable
    /// one an error diagnostic. No environment overrides.
    pub fn read(path: &Path) -> Config {
        let stamp = modified(path);
        let mut config = match file::read_regular_file(path) {
            Ok(text) => Config::parse(&text, path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Config {
                path: path.to_owned(),
                ..Config::default()
            },
            Err(err) => {
                let mut config = Config {
                    path: path.to_owned(),
                    present: true,
                    ..Config::default()
                };
                config.diagnostics.push(Diagnostic {
                    severity: Severity::Error,
                    file: path.to_owned(),
                    line: None,
                    key: String::new(),
                    message: format!(
                        "cannot read the file: {err}; check that it is a readable file"
                    ),
                    suggestion: None,
                });
                config
            }
        };
        config.stamp = stamp;
        config
    }

    /// [`Config::read`] plus the environment overrides of surface.md §4.2 read through `env`.
    pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Config {
        let mut config = Config::read(path);
        config.apply_env(env);
        config
    }

    /// `$home/config.toml` with the process environment: what a session runs with.
    pub fn load_home(home: &Path) -> Config {
        Config::load(&home.join("config.toml"), &|name| std::env::var(name).ok())
    }

    /// The file again when it changed since it was read (hooks apply from the next turn);
    /// `None` when unchanged. Environment overrides are not re-applied (hooks have none).
    pub fn reload_if_changed(&mut self) -> Option<Config> {
        let now = modified(&self.path);
        if now == self.stamp {
            return None;
        }
        self.stamp = now;
        Some(Config::read(&self.path))
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| !d.is_error())
    }

    /// Errors stop start-up: `Err` lists all of them.
    pub fn check(&self) -> Result<(), ConfigErrors> {
        let errors: Vec<Diagnostic> = self.errors().cloned().collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ConfigErrors(errors))
        }
    }

    /// `[mcp] startup_timeout_ms`, when set.
    pub fn mcp_startup_timeout(&self) -> Option<Duration> {
        self.mcp.startup_timeout_ms.map(Duration::from_millis)
    }

    /// `[mcp] tool_timeout_ms`, when set.
    pub fn mcp_tool_timeout(&self) -> Option<Duration> {
        self.mcp.tool_timeout_ms.map(Duration::from_millis)
    }

    /// `[thinking] enabled/effort` as written (`enabled = false` means off).
    pub fn thinking_effort(&self) -> Option<&str> {
        let section = self.thinking.as_ref()?;
        if section.enabled == Some(false) {
            return Some("off");
        }
        section.effort.as_deref()
    }

    fn error_at(&mut self, text: &str, key: &str, message: String) {
        let path: Vec<String> = key.split('.').map(str::to_owned).collect();
        let line = find_line(text, &path);
        self.diagnostics.push(Diagnostic {
            severity: Severity::Error,
            file: self.path.clone(),
            line,
            key: key.to_owned(),
            message,
            suggestion: None,
        });
    }

    /// Values of the right type but outside what the key allows.
    fn validate(&mut self, text: &str) {
        if let Some(ratio) = self.loop_control.compaction_trigger_ratio
            && !(0.5..=0.99).contains(&ratio)
        {
            self.error_at(
                text,
                "loop_control.compaction_trigger_ratio",
                format!("is {ratio}; it must be between 0.5 and 0.99"),
            );
        }
        for (key, value) in [
            ("mcp.startup_timeout_ms", self.mcp.startup_timeout_ms),
            ("mcp.tool_timeout_ms", self.mcp.tool_timeout_ms),
        ] {
            if let Some(ms) = value
                && !(1..=2_147_483_647).contains(&ms)
            {
                self.error_at(
                    text,
                    key,
                    format!("is {ms}; it must be from 1 to 2147483647 milliseconds"),
                );
            }
        }
        if let Some(mode) = self.sandbox.mode.clone()
            && !matches!(mode.as_str(), "off" | "workspace-write")
        {
            self.error_at(
                text,
                "sandbox.mode",
                format!(
                    "is `{mode}`, which is not a sandbox mode; use \"workspace-write\" or \"off\""
                ),
            );
        }
        if let Some(mode) = self.default_permission_mode.clone()
            && !matches!(mode.as_str(), "manual" | "yolo" | "auto")
        {
            self.error_at(
                text,
                "default_permission_mode",
                format!("is `{mode}`; use manual, yolo or auto"),
            );
        }
    }
}

/// The 1-based line of the key at `path` in `text` (`None` when it is not there).
pub fn key_line(text: &str, path: &[&str]) -> Option<usize> {
    let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
    find_line(text, &path)
}

/// The line of the key at `path`, through the same spanned parse (`None` when not found).
fn find_line(text: &str, path: &[String]) -> Option<usize> {
    let root = toml::de::DeTable::parse(text).ok()?.into_inner();
    let mut table = &root;
    let mut start = None;
    for seg in path {
        let (key, value) = table.iter().find(|(k, _)| k.get_ref() == seg)?;
        start = Some(key.span().start);
        if let Some(t) = value.get_ref().as_table() {
            table = t;
        }
    }
    start.map(|s| line_of(text, s))
}

#[cfg(test)]
mod tests;
