//! Skills (surface.md §7.1): discovery, frontmatter, expansion, prompt listing, the Skill tool.
//!
//! Wiring for a front end:
//! 1. [`discover`] with [`DiscoverOptions`] → a [`SkillCatalog`] plus warnings to show.
//! 2. [`SkillCatalog::prompt_listing`] is the system prompt's `skills` variable;
//!    [`SkillCatalog::roots`] are readable workspace roots (`ToolContext::skill_roots`).
//! 3. [`parse_slash`] turns `/skill:<name> args` / `/<name> args` into the user message and
//!    its `skill_activation` origin ([`SkillActivation::to_origin`]).
//!    [`parse_inline`] does the same for skills mentioned inside a prompt (several at once).
//!    A `type: flow` skill's chart is [`Skill::flow`]; `/flow:<name>` is [`parse_flow_command`].
//! 4. Register [`SkillTool`]; give it a [`SkillDelivery`] so loaded skills are steered into
//!    the turn as user messages.

mod activation;
mod builtin;
mod catalog;
mod discover;
mod expand;
pub mod flow;
mod inline;
mod prompt;
mod skill;
mod slash;
mod tool;

pub use activation::SkillActivation;
pub use builtin::{PRODUCT_SKILLS, builtin_skills};
pub use catalog::{SkillCatalog, SkillError};
pub use discover::{BuiltinSkills, DiscoverOptions, discover, discover_path, project_root};
pub use expand::{expand_body, tokenize_args};
pub use inline::{InlineSkills, parse_inline, skill_tokens};
pub use prompt::SkillTrigger;
pub use skill::{PluginSkill, Skill, SkillParseError, SkillSource, SkillType};
pub use slash::{FlowCommand, SlashSkill, parse_flow_command, parse_slash};
pub use tool::{MAX_SKILL_QUERY_DEPTH, SkillDelivery, SkillSteer, SkillTool};
