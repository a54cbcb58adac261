//! Skill slash commands: `/skill:<name> args` and the shorthand `/<name> args` (sub-skills as
//! `/<parent>.<child>`), turned into the user message that activates the skill.

use crate::activation::SkillActivation;
use crate::catalog::SkillCatalog;
use crate::prompt::SkillTrigger;

/// A slash command that names a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashSkill {
    /// The skill's own spelling of its name (the command may differ in case).
    pub skill_name: String,
    /// The command as typed, without the slash (`skill:review`, `review`, `sub-skill.review`).
    pub command: String,
    /// Everything after the command, trimmed.
    pub args: String,
    /// The user message to send: the activation preamble and the expanded skill body.
    pub text: String,
    /// The data of the message's `skill_activation` origin (trigger `user-slash`).
    pub activation: SkillActivation,
}

/// Parse `input` as a skill slash command. `None` when it is not a slash command, names no
/// skill, or names a `reference` skill (those cannot be run). Built-in commands must be
/// matched by the caller first: `/<name>` is only a shorthand when no built-in owns the name.
/// `session_id` fills `${KIMI_SESSION_ID}` in the body.
pub fn parse_slash(input: &str, catalog: &SkillCatalog, session_id: &str) -> Option<SlashSkill> {
    let line = input.trim_start().strip_prefix('/')?;
    let (command, args) = match line.find(char::is_whitespace) {
        Some(at) => (&line[..at], line[at..].trim()),
        None => (line, ""),
    };
    if command.is_empty() {
        return None;
    }
    // `/skill:<name>` first; a skill literally named `skill:…` is reachable as `/skill:skill:…`.
    let skill = command
        .strip_prefix("skill:")
        .and_then(|name| catalog.get(name))
        .or_else(|| catalog.get(command))?;
    if !skill.kind().is_user_activatable() {
        return None;
    }
    let text = catalog.user_message(&skill.name, args, session_id).ok()?;
    Some(SlashSkill {
        skill_name: skill.name.clone(),
        command: command.to_owned(),
        args: args.to_owned(),
        text,
        activation: SkillActivation::new(skill, args, SkillTrigger::UserSlash),
    })
}

/// `/flow:<name>`: a flow skill's chart, ready to walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowCommand {
    pub skill_name: String,
    pub graph: kimi_protocol::flow::FlowGraph,
}

/// Parse `input` as `/flow:<name>`. `None` when it is not that command; `Some(Err)` says why
/// the named skill cannot run as a flow (unknown, not `type: flow`, arguments given, or a
/// chart that cannot be walked — with its line).
pub fn parse_flow_command(
    input: &str,
    catalog: &SkillCatalog,
) -> Option<Result<FlowCommand, String>> {
    let line = input.trim().strip_prefix("/flow:")?;
    let (name, args) = match line.find(char::is_whitespace) {
        Some(at) => (&line[..at], line[at..].trim()),
        None => (line, ""),
    };
    let Some(skill) = catalog.get(name) else {
        let flows: Vec<&str> = catalog
            .list()
            .into_iter()
            .filter(|s| s.kind() == crate::SkillType::Flow)
            .map(|s| s.name.as_str())
            .collect();
        let known = if flows.is_empty() {
            "no flow skills are installed (a flow skill is a SKILL.md with `type: flow` and a mermaid or d2 chart)".to_owned()
        } else {
            format!("flow skills: {}", flows.join(", "))
        };
        return Some(Err(format!(
            "/flow:{name}: no skill named \"{name}\"; {known}"
        )));
    };
    if skill.kind() != crate::SkillType::Flow {
        return Some(Err(format!(
            "/flow:{name}: \"{}\" is a {} skill, not a flow; run it with /skill:{}",
            skill.name,
            skill.kind().as_str(),
            skill.name
        )));
    }
    if !args.is_empty() {
        return Some(Err(format!(
            "/flow:{name} takes no arguments (the chart's nodes are the prompts); run it as /flow:{name}"
        )));
    }
    Some(
        skill
            .flow()
            .map(|graph| FlowCommand {
                skill_name: skill.name.clone(),
                graph,
            })
            .map_err(|err| {
                format!(
                    "/flow:{name}: the chart in {} cannot run: {err}",
                    skill.path.display()
                )
            }),
    )
}
