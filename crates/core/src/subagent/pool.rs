//! The subagent model pool (`[subagent] models`, kimi-rs's form of the reference's secondary
//! models): cheaper models a caller may hand a subagent's task to with the `model` parameter
//! of `Agent` / `AgentSwarm`. The front end resolves every pooled alias to a provider when
//! the session opens (a bad alias is a warning, never a silent gap); this module picks one.

use std::sync::Arc;

use kimi_llm::{ModelParams, Provider};

pub use kimi_config::PRIMARY_MODEL;

/// One pooled model, ready to use.
#[derive(Clone)]
pub struct PoolModel {
    pub alias: String,
    /// What the model is good for (shown in the tools' descriptions).
    pub hint: String,
    pub provider: Arc<dyn Provider>,
    pub params: ModelParams,
    pub max_context_tokens: u64,
}

impl std::fmt::Debug for PoolModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolModel")
            .field("alias", &self.alias)
            .field("model", &self.provider.model())
            .finish_non_exhaustive()
    }
}

/// The pool of one session.
#[derive(Debug, Clone, Default)]
pub struct ModelPool {
    models: Vec<PoolModel>,
    /// The alias used when a call names none (`None` = the session's own model).
    default: Option<String>,
    /// What went wrong building the pool (an alias that does not resolve, a default outside
    /// the pool); shown by every front end when the session opens.
    pub warnings: Vec<String>,
}

/// The model a subagent runs on.
#[derive(Debug, Clone)]
pub enum ModelPick {
    /// The caller's own model.
    Primary,
    Pooled(PoolModel),
}

/// A `model` argument that is not in the pool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    #[error(
        "no subagent model pool is configured, so `model` cannot pick `{0}`; omit `model` (subagents use the session's model), or add the alias to `[subagent] models` in config.toml"
    )]
    NoPool(String),
    #[error("model `{name}` is not in the subagent model pool; use one of: {choices}")]
    Unknown { name: String, choices: String },
}

impl ModelPool {
    /// A pool of `models`; `default` must be one of them or `primary` (anything else is left
    /// out with a warning).
    pub fn new(models: Vec<PoolModel>, default: Option<String>, warnings: Vec<String>) -> Self {
        let mut pool = ModelPool {
            models,
            default: None,
            warnings,
        };
        match default.as_deref().map(str::trim) {
            None | Some("") => {}
            Some(PRIMARY_MODEL) => {}
            Some(alias) if pool.get(alias).is_some() => pool.default = Some(alias.to_owned()),
            Some(alias) => pool.warnings.push(format!(
                "[subagent] default_model = \"{alias}\" is not in [subagent] models ({}); subagents use the session's model",
                pool.choices()
            )),
        }
        pool
    }

    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    pub fn models(&self) -> &[PoolModel] {
        &self.models
    }

    fn get(&self, alias: &str) -> Option<&PoolModel> {
        self.models.iter().find(|m| m.alias == alias)
    }

    /// `primary` and the pooled aliases, comma-separated.
    pub fn choices(&self) -> String {
        std::iter::once(PRIMARY_MODEL)
            .chain(self.models.iter().map(|m| m.alias.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The model for a call's `model` argument (`None` = the pool's default).
    pub fn pick(&self, requested: Option<&str>) -> Result<ModelPick, PoolError> {
        let name = requested.map(str::trim).filter(|n| !n.is_empty());
        let name = match (name, &self.default) {
            (Some(name), _) => name,
            (None, Some(default)) => default.as_str(),
            (None, None) => return Ok(ModelPick::Primary),
        };
        if name == PRIMARY_MODEL {
            return Ok(ModelPick::Primary);
        }
        if self.is_empty() {
            return Err(PoolError::NoPool(name.to_owned()));
        }
        self.get(name)
            .cloned()
            .map(ModelPick::Pooled)
            .ok_or_else(|| PoolError::Unknown {
                name: name.to_owned(),
                choices: self.choices(),
            })
    }

    /// The paragraph the `Agent` / `AgentSwarm` descriptions add (empty without a pool).
    pub fn describe(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let default = self.default.as_deref().unwrap_or(PRIMARY_MODEL);
        let mut text = format!(
            "\n\nModels for subagents (pass via `model`; default {default}; `{PRIMARY_MODEL}` is your own model):"
        );
        for model in &self.models {
            text.push_str(&format!("\n- {}", model.alias));
            if !model.hint.trim().is_empty() {
                text.push_str(&format!(": {}", model.hint.trim()));
            }
        }
        text
    }
}
