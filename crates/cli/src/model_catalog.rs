//! The models a session may switch to (`/model`, ACP `session/set_model`): every `[models]`
//! alias of config.toml plus the `KIMI_MODEL_*` environment model, built exactly like
//! `-m <alias>` at start-up.

use std::sync::Arc;

use kimi_config::Config;
use kimi_core::engine::model::{ActiveModel, ModelOption, ModelResolver};
use kimi_llm::ThinkingEffort;

use crate::run::resolve_model_with;

pub struct ConfigModels {
    config: Arc<Config>,
}

impl ConfigModels {
    pub fn new(config: Arc<Config>) -> Self {
        ConfigModels { config }
    }

    /// The environment model's name, when `KIMI_MODEL_NAME` sets one.
    fn env_model() -> Option<String> {
        std::env::var("KIMI_MODEL_NAME")
            .ok()
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
    }
}

impl ModelResolver for ConfigModels {
    fn options(&self) -> Vec<ModelOption> {
        let mut options: Vec<ModelOption> = self
            .config
            .models
            .iter()
            .map(|(alias, entry)| ModelOption {
                alias: alias.clone(),
                model: entry.model.clone(),
                provider: entry.provider.clone(),
                efforts: entry.support_efforts.clone(),
            })
            .collect();
        if let Some(name) = Self::env_model()
            && !self.config.models.contains_key(&name)
        {
            options.insert(
                0,
                ModelOption {
                    alias: name.clone(),
                    model: name,
                    provider: "env".to_owned(),
                    efforts: Vec::new(),
                },
            );
        }
        options
    }

    fn capabilities(&self, alias: &str) -> Option<Vec<String>> {
        let llm = kimi_llm::LlmConfig::from_config(&self.config).ok()?;
        let env = |name: &str| std::env::var(name).ok();
        let requested = self.config.models.contains_key(alias).then_some(alias);
        let model = llm.resolve_model(requested, &env).ok()?;
        (model.alias == alias).then_some(model.capabilities)
    }

    fn resolve(&self, alias: &str, effort: Option<ThinkingEffort>) -> Result<ActiveModel, String> {
        // A `[models]` alias wins; the environment model is asked for by its name.
        let requested = if self.config.models.contains_key(alias) {
            Some(alias)
        } else if Self::env_model().as_deref() == Some(alias) {
            None
        } else {
            let mut known: Vec<String> = self.options().into_iter().map(|o| o.alias).collect();
            if known.is_empty() {
                known.push("(none configured)".to_owned());
            }
            return Err(format!(
                "there is no model `{alias}`; configured models: {}. Add it under [models] in {}",
                known.join(", "),
                self.config.path.display()
            ));
        };
        let choice = resolve_model_with(&self.config, requested, effort)
            .map_err(|err| format!("cannot use the model `{alias}`: {err:#}"))?;
        Ok(ActiveModel {
            alias: choice.alias,
            provider: choice.provider,
            params: choice.params,
            max_context_tokens: choice.max_context_tokens,
            requested_effort: effort,
        })
    }
}
