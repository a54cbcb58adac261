//! Config parsing and model resolution tests (no process environment involved).

use std::collections::HashMap;
use std::path::Path;

use super::*;
use pretty_assertions::assert_eq;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |key: &str| map.get(key).cloned()
}

const SAMPLE: &str = r#"
default_model = "k2"
default_permission_mode = "manual"

[providers.moonshot]
type = "kimi"
api_key = "sk-kimi"
custom_headers = { "X-Team" = "core" }

[providers.claude]
type = "anthropic"
[providers.claude.env]
ANTHROPIC_API_KEY = "sk-ant"
ANTHROPIC_BASE_URL = "https://gw.example/anthropic"

[models.k2]
provider = "moonshot"
model = "kimi-k2-thinking"
max_context_size = 262144
capabilities = ["thinking", "image_in"]
support_efforts = ["low", "high"]

[models."claude.sonnet"]
provider = "claude"
model = "claude-sonnet-4-5"
max_context_size = 200000
max_output_size = 64000
[models."claude.sonnet".overrides]
max_context_size = 1000000

[thinking]
effort = "high"
"#;

#[test]
fn default_model_resolves_with_provider_key_and_headers() {
    let config = LlmConfig::parse(SAMPLE, Path::new("/h/config.toml")).unwrap();
    let model = config
        .resolve_model(
            None,
            &env_of(&[("KIMI_CODE_CUSTOM_HEADERS", "X-Team: env\nX-Other: 1")]),
        )
        .unwrap();
    assert_eq!(model.alias, "k2");
    assert_eq!(model.provider_type, ProviderType::Kimi);
    assert_eq!(model.base_url, "https://api.moonshot.ai/v1");
    assert_eq!(model.api_key, "sk-kimi");
    assert_eq!(
        model.key_source,
        KeySource::ConfigFile {
            path: "/h/config.toml".into(),
            key: "providers.moonshot.api_key".into()
        }
    );
    assert_eq!(
        model.custom_headers,
        vec![
            ("X-Other".to_owned(), "1".to_owned()),
            ("X-Team".to_owned(), "core".to_owned())
        ]
    );
    assert_eq!(
        model.support_efforts,
        vec!["low".to_owned(), "high".to_owned()]
    );
}

#[test]
fn alias_with_dot_uses_env_table_and_overrides() {
    let config = LlmConfig::parse(SAMPLE, Path::new("/h/config.toml")).unwrap();
    let model = config
        .resolve_model(Some("claude.sonnet"), &env_of(&[]))
        .unwrap();
    assert_eq!(model.api_key, "sk-ant");
    assert_eq!(model.base_url, "https://gw.example/anthropic");
    assert_eq!(model.max_context_size, 1_000_000);
    assert_eq!(model.max_output_size, Some(64_000));
    assert_eq!(
        model.key_source.to_string(),
        "`ANTHROPIC_API_KEY` in [providers.claude.env] of /h/config.toml"
    );
}

#[test]
fn priority_is_flag_then_env_model_then_default() {
    let config = LlmConfig::parse(SAMPLE, Path::new("/h/config.toml")).unwrap();
    let env = env_of(&[
        ("KIMI_MODEL_NAME", "qwen3-coder"),
        ("KIMI_MODEL_API_KEY", "local"),
        ("KIMI_MODEL_PROVIDER_TYPE", "openai"),
        ("KIMI_MODEL_BASE_URL", "http://127.0.0.1:8000/v1"),
        ("KIMI_MODEL_MAX_CONTEXT_SIZE", "32768"),
        ("KIMI_MODEL_CAPABILITIES", "tool_use, image_in"),
        ("KIMI_MODEL_THINKING_EFFORT", "low"),
    ]);
    let from_env = config.resolve_model(None, &env).unwrap();
    assert_eq!(from_env.model, "qwen3-coder");
    assert_eq!(from_env.provider_type, ProviderType::OpenAi);
    assert_eq!(from_env.base_url, "http://127.0.0.1:8000/v1");
    assert_eq!(from_env.max_context_size, 32_768);
    assert_eq!(
        from_env.capabilities,
        vec!["tool_use".to_owned(), "image_in".to_owned()]
    );
    assert_eq!(from_env.forced_effort, Some(ThinkingEffort::Low));
    assert_eq!(
        from_env.key_source,
        KeySource::EnvVar("KIMI_MODEL_API_KEY".into())
    );
    let flagged = config.resolve_model(Some("k2"), &env).unwrap();
    assert_eq!(flagged.alias, "k2");
}

#[test]
fn env_model_defaults_and_errors() {
    let config = LlmConfig::default();
    let model = config
        .resolve_model(
            None,
            &env_of(&[("KIMI_MODEL_NAME", "kimi-k2"), ("KIMI_MODEL_API_KEY", "k")]),
        )
        .unwrap();
    assert_eq!(model.provider_type, ProviderType::Kimi);
    assert_eq!(model.max_context_size, 262_144);
    assert_eq!(
        model.capabilities,
        vec!["image_in".to_owned(), "thinking".to_owned()]
    );

    let err = config
        .resolve_model(None, &env_of(&[("KIMI_MODEL_NAME", "x")]))
        .unwrap_err();
    assert!(err.to_string().contains("KIMI_MODEL_API_KEY"), "{err}");
    let err = config
        .resolve_model(
            None,
            &env_of(&[
                ("KIMI_MODEL_NAME", "x"),
                ("KIMI_MODEL_API_KEY", "k"),
                ("KIMI_MODEL_PROVIDER_TYPE", "bedrock"),
            ]),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("KIMI_MODEL_PROVIDER_TYPE"),
        "{err}"
    );
    let err = config.resolve_model(None, &env_of(&[])).unwrap_err();
    assert!(err.to_string().contains("no model configured"), "{err}");
}

#[test]
fn invalid_files_name_the_file_and_key() {
    let path = Path::new("/h/config.toml");
    let err = LlmConfig::parse("[providers.x]\ntype = \"bedrock\"\n", path).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("/h/config.toml") && text.contains("bedrock"),
        "{text}"
    );

    let err = LlmConfig::parse(
        "[providers.p]\ntype = \"openai\"\n[models.m]\nprovider = \"q\"\nmodel = \"x\"\nmax_context_size = 10\n",
        path,
    )
    .unwrap_err();
    assert!(err.to_string().contains("models.m.provider"), "{err}");

    let err = LlmConfig::parse(
        "[providers.p]\ntype = \"openai\"\n[models.m]\nprovider = \"p\"\nmodel = \"x\"\nmax_context_size = 0\n",
        path,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("models.m.max_context_size"),
        "{err}"
    );

    let config = LlmConfig::parse(
        "[providers.p]\ntype = \"openai\"\n[models.m]\nprovider = \"p\"\nmodel = \"x\"\nmax_context_size = 10\n",
        path,
    )
    .unwrap();
    let err = config.resolve_model(Some("m"), &env_of(&[])).unwrap_err();
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    let err = config
        .resolve_model(Some("nope"), &env_of(&[]))
        .unwrap_err();
    assert!(
        err.to_string().contains("`nope`") && err.to_string().contains("m"),
        "{err}"
    );
}

#[test]
fn kimi_tuning_comes_from_env() {
    let config = LlmConfig::parse(SAMPLE, Path::new("/h/config.toml")).unwrap();
    let model = config
        .resolve_model(
            None,
            &env_of(&[
                ("KIMI_MODEL_MAX_TOKENS", "4096"),
                ("KIMI_MODEL_TEMPERATURE", "0.6"),
                ("KIMI_MODEL_TOP_P", "0.95"),
            ]),
        )
        .unwrap();
    assert_eq!(
        model.kimi_tuning,
        KimiTuning {
            max_completion_tokens: Some(4096),
            temperature: Some(0.6),
            top_p: Some(0.95)
        }
    );
    let err = config
        .resolve_model(None, &env_of(&[("KIMI_MODEL_TOP_P", "high")]))
        .unwrap_err();
    assert!(err.to_string().contains("KIMI_MODEL_TOP_P"), "{err}");
}

#[test]
fn effective_thinking_follows_forced_requested_default_and_support_list() {
    let mut model = test_model(ProviderType::Kimi, "http://x", "k");
    assert_eq!(model.effective_thinking(None), None);
    model.default_effort = Some("medium".into());
    assert_eq!(model.effective_thinking(None), Some(ThinkingEffort::Medium));
    assert_eq!(
        model.effective_thinking(Some(ThinkingEffort::High)),
        Some(ThinkingEffort::High)
    );
    model.support_efforts = vec!["low".into(), "medium".into()];
    assert_eq!(
        model.effective_thinking(Some(ThinkingEffort::High)),
        Some(ThinkingEffort::Medium)
    );
    model.capabilities = vec!["always_thinking".into()];
    assert_eq!(
        model.effective_thinking(Some(ThinkingEffort::Off)),
        Some(ThinkingEffort::Medium)
    );
    model.forced_effort = Some(ThinkingEffort::Low);
    assert_eq!(
        model.effective_thinking(Some(ThinkingEffort::Medium)),
        Some(ThinkingEffort::Low)
    );

    let config = LlmConfig::parse(SAMPLE, Path::new("/h/config.toml")).unwrap();
    assert_eq!(config.thinking_effort(), Some(ThinkingEffort::High));
}

/// A minimal model for this crate's unit tests (other crates use
/// `kimi_test_support::test_model`).
pub(crate) fn test_model(
    provider_type: ProviderType,
    base_url: &str,
    model: &str,
) -> ResolvedModel {
    ResolvedModel {
        alias: model.to_owned(),
        provider_id: provider_type.as_str().to_owned(),
        provider_type,
        model: model.to_owned(),
        base_url: base_url.to_owned(),
        api_key: "test-key".to_owned(),
        key_source: KeySource::Unknown,
        oauth: None,
        custom_headers: Vec::new(),
        max_context_size: 262_144,
        max_output_size: None,
        capabilities: Vec::new(),
        support_efforts: Vec::new(),
        default_effort: None,
        forced_effort: None,
        reasoning_key: None,
        adaptive_thinking: None,
        display_name: None,
        vertex_project: None,
        vertex_location: None,
        kimi_tuning: KimiTuning::default(),
    }
}
