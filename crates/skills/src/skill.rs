//! One skill: its definition (`Skill`), where it came from (`SkillSource`), its type, and the
//! parser that turns a `SKILL.md` or flat `<name>.md` file into a `Skill` (surface.md §7.1).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use kimi_tools::result::{utf16_len, utf16_prefix};

/// Which root a skill was discovered in. Precedence when names collide:
/// Project > User > Extra > Plugin > Built-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkillSource {
    Project,
    User,
    Extra,
    /// An enabled plugin's `skills`.
    Plugin,
    /// Shipped in the binary.
    Builtin,
}

impl SkillSource {
    /// The wire/attribute spelling (`project`, `user`, `extra`, `builtin`).
    pub fn as_str(self) -> &'static str {
        match self {
            SkillSource::Project => "project",
            SkillSource::User => "user",
            SkillSource::Extra => "extra",
            SkillSource::Plugin => "plugin",
            SkillSource::Builtin => "builtin",
        }
    }

    /// The heading the prompt listing groups this scope under.
    pub fn label(self) -> &'static str {
        match self {
            SkillSource::Project => "Project",
            SkillSource::User => "User",
            SkillSource::Extra => "Extra",
            SkillSource::Plugin => "Plugin",
            SkillSource::Builtin => "Built-in",
        }
    }

    /// Listing order: the most specific scope first.
    pub const LISTING_ORDER: [SkillSource; 5] = [
        SkillSource::Project,
        SkillSource::User,
        SkillSource::Extra,
        SkillSource::Plugin,
        SkillSource::Builtin,
    ];
}

/// The frontmatter `type`. `prompt` and `inline` are the same thing (the body is injected as
/// instructions); `flow` can only be started by the user; `reference` is listed but never run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SkillType {
    Prompt,
    Inline,
    Flow,
    Reference,
}

impl SkillType {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillType::Prompt => "prompt",
            SkillType::Inline => "inline",
            SkillType::Flow => "flow",
            SkillType::Reference => "reference",
        }
    }

    fn parse(value: &str) -> Option<SkillType> {
        match value {
            "prompt" => Some(SkillType::Prompt),
            "inline" => Some(SkillType::Inline),
            "flow" => Some(SkillType::Flow),
            "reference" => Some(SkillType::Reference),
            _ => None,
        }
    }

    /// Prompt/inline skills are the only ones the model may load through the Skill tool.
    pub fn is_inline(self) -> bool {
        match self {
            SkillType::Prompt | SkillType::Inline => true,
            SkillType::Flow | SkillType::Reference => false,
        }
    }

    /// What a user may start with a slash command.
    pub fn is_user_activatable(self) -> bool {
        match self {
            SkillType::Prompt | SkillType::Inline | SkillType::Flow => true,
            SkillType::Reference => false,
        }
    }
}

/// A discovered skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// Display name; sub-skills are qualified as `parent.child`. Lookup is case-insensitive.
    pub name: String,
    pub description: String,
    /// Absolute path of the `SKILL.md` or flat `.md` file.
    pub path: PathBuf,
    /// The folder `${KIMI_SKILL_DIR}` expands to.
    pub dir: PathBuf,
    /// The body after the frontmatter, trimmed.
    pub content: String,
    pub source: SkillSource,
    /// The declared type; `None` (not declared) behaves as `prompt`.
    pub skill_type: Option<SkillType>,
    pub when_to_use: Option<String>,
    pub disable_model_invocation: bool,
    /// Declared argument names for `$<name>` placeholders, in positional order.
    pub arguments: Vec<String>,
    /// Found inside a parent skill that declared `has-sub-skill`; hidden from the model listing.
    pub is_sub_skill: bool,
    /// Every frontmatter key (aliases normalised to their camelCase name), unknown keys included.
    pub metadata: Map<String, Value>,
    /// The first ```` ```mermaid ```` block of the body (flow skills).
    pub mermaid: Option<String>,
    /// The first ```` ```d2 ```` block of the body (flow skills).
    pub d2: Option<String>,
    /// The plugin that contributed this skill (source `Plugin`).
    pub plugin: Option<PluginSkill>,
}

/// What a plugin adds to each of its skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSkill {
    /// The plugin's id.
    pub id: String,
    /// The manifest's `skillInstructions`, wrapped around the skill body when it is loaded.
    pub instructions: Option<String>,
}

impl Skill {
    /// The effective type (`prompt` when none was declared).
    pub fn kind(&self) -> SkillType {
        self.skill_type.unwrap_or(SkillType::Prompt)
    }

    /// The chart `/flow:<name>` walks: the body's mermaid block, else its d2 block.
    pub fn flow(&self) -> Result<kimi_protocol::flow::FlowGraph, crate::flow::FlowError> {
        match (&self.mermaid, &self.d2) {
            (Some(chart), _) => crate::flow::parse_mermaid(chart),
            (None, Some(chart)) => crate::flow::parse_d2(chart),
            (None, None) => Err(crate::flow::FlowError::Invalid(
                "its body has no ```mermaid or ```d2 flowchart block".to_owned(),
            )),
        }
    }

    /// Whether the model may load this skill with the Skill tool.
    pub fn model_invocable(&self) -> bool {
        !self.disable_model_invocation && self.kind().is_inline()
    }
}

/// Why a skill file was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillParseError {
    #[error(
        "Missing frontmatter in {path}: a SKILL.md must start with a `---` line followed by `name:` and `description:`"
    )]
    MissingFrontmatter { path: String },
    #[error("Invalid frontmatter in {path}: {message}. Fix the YAML between the `---` lines")]
    InvalidFrontmatter { path: String, message: String },
    #[error(
        "Frontmatter in {path} must be a mapping at the top level (`key: value` lines between the `---` fences)"
    )]
    NotAMapping { path: String },
    #[error("Missing required frontmatter field \"{field}\" in {path}: add `{field}: …` to it")]
    MissingField { field: &'static str, path: String },
    #[error(
        "Skill type \"{found}\" in {path} is not supported; use one of \"prompt\", \"inline\", \"flow\" or \"reference\""
    )]
    UnsupportedType { found: String, path: String },
}

const FENCE: &str = "---";
const NO_DESCRIPTION: &str = "No description provided.";
const DESCRIPTION_FROM_BODY_MAX: usize = 240;

/// Frontmatter spellings that mean the same key.
fn canonical_key(key: &str) -> &str {
    match key {
        "when-to-use" | "when_to_use" => "whenToUse",
        "disable-model-invocation" | "disable_model_invocation" => "disableModelInvocation",
        other => other,
    }
}

/// Split a Markdown document into YAML frontmatter and body. A document without a leading
/// `---` line is all body; an unterminated fence is an error.
fn split_frontmatter(text: &str) -> Result<(Option<String>, String), String> {
    let lines: Vec<&str> = text.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    if lines.first().map(|l| l.trim()) != Some(FENCE) {
        return Ok((None, text.to_owned()));
    }
    let Some(close) = lines
        .iter()
        .enumerate()
        .skip(1)
        .find_map(|(i, l)| (l.trim() == FENCE).then_some(i))
    else {
        return Err("Missing closing frontmatter fence".to_owned());
    };
    let yaml = lines[1..close].join("\n").trim().to_owned();
    let body = lines[close + 1..].join("\n");
    Ok((Some(yaml), body))
}

fn non_empty_string(value: Option<&Value>) -> Option<String> {
    match value {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

/// The argument names a skill declares: a YAML list of strings or one space-separated string.
/// Blank and all-digit names are ignored (digits are positional `$n` placeholders).
fn argument_names(value: Option<&Value>) -> Vec<String> {
    let valid = |name: &str| !name.trim().is_empty() && !name.chars().all(|c| c.is_ascii_digit());
    match value {
        Some(Value::String(s)) => s
            .split_whitespace()
            .filter(|n| valid(n))
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter(|n| valid(n))
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

fn description_from_body(body: &str) -> String {
    let Some(first) = body.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return NO_DESCRIPTION.to_owned();
    };
    if utf16_len(first) > DESCRIPTION_FROM_BODY_MAX {
        format!("{}…", utf16_prefix(first, DESCRIPTION_FROM_BODY_MAX - 1))
    } else {
        first.to_owned()
    }
}

/// The first fenced block of the given language.
fn fenced_block(markdown: &str, lang: &str) -> Option<String> {
    let open = format!("```{lang}");
    let mut lines = markdown.split('\n').map(|l| l.trim_end_matches('\r'));
    while let Some(line) = lines.next() {
        if line == open {
            let mut block = Vec::new();
            for inner in lines.by_ref() {
                if inner.starts_with("```") {
                    return Some(block.join("\n"));
                }
                block.push(inner);
            }
            return None;
        }
    }
    None
}

fn has_sub_skill(metadata: &Map<String, Value>) -> bool {
    let flag = |map: &Map<String, Value>| {
        map.get("has-sub-skill") == Some(&Value::Bool(true))
            || map.get("hasSubSkill") == Some(&Value::Bool(true))
    };
    flag(metadata)
        || metadata
            .get("metadata")
            .and_then(Value::as_object)
            .is_some_and(flag)
}

/// A parsed file plus whether it opens a sub-skill bundle.
pub struct Parsed {
    pub skill: Skill,
    pub has_sub_skill: bool,
}

/// Parse one skill file. `fallback_name` is the directory or file stem, used when a flat file
/// has no `name` in its frontmatter. Directory skills (`SKILL.md`) must have frontmatter with
/// `name` and `description`.
pub fn parse_skill_text(
    path: &Path,
    fallback_name: &str,
    source: SkillSource,
    text: &str,
) -> Result<Parsed, SkillParseError> {
    let shown = path.display().to_string();
    let is_directory_skill = path.file_name().is_some_and(|n| n == "SKILL.md");
    let (yaml, body) =
        split_frontmatter(text).map_err(|message| SkillParseError::InvalidFrontmatter {
            path: shown.clone(),
            message,
        })?;
    if is_directory_skill && yaml.is_none() {
        return Err(SkillParseError::MissingFrontmatter { path: shown });
    }

    let mut metadata = Map::new();
    if let Some(yaml) = yaml.filter(|y| !y.is_empty()) {
        let value: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&yaml).map_err(|e| SkillParseError::InvalidFrontmatter {
                path: shown.clone(),
                message: e.to_string(),
            })?;
        let mapping = match value {
            serde_yaml_ng::Value::Null => serde_yaml_ng::Mapping::new(),
            serde_yaml_ng::Value::Mapping(m) => m,
            _ => return Err(SkillParseError::NotAMapping { path: shown }),
        };
        for (key, value) in mapping {
            let key = match key {
                serde_yaml_ng::Value::String(s) => s,
                other => serde_yaml_ng::to_string(&other)
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_default(),
            };
            let value =
                serde_json::to_value(&value).map_err(|e| SkillParseError::InvalidFrontmatter {
                    path: shown.clone(),
                    message: format!("key `{key}`: {e}"),
                })?;
            metadata.insert(canonical_key(&key).to_owned(), value);
        }
    }

    let skill_type = match metadata.get("type") {
        None => None,
        Some(Value::String(s)) => match SkillType::parse(s.trim()) {
            Some(t) => Some(t),
            None => {
                return Err(SkillParseError::UnsupportedType {
                    found: s.clone(),
                    path: shown,
                });
            }
        },
        Some(other) => {
            return Err(SkillParseError::UnsupportedType {
                found: other.to_string(),
                path: shown,
            });
        }
    };

    let name = non_empty_string(metadata.get("name"));
    let description = non_empty_string(metadata.get("description"));
    if is_directory_skill {
        let missing = if name.is_none() {
            Some("name")
        } else if description.is_none() {
            Some("description")
        } else {
            None
        };
        if let Some(field) = missing {
            return Err(SkillParseError::MissingField { field, path: shown });
        }
    }

    let content = body.trim().to_owned();
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let has_sub_skill = has_sub_skill(&metadata);
    let skill = Skill {
        name: name.unwrap_or_else(|| fallback_name.to_owned()),
        description: description.unwrap_or_else(|| description_from_body(&content)),
        path: path.to_path_buf(),
        dir,
        when_to_use: match metadata.get("whenToUse") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        },
        disable_model_invocation: metadata.get("disableModelInvocation")
            == Some(&Value::Bool(true)),
        arguments: argument_names(metadata.get("arguments")),
        is_sub_skill: false,
        mermaid: fenced_block(&content, "mermaid"),
        d2: fenced_block(&content, "d2"),
        content,
        source,
        skill_type,
        metadata,
        plugin: None,
    };
    Ok(Parsed {
        skill,
        has_sub_skill,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn frontmatter_split_handles_crlf_and_empty_blocks() {
        assert_eq!(
            split_frontmatter("---\r\nname: a\r\n---\r\nbody"),
            Ok((Some("name: a".to_owned()), "body".to_owned()))
        );
        assert_eq!(
            split_frontmatter("---\n---\nbody"),
            Ok((Some(String::new()), "body".to_owned()))
        );
        assert_eq!(
            split_frontmatter("no fence"),
            Ok((None, "no fence".to_owned()))
        );
        assert!(split_frontmatter("---\nname: a\n").is_err());
    }

    #[test]
    fn argument_names_accept_lists_and_strings() {
        let list = serde_json::json!(["file", "2", "", 3, "mode"]);
        assert_eq!(argument_names(Some(&list)), vec!["file", "mode"]);
        let text = Value::String(" file  10 mode ".to_owned());
        assert_eq!(argument_names(Some(&text)), vec!["file", "mode"]);
        assert_eq!(argument_names(None), Vec::<String>::new());
    }

    #[test]
    fn long_first_line_is_cut_to_240_units() {
        let line = "x".repeat(300);
        let description = description_from_body(&line);
        assert_eq!(utf16_len(&description), 240);
        assert!(description.ends_with('…'));
        assert_eq!(description_from_body("\n\n  "), NO_DESCRIPTION);
    }

    #[test]
    fn fenced_blocks_are_extracted() {
        let body = "intro\n```mermaid\ngraph TD\nA-->B\n```\n```d2\na -> b\n```";
        assert_eq!(
            fenced_block(body, "mermaid").as_deref(),
            Some("graph TD\nA-->B")
        );
        assert_eq!(fenced_block(body, "d2").as_deref(), Some("a -> b"));
        assert_eq!(fenced_block(body, "dot"), None);
    }
}
