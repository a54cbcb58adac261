//! The sections of `config.toml` (surface.md §4.2) as typed structs. Every field is optional
//! as written so that "set by the user" can be told from "default"; the accessors give the
//! effective value (env override > file > built-in default).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;

/// A `[[hooks]]` or `[[permission.rules]]` entry: kept as written (core validates it) with the
/// line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct RawEntry {
    pub line: usize,
    pub value: toml::Value,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ThinkingSection {
    pub enabled: Option<bool>,
    pub effort: Option<String>,
    pub keep: Option<toml::Value>,
    pub forced_effort: Option<String>,
    /// Deprecated.
    pub mode: Option<IgnoredAny>,
}

/// Default of `max_attempts_per_step` (the first try included).
pub const DEFAULT_MAX_ATTEMPTS_PER_STEP: u32 = 10;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct LoopControl {
    /// Unset or 0 = unlimited.
    pub max_steps_per_turn: Option<u32>,
    pub max_attempts_per_step: Option<u32>,
    pub reserved_context_size: Option<u64>,
    pub compaction_trigger_ratio: Option<f64>,
    pub max_ralph_iterations: Option<i64>,
    /// kimi-rs: seconds to wait for a stream's first token before the step is retried.
    pub first_token_timeout_s: Option<u64>,
    /// kimi-rs: seconds a stream may go without a chunk before the step is retried.
    pub stream_idle_timeout_s: Option<u64>,
    /// kimi-rs: the longest server-requested wait (Retry-After) honoured before a retry;
    /// 0 = no cap. Env `KIMI_LOOP_MAX_RETRY_AFTER_S`.
    pub max_retry_after_s: Option<u64>,
    /// Deprecated.
    pub max_retries_per_step: Option<IgnoredAny>,
    /// Deprecated.
    pub max_steps_per_run: Option<IgnoredAny>,
}

impl LoopControl {
    /// `None` = unlimited.
    pub fn max_steps(&self) -> Option<u32> {
        self.max_steps_per_turn.filter(|n| *n > 0)
    }

    pub fn max_attempts(&self) -> u32 {
        self.max_attempts_per_step
            .unwrap_or(DEFAULT_MAX_ATTEMPTS_PER_STEP)
            .max(1)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct TokenCounting {
    pub strategy: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Background {
    pub max_running_tasks: Option<u32>,
    pub keep_alive_on_exit: Option<bool>,
    pub kill_grace_period_ms: Option<u64>,
    pub bash_auto_background_on_timeout: Option<bool>,
    pub bash_task_timeout_s: Option<u64>,
    pub print_background_mode: Option<String>,
    pub print_wait_ceiling_s: Option<u64>,
    pub print_max_turns: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Subagent {
    pub timeout_ms: Option<u64>,
    /// kimi-rs: the subagent model pool, model alias (a `[models.<alias>]` entry) -> a hint
    /// for the model saying what that model is good for. The `Agent` and `AgentSwarm` tools'
    /// `model` parameter picks one of these (or `primary`, the session's own model).
    pub models: Option<BTreeMap<String, String>>,
    /// kimi-rs: the pool alias subagents use when a call names no `model` (unset = `primary`).
    pub default_model: Option<String>,
}

/// The name the `model` parameter gives the session's own model.
pub const PRIMARY_MODEL: &str = "primary";

impl Subagent {
    /// The pool as configured (alias, hint), in alias order.
    pub fn pool(&self) -> Vec<(String, String)> {
        self.models
            .iter()
            .flatten()
            .map(|(alias, hint)| (alias.clone(), hint.clone()))
            .collect()
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Mcp {
    pub startup_timeout_ms: Option<u64>,
    pub tool_timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Identity {
    pub name: Option<String>,
    pub slug: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Tools {
    /// Allowlist; empty = no limit.
    pub enabled: Option<Vec<String>>,
    /// Denylist.
    pub disabled: Option<Vec<String>>,
}

impl Tools {
    /// Whether the tool `name` may be registered: exact names, `*` globs (meant for
    /// `mcp__server__*`).
    pub fn allows(&self, name: &str) -> bool {
        let any = |list: &Option<Vec<String>>| {
            list.iter()
                .flatten()
                .any(|pattern| kimi_protocol::wildcard::star_match(pattern, name))
        };
        let enabled = self.enabled.as_ref().is_none_or(Vec::is_empty) || any(&self.enabled);
        enabled && !any(&self.disabled)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Image {
    pub max_edge_px: Option<u32>,
    pub read_byte_budget: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServiceEntry {
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub oauth: Option<crate::OAuthRef>,
    pub custom_headers: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Services {
    pub moonshot_search: Option<ServiceEntry>,
    pub moonshot_fetch: Option<ServiceEntry>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct SecondaryModel {
    pub default_model: Option<String>,
    pub models: Option<BTreeMap<String, String>>,
    pub force: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Cron {
    pub debug: Option<bool>,
    pub no_jitter: Option<bool>,
    pub no_stale: Option<bool>,
    pub disabled: Option<bool>,
    pub manual_tick: Option<bool>,
    pub clock: Option<String>,
    pub poll_interval_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ModelCatalog {
    pub refresh_interval_ms: Option<u64>,
    pub refresh_on_start: Option<bool>,
}

/// kimi-rs's own `[sandbox]`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Sandbox {
    /// `off` (default) | `workspace-write`.
    pub mode: Option<String>,
}

/// `[permission]`: the rules in the spellings of surface.md §3.3, as written.
#[derive(Debug, Clone, Default)]
pub struct Permission {
    pub rules: Vec<RawEntry>,
    pub deny: Vec<RawEntry>,
    pub allow: Vec<RawEntry>,
    pub ask: Vec<RawEntry>,
}

/// Serde shape of [`Permission`] (spans become lines after parsing).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PermissionSpans {
    #[serde(default)]
    pub rules: Vec<toml::Spanned<toml::Value>>,
    #[serde(default)]
    pub deny: Vec<toml::Spanned<toml::Value>>,
    #[serde(default)]
    pub allow: Vec<toml::Spanned<toml::Value>>,
    #[serde(default)]
    pub ask: Vec<toml::Spanned<toml::Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists_use_exact_names_and_star_globs() {
        let tools = Tools {
            enabled: None,
            disabled: Some(vec!["Bash".into(), "mcp__github__*".into()]),
        };
        assert!(!tools.allows("Bash"));
        assert!(tools.allows("BashOutput"));
        assert!(!tools.allows("mcp__github__issues"));
        assert!(tools.allows("mcp__gitlab__issues"));
        let only = Tools {
            enabled: Some(vec!["Read".into(), "mcp__*".into()]),
            disabled: None,
        };
        assert!(only.allows("Read") && only.allows("mcp__x__y") && !only.allows("Write"));
    }
}

/// kimi-rs's `[feedback]`: where `/feedback` sends its report bundle. Without an endpoint the
/// bundle is only saved (the reference sends to its managed platform, which kimi-rs does not).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Feedback {
    /// An `http(s)://` URL the bundle is POSTed to (`application/zip`).
    pub endpoint: Option<String>,
}
