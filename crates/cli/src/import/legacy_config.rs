//! Translating the legacy kimi-cli `config.toml` (or its older `config.json`) into kimi-rs
//! settings: providers and models with kimi-rs's type names, `default_yolo` as
//! `default_permission_mode`, the loop, background, services, MCP and hook settings kimi-rs
//! has. Every key left out is named, so the report says what did not come along and why;
//! `theme` and `default_editor` belong to `tui.toml` and are returned separately.

use serde_json::{Map, Value};

/// What the translation produced.
#[derive(Debug, Default)]
pub struct Translated {
    /// The kimi-rs settings (a JSON object shaped like `config.toml`).
    pub config: Map<String, Value>,
    /// `tui.toml` settings: `theme`, `[editor] command`.
    pub tui: Map<String, Value>,
    /// `(key, why)` for each setting left out.
    pub dropped: Vec<(String, String)>,
    /// Providers that used the legacy Kimi login (a token kimi-rs cannot use).
    pub logins: Vec<String>,
}

/// kimi-cli provider types → kimi-rs's (`None`: kimi-rs has no such provider).
fn provider_type(legacy: &str) -> Option<&'static str> {
    match legacy {
        "kimi" => Some("kimi"),
        "openai_legacy" | "openai" => Some("openai"),
        "openai_responses" => Some("openai_responses"),
        "anthropic" => Some("anthropic"),
        "google_genai" | "gemini" | "google-genai" => Some("google-genai"),
        "vertexai" => Some("vertexai"),
        _ => None,
    }
}

const MODEL_KEYS: [&str; 5] = [
    "provider",
    "model",
    "max_context_size",
    "capabilities",
    "display_name",
];

/// kimi-cli `[loop_control]` keys kimi-rs has (`max_steps_per_run` is the old name of
/// `max_steps_per_turn`).
fn loop_key(legacy: &str) -> Option<&'static str> {
    match legacy {
        "max_steps_per_turn" | "max_steps_per_run" => Some("max_steps_per_turn"),
        "reserved_context_size" => Some("reserved_context_size"),
        "compaction_trigger_ratio" => Some("compaction_trigger_ratio"),
        "max_ralph_iterations" => Some("max_ralph_iterations"),
        _ => None,
    }
}

fn non_empty(value: Option<&Value>) -> Option<&str> {
    value
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// Drop JSON nulls (TOML has none).
fn without_nulls(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Object(map) => Some(Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| without_nulls(v).map(|v| (k, v)))
                .collect(),
        )),
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(without_nulls).collect(),
        )),
        other => Some(other),
    }
}

/// Translate a parsed legacy config.
pub fn translate(legacy: &Map<String, Value>) -> Translated {
    let mut out = Translated::default();
    let mut providers = Map::new();
    if let Some(entries) = legacy.get("providers").and_then(Value::as_object) {
        for (name, entry) in entries {
            let key = format!("providers.{name}");
            let Some(entry) = entry.as_object() else {
                out.dropped.push((key, "not a table".to_owned()));
                continue;
            };
            if entry.get("oauth").is_some_and(Value::is_object) {
                out.logins.push(name.clone());
                out.dropped.push((
                    key,
                    "it used the kimi-cli Kimi login; run `kimi-rs login` for kimi-rs's own"
                        .to_owned(),
                ));
                continue;
            }
            let legacy_type = entry.get("type").and_then(Value::as_str).unwrap_or("");
            let Some(kind) = provider_type(legacy_type) else {
                out.dropped
                    .push((key, format!("kimi-rs has no provider type {legacy_type:?}")));
                continue;
            };
            let mut provider = Map::new();
            provider.insert("type".to_owned(), Value::from(kind));
            for field in ["base_url", "api_key"] {
                if let Some(text) = non_empty(entry.get(field)) {
                    provider.insert(field.to_owned(), Value::from(text));
                }
            }
            for field in ["env", "custom_headers"] {
                if let Some(map) = entry.get(field).filter(|v| v.is_object()) {
                    provider.insert(field.to_owned(), map.clone());
                }
            }
            providers.insert(name.clone(), Value::Object(provider));
        }
    }
    let mut models = Map::new();
    if let Some(entries) = legacy.get("models").and_then(Value::as_object) {
        for (alias, entry) in entries {
            let key = format!("models.{alias}");
            let Some(entry) = entry.as_object() else {
                out.dropped.push((key, "not a table".to_owned()));
                continue;
            };
            let provider = entry.get("provider").and_then(Value::as_str).unwrap_or("");
            if !providers.contains_key(provider) {
                out.dropped
                    .push((key, format!("its provider {provider:?} did not come along")));
                continue;
            }
            let model: Map<String, Value> = MODEL_KEYS
                .iter()
                .filter_map(|k| entry.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                .collect();
            models.insert(alias.clone(), Value::Object(model));
        }
    }
    for (key, value) in legacy {
        match key.as_str() {
            "providers" | "models" => {}
            "default_model" => match value.as_str() {
                Some(alias) if models.contains_key(alias) => {
                    out.config.insert(key.clone(), value.clone());
                }
                Some("") => {}
                _ => out.dropped.push((
                    key.clone(),
                    format!("{value} is not one of the models that came along"),
                )),
            },
            "default_yolo" => {
                if value.as_bool() == Some(true) {
                    out.config
                        .insert("default_permission_mode".to_owned(), Value::from("yolo"));
                }
            }
            "default_plan_mode" | "merge_all_available_skills" => {
                out.config.insert(key.clone(), value.clone());
            }
            "theme" => {
                if let Some(theme) = value.as_str().filter(|t| matches!(*t, "dark" | "light")) {
                    out.tui.insert("theme".to_owned(), Value::from(theme));
                }
            }
            "default_editor" => {
                if let Some(editor) = non_empty(Some(value)) {
                    out.tui.insert(
                        "editor".to_owned(),
                        serde_json::json!({ "command": editor }),
                    );
                }
            }
            "hooks" => {
                if value.as_array().is_some_and(|h| !h.is_empty()) {
                    out.config.insert(key.clone(), value.clone());
                }
            }
            "loop_control" => section(&mut out, key, value, "loop_control", |k| {
                loop_key(k).map(str::to_owned)
            }),
            "background" => section(&mut out, key, value, "background", |k| {
                matches!(k, "max_running_tasks" | "keep_alive_on_exit").then(|| k.to_owned())
            }),
            "services" => services(&mut out, value),
            "mcp" => {
                let timeout = value
                    .pointer("/client/tool_call_timeout_ms")
                    .filter(|v| v.is_u64());
                if let Some(timeout) = timeout {
                    out.config.insert(
                        "mcp".to_owned(),
                        serde_json::json!({ "tool_timeout_ms": timeout }),
                    );
                }
            }
            // The UI switches of kimi-cli have no kimi-rs setting: said once, quietly.
            "default_thinking" | "show_thinking_stream" | "notifications" => out.dropped.push((
                key.clone(),
                "kimi-rs has no such setting (thinking follows [thinking] and /effort)".to_owned(),
            )),
            _ => out
                .dropped
                .push((key.clone(), "kimi-rs has no such setting".to_owned())),
        }
    }
    if !providers.is_empty() {
        out.config
            .insert("providers".to_owned(), Value::Object(providers));
    }
    if !models.is_empty() {
        out.config
            .insert("models".to_owned(), Value::Object(models));
    }
    if let Some(Value::Object(clean)) =
        without_nulls(Value::Object(std::mem::take(&mut out.config)))
    {
        out.config = clean;
    }
    out
}

/// Copy the keys of the table `value` that `rename` maps, naming the others as dropped.
fn section(
    out: &mut Translated,
    key: &str,
    value: &Value,
    target: &str,
    rename: impl Fn(&str) -> Option<String>,
) {
    let Some(table) = value.as_object() else {
        out.dropped.push((key.to_owned(), "not a table".to_owned()));
        return;
    };
    let mut kept = Map::new();
    for (field, v) in table {
        match rename(field) {
            Some(name) => {
                kept.insert(name, v.clone());
            }
            None => out.dropped.push((
                format!("{key}.{field}"),
                "kimi-rs has no such setting".to_owned(),
            )),
        }
    }
    if !kept.is_empty() {
        out.config.insert(target.to_owned(), Value::Object(kept));
    }
}

/// `[services.moonshot_search]` / `[services.moonshot_fetch]`: base URL, key, headers.
fn services(out: &mut Translated, value: &Value) {
    let mut kept = Map::new();
    for name in ["moonshot_search", "moonshot_fetch"] {
        let Some(service) = value.get(name).and_then(Value::as_object) else {
            continue;
        };
        if service.get("oauth").is_some_and(Value::is_object) {
            out.dropped.push((
                format!("services.{name}"),
                "it used the kimi-cli Kimi login; `kimi-rs login` sets it up again".to_owned(),
            ));
            continue;
        }
        let mut entry = Map::new();
        for field in ["base_url", "api_key"] {
            if let Some(text) = non_empty(service.get(field)) {
                entry.insert(field.to_owned(), Value::from(text));
            }
        }
        if let Some(headers) = service.get("custom_headers").filter(|v| v.is_object()) {
            entry.insert("custom_headers".to_owned(), headers.clone());
        }
        if entry.contains_key("base_url") {
            kept.insert(name.to_owned(), Value::Object(entry));
        }
    }
    if !kept.is_empty() {
        out.config
            .insert("services".to_owned(), Value::Object(kept));
    }
}

/// A JSON object as a TOML document.
pub fn to_document(map: &Map<String, Value>) -> Result<toml_edit::DocumentMut, String> {
    let text = toml::to_string(map).map_err(|err| err.to_string())?;
    text.parse()
        .map_err(|err: toml_edit::TomlError| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn translates_kimi_cli_settings_and_names_what_stays_behind() {
        let legacy = json!({
            "default_model": "k2",
            "default_yolo": true,
            "default_thinking": true,
            "theme": "light",
            "default_editor": "vim",
            "providers": {
                "moonshot": {"type": "kimi", "base_url": "https://api.moonshot.ai/v1", "api_key": "sk-1"},
                "oa": {"type": "openai_legacy", "base_url": "http://x/v1", "api_key": ""},
                "managed:kimi-code": {"type": "kimi", "base_url": "https://api.kimi.com/coding/v1", "api_key": "", "oauth": {"storage": "file", "key": "oauth/kimi-code"}},
                "echo": {"type": "_echo", "base_url": "", "api_key": ""}
            },
            "models": {
                "k2": {"provider": "moonshot", "model": "kimi-k2", "max_context_size": 262144, "capabilities": ["thinking"]},
                "o": {"provider": "oa", "model": "gpt", "max_context_size": 1000},
                "kimi-code/k2": {"provider": "managed:kimi-code", "model": "k2", "max_context_size": 10}
            },
            "loop_control": {"max_steps_per_run": 50, "max_retries_per_step": 3},
            "mcp": {"client": {"tool_call_timeout_ms": 1234}},
            "services": {"moonshot_search": {"base_url": "http://s", "api_key": "k", "custom_headers": null}}
        });
        let t = translate(legacy.as_object().unwrap());
        assert_eq!(
            t.config["providers"]["oa"],
            json!({"type": "openai", "base_url": "http://x/v1"})
        );
        assert_eq!(t.config["default_permission_mode"], "yolo");
        assert_eq!(t.config["default_model"], "k2");
        assert_eq!(t.config["loop_control"], json!({"max_steps_per_turn": 50}));
        assert_eq!(t.config["mcp"], json!({"tool_timeout_ms": 1234}));
        assert_eq!(
            t.config["services"]["moonshot_search"],
            json!({"base_url": "http://s", "api_key": "k"})
        );
        assert!(t.config["models"].get("kimi-code/k2").is_none());
        assert_eq!(t.tui["theme"], "light");
        assert_eq!(t.logins, ["managed:kimi-code"]);
        let dropped: Vec<&str> = t.dropped.iter().map(|(k, _)| k.as_str()).collect();
        for key in [
            "providers.managed:kimi-code",
            "providers.echo",
            "models.kimi-code/k2",
            "loop_control.max_retries_per_step",
            "default_thinking",
        ] {
            assert!(dropped.contains(&key), "{key} in {dropped:?}");
        }
        let doc = to_document(&t.config).unwrap();
        let config = kimi_config::Config::parse(&doc.to_string(), std::path::Path::new("c.toml"));
        assert!(config.check().is_ok(), "{:?}\n{doc}", config.diagnostics);
    }
}
