//! MCP client (surface.md §10): servers from `mcp.json`, their tools as kimi-rs tools.
//!
//! - [`load_config`] reads and merges `<kimi home>/mcp.json`, `<git root>/.mcp.json` and
//!   `<cwd>/.kimi-code/mcp.json` (later wins per server name; the project files only for a
//!   trusted folder; a bad entry disables only itself).
//! - [`McpManager::start`] starts every enabled server in the background (stdio child processes
//!   or streamable HTTP) and returns at once; each server's tools, named
//!   `mcp__<server>__<tool>` ([`qualify_tool_name`]), join a `kimi_tools::LateTools` set when
//!   its handshake is done, so sessions never wait for a slow server. [`McpManager::connect`]
//!   does the same and waits for every server. Each failure is a warning;
//!   [`McpManager::status`] (connecting / connected / failed / disabled) feeds the `/mcp` panel
//!   and [`McpManager::progress`] reports changes; [`McpManager::shutdown`] stops the servers.
//!
//! Transports: stdio, streamable HTTP (rmcp's) and the legacy HTTP+SSE ([`sse`], our own, as
//! rmcp has none).
//!
//! OAuth ([`oauth`]): a remote server that answers 401 (or says `auth: "oauth"`) shows as
//! "needs login" and offers only `mcp__<server>__authenticate` until it is signed in; tokens
//! are kept under `<kimi home>/credentials/mcp/` and refreshed by rmcp (and, for SSE, again
//! when the server refuses one mid-stream).
//!
//! Not covered yet: reconnect-and-retry after a transport failure, image compression, the
//! trust prompt itself (the host asks and passes the answer to [`load_config`]).

mod authenticate;
pub mod config;
mod control;
pub mod manager;
pub mod naming;
pub mod oauth;
pub mod output;
mod remote;
pub mod sse;
pub mod tool;

pub use config::{
    ConfigFile, McpConfig, McpConfigError, ParsedFile, RemoteConfig, ServerConfig, TransportConfig,
    config_files, find_command, load_config,
};
pub use control::LoginStarted;
pub use manager::{
    CLIENT_NAME, DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpManager, McpProgress, McpState,
    McpUpdate, ServerState, ServerStatus,
};
pub use naming::{qualify_tool_name, sanitize_name_part};
pub use tool::McpTool;
