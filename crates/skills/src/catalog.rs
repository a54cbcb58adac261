//! The merged skill catalog: case-insensitive lookup, the scanned roots, the system prompt's
//! `skills` listing, and rendering a skill into the message that loads it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kimi_tools::result::{utf16_len, utf16_prefix};

use crate::expand::expand_body;
use crate::prompt::{LoadedBlock, SkillTrigger, model_tool_prompt, user_slash_prompt};
use crate::skill::{Skill, SkillSource, SkillType};

/// Why a skill could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error("Skill \"{name}\" was not found. Check the name against the available skills.")]
    NotFound { name: String },
    #[error(
        "Skill \"{name}\" is a {kind} skill and cannot be activated; open its file at {path} to read it."
    )]
    NotActivatable {
        name: String,
        kind: &'static str,
        path: String,
    },
}

/// Descriptions in the model listing are cut to this many UTF-16 units.
const LISTING_DESCRIPTION_MAX: usize = 250;
const LISTING_HEADER: &str = "DISREGARD any earlier skill listings. Current available skills:";

/// All known skills, one per lower-cased name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillCatalog {
    skills: BTreeMap<String, Skill>,
    roots: Vec<PathBuf>,
}

fn cut_description(text: &str) -> String {
    if utf16_len(text) <= LISTING_DESCRIPTION_MAX {
        return text.to_owned();
    }
    format!("{}...", utf16_prefix(text, LISTING_DESCRIPTION_MAX - 3))
}

impl SkillCatalog {
    /// Add a skill, replacing any skill of the same name (case-insensitively). Callers insert
    /// lower-precedence sources first.
    pub fn insert(&mut self, skill: Skill) {
        self.skills.insert(skill.name.to_lowercase(), skill);
    }

    /// Add a skill only when no skill of that name is known yet (lower-precedence sources
    /// added after the others: plugins, then built-ins).
    pub fn insert_fallback(&mut self, skill: Skill) {
        self.skills
            .entry(skill.name.to_lowercase())
            .or_insert(skill);
    }

    /// Record scanned roots (kept once each, in the order given).
    pub fn add_roots(&mut self, roots: impl IntoIterator<Item = PathBuf>) {
        for root in roots {
            if !self.roots.contains(&root) {
                self.roots.push(root);
            }
        }
    }

    /// Look a skill up by name, ignoring case.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.get(&name.to_lowercase())
    }

    /// Every skill, sorted by name.
    pub fn list(&self) -> Vec<&Skill> {
        let mut skills: Vec<&Skill> = self.skills.values().collect();
        skills.sort_by(|a, b| {
            a.name
                .to_lowercase()
                .cmp(&b.name.to_lowercase())
                .then_with(|| a.name.cmp(&b.name))
        });
        skills
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The scanned skill roots (readable workspace roots for Read).
    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    /// The system prompt's `skills` variable: model-invocable top-level skills grouped by scope
    /// with name, description, when-to-use and path; empty when there is none to list.
    pub fn prompt_listing(&self) -> String {
        let listed: Vec<&Skill> = self
            .list()
            .into_iter()
            .filter(|s| s.model_invocable() && !s.is_sub_skill)
            .collect();
        if listed.is_empty() {
            return String::new();
        }
        let mut lines = vec![LISTING_HEADER.to_owned()];
        for source in SkillSource::LISTING_ORDER {
            let group: Vec<&&Skill> = listed.iter().filter(|s| s.source == source).collect();
            if group.is_empty() {
                continue;
            }
            lines.push(format!("### {}", source.label()));
            for skill in group {
                lines.push(format!(
                    "- {}: {}",
                    skill.name,
                    cut_description(&skill.description)
                ));
                if let Some(when) = &skill.when_to_use {
                    lines.push(format!("  When to use: {when}"));
                }
                lines.push(format!("  Path: {}", skill.path.display()));
            }
        }
        lines.join("\n")
    }

    fn require(&self, name: &str) -> Result<&Skill, SkillError> {
        self.get(name).ok_or_else(|| SkillError::NotFound {
            name: name.to_owned(),
        })
    }

    /// The skill body with its placeholders expanded (no wrapping).
    pub fn expand(&self, name: &str, args: &str, session_id: &str) -> Result<String, SkillError> {
        let skill = self.require(name)?;
        Ok(expand_body(
            &skill.content,
            args,
            &skill.arguments,
            &skill.dir,
            session_id,
        ))
    }

    fn render(&self, skill: &Skill, args: &str, session_id: &str, trigger: SkillTrigger) -> String {
        let mut content = expand_body(
            &skill.content,
            args,
            &skill.arguments,
            &skill.dir,
            session_id,
        );
        if let Some(plugin) = &skill.plugin
            && let Some(instructions) = plugin.instructions.as_deref()
            && !instructions.trim().is_empty()
        {
            content = format!(
                "<plugin-instructions plugin=\"{}\">\n{}\n</plugin-instructions>\n\n{content}",
                plugin.id,
                instructions.trim()
            );
        }
        let dir = skill.dir.display().to_string();
        let block = LoadedBlock {
            name: &skill.name,
            args,
            content: &content,
            source: skill.source,
            dir: &dir,
            trigger,
        };
        match trigger {
            SkillTrigger::UserSlash => user_slash_prompt(&block),
            SkillTrigger::ModelTool | SkillTrigger::NestedSkill => model_tool_prompt(&block),
        }
    }

    /// The user message a slash-command activation sends: the preamble and the expanded body
    /// in a `<kimi-skill-loaded trigger="user-slash">` block. Reference skills are refused.
    pub fn user_message(
        &self,
        name: &str,
        args: &str,
        session_id: &str,
    ) -> Result<String, SkillError> {
        let skill = self.require(name)?;
        match skill.kind() {
            SkillType::Prompt | SkillType::Inline | SkillType::Flow => {
                Ok(self.render(skill, args, session_id, SkillTrigger::UserSlash))
            }
            SkillType::Reference => Err(SkillError::NotActivatable {
                name: skill.name.clone(),
                kind: SkillType::Reference.as_str(),
                path: skill.path.display().to_string(),
            }),
        }
    }

    /// The message the Skill tool steers into the turn (no type checks: the tool does those).
    pub(crate) fn tool_message(
        &self,
        skill: &Skill,
        args: &str,
        session_id: &str,
        trigger: SkillTrigger,
    ) -> String {
        self.render(skill, args, session_id, trigger)
    }
}
