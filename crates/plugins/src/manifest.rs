//! `kimi.plugin.json` / `.kimi-plugin/plugin.json` (surface.md §7.2): the fields, the id rule,
//! the size limits of prompt text, and the one safety rule — every path a manifest names must
//! stay inside the plugin root after symlinks are resolved. Keys kimi-rs does not support
//! become diagnostics, never silent.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::PluginError;

/// The preferred manifest file, then the alternative.
pub const MANIFEST_FILES: [&str; 2] = ["kimi.plugin.json", ".kimi-plugin/plugin.json"];
/// `systemPrompt` and `systemPromptPath` each hold at most this many bytes.
pub const MAX_PROMPT_BYTES: usize = 32 * 1024;

/// Display metadata, kept as written.
const DISPLAY_KEYS: [&str; 8] = [
    "version",
    "description",
    "keywords",
    "author",
    "homepage",
    "license",
    "interface",
    "$schema",
];
/// Keys of the reference's manifest that kimi-rs does not act on.
const UNSUPPORTED_KEYS: [&str; 4] = ["tools", "apps", "inject", "configFile"];

/// A checked manifest. Paths are canonical and inside [`Manifest::root`].
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The manifest file.
    pub path: PathBuf,
    /// The plugin root, canonical.
    pub root: PathBuf,
    /// The plugin id.
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    /// `interface.displayName`, else the id.
    pub display_name: String,
    /// Display metadata as written (`keywords`, `author`, `homepage`, `license`, `interface`).
    pub metadata: Map<String, Value>,
    /// `skills`: where its skills are; the root's `SKILL.md` when not given.
    pub skills: Vec<PathBuf>,
    /// `agents`: agent folders; `agents/` when not given and present.
    pub agents: Vec<PathBuf>,
    /// `commands`: a folder of `.md` files or single `.md` files.
    pub commands: Vec<PathBuf>,
    /// `sessionStart.skill`: a skill of this plugin loaded into new sessions' prompt.
    pub session_start_skill: Option<String>,
    /// `skillInstructions`: wrapped around each of its skills when loaded.
    pub skill_instructions: Option<String>,
    /// `systemPrompt` then the text of `systemPromptPath`, each within [`MAX_PROMPT_BYTES`].
    pub prompt_text: Vec<String>,
    /// `mcpServers` as written (an `mcp.json` `mcpServers` object).
    pub mcp_servers: Option<Map<String, Value>>,
    /// `hooks` as written (each one like a `[[hooks]]` entry).
    pub hooks: Vec<Value>,
    /// What was ignored and why.
    pub diagnostics: Vec<String>,
}

/// The manifest file of `root`, if any.
pub fn manifest_path(root: &Path) -> Option<PathBuf> {
    MANIFEST_FILES
        .iter()
        .map(|name| root.join(name))
        .find(|path| path.is_file())
}

/// `[a-z0-9][a-z0-9_-]{0,63}`.
pub fn valid_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

/// Whether `rel`, taken lexically from the root, ever climbs above it.
fn climbs_out(rel: &Path) -> bool {
    let mut depth: i64 = 0;
    for component in rel.components() {
        match component {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return true,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// Resolve a manifest path inside `root` (canonical). `Ok(None)` when it does not exist (the
/// caller decides whether that matters); an absolute path, a `..` above the root or a symlink
/// leading out is [`PluginError::PathEscapes`].
pub fn resolve_inside(
    root: &Path,
    manifest: &Path,
    field: &str,
    value: &str,
) -> Result<Option<PathBuf>, PluginError> {
    let escapes = || PluginError::PathEscapes {
        path: manifest.to_path_buf(),
        field: field.to_owned(),
        value: value.to_owned(),
    };
    let rel = Path::new(value);
    if value.trim().is_empty() || climbs_out(rel) {
        return Err(escapes());
    }
    let joined = root.join(rel);
    if std::fs::symlink_metadata(&joined).is_err() {
        return Ok(None);
    }
    // A dangling symlink cannot be checked: refused like one leading out.
    let canonical = std::fs::canonicalize(&joined).map_err(|_| escapes())?;
    if canonical.starts_with(root) {
        Ok(Some(canonical))
    } else {
        Err(escapes())
    }
}

fn string_list(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => None,
    }
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// Read and check the manifest of the plugin at `root`.
pub fn read_manifest(root: &Path) -> Result<Manifest, PluginError> {
    let root = std::fs::canonicalize(root).map_err(PluginError::io(root))?;
    let path = manifest_path(&root).ok_or_else(|| PluginError::NoManifest(root.clone()))?;
    // The manifest itself may not be a symlink out of the plugin.
    let real = std::fs::canonicalize(&path).map_err(PluginError::io(&path))?;
    if !real.starts_with(&root) {
        return Err(PluginError::PathEscapes {
            path,
            field: "manifest".to_owned(),
            value: real.display().to_string(),
        });
    }
    let text = std::fs::read_to_string(&path).map_err(PluginError::io(&path))?;
    parse_manifest(&root, &path, &text)
}

fn bad(path: &Path, message: impl Into<String>) -> PluginError {
    PluginError::Manifest {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Parse manifest text of a plugin whose canonical root is `root`.
pub fn parse_manifest(root: &Path, path: &Path, text: &str) -> Result<Manifest, PluginError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| bad(path, format!("not valid JSON ({e}); fix the syntax")))?;
    let Value::Object(obj) = value else {
        return Err(bad(path, "the top level must be a JSON object"));
    };
    let string = |key: &str| opt_string(&obj, key).map_err(|m| bad(path, m));
    let name = string("name")?.ok_or_else(|| bad(path, "`name` (the plugin id) is required"))?;
    if !valid_id(&name) {
        return Err(bad(
            path,
            format!(
                "`name` \"{name}\" is not a valid plugin id: use 1–64 lower-case letters, digits, `-` or `_`, starting with a letter or digit"
            ),
        ));
    }
    let mut diagnostics = Vec::new();
    let mut metadata = Map::new();
    for (key, value) in &obj {
        let known = matches!(
            key.as_str(),
            "name"
                | "skills"
                | "agents"
                | "commands"
                | "sessionStart"
                | "skillInstructions"
                | "systemPrompt"
                | "systemPromptPath"
                | "mcpServers"
                | "hooks"
        );
        if DISPLAY_KEYS.contains(&key.as_str()) {
            metadata.insert(key.clone(), value.clone());
        } else if UNSUPPORTED_KEYS.contains(&key.as_str()) {
            diagnostics.push(format!(
                "{name}: `{key}` is not supported by kimi-rs and was ignored"
            ));
        } else if !known {
            diagnostics.push(format!("{name}: unknown manifest key `{key}` was ignored"));
        }
    }
    let paths = |field: &str, default: Option<&str>, diagnostics: &mut Vec<String>| {
        let declared = match obj.get(field) {
            None | Some(Value::Null) => None,
            Some(v) => Some(string_list(v).ok_or_else(|| {
                bad(path, format!("`{field}` must be a path or a list of paths"))
            })?),
        };
        let mut out = Vec::new();
        match declared {
            Some(list) => {
                for value in list {
                    match resolve_inside(root, path, field, &value)? {
                        Some(p) => out.push(p),
                        None => diagnostics.push(format!(
                            "{name}: `{field}` path \"{value}\" does not exist and was ignored"
                        )),
                    }
                }
            }
            None => {
                if let Some(default) = default
                    && let Some(p) = resolve_inside(root, path, field, default)?
                {
                    out.push(p);
                }
            }
        }
        Ok::<_, PluginError>(out)
    };
    let skills = paths("skills", Some("SKILL.md"), &mut diagnostics)?;
    let agents = paths("agents", Some("agents"), &mut diagnostics)?;
    let commands = paths("commands", Some("commands"), &mut diagnostics)?;

    let session_start_skill = match obj.get("sessionStart") {
        None | Some(Value::Null) => None,
        Some(Value::Object(start)) => {
            for key in start.keys().filter(|k| k.as_str() != "skill") {
                diagnostics.push(format!(
                    "{name}: `sessionStart.{key}` is not supported by kimi-rs and was ignored"
                ));
            }
            opt_string(start, "skill").map_err(|m| bad(path, format!("sessionStart: {m}")))?
        }
        Some(_) => {
            return Err(bad(
                path,
                "`sessionStart` must be an object like {\"skill\": \"<name>\"}",
            ));
        }
    };

    let mut prompt_text = Vec::new();
    if let Some(text) = string("systemPrompt")? {
        if text.len() > MAX_PROMPT_BYTES {
            diagnostics.push(format!(
                "{name}: `systemPrompt` is {} bytes, over the {MAX_PROMPT_BYTES}-byte limit; it was left out",
                text.len()
            ));
        } else if !text.trim().is_empty() {
            prompt_text.push(text);
        }
    }
    if let Some(rel) = string("systemPromptPath")? {
        match resolve_inside(root, path, "systemPromptPath", &rel)? {
            None => diagnostics.push(format!(
                "{name}: `systemPromptPath` \"{rel}\" does not exist and was ignored"
            )),
            Some(file) => {
                let text = std::fs::read_to_string(&file).map_err(PluginError::io(&file))?;
                if text.len() > MAX_PROMPT_BYTES {
                    diagnostics.push(format!(
                        "{name}: `systemPromptPath` {} is {} bytes, over the {MAX_PROMPT_BYTES}-byte limit; it was left out",
                        file.display(),
                        text.len()
                    ));
                } else if !text.trim().is_empty() {
                    prompt_text.push(text);
                }
            }
        }
    }

    let mcp_servers = match obj.get("mcpServers") {
        None | Some(Value::Null) => None,
        Some(Value::Object(servers)) => Some(servers.clone()),
        Some(_) => {
            return Err(bad(
                path,
                "`mcpServers` must be an object of servers, as in mcp.json",
            ));
        }
    };
    let hooks = match obj.get("hooks") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(hooks)) => hooks.clone(),
        Some(_) => {
            return Err(bad(
                path,
                "`hooks` must be an array of {event, matcher?, command, timeout?} objects",
            ));
        }
    };
    let display_name = obj
        .get("interface")
        .and_then(|i| i.get("displayName"))
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map_or_else(|| name.clone(), str::to_owned);
    Ok(Manifest {
        path: path.to_path_buf(),
        root: root.to_path_buf(),
        version: string("version")?,
        description: string("description")?,
        skill_instructions: string("skillInstructions")?,
        display_name,
        name,
        metadata,
        skills,
        agents,
        commands,
        session_start_skill,
        prompt_text,
        mcp_servers,
        hooks,
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_reference_rule() {
        for ok in ["a", "my-plugin", "p_2", "0x", &"a".repeat(64)] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "_a",
            "A",
            "my plugin",
            "ü",
            &"a".repeat(65),
            "a/b",
        ] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn lexical_escapes_are_caught() {
        assert!(climbs_out(Path::new("../x")));
        assert!(climbs_out(Path::new("./a/../../x")));
        assert!(climbs_out(Path::new("/etc")));
        assert!(!climbs_out(Path::new("./a/../b")));
        assert!(!climbs_out(Path::new("skills")));
    }
}
