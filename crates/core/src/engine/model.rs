//! The model an agent talks to, switchable while the session runs (`/model`, `/effort`, ACP's
//! `session/set_model`). The front end that opens the session knows how to build providers
//! from config.toml and hands the engine a [`ModelResolver`]; the engine keeps the model in use
//! in a [`ModelSlot`] that every request reads, so a switch applies from the next request on.

use std::sync::{Arc, Mutex};

use kimi_llm::{ModelParams, Provider, ThinkingEffort};
use kimi_protocol::RecordPayload;
use kimi_protocol::ops::Event;
use kimi_protocol::record::ModelSet;

/// A model ready to be asked: its provider, request parameters and context window.
#[derive(Clone)]
pub struct ActiveModel {
    /// What `/model` calls it: a `[models]` alias or the environment model's name.
    pub alias: String,
    pub provider: Arc<dyn Provider>,
    pub params: ModelParams,
    /// The context window in tokens (0 = unknown).
    pub max_context_tokens: u64,
    /// The effort the session asked for with `/effort` (`None`: config.toml's `[thinking]`).
    pub requested_effort: Option<ThinkingEffort>,
}

impl ActiveModel {
    /// A model without an alias of its own (tests, print mode before a catalog): named after
    /// the provider's model id.
    pub fn new(provider: Arc<dyn Provider>, params: ModelParams, max_context_tokens: u64) -> Self {
        ActiveModel {
            alias: provider.model().to_owned(),
            provider,
            params,
            max_context_tokens,
            requested_effort: None,
        }
    }
}

impl std::fmt::Debug for ActiveModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveModel")
            .field("alias", &self.alias)
            .field("model", &self.provider.model())
            .field("params", &self.params)
            .field("max_context_tokens", &self.max_context_tokens)
            .finish_non_exhaustive()
    }
}

/// One model a session may switch to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOption {
    pub alias: String,
    /// The provider's model id.
    pub model: String,
    /// The `[providers]` entry (or `env` for the `KIMI_MODEL_*` model).
    pub provider: String,
    /// Effort levels the model accepts (empty: any).
    pub efforts: Vec<String>,
}

/// Builds models by alias; implemented by the front end that read config.toml.
pub trait ModelResolver: Send + Sync {
    /// Every model the session may switch to, in the order to offer them.
    fn options(&self) -> Vec<ModelOption>;
    /// The model `alias` names, asked with `effort` (or config.toml's `[thinking]` when
    /// `None`). The error says what is wrong and what to do.
    fn resolve(&self, alias: &str, effort: Option<ThinkingEffort>) -> Result<ActiveModel, String>;
    /// The capability flags (`image_in`, `video_in`, …) of the model `alias` names; `None`
    /// when unknown, in which case prompts are sent as they are.
    fn capabilities(&self, _alias: &str) -> Option<Vec<String>> {
        None
    }
}

/// The model in use; shared by the turn loop, compaction and the op dispatcher.
pub struct ModelSlot(Mutex<ActiveModel>);

impl ModelSlot {
    pub fn new(model: ActiveModel) -> Self {
        ModelSlot(Mutex::new(model))
    }

    /// A copy of the model in use (cheap: the provider is shared).
    pub fn get(&self) -> ActiveModel {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub fn set(&self, model: ActiveModel) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = model;
    }
}

impl std::fmt::Debug for ModelSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// Parses an effort as `/effort` and config.toml write it; the error lists the valid ones.
pub fn parse_effort(text: &str) -> Result<ThinkingEffort, String> {
    ThinkingEffort::parse(text).ok_or_else(|| {
        format!(
            "`{}` is not a thinking effort; use one of off, on, low, medium, high, xhigh, max",
            text.trim()
        )
    })
}

/// `Op::SetModel`: build the model `alias` names (keeping the session's `/effort`), journal the
/// switch and use it from the next request on.
pub(crate) fn set_model(rt: &super::runtime::Runtime, alias: &str) {
    let alias = alias.trim();
    let Some(models) = &rt.config.models else {
        rt.emit(Event::Error {
            message: format!(
                "this session cannot switch models (it was opened without the model list of config.toml); restart with `-m {alias}`"
            ),
        });
        return;
    };
    let current = rt.config.model.get();
    match models.resolve(alias, current.requested_effort) {
        Ok(model) => {
            let record = ModelSet {
                alias: Some(model.alias.clone()),
                effort: None,
            };
            // A journal that refused the switch reported why; the model stays as it was.
            if rt.commit(vec![RecordPayload::ModelSet(record)]) {
                rt.config.model.set(model.clone());
                announce(rt, &model);
            }
        }
        Err(message) => rt.emit(Event::Error { message }),
    }
}

/// `Op::SetEffort`: ask the model in use with another thinking effort from the next request on.
/// A model that does not offer that level gets its nearest one, and the user is told.
pub(crate) fn set_effort(rt: &super::runtime::Runtime, text: &str) {
    let effort = match parse_effort(text) {
        Ok(effort) => effort,
        Err(message) => {
            rt.emit(Event::Error { message });
            return;
        }
    };
    let current = rt.config.model.get();
    let model = match &rt.config.models {
        Some(models) => models.resolve(&current.alias, Some(effort)),
        None => {
            let mut model = current;
            model.params.thinking = Some(effort);
            model.requested_effort = Some(effort);
            Ok(model)
        }
    };
    let model = match model {
        Ok(model) => model,
        Err(message) => {
            rt.emit(Event::Error { message });
            return;
        }
    };
    let record = ModelSet {
        alias: None,
        effort: Some(effort.as_str().to_owned()),
    };
    if !rt.commit(vec![RecordPayload::ModelSet(record)]) {
        return;
    }
    rt.config.model.set(model.clone());
    if model.params.thinking != Some(effort) {
        let sent = model
            .params
            .thinking
            .map_or("nothing", ThinkingEffort::as_str);
        rt.emit(Event::Warning {
            message: format!(
                "`{}` does not offer the thinking effort `{}`; its requests ask for `{sent}` instead",
                model.alias,
                effort.as_str()
            ),
        });
    }
    announce(rt, &model);
}

fn announce(rt: &super::runtime::Runtime, model: &ActiveModel) {
    rt.emit(Event::ModelChanged {
        alias: model.alias.clone(),
        model: model.provider.model().to_owned(),
        effort: model.params.thinking.map(|e| e.as_str().to_owned()),
        context_window: model.max_context_tokens,
    });
}
