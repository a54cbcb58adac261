//! `[providers.<id>]` and `[models.<alias>]` (surface.md §4.2). kimi-llm resolves and builds
//! providers from these; keys kimi-rs keeps but does not act on (catalog metadata, per-model
//! OAuth) are reported as unsupported when set.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The wire format a provider speaks (`[providers.<id>] type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
pub enum ProviderType {
    #[default]
    #[serde(rename = "kimi")]
    Kimi,
    #[serde(rename = "openai")]
    OpenAi,
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
    #[serde(rename = "anthropic")]
    Anthropic,
    #[serde(rename = "google-genai", alias = "gemini")]
    GoogleGenAi,
    #[serde(rename = "vertexai")]
    VertexAi,
}

impl ProviderType {
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.trim() {
            "kimi" => ProviderType::Kimi,
            "openai" => ProviderType::OpenAi,
            "openai_responses" => ProviderType::OpenAiResponses,
            "anthropic" => ProviderType::Anthropic,
            "google-genai" | "gemini" => ProviderType::GoogleGenAi,
            "vertexai" => ProviderType::VertexAi,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderType::Kimi => "kimi",
            ProviderType::OpenAi => "openai",
            ProviderType::OpenAiResponses => "openai_responses",
            ProviderType::Anthropic => "anthropic",
            ProviderType::GoogleGenAi => "google-genai",
            ProviderType::VertexAi => "vertexai",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderType::Kimi => "https://api.moonshot.ai/v1",
            ProviderType::OpenAi | ProviderType::OpenAiResponses => "https://api.openai.com/v1",
            ProviderType::Anthropic => "https://api.anthropic.com",
            ProviderType::GoogleGenAi => "https://generativelanguage.googleapis.com",
            ProviderType::VertexAi => "https://aiplatform.googleapis.com",
        }
    }

    /// Provider-convention names looked up in `[providers.<id>.env]`: (api key, base url).
    pub fn env_names(self) -> (&'static [&'static str], &'static str) {
        match self {
            ProviderType::Kimi => (&["KIMI_API_KEY"], "KIMI_BASE_URL"),
            ProviderType::OpenAi | ProviderType::OpenAiResponses => {
                (&["OPENAI_API_KEY"], "OPENAI_BASE_URL")
            }
            ProviderType::Anthropic => (&["ANTHROPIC_API_KEY"], "ANTHROPIC_BASE_URL"),
            ProviderType::GoogleGenAi => (&["GOOGLE_API_KEY"], "GOOGLE_GEMINI_BASE_URL"),
            ProviderType::VertexAi => (
                &["VERTEXAI_API_KEY", "GOOGLE_API_KEY"],
                "GOOGLE_VERTEX_BASE_URL",
            ),
        }
    }
}

// `Debug` hides the key: see `redacted.rs`.
#[derive(Clone, Default, Deserialize)]
pub struct ProviderEntry {
    #[serde(rename = "type")]
    pub kind: ProviderType,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub custom_headers: BTreeMap<String, String>,
    #[serde(default)]
    pub default_model: Option<String>,
    /// Written by `kimi-rs login` (and Kimi Code's): the provider authenticates with the
    /// stored account token instead of `api_key`.
    #[serde(default)]
    pub oauth: Option<OAuthRef>,
    /// `static` | `discover` | `oauth-catalog`; kimi-rs only knows static models (reported).
    #[serde(default)]
    pub model_source: Option<String>,
    /// Registry metadata written by imports; informational only.
    #[serde(default)]
    pub source: Option<toml::Value>,
}

/// Where an account login keeps its token (`oauth = { storage, key, oauth_host }` of a provider
/// or a service): `key` names the credential (`oauth/kimi-code` is
/// `$KIMI_RS_HOME/credentials/kimi-code.json`), `oauth_host` the server that refreshes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct OAuthRef {
    /// `file` (kimi-rs's only store) or `keyring` (reported by kimi-rs when it meets it).
    #[serde(default)]
    pub storage: Option<String>,
    pub key: String,
    #[serde(default)]
    pub oauth_host: Option<String>,
}

/// `[models.<alias>.overrides]`: non-identity fields that win over the entry itself.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ModelOverrides {
    pub max_context_size: Option<u64>,
    pub max_input_size: Option<u64>,
    pub max_output_size: Option<u32>,
    pub capabilities: Option<Vec<String>>,
    pub display_name: Option<String>,
    pub reasoning_key: Option<String>,
    pub adaptive_thinking: Option<bool>,
    pub support_efforts: Option<Vec<String>>,
    pub default_effort: Option<String>,
    pub off_effort: Option<String>,
}

// `Debug` hides the key: see `redacted.rs`.
#[derive(Clone, Default, Deserialize)]
pub struct ModelEntry {
    pub provider: String,
    pub model: String,
    pub max_context_size: u64,
    #[serde(default)]
    pub max_input_size: Option<u64>,
    #[serde(default)]
    pub max_output_size: Option<u32>,
    #[serde(default)]
    pub capabilities: Vec<String>,
    #[serde(default)]
    pub support_efforts: Vec<String>,
    #[serde(default)]
    pub default_effort: Option<String>,
    #[serde(default)]
    pub off_effort: Option<String>,
    #[serde(default)]
    pub display_name: Option<String>,
    #[serde(default)]
    pub reasoning_key: Option<String>,
    #[serde(default)]
    pub adaptive_thinking: Option<bool>,
    #[serde(default)]
    pub base_url: Option<String>,
    /// Per-model gateway routing: speak this protocol instead of the provider's.
    #[serde(default)]
    pub protocol: Option<ProviderType>,
    #[serde(default)]
    pub api_key: Option<String>,
    #[serde(default)]
    pub overrides: Option<ModelOverrides>,
    /// Catalog fields kimi-rs does not act on (reported as unsupported when set).
    #[serde(default)]
    pub beta_api: Option<toml::Value>,
    #[serde(default)]
    pub oauth: Option<toml::Value>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub aliases: Option<Vec<String>>,
    #[serde(default)]
    pub provider_id: Option<String>,
}
