//! Inline multi-skill mentions (surface.md §1.4, §7.1): skill tokens (`/skill:<name>` or
//! `/<name>`) written after whitespace anywhere in a prompt load those skills together with the
//! prompt as one turn, without arguments. A prompt that starts with a skill command and
//! mentions at least one more skill is such a bundle too (the leading command then takes no
//! arguments either).

use serde_json::{Value, json};

use crate::activation::SkillActivation;
use crate::catalog::SkillCatalog;
use crate::prompt::SkillTrigger;
use crate::skill::{Skill, SkillType};

/// A prompt whose text mentions skills inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineSkills {
    /// Each mentioned skill once, in first-mention order.
    pub activations: Vec<SkillActivation>,
    /// Each skill's loaded block, in the same order: the message's first parts, before the
    /// prompt as typed.
    pub blocks: Vec<String>,
}

impl InlineSkills {
    /// The `skill_activations` list of the message's `user` origin (one object per skill).
    pub fn origin_activations(&self) -> Vec<Value> {
        self.activations
            .iter()
            .map(|a| {
                json!({
                    "activationId": a.activation_id,
                    "skillName": a.skill_name,
                    "skillType": a.skill_type,
                    "skillPath": a.skill_path,
                    "skillSource": a.skill_source,
                })
            })
            .collect()
    }
}

/// The skill a token names (`skill:<name>` first, then `<name>`), if the user may run it
/// inline: flow skills run on their own and reference skills cannot run.
fn inline_skill<'a>(catalog: &'a SkillCatalog, command: &str) -> Option<&'a Skill> {
    if command.is_empty() || command.contains('/') {
        return None;
    }
    let skill = command
        .strip_prefix("skill:")
        .and_then(|name| catalog.get(name))
        .or_else(|| catalog.get(command))?;
    match skill.kind() {
        SkillType::Prompt | SkillType::Inline => Some(skill),
        SkillType::Flow | SkillType::Reference => None,
    }
}

/// The skill tokens of `text` with their byte ranges: a `/` at the start or after whitespace,
/// up to the next whitespace, naming a known skill. Paths, URLs and fractions are not tokens.
pub fn skill_tokens<'a>(text: &str, catalog: &'a SkillCatalog) -> Vec<(usize, usize, &'a Skill)> {
    let mut tokens = Vec::new();
    let mut prev_space = true;
    for (at, c) in text.char_indices() {
        if c == '/' && prev_space {
            let rest = &text[at + 1..];
            let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
            if let Some(skill) = inline_skill(catalog, &rest[..len]) {
                tokens.push((at, at + 1 + len, skill));
            }
        }
        prev_space = c.is_whitespace();
    }
    tokens
}

/// `Some` when `text` mentions skills inline: a token after the first word, or a leading skill
/// command followed by at least one more skill token. `None` leaves the prompt to the plain
/// slash-command path (a lone leading `/skill:x args`) or sends it as it is.
pub fn parse_inline(text: &str, catalog: &SkillCatalog, session_id: &str) -> Option<InlineSkills> {
    let tokens = skill_tokens(text, catalog);
    let trimmed = text.trim_start();
    if trimmed.starts_with('/') {
        // A leading command owns the input unless it is a skill followed by more skills.
        let first_at = text.len() - trimmed.len();
        let leads = tokens.first().is_some_and(|(at, _, _)| *at == first_at);
        if !leads || tokens.len() < 2 {
            return None;
        }
    } else if tokens.is_empty() {
        return None;
    }
    let mut activations: Vec<SkillActivation> = Vec::new();
    let mut blocks = Vec::new();
    for (_, _, skill) in tokens {
        if activations.iter().any(|a| a.skill_name == skill.name) {
            continue;
        }
        blocks.push(catalog.user_message(&skill.name, "", session_id).ok()?);
        activations.push(SkillActivation::new(skill, "", SkillTrigger::UserSlash));
    }
    Some(InlineSkills {
        activations,
        blocks,
    })
}
