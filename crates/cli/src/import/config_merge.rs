//! Merging Kimi Code's `config.toml` into kimi-rs's (both use the keys of surface.md §4.2):
//! what kimi-rs's file lacks is added, what it has is kept (tables merge key by key, arrays
//! such as `[[hooks]]` and `[permission] rules` gain the entries they lack), and the file keeps
//! its comments and layout (`toml_edit`). Credentials (`api_key`, `oauth`, secret-looking
//! `env` and `custom_headers` entries) are left out unless asked for.

use toml_edit::{DocumentMut, Item, TableLike, Value};

/// What the merge did, as key paths (`providers.loop`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MergeReport {
    /// Keys (or array entries, `hooks[2]`) added.
    pub added: Vec<String>,
    /// Keys whose value differs and kimi-rs's was kept.
    pub kept: Vec<String>,
    /// Keys already there with the same value.
    pub unchanged: usize,
    /// Credentials left out (not copied).
    pub credentials_left_out: Vec<String>,
}

/// Whether an `env` / `custom_headers` / MCP `env` / `headers` entry name holds a secret.
pub fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [
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

/// Remove credentials from a Kimi Code config document, returning their key paths.
pub fn strip_credentials(doc: &mut DocumentMut) -> Vec<String> {
    let mut removed = Vec::new();
    for section in ["providers", "models", "services"] {
        let Some(entries) = doc.get_mut(section).and_then(Item::as_table_like_mut) else {
            continue;
        };
        for (name, entry) in entries.iter_mut() {
            let Some(entry) = entry.as_table_like_mut() else {
                continue;
            };
            for key in ["api_key", "oauth"] {
                if entry.remove(key).is_some() {
                    removed.push(format!("{section}.{name}.{key}"));
                }
            }
            for map in ["env", "custom_headers"] {
                let Some(map_table) = entry.get_mut(map).and_then(Item::as_table_like_mut) else {
                    continue;
                };
                let secrets: Vec<String> = map_table
                    .iter()
                    .map(|(k, _)| k.to_owned())
                    .filter(|k| secret_name(k))
                    .collect();
                for k in secrets {
                    map_table.remove(&k);
                    removed.push(format!("{section}.{name}.{map}.{k}"));
                }
            }
        }
    }
    removed
}

/// The meaning of a document (formatting aside), for comparing values.
fn semantic(doc: &DocumentMut) -> toml::Table {
    // A document toml_edit parsed and printed is valid TOML; an empty table is the safe
    // answer should that ever not hold (every key then counts as new).
    toml::from_str(&doc.to_string()).unwrap_or_default()
}

/// Merge `source` into `dest` (kimi-rs's file, possibly empty).
pub fn merge(source: &DocumentMut, dest: &mut DocumentMut) -> MergeReport {
    let mut report = MergeReport::default();
    let src_sem = semantic(source);
    let dst_sem = semantic(dest);
    let mut path = Vec::new();
    merge_table(
        source.as_table(),
        &src_sem,
        dest.as_table_mut(),
        &dst_sem,
        &mut path,
        &mut report,
    );
    report
}

fn merge_table(
    src: &dyn TableLike,
    src_sem: &toml::Table,
    dst: &mut dyn TableLike,
    dst_sem: &toml::Table,
    path: &mut Vec<String>,
    report: &mut MergeReport,
) {
    for (key, src_item) in src.iter() {
        path.push(key.to_owned());
        let here = path.join(".");
        let s = src_sem.get(key);
        let d = dst_sem.get(key);
        match dst.get_mut(key) {
            None => {
                let mut item = src_item.clone();
                clear_positions(&mut item);
                dst.insert(key, item);
                report.added.push(here);
            }
            Some(_) if s == d => report.unchanged += 1,
            Some(dst_item) => match (s, d) {
                (Some(toml::Value::Table(s)), Some(toml::Value::Table(d))) => {
                    match (src_item.as_table_like(), dst_item.as_table_like_mut()) {
                        (Some(src_table), Some(dst_table)) => {
                            merge_table(src_table, s, dst_table, d, path, report);
                        }
                        _ => report.kept.push(here),
                    }
                }
                (Some(toml::Value::Array(s)), Some(toml::Value::Array(d))) => {
                    merge_array(src_item, s, dst_item, d, &here, report);
                }
                _ => report.kept.push(here),
            },
        }
        path.pop();
    }
}

/// Append the entries of `src` that `dst` lacks (by value).
fn merge_array(
    src: &Item,
    src_sem: &[toml::Value],
    dst: &mut Item,
    dst_sem: &[toml::Value],
    here: &str,
    report: &mut MergeReport,
) {
    let missing: Vec<usize> = src_sem
        .iter()
        .enumerate()
        .filter(|(_, v)| !dst_sem.contains(v))
        .map(|(i, _)| i)
        .collect();
    report.unchanged += src_sem.len() - missing.len();
    let mut len = dst_sem.len();
    match (src, dst) {
        (Item::ArrayOfTables(src), Item::ArrayOfTables(dst)) => {
            for i in missing {
                if let Some(table) = src.get(i) {
                    let mut table = table.clone();
                    table.set_position(None);
                    dst.push(table);
                    report.added.push(format!("{here}[{len}]"));
                    len += 1;
                }
            }
        }
        (Item::Value(Value::Array(src)), Item::Value(Value::Array(dst))) => {
            for i in missing {
                if let Some(value) = src.get(i) {
                    dst.push_formatted(value.clone());
                    report.added.push(format!("{here}[{len}]"));
                    len += 1;
                }
            }
        }
        _ if missing.is_empty() => {}
        // One file writes `[[x]]`, the other `x = [...]`: kimi-rs's stays as it is.
        _ => report.kept.push(here.to_owned()),
    }
}

/// Tables copied from another document carry that document's ordering; dropping it places
/// them after kimi-rs's own tables.
fn clear_positions(item: &mut Item) {
    match item {
        Item::Table(table) => {
            table.set_position(None);
            for (_, child) in table.iter_mut() {
                clear_positions(child);
            }
        }
        Item::ArrayOfTables(array) => {
            for table in array.iter_mut() {
                table.set_position(None);
                for (_, child) in table.iter_mut() {
                    clear_positions(child);
                }
            }
        }
        Item::None | Item::Value(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIMI_CODE: &str = r#"
default_model = "k2"

[providers.loop]
type = "openai"
base_url = "http://127.0.0.1:1/v1"
api_key = "sk-secret"
env = { OPENAI_BASE_URL = "http://x", OPENAI_API_KEY = "sk-env" }

[models.k2]
provider = "loop"
model = "kimi-k2"
max_context_size = 100000

[permission]
rules = [{ decision = "deny", pattern = "Bash(rm *)" }]

[[hooks]]
event = "PreToolUse"
command = "true"
"#;

    const KIMI_RS: &str = r#"# my settings
default_model = "mine"

[models.mine]
provider = "other"
model = "m"
max_context_size = 1000

[[hooks]]
event = "Stop"
command = "echo done"
"#;

    #[test]
    fn adds_what_is_missing_keeps_what_is_there_and_leaves_secrets_out() {
        let mut source: DocumentMut = KIMI_CODE.parse().unwrap();
        let removed = strip_credentials(&mut source);
        assert_eq!(
            removed,
            [
                "providers.loop.api_key",
                "providers.loop.env.OPENAI_API_KEY"
            ]
        );
        let mut dest: DocumentMut = KIMI_RS.parse().unwrap();
        let report = merge(&source, &mut dest);
        let text = dest.to_string();
        assert!(
            text.starts_with("# my settings\ndefault_model = \"mine\""),
            "{text}"
        );
        assert_eq!(report.kept, ["default_model"]);
        assert!(report.added.contains(&"providers".to_owned()), "{report:?}");
        assert!(report.added.contains(&"models.k2".to_owned()), "{report:?}");
        assert!(report.added.contains(&"hooks[1]".to_owned()), "{report:?}");
        assert!(
            !text.contains("sk-secret") && !text.contains("sk-env"),
            "{text}"
        );
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(parsed["hooks"].as_array().unwrap().len(), 2);
        assert_eq!(
            parsed["providers"]["loop"]["env"]["OPENAI_BASE_URL"].as_str(),
            Some("http://x")
        );
        assert_eq!(parsed["models"]["mine"]["model"].as_str(), Some("m"));

        // Merging again changes nothing.
        let again = merge(&source, &mut dest);
        assert!(again.added.is_empty(), "{again:?}");
        assert_eq!(dest.to_string(), text);
    }

    #[test]
    fn credentials_are_copied_when_asked() {
        let source: DocumentMut = KIMI_CODE.parse().unwrap();
        let mut dest = DocumentMut::new();
        merge(&source, &mut dest);
        let parsed: toml::Table = toml::from_str(&dest.to_string()).unwrap();
        assert_eq!(
            parsed["providers"]["loop"]["api_key"].as_str(),
            Some("sk-secret")
        );
        assert_eq!(parsed["default_model"].as_str(), Some("k2"));
    }
}
