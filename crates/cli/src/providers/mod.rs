//! `kimi-rs provider add|remove|list|catalog list|catalog add` (surface.md §1.3): manage the
//! `[providers]` and `[models]` of `config.toml` (edited in place, comments kept) from the
//! models.dev catalog (bundled snapshot, or `--url`) or a custom registry's `api.json`.

pub mod catalog;
pub mod tui;

use std::path::Path;

use anyhow::{Context, bail};
use toml_edit::{Array, DocumentMut, Item, Table, value};

use catalog::{Catalog, Vendor};

/// Edits `config.toml`; nothing is written when `f` fails.
fn edit<T>(
    home: &Path,
    f: impl FnOnce(&mut DocumentMut) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    Ok(kimi_auth::managed::edit_config(
        &home.join("config.toml"),
        |doc| f(doc).map_err(|e| kimi_auth::AuthError::Config(format!("{e:#}"))),
    )?)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn table<'a>(doc: &'a mut DocumentMut, key: &str) -> anyhow::Result<&'a mut Table> {
    let item = doc.as_table_mut().entry(key).or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    item.as_table_mut()
        .with_context(|| format!("`{key}` in config.toml is not a table"))
}

/// Removes provider `id` and its models; clears `default_model` when it was one of them.
fn remove_provider(doc: &mut DocumentMut, id: &str) -> (bool, Vec<String>, bool) {
    let root = doc.as_table_mut();
    let had = root
        .get_mut("providers")
        .and_then(Item::as_table_like_mut)
        .is_some_and(|p| p.remove(id).is_some());
    let mut aliases = Vec::new();
    if let Some(models) = root.get_mut("models").and_then(Item::as_table_like_mut) {
        aliases = models
            .iter()
            .filter(|(_, m)| m.get("provider").and_then(Item::as_str) == Some(id))
            .map(|(a, _)| a.to_owned())
            .collect();
        for alias in &aliases {
            models.remove(alias);
        }
    }
    let default = root
        .get("default_model")
        .and_then(Item::as_str)
        .map(str::to_owned);
    let cleared = default.is_some_and(|d| aliases.contains(&d));
    if cleared {
        root.remove("default_model");
    }
    (had, aliases, cleared)
}

/// What to import of one vendor.
struct Import<'a> {
    id: &'a str,
    vendor: &'a Vendor,
    api_key: &'a str,
    base_url: Option<&'a str>,
    source: Option<&'a str>,
    /// Only these model ids (empty: every usable model of the vendor).
    only: &'a [String],
}

/// Writes one vendor as `[providers.<id>]` and `[models."<id>/<model>"]` (replacing what was
/// there under that id); returns the aliases.
fn import(doc: &mut DocumentMut, import: &Import<'_>) -> anyhow::Result<Vec<String>> {
    let kind = catalog::provider_type(import.id, import.vendor).map_err(anyhow::Error::msg)?;
    let base_url = import.base_url.or(import.vendor.api.as_deref());
    if kind == "openai"
        && base_url.is_none()
        && import.vendor.npm.as_deref() != Some("@ai-sdk/openai")
    {
        bail!(
            "`{}` declares no API URL; pass --base-url with its OpenAI-compatible endpoint",
            import.id
        );
    }
    let usable: Vec<&String> = catalog::usable(import.vendor).map(|(id, _)| id).collect();
    if let Some(unknown) = import.only.iter().find(|m| !usable.contains(m)) {
        bail!(
            "`{unknown}` is not a usable model of `{}`; pick from: {}",
            import.id,
            usable
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    remove_provider(doc, import.id);
    let mut provider = Table::new();
    provider.insert("type", value(kind));
    provider.insert("api_key", value(import.api_key));
    if let Some(url) = base_url {
        provider.insert("base_url", value(url));
    }
    if let Some(source) = import.source {
        let mut src = toml_edit::InlineTable::new();
        src.insert("url", source.into());
        provider.insert("source", value(src));
    }
    table(doc, "providers")?.insert(import.id, Item::Table(provider));
    let models = table(doc, "models")?;
    let mut aliases = Vec::new();
    for (model_id, model) in catalog::usable(import.vendor)
        .filter(|(id, _)| import.only.is_empty() || import.only.contains(id))
    {
        let alias = format!("{}/{model_id}", import.id);
        let mut entry = Table::new();
        entry.insert("provider", value(import.id));
        entry.insert("model", value(model_id.as_str()));
        entry.insert(
            "max_context_size",
            value(i64::try_from(model.limit.context).unwrap_or(i64::MAX)),
        );
        if kind == "anthropic" && model.limit.output > 0 {
            entry.insert(
                "max_output_size",
                value(i64::try_from(model.limit.output).unwrap_or(i64::MAX)),
            );
        }
        let caps: Array = catalog::capabilities(model)
            .iter()
            .map(String::as_str)
            .collect();
        entry.insert("capabilities", value(caps));
        if !model.name.is_empty() {
            entry.insert("display_name", value(model.name.as_str()));
        }
        models.insert(&alias, Item::Table(entry));
        aliases.push(alias);
    }
    if aliases.is_empty() {
        bail!("`{}` lists no usable models", import.id);
    }
    Ok(aliases)
}

fn api_key(given: Option<String>, env_name: &str) -> anyhow::Result<String> {
    given
        .or_else(|| std::env::var(env_name).ok())
        .filter(|k| !k.trim().is_empty())
        .with_context(|| format!("an API key is required: pass --api-key or set {env_name}"))
}

/// `provider list [--json]`.
pub fn list(json: bool) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let config = crate::config::load(&home)?;
    if json {
        let providers: serde_json::Map<String, serde_json::Value> = config
            .providers
            .iter()
            .map(|(id, p)| {
                let models: Vec<&String> = config
                    .models
                    .iter()
                    .filter(|(_, m)| &m.provider == id)
                    .map(|(a, _)| a)
                    .collect();
                (
                    id.clone(),
                    serde_json::json!({"type": p.kind.as_str(), "base_url": p.base_url, "models": models, "login": p.oauth.is_some()}),
                )
            })
            .collect();
        println!("{}", serde_json::Value::Object(providers));
        return Ok(0);
    }
    for line in list_lines(&config) {
        println!("{line}");
    }
    Ok(0)
}

/// One line per provider of `config` (type, model count, login, source): `provider list` and
/// the TUI's `/provider`.
pub fn list_lines(config: &kimi_config::Config) -> Vec<String> {
    let mut lines = Vec::new();
    if config.providers.is_empty() {
        lines.push(
            "No providers configured. Add one with `kimi-rs provider catalog add <id> --api-key …` or `kimi-rs login`."
                .to_owned(),
        );
    }
    for (id, provider) in &config.providers {
        let count = config.models.values().filter(|m| &m.provider == id).count();
        let mut line = format!("{id}  {}  {count} model(s)", provider.kind.as_str());
        if provider.oauth.is_some() {
            line.push_str("  (Kimi login)");
        }
        if let Some(source) = provider
            .source
            .as_ref()
            .and_then(|s| s.get("url"))
            .and_then(|u| u.as_str())
        {
            line.push_str(&format!("  from {source}"));
        }
        lines.push(line);
    }
    lines
}

/// `provider remove <id>`.
pub fn remove(id: &str) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    match remove_in(&home, id)? {
        Ok(text) => {
            println!("{text}");
            Ok(0)
        }
        Err(text) => {
            eprintln!("kimi-rs: {text}");
            Ok(1)
        }
    }
}

/// Remove provider `id` and its models from the home's `config.toml`: what was done, or
/// (inner `Err`) that there is no such provider.
pub fn remove_in(home: &std::path::Path, id: &str) -> anyhow::Result<Result<String, String>> {
    let mut summary = (false, Vec::new(), false);
    edit(home, |doc| {
        summary = remove_provider(doc, id);
        Ok(())
    })?;
    let (had, aliases, cleared) = summary;
    if !had && aliases.is_empty() {
        return Ok(Err(format!(
            "there is no provider `{id}` in config.toml (see `kimi-rs provider list`)"
        )));
    }
    let mut text = format!("Removed provider `{id}` and {} model(s)", aliases.len());
    if cleared {
        text.push_str("; default_model is unset");
    }
    text.push('.');
    Ok(Ok(text))
}

/// `provider catalog list [id] [--filter] [--url] [--json]`.
pub fn catalog_list(
    id: Option<&str>,
    filter: Option<&str>,
    url: Option<&str>,
    json: bool,
) -> anyhow::Result<u8> {
    let catalog: Catalog = runtime()?.block_on(catalog::load(url, None))?;
    let filter = filter.map(str::to_lowercase);
    let keep = |text: &str| {
        filter
            .as_ref()
            .is_none_or(|f| text.to_lowercase().contains(f))
    };
    match id {
        None => {
            for (vid, vendor) in catalog.iter().filter(|(v, x)| keep(v) || keep(&x.name)) {
                let kind = catalog::provider_type(vid, vendor).unwrap_or("unsupported");
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"id": vid, "name": vendor.name, "type": kind, "models": vendor.models.len()})
                    );
                } else {
                    println!(
                        "{vid}  {}  {kind}  {} model(s)",
                        vendor.name,
                        vendor.models.len()
                    );
                }
            }
        }
        Some(vid) => {
            let vendor = catalog
                .get(vid)
                .with_context(|| format!("the catalog has no provider `{vid}`"))?;
            for (mid, model) in catalog::usable(vendor).filter(|(m, _)| keep(m)) {
                let caps = catalog::capabilities(model).join(",");
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"id": mid, "name": model.name, "context": model.limit.context, "capabilities": caps})
                    );
                } else {
                    println!(
                        "{mid}  {}  context {}  {caps}",
                        model.name, model.limit.context
                    );
                }
            }
        }
    }
    Ok(0)
}

/// `provider catalog add <id> --api-key K [--default-model M] [--base-url U] [--url]`.
pub fn catalog_add(
    id: &str,
    key: Option<String>,
    default_model: Option<&str>,
    base_url: Option<&str>,
    url: Option<&str>,
) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let catalog = runtime()?.block_on(catalog::load(url, None))?;
    let vendor = catalog.get(id).with_context(|| {
        format!("the catalog has no provider `{id}` (see `kimi-rs provider catalog list`)")
    })?;
    let key = api_key(key, "KIMI_REGISTRY_API_KEY")?;
    let default = edit(&home, |doc| {
        let aliases = import(
            doc,
            &Import {
                id,
                vendor,
                api_key: &key,
                base_url,
                source: None,
                only: &[],
            },
        )?;
        let Some(model) = default_model else {
            return Ok(format!("{} model(s)", aliases.len()));
        };
        let alias = format!("{id}/{model}");
        if !aliases.contains(&alias) {
            bail!(
                "`{model}` is not a model of `{id}`; pick one of: {}",
                aliases.join(", ")
            );
        }
        doc.as_table_mut()
            .insert("default_model", value(alias.as_str()));
        Ok(format!(
            "{} model(s); default_model = {alias}",
            aliases.len()
        ))
    })?;
    println!("Added provider `{id}` to config.toml: {default}.");
    Ok(0)
}

/// `provider add <url> --api-key K`: every provider of a custom registry's `api.json`.
pub fn add(url: &str, key: Option<String>) -> anyhow::Result<u8> {
    let home = kimi_store::home_from_env()?;
    let key = api_key(key, "KIMI_REGISTRY_API_KEY")?;
    let catalog = runtime()?.block_on(catalog::load(Some(url), Some(&key)))?;
    let summary = edit(&home, |doc| {
        let mut lines = Vec::new();
        for (id, vendor) in &catalog {
            let aliases = import(
                doc,
                &Import {
                    id,
                    vendor,
                    api_key: &key,
                    base_url: None,
                    source: Some(url),
                    only: &[],
                },
            )?;
            lines.push(format!("{id} ({} model(s))", aliases.len()));
        }
        Ok(lines.join(", "))
    })?;
    println!("Imported from {url}: {summary}.");
    Ok(0)
}
