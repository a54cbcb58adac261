//! What a debug ZIP (`kimi-rs export --debug-zip`, the TUI's `/export-debug-zip`) adds to a
//! session export: the home's global logs and its `config.toml`, `tui.toml` and `mcp.json`
//! with every secret replaced by `[redacted]` — keys named like secrets, secret-looking `env`
//! and header entries, and secret-looking text anywhere (bearer tokens, `sk-…` keys).

use std::path::Path;

use serde_json::Value;

use crate::logging::redact::{REDACTED, is_secret_field, redact_text};

/// Entries are named under this folder of the archive.
pub const FOLDER: &str = "kimi-rs-home";

/// Whether a key or an `env`/header entry name holds a secret.
fn secretish(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    is_secret_field(name)
        || [
            "key",
            "token",
            "secret",
            "password",
            "auth",
            "cookie",
            "credential",
        ]
        .iter()
        .any(|word| lower.contains(word))
}

fn redact_toml_table(table: &mut dyn toml_edit::TableLike) {
    let keys: Vec<String> = table.iter().map(|(k, _)| k.to_owned()).collect();
    for key in keys {
        let Some(item) = table.get_mut(&key) else {
            continue;
        };
        if let Some(inner) = item.as_table_like_mut() {
            redact_toml_table(inner);
        } else if let Some(array) = item.as_array_of_tables_mut() {
            for inner in array.iter_mut() {
                redact_toml_table(inner);
            }
        } else if secretish(&key) && item.is_value() {
            *item = toml_edit::value(REDACTED);
        }
    }
}

/// `config.toml` / `tui.toml` text with its secrets redacted. Text that does not parse is
/// still masked line by line.
pub fn redact_toml(text: &str) -> String {
    match text.parse::<toml_edit::DocumentMut>() {
        Ok(mut doc) => {
            redact_toml_table(doc.as_table_mut());
            redact_text(&doc.to_string()).into_owned()
        }
        Err(_) => redact_text(text).into_owned(),
    }
}

fn redact_json(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if secretish(key) && !inner.is_object() && !inner.is_array() {
                    *inner = Value::from(REDACTED);
                } else {
                    redact_json(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::String(text) => {
            if let std::borrow::Cow::Owned(masked) = redact_text(text) {
                *text = masked;
            }
        }
        _ => {}
    }
}

/// `mcp.json` text with secret entries (env, headers, tokens) redacted.
pub fn redact_mcp(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut value) => {
            redact_json(&mut value);
            serde_json::to_string_pretty(&value).unwrap_or_default()
        }
        Err(_) => redact_text(text).into_owned(),
    }
}

/// The extra entries of a debug ZIP, as (name in the archive, bytes).
pub fn extras(home: &Path) -> Vec<crate::export::Extra> {
    let mut out = Vec::new();
    for (name, redact) in [
        ("config.toml", redact_toml as fn(&str) -> String),
        ("tui.toml", redact_toml),
        ("mcp.json", redact_mcp),
    ] {
        if let Ok(text) = std::fs::read_to_string(home.join(name)) {
            out.push((format!("{FOLDER}/{name}"), redact(&text).into_bytes()));
        }
    }
    let logs = home.join("logs");
    let mut files: Vec<_> = std::fs::read_dir(&logs)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .collect();
    files.sort_by_key(std::fs::DirEntry::file_name);
    for entry in files {
        match std::fs::read(entry.path()) {
            // Log lines are redacted when written; masked again in case an old one was not.
            Ok(bytes) => out.push((
                format!("{FOLDER}/logs/{}", entry.file_name().to_string_lossy()),
                redact_text(&String::from_utf8_lossy(&bytes))
                    .into_owned()
                    .into_bytes(),
            )),
            Err(err) => tracing::warn!("debug ZIP: cannot read {}: {err}", entry.path().display()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_config_and_mcp_are_redacted_and_the_rest_kept() {
        let config = "default_model = \"k\"\n[providers.p]\ntype = \"kimi\"\napi_key = \"sk-abcdefgh123\"\nenv = { MY_TOKEN = \"t0ps3cret\", REGION = \"eu\" }\ncustom_headers = { Authorization = \"Bearer abcdefgh\" }\n";
        let out = redact_toml(config);
        assert!(!out.contains("sk-abcdefgh123"), "{out}");
        assert!(
            !out.contains("t0ps3cret") && !out.contains("Bearer abcdefgh"),
            "{out}"
        );
        assert!(
            out.contains("REGION = \"eu\"") && out.contains("default_model = \"k\""),
            "{out}"
        );
        let mcp = r#"{"mcpServers":{"s":{"command":"srv","env":{"GITHUB_TOKEN":"ghp_x1"},"headers":{"X-Api-Key":"k1"}}}}"#;
        let out = redact_mcp(mcp);
        assert!(!out.contains("ghp_x1") && !out.contains("\"k1\""), "{out}");
        assert!(out.contains("\"srv\""), "{out}");
    }
}
