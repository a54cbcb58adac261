//! The system prompt: the built-in template, `$KIMI_RS_HOME/SYSTEM.md` as an override, the
//! AGENTS.md files merged into it, and the cwd listing (surface.md §9.5–§9.6).

pub mod agents_md;
pub mod instructions;
pub mod listing;
pub mod template;

pub use agents_md::{AgentsMd, AgentsMdFile, discover_agents_md};
pub use instructions::{Instructions, SystemPrompt};
pub use listing::cwd_listing;
pub use template::{PromptError, PromptVars, render_agent_template, render_system_prompt};
