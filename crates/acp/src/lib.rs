//! `kimi-rs acp`: the Agent Client Protocol server (surface.md §11.2) that lets editors such as
//! Zed drive kimi-rs sessions over JSON-RPC on stdio.
//!
//! Each ACP session is a kimi-rs session opened through the front end's [`SessionHost`] (which
//! knows the model, config and permission rules). Prompts become `Op::Submit`; engine events
//! stream back as `session/update` notifications; approvals the permission chain asks for become
//! `session/request_permission` calls to the editor, and so do AskUserQuestion's questions; `session/cancel` cancels the turn;
//! `session/load` replays a stored conversation; modes map to permission modes. Logs go to
//! stderr only: stdout carries the protocol.

mod convert;
mod question;
mod server;

use std::path::Path;

use kimi_core::session::{OpenedSession, Resume};
use kimi_protocol::ops::Op;

pub use server::serve;

/// What the ACP server needs from the front end: opening sessions with the user's model,
/// configuration and permission rules, in a permission mode that asks (the editor answers).
pub trait SessionHost: Send + Sync + 'static {
    /// Open a new session in `cwd` (`Resume::New`) or an existing one (`Resume::Id`).
    /// `mcp_servers` are the editor's servers for this session only, in `mcp.json` shape
    /// (`{"mcpServers": {...}}`); they are never written anywhere.
    fn open(
        &self,
        cwd: &Path,
        resume: Resume,
        mcp_servers: serde_json::Value,
    ) -> Result<OpenedSession, String>;

    /// Slash commands the session runs besides the engine's (skills): name and description,
    /// advertised to the editor.
    fn commands(&self, _session_id: &str) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Rewrite a prompt before it is submitted (e.g. expand `/skill:name` commands); an error
    /// is returned to the editor and nothing is submitted.
    fn prepare(&self, _session_id: &str, op: Op) -> Result<Op, String> {
        Ok(op)
    }
}
