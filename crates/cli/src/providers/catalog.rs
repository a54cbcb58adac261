//! The models.dev catalog (`api.json`: vendor id → `{name, npm, api, models}`): read from a
//! bundled, trimmed snapshot for offline use or from `--url` (http(s) or a file), and turned
//! into `[providers.<id>]` plus `[models."<id>/<model>"]` entries. Vendors that declare no
//! protocol are taken as OpenAI-compatible; proprietary protocols kimi-rs does not speak
//! (Bedrock, Cohere, …) are refused; deprecated and alpha models are skipped.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The bundled snapshot: a few vendors of models.dev, trimmed (see README).
const SNAPSHOT: &str = include_str!("models_dev_snapshot.json");
pub const DEFAULT_URL: &str = "https://models.dev/api.json";

#[derive(Debug, Clone, Deserialize)]
pub struct Vendor {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub npm: Option<String>,
    #[serde(default)]
    pub api: Option<String>,
    /// The vendor's usual key variables (`OPENAI_API_KEY`), offered by `/provider catalog`.
    #[serde(default)]
    pub env: Vec<String>,
    #[serde(default)]
    pub models: BTreeMap<String, CatalogModel>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Limit {
    #[serde(default)]
    pub context: u64,
    #[serde(default)]
    pub output: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Modalities {
    #[serde(default)]
    pub input: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CatalogModel {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub reasoning: bool,
    #[serde(default)]
    pub tool_call: bool,
    #[serde(default)]
    pub modalities: Modalities,
    #[serde(default)]
    pub limit: Limit,
    #[serde(default)]
    pub status: Option<String>,
}

pub type Catalog = BTreeMap<String, Vendor>;

pub fn parse(text: &str, origin: &str) -> anyhow::Result<Catalog> {
    serde_json::from_str(text)
        .map_err(|err| anyhow::anyhow!("{origin} is not a models.dev catalog (api.json): {err}"))
}

/// The bundled snapshot (no I/O).
pub fn bundled() -> anyhow::Result<Catalog> {
    parse(SNAPSHOT, "the bundled catalog")
}

/// The bundled snapshot, or the catalog at `url` (http(s) URL or a file path).
pub async fn load(url: Option<&str>, bearer: Option<&str>) -> anyhow::Result<Catalog> {
    match url {
        None => parse(SNAPSHOT, "the bundled catalog"),
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
            let text = kimi_auth::fetch_text(url, bearer).await?;
            parse(&text, url)
        }
        Some(path) => {
            let path = path.strip_prefix("file://").unwrap_or(path);
            let text = std::fs::read_to_string(path)
                .map_err(|err| anyhow::anyhow!("cannot read the catalog {path}: {err}"))?;
            parse(&text, path)
        }
    }
}

/// The wire type of a vendor, or why kimi-rs cannot talk to it.
pub fn provider_type(id: &str, vendor: &Vendor) -> Result<&'static str, String> {
    match vendor.npm.as_deref().unwrap_or("@ai-sdk/openai-compatible") {
        "@ai-sdk/anthropic" => Ok("anthropic"),
        "@ai-sdk/google" => Ok("google-genai"),
        "@ai-sdk/openai" => Ok("openai"),
        "@ai-sdk/openai-compatible" => Ok("openai"),
        npm if npm.contains("moonshot") => Ok("kimi"),
        npm if ["bedrock", "cohere", "vertex", "azure", "mistral"]
            .iter()
            .any(|p| npm.contains(p)) =>
        {
            Err(format!(
                "`{id}` speaks its own protocol ({npm}), which kimi-rs does not support; use an OpenAI-compatible endpoint with `--base-url`"
            ))
        }
        _ => Ok("openai"),
    }
}

/// Models worth importing: not deprecated or alpha, with a context size.
pub fn usable(vendor: &Vendor) -> impl Iterator<Item = (&String, &CatalogModel)> {
    vendor.models.iter().filter(|(_, m)| {
        !matches!(m.status.as_deref(), Some("deprecated" | "alpha")) && m.limit.context > 0
    })
}

pub fn capabilities(model: &CatalogModel) -> Vec<String> {
    let mut caps = Vec::new();
    if model.reasoning {
        caps.push("thinking".to_owned());
    }
    for (input, cap) in [
        ("image", "image_in"),
        ("video", "video_in"),
        ("audio", "audio_in"),
    ] {
        if model.modalities.input.iter().any(|m| m == input) {
            caps.push(cap.to_owned());
        }
    }
    if model.tool_call {
        caps.push("tool_use".to_owned());
    }
    caps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_snapshot_parses_and_maps_protocols() {
        let catalog = parse(SNAPSHOT, "snapshot").unwrap();
        assert_eq!(
            provider_type("moonshotai", &catalog["moonshotai"]),
            Ok("openai")
        );
        assert_eq!(
            provider_type("anthropic", &catalog["anthropic"]),
            Ok("anthropic")
        );
        assert_eq!(
            provider_type("google", &catalog["google"]),
            Ok("google-genai")
        );
        assert!(provider_type("amazon-bedrock", &catalog["amazon-bedrock"]).is_err());
        let caps = capabilities(&catalog["google"].models["gemini-2.5-pro"]);
        assert_eq!(
            caps,
            ["thinking", "image_in", "video_in", "audio_in", "tool_use"]
        );
    }
}
