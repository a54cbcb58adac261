//! `kimi-rs web`: the local REST + WebSocket server (surface.md §11.1, the reference's
//! `kap-server`) and a minimal browser UI over kimi-rs sessions.
//!
//! Sessions are opened through the front end's [`SessionHost`] (which knows the model,
//! configuration, permission rules, skills and MCP servers) and driven with the engine's
//! operations; engine events are sent to WebSocket subscribers under the reference's event
//! names, with durable events numbered per session and replayable from a cursor. Every JSON
//! response is wrapped in the reference's `{code, msg, data, request_id}` envelope. All `/api`
//! paths except `GET /api/v1/healthz` need the bearer token kept in `server.token`.

mod auth;
mod error;
mod events;
mod live;
mod messages;
mod questions;
mod rest;
mod server;
mod ws;

use std::path::Path;

use kimi_core::session::{OpenedSession, Resume};
use kimi_protocol::ops::Op;

pub use auth::{load_or_create_token, token_path};
pub use server::{Bound, DEFAULT_PORT, ServerOptions, WebError, bind};

/// What the server needs from the front end: opening sessions with the user's model,
/// configuration and permission rules, in a permission mode that asks (the browser answers).
pub trait SessionHost: Send + Sync + 'static {
    /// Open a new session in `cwd` (`Resume::New`) or an existing one (`Resume::Id`). Called on
    /// a blocking thread inside the server's runtime: it may block (e.g. to connect MCP
    /// servers). The error says what went wrong and what to do.
    fn open(&self, cwd: &Path, resume: Resume) -> Result<OpenedSession, String>;

    /// Rewrite a prompt before it is submitted (e.g. expand `/skill:name` commands); an error
    /// is returned to the client and nothing is submitted.
    fn prepare(&self, _session_id: &str, op: Op) -> Result<Op, String> {
        Ok(op)
    }
}
