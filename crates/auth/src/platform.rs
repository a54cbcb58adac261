//! Kimi Platform API-key login (surface.md §5.5): platform.kimi.com
//! (`https://api.moonshot.cn/v1`) or platform.kimi.ai (`https://api.moonshot.ai/v1`). The key
//! is checked against the platform's model list; the models whose ids start with `kimi-k` are
//! written into `config.toml` as `kimi-platform/<id>` under `[providers.kimi-platform]`, and
//! the first becomes the default model.

use toml_edit::{DocumentMut, Item, Table, value};

use crate::endpoints::Region;
use crate::error::AuthError;
use crate::managed::{self, Applied, ManagedModel};

/// The provider id the API-key login writes.
pub const PROVIDER: &str = "kimi-platform";
/// Its model aliases are `kimi-platform/<model id>`.
pub const ALIAS_PREFIX: &str = "kimi-platform/";
/// Only the Kimi K models are imported.
pub const MODEL_PREFIX: &str = "kimi-k";

/// The platform's API of a region: platform.kimi.com serves mainland China, platform.kimi.ai
/// the rest.
pub fn base_url(region: Region) -> &'static str {
    match region {
        Region::MainlandCn => "https://api.moonshot.cn/v1",
        Region::Global => "https://api.moonshot.ai/v1",
    }
}

/// The console where keys are made, for messages.
pub fn console(region: Region) -> &'static str {
    match region {
        Region::MainlandCn => "platform.kimi.com",
        Region::Global => "platform.kimi.ai",
    }
}

/// The `kimi-k*` models the key can use (`GET <base>/models`). A refused key comes back as
/// [`AuthError::Http`] with the server's status.
pub async fn fetch_models(base_url: &str, api_key: &str) -> Result<Vec<ManagedModel>, AuthError> {
    let models: Vec<ManagedModel> = managed::fetch_models(base_url, api_key)
        .await?
        .into_iter()
        .filter(|m| m.id.starts_with(MODEL_PREFIX))
        .collect();
    if models.is_empty() {
        return Err(AuthError::Protocol {
            url: format!("{base_url}/models"),
            detail: format!("the key can use no {MODEL_PREFIX}* model"),
        });
    }
    Ok(models)
}

/// Writes the provider with its key, its models and `default_model` (the first model).
pub fn apply(
    doc: &mut DocumentMut,
    base_url: &str,
    api_key: &str,
    models: &[ManagedModel],
) -> Result<Applied, AuthError> {
    let root = doc.as_table_mut();
    let providers = root
        .entry("providers")
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_like_mut()
        .ok_or_else(|| {
            AuthError::Config("`providers` in config.toml is not a table; fix it first".into())
        })?;
    let mut provider = Table::new();
    provider.insert("type", value("kimi"));
    provider.insert("base_url", value(base_url));
    provider.insert("api_key", value(api_key));
    providers.insert(PROVIDER, Item::Table(provider));
    let aliases = managed::write_models(root, PROVIDER, ALIAS_PREFIX, models)?;
    let default_model = aliases
        .first()
        .cloned()
        .ok_or_else(|| AuthError::Config("the platform listed no models".to_owned()))?;
    match root.get_mut("default_model") {
        Some(item) => *item = value(default_model.as_str()),
        None => {
            root.insert("default_model", value(default_model.as_str()));
        }
    }
    Ok(Applied {
        default_model,
        aliases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_provider_with_its_key_and_the_kimi_k_models() {
        let model = |id: &str| ManagedModel {
            id: id.to_owned(),
            context_length: 262144,
            capabilities: vec!["tool_use".to_owned()],
            display_name: None,
            support_efforts: Vec::new(),
            default_effort: None,
            anthropic: false,
        };
        let mut doc: DocumentMut = "# mine\n[providers.own]\ntype = \"openai\"\n"
            .parse()
            .unwrap();
        let applied = apply(
            &mut doc,
            "http://127.0.0.1:9/v1",
            "sk-p",
            &[model("kimi-k2"), model("kimi-k2-turbo")],
        )
        .unwrap();
        assert_eq!(applied.default_model, "kimi-platform/kimi-k2");
        let text = doc.to_string();
        let config = kimi_config::Config::parse(&text, std::path::Path::new("config.toml"));
        assert!(config.check().is_ok(), "{:?}", config.diagnostics);
        assert_eq!(config.providers[PROVIDER].api_key.as_deref(), Some("sk-p"));
        assert_eq!(
            config.models["kimi-platform/kimi-k2-turbo"].model,
            "kimi-k2-turbo"
        );
        assert!(text.contains("# mine\n[providers.own]"), "{text}");
    }
}
