//! The skills shipped in the binary (surface.md §7.1): the product skills (`mcp-config`,
//! `update-config`, `check-kimi-code-docs`, `import-from-cc-codex`, `custom-theme`, hidden with
//! `builtin_product_skills = false`), `write-goal`, and `sub-skill` with its `review` and
//! `consolidate` children. They rank below every skill folder and plugin, so a user or project
//! skill of the same name replaces one.

use std::path::{Path, PathBuf};

use crate::skill::{Skill, SkillSource, parse_skill_text};

/// Names of the product skills (`builtin_product_skills = false` hides these).
pub const PRODUCT_SKILLS: [&str; 5] = [
    "mcp-config",
    "update-config",
    "check-kimi-code-docs",
    "import-from-cc-codex",
    "custom-theme",
];

/// (name, parent for sub-skills, text)
const TEXTS: [(&str, Option<&str>, &str); 9] = [
    ("mcp-config", None, include_str!("builtin/mcp-config.md")),
    (
        "update-config",
        None,
        include_str!("builtin/update-config.md"),
    ),
    (
        "check-kimi-code-docs",
        None,
        include_str!("builtin/check-kimi-code-docs.md"),
    ),
    (
        "import-from-cc-codex",
        None,
        include_str!("builtin/import-from-cc-codex.md"),
    ),
    (
        "custom-theme",
        None,
        include_str!("builtin/custom-theme.md"),
    ),
    ("write-goal", None, include_str!("builtin/write-goal.md")),
    ("sub-skill", None, include_str!("builtin/sub-skill.md")),
    (
        "review",
        Some("sub-skill"),
        include_str!("builtin/sub-skill/review.md"),
    ),
    (
        "consolidate",
        Some("sub-skill"),
        include_str!("builtin/sub-skill/consolidate.md"),
    ),
];

/// The built-in skills; `product` = false leaves the product skills out.
pub fn builtin_skills(product: bool) -> Vec<Skill> {
    let mut skills = Vec::new();
    for (name, parent, text) in TEXTS {
        if !product && PRODUCT_SKILLS.contains(&name) {
            continue;
        }
        let file = Path::new("builtin").join(name).join("SKILL.md");
        // The texts are ours and tested; a broken one is skipped, never a panic.
        let Ok(parsed) = parse_skill_text(&file, name, SkillSource::Builtin, text) else {
            tracing::error!("the built-in skill {name} does not parse; it was left out");
            continue;
        };
        let mut skill = parsed.skill;
        if let Some(parent) = parent {
            skill.name = format!("{parent}.{}", skill.name);
            skill.is_sub_skill = true;
        }
        // Not a file on disk: the listing shows where it comes from instead of a path to read.
        skill.path = PathBuf::from(format!("(built into kimi-rs: {})", skill.name));
        skill.dir = PathBuf::new();
        skills.push(skill);
    }
    skills
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_with_its_name() {
        let names: Vec<String> = builtin_skills(true).into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "mcp-config",
                "update-config",
                "check-kimi-code-docs",
                "import-from-cc-codex",
                "custom-theme",
                "write-goal",
                "sub-skill",
                "sub-skill.review",
                "sub-skill.consolidate",
            ]
        );
        let plain: Vec<String> = builtin_skills(false).into_iter().map(|s| s.name).collect();
        assert_eq!(
            plain,
            [
                "write-goal",
                "sub-skill",
                "sub-skill.review",
                "sub-skill.consolidate"
            ]
        );
    }
}
