//! Model configuration: the `config.toml` keys of surface.md §4.2 that concern providers and
//! models, the temporary model from `KIMI_MODEL_*` variables (§4.4), and resolution of the
//! model to use (`-m` > env model > `default_model`).
//!
//! Library code never reads the process environment: callers pass a lookup function, so tests
//! stay hermetic.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::request::ThinkingEffort;

pub use kimi_config::{
    ModelEntry, ModelOverrides, OAuthRef, ProviderEntry, ProviderType, ThinkingSection,
};

/// The provider `kimi-rs login` writes to `config.toml` (surface.md §5.5).
pub const MANAGED_PROVIDER: &str = "managed:kimi-code";

/// Where an API key came from, so an auth error can tell the user what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `api_key` of `[providers.<provider>]` (or of `[models.<alias>]`) in a config file.
    ConfigFile {
        path: PathBuf,
        key: String,
    },
    /// A provider-convention name in `[providers.<provider>.env]`.
    ConfigEnvTable {
        path: PathBuf,
        provider: String,
        var: String,
    },
    /// A process environment variable (the `KIMI_MODEL_*` channel).
    EnvVar(String),
    /// An account login (`oauth` of `[providers.<provider>]`): the token stored under
    /// `credentials/` by `kimi-rs login`, refreshed as it nears expiry.
    Login {
        key: String,
    },
    Scripted,
    Unknown,
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::ConfigFile { path, key } => {
                write!(f, "`{key}` in {}", path.display())
            }
            KeySource::ConfigEnvTable {
                path,
                provider,
                var,
            } => {
                write!(
                    f,
                    "`{var}` in [providers.{provider}.env] of {}",
                    path.display()
                )
            }
            KeySource::EnvVar(name) => write!(f, "the environment variable {name}"),
            KeySource::Login { key } => write!(
                f,
                "the account login `{key}` (run `kimi-rs login` to sign in again)"
            ),
            KeySource::Scripted => f.write_str("the scripted provider"),
            KeySource::Unknown => f.write_str("an unknown source"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is not a valid config file: {detail}\nFix or remove the key named above (provider keys: type, api_key, base_url, env, custom_headers; model keys: provider, model, max_context_size, …)"
    )]
    Parse { path: PathBuf, detail: String },
    #[error("{path}: `{key}` {problem}")]
    Invalid {
        path: PathBuf,
        key: String,
        problem: String,
    },
    #[error(
        "unknown model alias `{alias}` (from {origin}); configured aliases: {known}. Add a [models.\"{alias}\"] section to {path} or pick one of those"
    )]
    UnknownModel {
        alias: String,
        origin: String,
        known: String,
        path: PathBuf,
    },
    #[error(
        "no model configured: run `kimi-rs login` to use your Kimi account, or set `default_model` in {path}, pass -m <alias>, or set KIMI_MODEL_NAME and KIMI_MODEL_API_KEY"
    )]
    NoModel { path: PathBuf },
    #[error("environment variable {var} {problem}")]
    Env { var: String, problem: String },
    #[error(
        "no API key for provider `{provider}`: set `api_key` in [providers.{provider}] of {path} or `{env_name}` in [providers.{provider}.env]"
    )]
    MissingKey {
        provider: String,
        path: PathBuf,
        env_name: String,
    },
}

/// The model-related part of the one parsed `config.toml` ([`kimi_config::Config`]).
#[derive(Debug, Clone, Default)]
pub struct LlmConfig {
    pub default_model: Option<String>,
    pub providers: BTreeMap<String, ProviderEntry>,
    pub models: BTreeMap<String, ModelEntry>,
    pub thinking: Option<ThinkingSection>,
    pub path: PathBuf,
}

/// Everything needed to build a provider for one model.
// `Debug` hides the key and header values: see `redacted.rs`.
#[derive(Clone, PartialEq)]
pub struct ResolvedModel {
    /// The alias (`[models.<alias>]`), or the model name for the env model.
    pub alias: String,
    pub provider_id: String,
    pub provider_type: ProviderType,
    pub model: String,
    pub base_url: String,
    /// The key sent to the provider; empty for a login provider until the account token is
    /// filled in (see `oauth`).
    pub api_key: String,
    pub key_source: KeySource,
    /// Set when the provider authenticates with an account login instead of a key: whoever
    /// builds the provider must put the current access token into `api_key` first.
    pub oauth: Option<OAuthRef>,
    /// Extra request headers; provider entries win over `KIMI_CODE_CUSTOM_HEADERS`.
    pub custom_headers: Vec<(String, String)>,
    pub max_context_size: u64,
    pub max_output_size: Option<u32>,
    pub capabilities: Vec<String>,
    pub support_efforts: Vec<String>,
    pub default_effort: Option<String>,
    /// `KIMI_MODEL_THINKING_EFFORT` or `[thinking] forced_effort`.
    pub forced_effort: Option<ThinkingEffort>,
    pub reasoning_key: Option<String>,
    pub adaptive_thinking: Option<bool>,
    pub display_name: Option<String>,
    /// Vertex: `GOOGLE_CLOUD_PROJECT` / `GOOGLE_CLOUD_LOCATION` from `[providers.<id>.env]`.
    pub vertex_project: Option<String>,
    pub vertex_location: Option<String>,
    /// Kimi-only request tuning from `KIMI_MODEL_MAX_COMPLETION_TOKENS` (or
    /// `KIMI_MODEL_MAX_TOKENS`), `KIMI_MODEL_TEMPERATURE`, `KIMI_MODEL_TOP_P`; these win
    /// over the request's own parameters.
    pub kimi_tuning: KimiTuning,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KimiTuning {
    pub max_completion_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
}

impl KimiTuning {
    fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let float = |var: &str| -> Result<Option<f64>, ConfigError> {
            match env(var).filter(|v| !v.trim().is_empty()) {
                None => Ok(None),
                Some(text) => text
                    .trim()
                    .parse::<f64>()
                    .map(Some)
                    .map_err(|_| ConfigError::Env {
                        var: var.to_owned(),
                        problem: format!("is `{text}`, not a number"),
                    }),
            }
        };
        Ok(KimiTuning {
            max_completion_tokens: match env_number(env, "KIMI_MODEL_MAX_COMPLETION_TOKENS")? {
                Some(n) => Some(n),
                None => env_number(env, "KIMI_MODEL_MAX_TOKENS")?,
            },
            temperature: float("KIMI_MODEL_TEMPERATURE")?,
            top_p: float("KIMI_MODEL_TOP_P")?,
        })
    }
}

impl ResolvedModel {
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.iter().any(|c| c == name)
    }

    /// The thinking effort to request (surface.md §5.3): the forced effort
    /// (`KIMI_MODEL_THINKING_EFFORT` / `[thinking] forced_effort`) wins, then `requested`
    /// (the session's `/effort`, else `[thinking] effort`), then the model's `default_effort`.
    /// A level the model does not list in `support_efforts` falls back to its default, and
    /// an `always_thinking` model cannot be turned off. `None` leaves thinking unmentioned.
    pub fn effective_thinking(&self, requested: Option<ThinkingEffort>) -> Option<ThinkingEffort> {
        let default = self
            .default_effort
            .as_deref()
            .and_then(ThinkingEffort::parse);
        let mut effort = self.forced_effort.or(requested).or(default)?;
        let is_level = !matches!(effort, ThinkingEffort::Off | ThinkingEffort::On);
        if is_level
            && !self.support_efforts.is_empty()
            && !self.support_efforts.iter().any(|e| e == effort.as_str())
        {
            effort = default.unwrap_or(ThinkingEffort::On);
        }
        if effort == ThinkingEffort::Off && self.has_capability("always_thinking") {
            effort = default
                .filter(|d| *d != ThinkingEffort::Off)
                .unwrap_or(ThinkingEffort::On);
        }
        Some(effort)
    }
}

impl LlmConfig {
    /// The model sections of the parsed config, checked (providers named by models exist,
    /// context sizes, model ids). Parse problems are the config's own diagnostics.
    pub fn from_config(config: &kimi_config::Config) -> Result<LlmConfig, ConfigError> {
        let llm = LlmConfig {
            default_model: config.default_model.clone(),
            providers: config.providers.clone(),
            models: config.models.clone(),
            thinking: config.thinking.clone(),
            path: config.path.clone(),
        };
        llm.validate()?;
        Ok(llm)
    }

    /// Parses `text` as the config at `path` (tests and `doctor config PATH`); a config error
    /// (invalid TOML, a wrong type) is returned as [`ConfigError::Parse`].
    pub fn parse(text: &str, path: &Path) -> Result<LlmConfig, ConfigError> {
        let config = kimi_config::Config::parse(text, path);
        if let Err(errors) = config.check() {
            return Err(ConfigError::Parse {
                path: path.to_owned(),
                detail: errors
                    .0
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            });
        }
        LlmConfig::from_config(&config)
    }

    fn invalid(&self, key: String, problem: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: self.path.clone(),
            key,
            problem: problem.into(),
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        for (alias, model) in &self.models {
            if !self.providers.contains_key(&model.provider) {
                let known = self
                    .providers
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(self.invalid(
                    format!("models.{alias}.provider"),
                    format!(
                        "names provider `{}`, which has no [providers.{}] section (configured: {known}). Add the provider or fix the name",
                        model.provider, model.provider
                    ),
                ));
            }
            if model.max_context_size < 1 {
                return Err(self.invalid(
                    format!("models.{alias}.max_context_size"),
                    "must be at least 1 (the model's context window in tokens)",
                ));
            }
            if model.model.trim().is_empty() {
                return Err(self.invalid(
                    format!("models.{alias}.model"),
                    "is empty; set it to the provider's model id",
                ));
            }
        }
        Ok(())
    }

    fn known_aliases(&self) -> String {
        if self.models.is_empty() {
            "(none)".to_owned()
        } else {
            self.models.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }

    fn resolve_alias(
        &self,
        alias: &str,
        origin: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedModel, ConfigError> {
        let Some(entry) = self.models.get(alias) else {
            return Err(ConfigError::UnknownModel {
                alias: alias.to_owned(),
                origin: origin.to_owned(),
                known: self.known_aliases(),
                path: self.path.clone(),
            });
        };
        let Some(provider) = self.providers.get(&entry.provider) else {
            return Err(self.invalid(
                format!("models.{alias}.provider"),
                "names an unknown provider",
            ));
        };
        let provider_type = entry.protocol.unwrap_or(provider.kind);
        let (key_names, base_name) = provider_type.env_names();
        let (api_key, key_source) =
            if let Some(key) = entry.api_key.clone().filter(|k| !k.is_empty()) {
                (
                    key,
                    KeySource::ConfigFile {
                        path: self.path.clone(),
                        key: format!("models.{alias}.api_key"),
                    },
                )
            } else if let Some(key) = provider.api_key.clone().filter(|k| !k.is_empty()) {
                (
                    key,
                    KeySource::ConfigFile {
                        path: self.path.clone(),
                        key: format!("providers.{}.api_key", entry.provider),
                    },
                )
            } else if let Some(oauth) = &provider.oauth {
                (
                    String::new(),
                    KeySource::Login {
                        key: oauth.key.clone(),
                    },
                )
            } else if let Some((var, key)) = key_names.iter().find_map(|name| {
                provider
                    .env
                    .get(*name)
                    .filter(|v| !v.is_empty())
                    .map(|v| (*name, v.clone()))
            }) {
                (
                    key,
                    KeySource::ConfigEnvTable {
                        path: self.path.clone(),
                        provider: entry.provider.clone(),
                        var: var.to_owned(),
                    },
                )
            } else {
                return Err(ConfigError::MissingKey {
                    provider: entry.provider.clone(),
                    path: self.path.clone(),
                    env_name: key_names.first().copied().unwrap_or("API_KEY").to_owned(),
                });
            };
        // KIMI_CODE_BASE_URL points the managed provider elsewhere (staging, a local
        // stand-in) without rewriting config.toml, as in the reference.
        let managed_env_base = (entry.provider == MANAGED_PROVIDER)
            .then(|| env("KIMI_CODE_BASE_URL"))
            .flatten()
            .map(|u| u.trim().trim_end_matches('/').to_owned())
            .filter(|u| !u.is_empty());
        let base_url = entry
            .base_url
            .clone()
            .or(managed_env_base)
            .or_else(|| provider.base_url.clone())
            .or_else(|| provider.env.get(base_name).cloned())
            .unwrap_or_else(|| provider_type.default_base_url().to_owned());
        let overrides = entry.overrides.clone().unwrap_or_default();
        let mut custom_headers = env_custom_headers(env);
        for (name, value) in &provider.custom_headers {
            custom_headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            custom_headers.push((name.clone(), value.clone()));
        }
        Ok(ResolvedModel {
            alias: alias.to_owned(),
            provider_id: entry.provider.clone(),
            provider_type,
            model: entry.model.clone(),
            base_url,
            api_key,
            oauth: matches!(key_source, KeySource::Login { .. })
                .then(|| provider.oauth.clone())
                .flatten(),
            key_source,
            custom_headers,
            max_context_size: overrides.max_context_size.unwrap_or(entry.max_context_size),
            max_output_size: overrides.max_output_size.or(entry.max_output_size),
            capabilities: overrides
                .capabilities
                .unwrap_or_else(|| entry.capabilities.clone()),
            support_efforts: overrides
                .support_efforts
                .unwrap_or_else(|| entry.support_efforts.clone()),
            default_effort: overrides
                .default_effort
                .or_else(|| entry.default_effort.clone()),
            forced_effort: self.forced_effort(env)?,
            reasoning_key: overrides
                .reasoning_key
                .or_else(|| entry.reasoning_key.clone()),
            adaptive_thinking: overrides.adaptive_thinking.or(entry.adaptive_thinking),
            display_name: overrides
                .display_name
                .or_else(|| entry.display_name.clone()),
            vertex_project: provider.env.get("GOOGLE_CLOUD_PROJECT").cloned(),
            vertex_location: provider.env.get("GOOGLE_CLOUD_LOCATION").cloned(),
            kimi_tuning: KimiTuning::from_env(env)?,
        })
    }

    fn forced_effort(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<ThinkingEffort>, ConfigError> {
        if let Some(text) = env("KIMI_MODEL_THINKING_EFFORT").filter(|t| !t.trim().is_empty()) {
            return ThinkingEffort::parse(&text)
                .map(Some)
                .ok_or_else(|| ConfigError::Env {
                    var: "KIMI_MODEL_THINKING_EFFORT".to_owned(),
                    problem: format!(
                        "is `{text}`; use one of off, on, low, medium, high, xhigh, max"
                    ),
                });
        }
        match self
            .thinking
            .as_ref()
            .and_then(|t| t.forced_effort.as_deref())
        {
            Some(text) => ThinkingEffort::parse(text).map(Some).ok_or_else(|| {
                self.invalid(
                    "thinking.forced_effort".to_owned(),
                    format!("is `{text}`; use one of off, on, low, medium, high, xhigh, max"),
                )
            }),
            None => Ok(None),
        }
    }

    /// `[thinking] effort`, when set to a known value (`enabled = false` means off).
    pub fn thinking_effort(&self) -> Option<ThinkingEffort> {
        let section = self.thinking.as_ref()?;
        if section.enabled == Some(false) {
            return Some(ThinkingEffort::Off);
        }
        section.effort.as_deref().and_then(ThinkingEffort::parse)
    }

    /// Picks the model: `-m <alias>` > the `KIMI_MODEL_*` env model > `default_model`.
    pub fn resolve_model(
        &self,
        requested: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedModel, ConfigError> {
        if let Some(alias) = requested {
            return self.resolve_alias(alias, "-m", env);
        }
        if let Some(model) = env_model(env, self.forced_effort(env)?)? {
            return Ok(model);
        }
        match &self.default_model {
            Some(alias) => self.resolve_alias(alias, "default_model", env),
            None => Err(ConfigError::NoModel {
                path: self.path.clone(),
            }),
        }
    }
}

/// `KIMI_CODE_CUSTOM_HEADERS`: newline-separated `Name: Value` lines.
fn env_custom_headers(env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    env("KIMI_CODE_CUSTOM_HEADERS")
        .map(|text| {
            text.lines()
                .filter_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    let name = name.trim();
                    (!name.is_empty()).then(|| (name.to_owned(), value.trim().to_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn env_number<T: std::str::FromStr>(
    env: &dyn Fn(&str) -> Option<String>,
    var: &str,
) -> Result<Option<T>, ConfigError> {
    match env(var).filter(|v| !v.trim().is_empty()) {
        None => Ok(None),
        Some(text) => text
            .trim()
            .parse::<T>()
            .map(Some)
            .map_err(|_| ConfigError::Env {
                var: var.to_owned(),
                problem: format!("is `{text}`, not a positive whole number"),
            }),
    }
}

/// The temporary model of surface.md §4.4, enabled by `KIMI_MODEL_NAME`.
fn env_model(
    env: &dyn Fn(&str) -> Option<String>,
    forced_effort: Option<ThinkingEffort>,
) -> Result<Option<ResolvedModel>, ConfigError> {
    let Some(name) = env("KIMI_MODEL_NAME").filter(|n| !n.trim().is_empty()) else {
        return Ok(None);
    };
    let Some(api_key) = env("KIMI_MODEL_API_KEY").filter(|k| !k.is_empty()) else {
        return Err(ConfigError::Env {
            var: "KIMI_MODEL_API_KEY".to_owned(),
            problem: format!(
                "is not set, but KIMI_MODEL_NAME={name} is; set the key (local servers accept any value) or unset KIMI_MODEL_NAME"
            ),
        });
    };
    let provider_type = match env("KIMI_MODEL_PROVIDER_TYPE").filter(|t| !t.trim().is_empty()) {
        None => ProviderType::Kimi,
        Some(text) => ProviderType::parse(&text).ok_or_else(|| ConfigError::Env {
            var: "KIMI_MODEL_PROVIDER_TYPE".to_owned(),
            problem: format!(
                "is `{text}`; use kimi, openai, anthropic, openai_responses or google-genai"
            ),
        })?,
    };
    let max_context_size =
        env_number::<u64>(env, "KIMI_MODEL_MAX_CONTEXT_SIZE")?.unwrap_or(262_144);
    if max_context_size < 1 {
        return Err(ConfigError::Env {
            var: "KIMI_MODEL_MAX_CONTEXT_SIZE".to_owned(),
            problem: "must be at least 1".to_owned(),
        });
    }
    let capabilities = env("KIMI_MODEL_CAPABILITIES")
        .unwrap_or_else(|| "image_in,thinking".to_owned())
        .split(',')
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect();
    let adaptive_thinking = env("KIMI_MODEL_ADAPTIVE_THINKING")
        .map(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"));
    Ok(Some(ResolvedModel {
        alias: name.clone(),
        provider_id: format!("env:{}", provider_type.as_str()),
        provider_type,
        base_url: env("KIMI_MODEL_BASE_URL")
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| provider_type.default_base_url().to_owned()),
        model: name,
        api_key,
        key_source: KeySource::EnvVar("KIMI_MODEL_API_KEY".to_owned()),
        oauth: None,
        custom_headers: env_custom_headers(env),
        max_context_size,
        max_output_size: env_number(env, "KIMI_MODEL_MAX_OUTPUT_SIZE")?,
        capabilities,
        support_efforts: Vec::new(),
        default_effort: None,
        forced_effort,
        reasoning_key: env("KIMI_MODEL_REASONING_KEY").filter(|k| !k.is_empty()),
        adaptive_thinking,
        display_name: env("KIMI_MODEL_DISPLAY_NAME"),
        vertex_project: None,
        vertex_location: None,
        kimi_tuning: KimiTuning::from_env(env)?,
    }))
}

mod redacted;
#[cfg(test)]
pub(crate) mod tests;
