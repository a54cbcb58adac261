//! The session's model and thinking effort as ACP config options (`model`, `thinking`):
//! listed with each session, changed with `session/set_config_option` or the older
//! `session/set_model`, and re-sent (`config_option_update`) when the model changes. Both go to
//! the engine as `Op::SetModel` / `Op::SetEffort`, like the TUI's `/model` and `/effort`.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
};
use agent_client_protocol::{JsonRpcRequest, JsonRpcResponse};
use kimi_core::engine::agent::AgentHandle;
use kimi_protocol::ops::Op;
use serde::{Deserialize, Serialize};

pub const MODEL: &str = "model";
pub const THINKING: &str = "thinking";

/// Every effort a model without its own list accepts (as `/effort` offers them).
const EFFORTS: [&str; 7] = ["off", "on", "low", "medium", "high", "xhigh", "max"];

/// `session/set_model` (unstable in the ACP schema; editors that predate config options send
/// it): switch the session to the model `modelId` names.
#[derive(Debug, Clone, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "session/set_model", response = SetSessionModelResponse)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionModelRequest {
    pub session_id: String,
    pub model_id: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonRpcResponse)]
pub struct SetSessionModelResponse {}

/// The options as they are now, or with `pending` (an option id and the value just sent to
/// the engine, which applies it after this answer); `None` when the session cannot switch models.
pub fn options(
    handle: &AgentHandle,
    pending: Option<(&str, &str)>,
) -> Option<Vec<SessionConfigOption>> {
    let config = &handle.runtime().config;
    let models = config.models.as_ref()?;
    let mut current = config.model.get();
    if let Some((MODEL, alias)) = pending {
        alias.clone_into(&mut current.alias);
    }
    let listed = models.options();
    let mut choices: Vec<SessionConfigSelectOption> = listed
        .iter()
        .map(|m| {
            SessionConfigSelectOption::new(m.alias.clone(), m.alias.clone())
                .description(format!("{} ({})", m.model, m.provider))
        })
        .collect();
    if !listed.iter().any(|m| m.alias == current.alias) {
        choices.insert(
            0,
            SessionConfigSelectOption::new(current.alias.clone(), current.alias.clone()),
        );
    }
    let efforts: Vec<String> = match listed.iter().find(|m| m.alias == current.alias) {
        Some(m) if !m.efforts.is_empty() => std::iter::once("off".to_owned())
            .chain(m.efforts.iter().filter(|e| *e != "off").cloned())
            .collect(),
        _ => EFFORTS.iter().map(|e| (*e).to_owned()).collect(),
    };
    // No effort in the request means the model does not think.
    let effort = match pending {
        Some((THINKING, effort)) => effort.trim().to_ascii_lowercase(),
        _ => current
            .params
            .thinking
            .map_or("off", |e| e.as_str())
            .to_owned(),
    };
    Some(vec![
        SessionConfigOption::select(MODEL, "Model", current.alias.clone(), choices)
            .category(SessionConfigOptionCategory::Model)
            .description("The model the next requests go to".to_owned()),
        SessionConfigOption::select(
            THINKING,
            "Thinking",
            effort,
            efforts
                .into_iter()
                .map(|e| SessionConfigSelectOption::new(e.clone(), e))
                .collect::<Vec<_>>(),
        )
        .category(SessionConfigOptionCategory::ThoughtLevel)
        .description("How hard the model thinks before answering".to_owned()),
    ])
}

/// Check `value` for option `id` and send the engine the switch. The error says what is wrong.
pub fn apply(handle: &AgentHandle, id: &str, value: &str) -> Result<(), String> {
    let config = &handle.runtime().config;
    let Some(models) = config.models.as_ref() else {
        return Err(
            "this session cannot switch models (it was opened without the model list of config.toml)"
                .to_owned(),
        );
    };
    match id {
        MODEL => {
            let listed = models.options();
            if !listed.iter().any(|m| m.alias == value) && config.model.get().alias != value {
                let known: Vec<&str> = listed.iter().map(|m| m.alias.as_str()).collect();
                return Err(format!(
                    "no model `{value}`; the session can use {}",
                    known.join(", ")
                ));
            }
            handle.send(Op::SetModel {
                alias: value.to_owned(),
            });
            Ok(())
        }
        THINKING => {
            kimi_core::engine::model::parse_effort(value)?;
            handle.send(Op::SetEffort {
                effort: value.to_owned(),
            });
            Ok(())
        }
        other => Err(format!(
            "no config option `{other}`; this agent has `{MODEL}` and `{THINKING}`"
        )),
    }
}
