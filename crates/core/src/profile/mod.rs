//! Agent profiles (surface.md §8): what an agent is told (its role text or its own prompt
//! template) and which tools it gets. Built-in profiles live in code; custom ones come from
//! Markdown agent files found in the user's and the project's agent directories.

pub mod builtin;
pub mod catalog;
pub mod file;
pub mod render;

use std::path::PathBuf;

pub use builtin::{DEFAULT_MAIN, DEFAULT_SUBAGENT};
pub use catalog::{AgentDirs, ProfileCatalog};
pub use file::parse_agent_file;
pub use render::{PromptEnv, attach_late_for, git_context, registry_for, render_profile_prompt};

/// Where a profile came from; also decides precedence (later variants win).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileSource {
    Builtin,
    User(PathBuf),
    Project(PathBuf),
    /// Given with `--agent-file`.
    Explicit(PathBuf),
}

impl ProfileSource {
    /// The agent file, for custom profiles.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            ProfileSource::Builtin => None,
            ProfileSource::User(p) | ProfileSource::Project(p) | ProfileSource::Explicit(p) => {
                Some(p)
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub when_to_use: Option<String>,
    /// The `role_additional` text of a built-in profile (empty for custom ones).
    pub role: String,
    /// A custom profile's system prompt template (`${name}` variables, `${base_prompt}`).
    pub template: Option<String>,
    /// Allowed tool names or `mcp__` globs; `None` = every tool.
    pub tools: Option<Vec<String>>,
    pub disallowed_tools: Vec<String>,
    /// Profiles this one may delegate to; `None` = every profile but the main agent's.
    pub subagents: Option<Vec<String>>,
    /// A too-short final message is sent back once to be expanded.
    pub summary_policy: bool,
    /// The task is prefixed with a `<git-context>` block.
    pub git_context: bool,
    /// The file asked to replace a built-in of the same name.
    pub is_override: bool,
    pub source: ProfileSource,
}

/// Whether one `tools`/`disallowedTools` entry names `tool`: exact and case-sensitive, except
/// that `mcp__` entries may use `*` globs (§8.2).
pub fn tool_pattern_matches(pattern: &str, tool: &str) -> bool {
    if pattern.starts_with("mcp__") && pattern.contains('*') {
        return kimi_tools::wildcard::star_match(pattern, tool);
    }
    pattern == tool
}

impl Profile {
    /// Whether an agent bound to this profile gets `tool`.
    pub fn allows_tool(&self, tool: &str) -> bool {
        let listed = self
            .tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|p| tool_pattern_matches(p, tool)));
        listed
            && !self
                .disallowed_tools
                .iter()
                .any(|p| tool_pattern_matches(p, tool))
    }

    /// Whether this profile may hand work to `other`.
    pub fn allows_subagent(&self, other: &str) -> bool {
        match &self.subagents {
            None => other != DEFAULT_MAIN,
            Some(list) => list.iter().any(|s| s == "*" || s == other),
        }
    }

    /// The journaled file a resumed agent reloads its custom profile from.
    pub fn file(&self) -> Option<&std::path::Path> {
        self.source.path()
    }
}

/// Problems with agent files and profile names.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read the agent file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the agent file {path} is invalid: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("no agent profile named `{name}`; available profiles: {available}")]
    Unknown { name: String, available: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_patterns_are_exact_except_mcp_globs() {
        assert!(tool_pattern_matches("Read", "Read"));
        assert!(!tool_pattern_matches("read", "Read"));
        assert!(!tool_pattern_matches("Re*", "Read"));
        assert!(tool_pattern_matches("mcp__*", "mcp__github__list"));
        assert!(tool_pattern_matches("mcp__github__*", "mcp__github__list"));
        assert!(!tool_pattern_matches("mcp__github__*", "mcp__gitlab__list"));
    }

    #[test]
    fn builtin_subagents_cannot_delegate() {
        let profiles = builtin::builtin_profiles();
        for profile in &profiles {
            let expect = profile.name == DEFAULT_MAIN;
            assert_eq!(profile.allows_tool("Agent"), expect, "{}", profile.name);
            assert_eq!(
                profile.allows_tool("AgentSwarm"),
                expect,
                "{}",
                profile.name
            );
        }
        let explore = profiles.iter().find(|p| p.name == "explore").unwrap();
        assert!(!explore.allows_tool("Write") && !explore.allows_tool("Edit"));
        let plan = profiles.iter().find(|p| p.name == "plan").unwrap();
        assert!(!plan.allows_tool("Bash"));
    }
}
