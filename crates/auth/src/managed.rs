//! The managed provider in `config.toml`: `[providers."managed:kimi-code"]` with the login's
//! `oauth` reference, one `[models."kimi-code/<id>"]` per model the server lists (`GET
//! <base>/models`), `default_model`, and the `[services]` search and fetch endpoints. The file
//! is edited in place with `toml_edit`, so the user's comments, order and other settings stay
//! as they were; it is replaced atomically.

use std::path::Path;

use serde_json::Value;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, TableLike, value};

use crate::endpoints::Endpoints;
use crate::error::AuthError;
use crate::http::get_bearer;
use crate::store::Storage;
use crate::{ALIAS_PREFIX, PROVIDER_NAME};

/// One model of the server's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedModel {
    pub id: String,
    pub context_length: u64,
    pub capabilities: Vec<String>,
    pub display_name: Option<String>,
    pub support_efforts: Vec<String>,
    pub default_effort: Option<String>,
    /// `anthropic` when the server serves this model over the Messages API.
    pub anthropic: bool,
}

impl ManagedModel {
    pub fn alias(&self) -> String {
        format!("{ALIAS_PREFIX}{}", self.id)
    }
}

fn flag(item: &Value, key: &str) -> bool {
    item.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn parse_model(item: &Value) -> Option<ManagedModel> {
    let id = item
        .get("id")?
        .as_str()
        .filter(|s| !s.is_empty())?
        .to_owned();
    let context_length = item
        .get("context_length")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)?;
    let mut capabilities = Vec::new();
    match item.get("supports_thinking_type").and_then(Value::as_str) {
        Some("only") => capabilities.extend(["thinking".to_owned(), "always_thinking".to_owned()]),
        Some("both") => capabilities.push("thinking".to_owned()),
        Some("no") => {}
        _ if flag(item, "supports_reasoning") => capabilities.push("thinking".to_owned()),
        _ => {}
    }
    if flag(item, "supports_image_in") {
        capabilities.push("image_in".to_owned());
    }
    if flag(item, "supports_video_in") {
        capabilities.push("video_in".to_owned());
    }
    if item
        .get("supports_tool_use")
        .and_then(Value::as_bool)
        .unwrap_or(true)
    {
        capabilities.push("tool_use".to_owned());
    }
    let efforts = item
        .get("think_efforts")
        .filter(|e| e.get("support").and_then(Value::as_bool) == Some(true));
    let support_efforts = efforts
        .and_then(|e| e.get("valid_efforts"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some(ManagedModel {
        id,
        context_length,
        capabilities,
        display_name: item
            .get("display_name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        support_efforts,
        default_effort: efforts
            .and_then(|e| e.get("default_effort"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        anthropic: item.get("protocol").and_then(Value::as_str) == Some("anthropic"),
    })
}

/// `GET <base>/models` with the access token. A 401 comes back as [`AuthError::Http`] with
/// status 401 so the caller can refresh and ask again.
pub async fn fetch_models(base_url: &str, token: &str) -> Result<Vec<ManagedModel>, AuthError> {
    let url = format!("{base_url}/models");
    let (status, body) = get_bearer(&url, token, &[]).await?;
    if status != 200 {
        return Err(AuthError::Http {
            url,
            status,
            detail: body.chars().take(300).collect(),
        });
    }
    let json: Value = serde_json::from_str(&body).map_err(|err| AuthError::Protocol {
        url: url.clone(),
        detail: format!("not JSON: {err}"),
    })?;
    let Some(items) = json.get("data").and_then(Value::as_array) else {
        return Err(AuthError::Protocol {
            url,
            detail: "no `data` list of models".to_owned(),
        });
    };
    let models: Vec<ManagedModel> = items.iter().filter_map(parse_model).collect();
    if models.is_empty() {
        return Err(AuthError::Protocol {
            url,
            detail: "the account has no models with an id and a context_length".to_owned(),
        });
    }
    Ok(models)
}

/// What [`apply`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub default_model: String,
    pub aliases: Vec<String>,
}

fn table_mut<'a>(parent: &'a mut Table, key: &str) -> Result<&'a mut dyn TableLike, AuthError> {
    let item = parent.entry(key).or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    item.as_table_like_mut().ok_or_else(|| {
        AuthError::Config(format!(
            "`{key}` in config.toml is not a table; fix it before logging in"
        ))
    })
}

fn oauth_ref(endpoints: &Endpoints, key: &str, storage: &Storage) -> InlineTable {
    let mut oauth = InlineTable::new();
    oauth.insert("storage", storage.as_str().into());
    oauth.insert("key", key.into());
    if let Some(host) = endpoints.persisted_oauth_host() {
        oauth.insert("oauth_host", host.into());
    }
    oauth
}

fn strings(list: &[String]) -> Array {
    list.iter().map(String::as_str).collect()
}

/// Writes the managed provider, its models, `default_model` and the services. Aliases of the
/// managed provider the server no longer lists are removed; fields the server does not own
/// (`overrides`, anything hand-added) survive. `default_model` is kept when it already names
/// one of the listed managed models and `keep_default` is set (a refresh), else it becomes the
/// first model.
pub fn apply(
    doc: &mut DocumentMut,
    endpoints: &Endpoints,
    key: &str,
    storage: &Storage,
    models: &[ManagedModel],
    keep_default: bool,
) -> Result<Applied, AuthError> {
    let first = models
        .first()
        .ok_or_else(|| AuthError::Config("the server listed no models".to_owned()))?;
    let root = doc.as_table_mut();
    {
        let providers = table_mut(root, "providers")?;
        let mut provider = Table::new();
        provider.insert("type", value("kimi"));
        provider.insert("base_url", value(endpoints.base_url.as_str()));
        provider.insert("oauth", value(oauth_ref(endpoints, key, storage)));
        providers.insert(PROVIDER_NAME, Item::Table(provider));
    }
    let aliases = write_models(root, PROVIDER_NAME, ALIAS_PREFIX, models)?;
    let current = root
        .get("default_model")
        .and_then(Item::as_str)
        .map(str::to_owned);
    // A refresh keeps the user's choice unless it names a managed model the server dropped.
    let default_model = match current {
        Some(current)
            if keep_default
                && (aliases.contains(&current) || !current.starts_with(ALIAS_PREFIX)) =>
        {
            current
        }
        _ => first.alias(),
    };
    match root.get_mut("default_model") {
        // Assigning the item keeps the key's comments (a comment above `default_model`).
        Some(item) => *item = value(default_model.as_str()),
        None => {
            root.insert("default_model", value(default_model.as_str()));
        }
    }
    {
        let services = table_mut(root, "services")?;
        for (name, path) in [("moonshot_search", "search"), ("moonshot_fetch", "fetch")] {
            // A service the user set up with their own key stays theirs.
            let own = services
                .get(name)
                .is_some_and(|s| s.get("oauth").is_none() && s.get("base_url").is_some());
            if own {
                continue;
            }
            let mut service = Table::new();
            service.insert(
                "base_url",
                value(format!("{}/{path}", endpoints.base_url).as_str()),
            );
            service.insert("oauth", value(oauth_ref(endpoints, key, storage)));
            services.insert(name, Item::Table(service));
        }
    }
    Ok(Applied {
        default_model,
        aliases,
    })
}

/// Writes one `[models."<prefix><id>"]` per model of `provider`, removing that provider's
/// aliases the server no longer lists; fields the server does not own (`overrides`, anything
/// hand-added) survive. Returns the aliases.
pub(crate) fn write_models(
    root: &mut Table,
    provider: &str,
    prefix: &str,
    models: &[ManagedModel],
) -> Result<Vec<String>, AuthError> {
    let aliases: Vec<String> = models.iter().map(|m| format!("{prefix}{}", m.id)).collect();
    {
        let table = table_mut(root, "models")?;
        let stale: Vec<String> = table
            .iter()
            .filter(|(alias, item)| {
                item.get("provider").and_then(Item::as_str) == Some(provider)
                    && !aliases.iter().any(|a| a == alias)
            })
            .map(|(alias, _)| alias.to_owned())
            .collect();
        for alias in stale {
            table.remove(&alias);
        }
        for (model, alias) in models.iter().zip(&aliases) {
            let entry = table
                .entry(alias)
                .or_insert_with(|| Item::Table(Table::new()));
            let Some(entry) = entry.as_table_like_mut() else {
                return Err(AuthError::Config(format!(
                    "[models.\"{alias}\"] in config.toml is not a table"
                )));
            };
            entry.insert("provider", value(provider));
            entry.insert("model", value(model.id.as_str()));
            entry.insert(
                "max_context_size",
                value(i64::try_from(model.context_length).unwrap_or(i64::MAX)),
            );
            entry.insert("capabilities", value(strings(&model.capabilities)));
            set_or_remove(entry, "display_name", model.display_name.as_deref());
            if model.support_efforts.is_empty() {
                entry.remove("support_efforts");
            } else {
                entry.insert("support_efforts", value(strings(&model.support_efforts)));
            }
            set_or_remove(entry, "default_effort", model.default_effort.as_deref());
            set_or_remove(entry, "protocol", model.anthropic.then_some("anthropic"));
            let adaptive = model.anthropic && model.capabilities.iter().any(|c| c == "thinking");
            if adaptive {
                entry.insert("adaptive_thinking", value(true));
            } else {
                entry.remove("adaptive_thinking");
            }
        }
    }
    Ok(aliases)
}

fn set_or_remove(table: &mut dyn TableLike, key: &str, text: Option<&str>) {
    match text {
        Some(text) => {
            table.insert(key, value(text));
        }
        None => {
            table.remove(key);
        }
    }
}

/// What [`remove`] took out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    pub provider: bool,
    pub aliases: Vec<String>,
    pub default_cleared: bool,
}

/// Takes the managed provider, its models, a `default_model` naming one of them and the
/// services that use the login out of the document.
pub fn remove(doc: &mut DocumentMut) -> Removed {
    let root = doc.as_table_mut();
    let mut removed = Removed::default();
    if let Some(providers) = root.get_mut("providers").and_then(Item::as_table_like_mut) {
        removed.provider = providers.remove(PROVIDER_NAME).is_some();
    }
    if let Some(models) = root.get_mut("models").and_then(Item::as_table_like_mut) {
        let managed: Vec<String> = models
            .iter()
            .filter(|(_, item)| item.get("provider").and_then(Item::as_str) == Some(PROVIDER_NAME))
            .map(|(alias, _)| alias.to_owned())
            .collect();
        for alias in &managed {
            models.remove(alias);
        }
        removed.aliases = managed;
    }
    let default = root
        .get("default_model")
        .and_then(Item::as_str)
        .map(str::to_owned);
    if default.is_some_and(|d| removed.aliases.contains(&d)) {
        root.remove("default_model");
        removed.default_cleared = true;
    }
    if let Some(services) = root.get_mut("services").and_then(Item::as_table_like_mut) {
        for name in ["moonshot_search", "moonshot_fetch"] {
            let uses_login = services.get(name).and_then(|s| s.get("oauth")).is_some();
            if uses_login {
                services.remove(name);
            }
        }
        if services.is_empty() {
            root.remove("services");
        }
    }
    removed
}

/// Reads `path` (an absent file is an empty document), lets `edit` change it and writes it
/// back atomically, keeping the file's permissions.
pub fn edit_config<T>(
    path: &Path,
    edit: impl FnOnce(&mut DocumentMut) -> Result<T, AuthError>,
) -> Result<T, AuthError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(AuthError::storage(path, format!("cannot read: {err}"))),
    };
    let mut doc: DocumentMut = text.parse().map_err(|err| {
        AuthError::storage(
            path,
            format!("is not valid TOML, so it was left alone: {err}"),
        )
    })?;
    let out = edit(&mut doc)?;
    let new_text = doc.to_string();
    if new_text == text {
        return Ok(out);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|err| AuthError::storage(dir, err))?;
    }
    let tmp = path.with_extension(format!("toml.tmp.{}", std::process::id()));
    let written = std::fs::write(&tmp, new_text.as_bytes()).and_then(|()| {
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, path)
    });
    if let Err(err) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(AuthError::storage(path, format!("cannot write: {err}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str) -> ManagedModel {
        parse_model(&serde_json::json!({
            "id": id, "context_length": 262144, "supports_reasoning": true,
            "supports_image_in": true, "display_name": "Kimi"
        }))
        .unwrap()
    }

    fn endpoints() -> Endpoints {
        Endpoints {
            oauth_host: "http://127.0.0.1:1".into(),
            base_url: "http://127.0.0.1:2/coding/v1".into(),
        }
    }

    #[test]
    fn login_keeps_the_users_file_and_logout_takes_only_its_own_part() {
        let original = "# my settings\ndefault_model = \"mine\"\n\n[providers.own]\ntype = \"openai\" # keep\napi_key = \"k\"\n\n[models.mine]\nprovider = \"own\"\nmodel = \"m\"\nmax_context_size = 10\n";
        let mut doc: DocumentMut = original.parse().unwrap();
        let applied = apply(
            &mut doc,
            &endpoints(),
            "oauth/x",
            &Storage::Keyring,
            &[model("k2"), model("k3")],
            false,
        )
        .unwrap();
        assert_eq!(applied.default_model, "kimi-code/k2");
        let text = doc.to_string();
        assert!(text.starts_with("# my settings\n"), "{text}");
        assert!(text.contains("type = \"openai\" # keep"), "{text}");
        let config = kimi_config::Config::parse(&text, Path::new("config.toml"));
        assert!(config.check().is_ok(), "{:?}", config.diagnostics);
        assert!(config.diagnostics.is_empty(), "{:?}", config.diagnostics);
        let provider = &config.providers[PROVIDER_NAME];
        let oauth = provider.oauth.as_ref().unwrap();
        assert_eq!(
            (oauth.key.as_str(), oauth.storage.as_deref()),
            ("oauth/x", Some("keyring"))
        );
        assert_eq!(
            config.models["kimi-code/k3"].capabilities,
            ["thinking", "image_in", "tool_use"]
        );
        assert_eq!(config.default_model.as_deref(), Some("kimi-code/k2"));

        // A refresh drops models the server stopped listing and keeps the chosen default.
        doc["default_model"] = value("kimi-code/k3");
        apply(
            &mut doc,
            &endpoints(),
            "oauth/x",
            &Storage::Keyring,
            &[model("k3")],
            true,
        )
        .unwrap();
        assert!(doc["models"].get("kimi-code/k2").is_none());
        assert_eq!(doc["default_model"].as_str(), Some("kimi-code/k3"));

        let removed = remove(&mut doc);
        assert!(removed.provider && removed.default_cleared);
        assert_eq!(removed.aliases, ["kimi-code/k3"]);
        let text = doc.to_string();
        assert!(
            text.contains("[providers.own]") && text.contains("[models.mine]"),
            "{text}"
        );
        assert!(
            !text.contains("services") && !text.contains("kimi-code"),
            "{text}"
        );
    }
}
