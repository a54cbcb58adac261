//! Plugins (surface.md §7.2). A plugin is a folder with `kimi.plugin.json` (or
//! `.kimi-plugin/plugin.json`) that adds skills, agents, slash commands (`/<plugin>:<command>`),
//! hooks, MCP servers and system prompt text to new sessions.
//!
//! - [`manifest`] reads and checks a manifest: every path stays inside the plugin root after
//!   symlink resolution, unsupported keys become diagnostics.
//! - [`load`] turns a root into a [`LoadedPlugin`]; [`PluginSet::load`] gathers the enabled
//!   installed plugins (and, for a trusted folder, the project's) for one session.
//! - [`install`] brings a plugin in from a folder, a zip (path or URL), a GitHub URL or a
//!   marketplace entry into `$KIMI_RS_HOME/plugins/managed/<id>/`; [`state`] keeps
//!   `plugins/installed.json`.
//!
//! Hooks stay raw JSON here (the engine's hook parser validates them); MCP servers are parsed
//! with `kimi-mcp`'s `mcp.json` parser, so they follow exactly the same schema.

pub mod commands;
mod error;
pub mod fetch;
pub mod install;
pub mod load;
pub mod manifest;
pub mod state;

pub use commands::{CommandInvocation, PluginCommand};
pub use error::PluginError;
pub use install::{InstallReport, Installer};
pub use load::{LoadedPlugin, PluginSet, load_plugin, load_project_plugins};
pub use manifest::Manifest;
pub use state::{InstalledPlugin, PluginState};
