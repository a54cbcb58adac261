//! The terminal UI's `/provider` manager beyond list and remove: browse the bundled models.dev
//! catalog (`/provider catalog [id|filter]`) and add a vendor from it
//! (`/provider add <id> <key|$VAR> [model …]`), written into `config.toml` exactly as
//! `kimi-rs provider catalog add` writes it. Offline by design: the TUI reads only the
//! bundled snapshot (a live catalog is `kimi-rs provider catalog add --url` in a shell).

use std::path::Path;

use super::catalog::{self, Catalog};
use super::{Import, edit, import};

fn bundled() -> Result<Catalog, String> {
    catalog::bundled().map_err(|e| format!("{e:#}"))
}

/// `/provider catalog [id|filter]`: the vendors (matching `filter`), or one vendor's models
/// with the line that adds it.
pub fn catalog_text(arg: &str) -> Result<String, String> {
    let catalog = bundled()?;
    let arg = arg.trim();
    if let Some(vendor) = catalog.get(arg) {
        let kind = catalog::provider_type(arg, vendor)?;
        let mut lines = vec![format!("{arg} ({}, {kind}) models:", vendor.name)];
        for (id, model) in catalog::usable(vendor) {
            lines.push(format!(
                "  {id}  {}  context {}  {}",
                model.name,
                model.limit.context,
                catalog::capabilities(model).join(",")
            ));
        }
        let var = vendor
            .env
            .first()
            .map_or("$API_KEY".to_owned(), |v| format!("${v}"));
        lines.push(format!(
            "Add it with: /provider add {arg} <key|{var}> [model …] (no model: all of them)"
        ));
        return Ok(lines.join("\n"));
    }
    let filter = arg.to_lowercase();
    let mut lines = vec!["Providers in the bundled models.dev catalog:".to_owned()];
    for (id, vendor) in &catalog {
        if !filter.is_empty()
            && !id.to_lowercase().contains(&filter)
            && !vendor.name.to_lowercase().contains(&filter)
        {
            continue;
        }
        let kind = catalog::provider_type(id, vendor).unwrap_or("unsupported");
        lines.push(format!(
            "  {id}  {}  {kind}  {} model(s)",
            vendor.name,
            catalog::usable(vendor).count()
        ));
    }
    if lines.len() == 1 {
        return Err(format!(
            "no provider of the bundled catalog matches `{arg}`; /provider catalog lists them all"
        ));
    }
    lines.push("/provider catalog <id> shows one provider's models.".to_owned());
    Ok(lines.join("\n"))
}

/// One vendor `/provider add` offers to pick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    pub detail: String,
    /// The prompt the pick leaves to complete: `/provider add <id> $<VAR> ` (the vendor's
    /// usual key variable, to keep or replace with the key), then the models.
    pub prompt: String,
}

/// `/provider add` alone: the vendors kimi-rs can talk to, to pick from.
pub fn choices() -> Result<Vec<Choice>, String> {
    let catalog = bundled()?;
    Ok(catalog
        .iter()
        .filter_map(|(id, vendor)| {
            let kind = catalog::provider_type(id, vendor).ok()?;
            let models: Vec<&str> = catalog::usable(vendor).map(|(m, _)| m.as_str()).collect();
            let var = vendor
                .env
                .first()
                .map(|v| format!("${v} "))
                .unwrap_or_default();
            Some(Choice {
                label: format!("{id}  {}", vendor.name),
                detail: format!("{kind} · {}", models.join(", ")),
                prompt: format!("/provider add {id} {var}"),
            })
        })
        .collect())
}

/// The API key of `/provider add`: a literal key, or `$VAR` read from kimi-rs's environment
/// now (the value is written, as `kimi-rs provider catalog add` does with its variable).
fn credential(arg: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    match arg.strip_prefix('$') {
        Some(var) => env(var)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                format!(
                    "`${var}` is not set in kimi-rs's environment; set it before starting kimi-rs or pass the key itself"
                )
            }),
        None => Ok(arg.to_owned()),
    }
}

/// `/provider add <id> <key|$VAR> [model …]` (models also comma-separated): the vendor and the
/// chosen models (all usable ones when none is named) into `config.toml`. The answer says what
/// was written, or (`Err`) what to fix.
pub fn add(
    home: &Path,
    args: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut words = args.split_whitespace();
    let (Some(id), Some(key_arg)) = (words.next(), words.next()) else {
        return Err(
            "use /provider add <catalog id> <key|$VAR> [model …]; /provider catalog lists the ids"
                .to_owned(),
        );
    };
    let only: Vec<String> = words
        .flat_map(|w| w.split(','))
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .collect();
    let catalog = bundled()?;
    let vendor = catalog.get(id).ok_or_else(|| {
        format!("the bundled catalog has no provider `{id}`; /provider catalog lists them")
    })?;
    let key = credential(key_arg, env)?;
    let aliases = edit(home, |doc| {
        import(
            doc,
            &Import {
                id,
                vendor,
                api_key: &key,
                base_url: None,
                source: None,
                only: &only,
            },
        )
    })
    .map_err(|e| format!("{e:#}"))?;
    Ok(format!(
        "Added provider `{id}` to config.toml with {} model(s): {}.",
        aliases.len(),
        aliases.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_is_read_and_a_missing_one_is_named() {
        let env = |name: &str| (name == "SET").then(|| " sk-x ".to_owned());
        assert_eq!(credential("$SET", &env), Ok("sk-x".to_owned()));
        assert_eq!(credential("sk-lit", &env), Ok("sk-lit".to_owned()));
        let err = credential("$UNSET", &env).unwrap_err();
        assert!(err.contains("`$UNSET` is not set"), "{err}");
    }

    #[test]
    fn chosen_models_only_and_unknown_ones_refused() {
        let home = tempfile::tempdir().unwrap();
        let none = |_: &str| None;
        let text = add(home.path(), "openai sk-1 gpt-4o", &none).unwrap();
        assert_eq!(
            text,
            "Added provider `openai` to config.toml with 1 model(s): openai/gpt-4o."
        );
        let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
        assert!(config.contains("[models.\"openai/gpt-4o\"]"), "{config}");
        assert!(!config.contains("gpt-4.1"), "{config}");
        let err = add(home.path(), "openai sk-1 gpt-9", &none).unwrap_err();
        assert!(err.contains("`gpt-9` is not a usable model"), "{err}");
        let err = add(home.path(), "nope sk-1", &none).unwrap_err();
        assert!(err.contains("no provider `nope`"), "{err}");
    }
}
