//! `[[hooks]]` definitions (surface.md §6.1): parsing with per-hook errors, matching an event
//! occurrence, de-duplication, and the pure "did the hooks change?" check used on config reload.

use std::path::PathBuf;

use regex::Regex;

use super::event::{HookEvent, HookEventData};
use crate::permission::ConfigSyntaxError;

/// Default and bounds of `timeout`, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// One hook.
#[derive(Debug, Clone)]
pub struct HookDef {
    pub event: HookEvent,
    /// The regex as written; `None` or empty matches every occurrence.
    pub matcher: Option<String>,
    matcher_regex: Option<Regex>,
    pub command: String,
    pub timeout_secs: u64,
    /// Working directory; `None` = the session cwd. Plugin hooks run in the plugin root.
    pub cwd: Option<PathBuf>,
    /// Extra environment (plugins get `KIMI_CODE_HOME` and `KIMI_PLUGIN_ROOT`).
    pub env: Vec<(String, String)>,
}

impl PartialEq for HookDef {
    fn eq(&self, other: &Self) -> bool {
        self.event == other.event
            && self.matcher == other.matcher
            && self.command == other.command
            && self.timeout_secs == other.timeout_secs
            && self.cwd == other.cwd
            && self.env == other.env
    }
}
impl Eq for HookDef {}

impl HookDef {
    /// Builds a hook; an invalid matcher regex is kept as written and never matches (as in the
    /// reference), and the loader reports it.
    pub fn new(event: HookEvent, matcher: Option<&str>, command: &str, timeout_secs: u64) -> Self {
        let matcher = matcher.filter(|m| !m.is_empty()).map(str::to_owned);
        HookDef {
            event,
            matcher_regex: matcher.as_deref().and_then(|m| Regex::new(m).ok()),
            matcher,
            command: command.to_owned(),
            timeout_secs,
            cwd: None,
            env: Vec::new(),
        }
    }

    /// A hook contributed by a plugin: it runs in the plugin root and gets the home
    /// (`KIMI_CODE_HOME`, as the reference names it, and `KIMI_RS_HOME`) and
    /// `KIMI_PLUGIN_ROOT` in its environment.
    pub fn for_plugin(
        mut self,
        plugin_root: &std::path::Path,
        kimi_home: &std::path::Path,
    ) -> Self {
        self.cwd = Some(plugin_root.to_path_buf());
        self.env = vec![
            (
                "KIMI_CODE_HOME".to_owned(),
                kimi_home.to_string_lossy().into_owned(),
            ),
            (
                "KIMI_RS_HOME".to_owned(),
                kimi_home.to_string_lossy().into_owned(),
            ),
            (
                "KIMI_PLUGIN_ROOT".to_owned(),
                plugin_root.to_string_lossy().into_owned(),
            ),
        ];
        self
    }

    /// Whether the hook runs for this occurrence (unanchored regex search on the matcher value).
    pub fn matches(&self, data: &HookEventData) -> bool {
        if self.event != data.event() {
            return false;
        }
        match (&self.matcher, &self.matcher_regex) {
            (None, _) => true,
            (Some(_), Some(re)) => re.is_match(&data.matcher_value()),
            (Some(_), None) => false,
        }
    }
}

/// The configured hooks of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookSet {
    hooks: Vec<HookDef>,
}

impl HookSet {
    pub fn new(hooks: Vec<HookDef>) -> HookSet {
        HookSet { hooks }
    }

    pub fn hooks(&self) -> &[HookDef] {
        &self.hooks
    }

    pub fn has_event(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// The hooks to run for an occurrence; duplicates (same cwd and command) run once.
    pub fn matching(&self, data: &HookEventData) -> Vec<&HookDef> {
        let mut out: Vec<&HookDef> = Vec::new();
        for hook in self.hooks.iter().filter(|h| h.matches(data)) {
            if !out
                .iter()
                .any(|h| h.cwd == hook.cwd && h.command == hook.command)
            {
                out.push(hook);
            }
        }
        out
    }

    /// Replaces the hooks when the newly parsed set differs; returns whether it changed.
    pub fn reload(&mut self, parsed: HookSet) -> bool {
        if *self == parsed {
            false
        } else {
            *self = parsed;
            true
        }
    }
}

/// Why one hook was rejected (or, for a bad matcher, warned about).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hooks entry #{index}{}: {problem}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
pub struct HookLoadError {
    /// 1-based position in `[[hooks]]`.
    pub index: usize,
    pub line: Option<usize>,
    pub problem: HookProblem,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookProblem {
    #[error("expected a table with `event` and `command`")]
    NotATable,
    #[error("unknown key `{0}`; only event, matcher, command and timeout are allowed")]
    UnknownKey(String),
    #[error("missing `{0}`")]
    Missing(&'static str),
    #[error("`{0}` must be a string")]
    NotAString(&'static str),
    #[error("unknown event `{0}`; see the list of the 20 hook events")]
    UnknownEvent(String),
    #[error("`timeout` must be an integer number of seconds from 1 to 600, got {0}")]
    BadTimeout(String),
    #[error("matcher `{matcher}` is not a valid regex ({why}); the hook is kept but never matches")]
    BadMatcher { matcher: String, why: String },
}

/// Parsed hooks plus problems; hooks with a bad matcher are kept (and never match).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadedHooks {
    pub hooks: HookSet,
    pub errors: Vec<HookLoadError>,
}

/// Loads `[[hooks]]` from config text (through the one config parser), with line numbers
/// in the errors.
pub fn load_hooks_from_str(config: &str) -> Result<LoadedHooks, ConfigSyntaxError> {
    let parsed = kimi_config::Config::parse(config, std::path::Path::new("config.toml"));
    if let Some(err) = parsed
        .errors()
        .find(|d| d.message.starts_with("not valid TOML"))
    {
        return Err(ConfigSyntaxError(err.to_string()));
    }
    Ok(load_hooks(&parsed.hooks))
}

/// Validates the `[[hooks]]` entries of the parsed config.
pub fn load_hooks(entries: &[kimi_config::RawEntry]) -> LoadedHooks {
    build(entries.iter().map(|e| (Some(e.line), e.value.clone())))
}

/// Loads `[[hooks]]` from an already parsed config.
pub fn load_hooks_from_value(config: &toml::Value) -> LoadedHooks {
    let list = config.get("hooks").and_then(toml::Value::as_array);
    build(list.into_iter().flatten().map(|v| (None, v.clone())))
}

fn build(entries: impl Iterator<Item = (Option<usize>, toml::Value)>) -> LoadedHooks {
    let mut hooks = Vec::new();
    let mut errors = Vec::new();
    for (i, (line, value)) in entries.enumerate() {
        let index = i + 1;
        match parse_hook(&value) {
            Ok(hook) => {
                if let (Some(m), None) = (&hook.matcher, &hook.matcher_regex) {
                    let why = Regex::new(m)
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    errors.push(HookLoadError {
                        index,
                        line,
                        problem: HookProblem::BadMatcher {
                            matcher: m.clone(),
                            why,
                        },
                    });
                }
                hooks.push(hook);
            }
            Err(problem) => errors.push(HookLoadError {
                index,
                line,
                problem,
            }),
        }
    }
    LoadedHooks {
        hooks: HookSet::new(hooks),
        errors,
    }
}

fn parse_hook(value: &toml::Value) -> Result<HookDef, HookProblem> {
    let table = value.as_table().ok_or(HookProblem::NotATable)?;
    if let Some(key) = table
        .keys()
        .find(|k| !matches!(k.as_str(), "event" | "matcher" | "command" | "timeout"))
    {
        return Err(HookProblem::UnknownKey(key.clone()));
    }
    let string = |key: &'static str| match table.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(HookProblem::NotAString(key)),
    };
    let event_name = string("event")?.ok_or(HookProblem::Missing("event"))?;
    let event =
        HookEvent::parse(event_name).ok_or_else(|| HookProblem::UnknownEvent(event_name.into()))?;
    let command = string("command")?
        .filter(|c| !c.trim().is_empty())
        .ok_or(HookProblem::Missing("command"))?;
    let timeout = match table.get("timeout") {
        None => DEFAULT_TIMEOUT_SECS,
        Some(toml::Value::Integer(n)) if (1..=600).contains(n) => n.unsigned_abs(),
        Some(other) => return Err(HookProblem::BadTimeout(other.to_string())),
    };
    Ok(HookDef::new(event, string("matcher")?, command, timeout))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const CONFIG: &str = r#"
[[hooks]]
event = "PreToolUse"
matcher = "Bash|Write"
command = "echo pre"

[[hooks]]
event = "PreToolUse"
matcher = "Bash"
command = "echo pre"
timeout = 5

[[hooks]]
event = "Nope"
command = "x"

[[hooks]]
event = "Stop"
command = "x"
timeout = 601

[[hooks]]
event = "Stop"
command = "y"
extra = 1

[[hooks]]
event = "PostToolUse"
matcher = "("
command = "z"
"#;

    fn pre(tool: &str) -> HookEventData {
        HookEventData::PreToolUse {
            tool_name: tool.into(),
            tool_input: json!({}),
            tool_call_id: "c".into(),
        }
    }

    #[test]
    fn load_reports_each_bad_hook() {
        let loaded = load_hooks_from_str(CONFIG).unwrap();
        assert_eq!(loaded.hooks.hooks().len(), 3);
        let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 4, "{errors:#?}");
        assert!(
            errors[0].starts_with("hooks entry #3 (line 13)"),
            "{}",
            errors[0]
        );
        assert!(errors[0].contains("unknown event `Nope`"));
        assert!(errors[1].contains("601"));
        assert!(errors[2].contains("unknown key `extra`"));
        assert!(errors[3].contains("not a valid regex"));
        assert_eq!(loaded.hooks.hooks()[0].timeout_secs, DEFAULT_TIMEOUT_SECS);
        assert_eq!(
            load_hooks_from_value(&toml::from_str(CONFIG).unwrap()).hooks,
            loaded.hooks
        );
    }

    #[test]
    fn matching_dedupes_and_respects_regex() {
        let loaded = load_hooks_from_str(CONFIG).unwrap();
        // Same cwd + command → runs once even though both match.
        assert_eq!(loaded.hooks.matching(&pre("Bash")).len(), 1);
        assert_eq!(loaded.hooks.matching(&pre("MyWriteTool")).len(), 1);
        assert_eq!(loaded.hooks.matching(&pre("Read")).len(), 0);
        // The invalid regex never matches.
        let post = HookEventData::PostToolUse {
            tool_name: "(".into(),
            tool_input: json!({}),
            tool_call_id: "c".into(),
            tool_output: String::new(),
        };
        assert_eq!(loaded.hooks.matching(&post).len(), 0);
        assert!(loaded.hooks.has_event(HookEvent::PreToolUse));
        assert!(!loaded.hooks.has_event(HookEvent::SessionHeartbeat));
    }

    #[test]
    fn reload_reports_changes_only() {
        let mut set = load_hooks_from_str(CONFIG).unwrap().hooks;
        assert!(!set.reload(load_hooks_from_str(CONFIG).unwrap().hooks));
        let changed = CONFIG.replace("echo pre", "echo changed");
        assert!(set.reload(load_hooks_from_str(&changed).unwrap().hooks));
        assert_eq!(set.hooks()[0].command, "echo changed");
    }
}
