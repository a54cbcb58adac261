//! MCP client (surface.md §10): servers from `mcp.json`, their tools as kimi-rs tools.
//!
//! - [`load_config`] reads and merges `<kimi home>/mcp.json`, `<git root>/.mcp.json` and
//!   `<cwd>/.kimi-code/mcp.json` (later wins per server name).
//! - [`McpManager::start`] starts every enabled server in the background (stdio child processes
//!   or streamable HTTP) and returns at once; each server's tools, named
//!   `mcp__<server>__<tool>` ([`qualify_tool_name`]), join a `kimi_tools::LateTools` set when
//!   its handshake is done, so sessions never wait for a slow server. [`McpManager::connect`]
//!   does the same and waits for every server. Each failure is a warning;
//!   [`McpManager::status`] (connecting / connected / failed / disabled) feeds the `/mcp` panel
//!   and [`McpManager::progress`] reports changes; [`McpManager::shutdown`] stops the servers.
//!
//! Not covered yet: OAuth (`auth: "oauth"`), the legacy SSE transport (reported as
//! unsupported), reconnect-and-retry after a transport failure, image compression, the
//! workspace-trust prompt for project files (the host decides whether to load them).

pub mod config;
pub mod manager;
pub mod naming;
pub mod output;
pub mod tool;

pub use config::{
    McpConfig, McpConfigError, RemoteConfig, ServerConfig, TransportConfig, load_config,
};
pub use manager::{
    CLIENT_NAME, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpManager, McpProgress, McpState,
    McpUpdate, ServerState, ServerStatus,
};
pub use naming::{qualify_tool_name, sanitize_name_part};
pub use tool::McpTool;
