//! Custom agent files (surface.md §8.2): Markdown with a YAML frontmatter whose body is the
//! agent's system prompt template. Unknown frontmatter keys are ignored so files written for
//! other agents (Claude Code, OpenCode) load too.

use std::path::Path;

use serde_yaml_ng::Value;

use super::builtin::KNOWN_TOOLS;
use super::{Profile, ProfileError, ProfileSource};

/// `name` must be kebab-case.
fn is_kebab(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Split `---\n<yaml>\n---\n<body>`; `None` when the file has no frontmatter.
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// A `tools`-like field: a list, or a comma-separated string. `Ok(None)` when absent.
fn name_list(map: &serde_yaml_ng::Mapping, key: &str) -> Result<Option<Vec<String>>, String> {
    let Some(value) = map.get(key) else {
        return Ok(None);
    };
    let items = match value {
        Value::Null => return Ok(None),
        Value::String(text) => text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Value::Sequence(seq) => seq
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.trim().to_owned()),
                _ => Err(format!("`{key}` entries must be strings")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => {
            return Err(format!(
                "`{key}` must be a list or a comma-separated string"
            ));
        }
    };
    Ok(Some(items))
}

fn optional_string(map: &serde_yaml_ng::Mapping, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// Warnings for tool names that can never match (§8.2).
fn check_tool_names(path: &Path, key: &str, names: &[String], warnings: &mut Vec<String>) {
    for name in names {
        let problem = if name == "*" {
            (names.len() > 1).then(|| {
                "a bare `*` among other names; use `*` alone for every tool, or `mcp__*` for MCP tools".to_owned()
            })
        } else if let Some(rest) = name.strip_prefix("mcp__") {
            (!rest.contains("__") && !rest.contains('*')).then(|| {
                format!("`{name}` names an MCP server without a tool; write `{name}__*` for all of its tools")
            })
        } else if name.contains('*') {
            Some(format!("`{name}`: globs only work for `mcp__` names"))
        } else if !KNOWN_TOOLS.contains(&name.as_str()) {
            Some(format!("unknown tool `{name}` (names are case-sensitive)"))
        } else {
            None
        };
        if let Some(problem) = problem {
            warnings.push(format!("{}: `{key}`: {problem}", path.display()));
        }
    }
}

/// Parse one agent file; returns the profile and warnings about names that will never match.
pub fn parse_agent_file(
    path: &Path,
    text: &str,
    source: ProfileSource,
) -> Result<(Profile, Vec<String>), ProfileError> {
    let invalid = |message: String| ProfileError::Invalid {
        path: path.to_owned(),
        message,
    };
    let (yaml, body) = split_frontmatter(text).ok_or_else(|| {
        invalid("it has no YAML frontmatter; start the file with a `---` block holding at least `description:`".to_owned())
    })?;
    let value: Value = serde_yaml_ng::from_str(yaml)
        .map_err(|e| invalid(format!("the frontmatter is not valid YAML: {e}")))?;
    let map = match value {
        Value::Mapping(map) => map,
        Value::Null => serde_yaml_ng::Mapping::new(),
        _ => {
            return Err(invalid(
                "the frontmatter must be a mapping of keys".to_owned(),
            ));
        }
    };
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = optional_string(&map, "name")
        .map_err(invalid)?
        .unwrap_or(stem);
    if !is_kebab(&name) {
        return Err(invalid(format!(
            "the name `{name}` is not kebab-case (lowercase letters and digits joined by `-`); set `name:` or rename the file"
        )));
    }
    let description = optional_string(&map, "description")
        .map_err(invalid)?
        .filter(|d| !d.is_empty())
        .ok_or_else(|| invalid("`description` is required".to_owned()))?;
    let when_to_use = optional_string(&map, "whenToUse").map_err(invalid)?;
    let is_override = match map.get("override") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(invalid("`override` must be true or false".to_owned())),
    };
    let body = body.trim();
    if body.is_empty() {
        return Err(invalid(
            "the body (the system prompt, after the frontmatter) is empty".to_owned(),
        ));
    }
    let mut warnings = Vec::new();
    let tools = name_list(&map, "tools").map_err(invalid)?;
    if let Some(list) = &tools {
        check_tool_names(path, "tools", list, &mut warnings);
    }
    let tools = tools.filter(|list| !(list.len() == 1 && list[0] == "*"));
    let disallowed_tools = name_list(&map, "disallowedTools")
        .map_err(invalid)?
        .unwrap_or_default();
    check_tool_names(path, "disallowedTools", &disallowed_tools, &mut warnings);
    let subagents = name_list(&map, "subagents").map_err(invalid)?;
    Ok((
        Profile {
            name,
            description,
            when_to_use,
            role: String::new(),
            template: Some(body.to_owned()),
            tools,
            disallowed_tools,
            subagents,
            summary_policy: false,
            git_context: false,
            is_override,
            source,
        },
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(name: &str, text: &str) -> Result<(Profile, Vec<String>), ProfileError> {
        let path = Path::new("/agents").join(name);
        parse_agent_file(&path, text, ProfileSource::User(path.clone()))
    }

    #[test]
    fn a_full_file_parses() {
        let (profile, warnings) = parse(
            "reviewer.md",
            "---\ndescription: Reviews diffs\nwhenToUse: after edits\ntools: Read, Grep, mcp__gh__*\ndisallowedTools: [Bash]\nsubagents: [explore]\ncolor: blue\n---\nYou review.\n${base_prompt}\n",
        )
        .unwrap();
        assert_eq!(warnings, Vec::<String>::new());
        assert_eq!(profile.name, "reviewer");
        assert_eq!(
            profile.tools,
            Some(vec!["Read".into(), "Grep".into(), "mcp__gh__*".into()])
        );
        assert_eq!(profile.disallowed_tools, vec!["Bash".to_owned()]);
        assert_eq!(profile.subagents, Some(vec!["explore".to_owned()]));
        assert_eq!(
            profile.template.as_deref(),
            Some("You review.\n${base_prompt}")
        );
    }

    #[test]
    fn tools_star_means_all_and_empty_means_none() {
        let (all, _) = parse("a.md", "---\ndescription: d\ntools: '*'\n---\nx").unwrap();
        assert_eq!(all.tools, None);
        let (none, _) = parse("a.md", "---\ndescription: d\ntools: []\n---\nx").unwrap();
        assert_eq!(none.tools, Some(Vec::new()));
        assert!(!none.allows_tool("Read"));
    }

    #[test]
    fn questionable_names_warn() {
        let (_, warnings) = parse(
            "a.md",
            "---\ndescription: d\ntools: [read, '*', mcp__github, Gl*]\n---\nx",
        )
        .unwrap();
        assert_eq!(warnings.len(), 4, "{warnings:#?}");
    }

    #[test]
    fn invalid_files_say_what_is_wrong() {
        for (file, text, needle) in [
            ("a.md", "no frontmatter", "no YAML frontmatter"),
            (
                "a.md",
                "---\nname: x\n---\nbody",
                "`description` is required",
            ),
            (
                "Bad_Name.md",
                "---\ndescription: d\n---\nbody",
                "not kebab-case",
            ),
            ("a.md", "---\ndescription: d\n---\n  \n", "body"),
            ("a.md", "---\ndescription: [\n---\nbody", "not valid YAML"),
        ] {
            let err = parse(file, text).unwrap_err().to_string();
            assert!(err.contains(needle), "{file}: {err}");
        }
    }
}
