//! `kimi-rs web`: the local REST + WebSocket server (surface.md §11.1, the reference's
//! `kap-server`) and a minimal browser UI over kimi-rs sessions.
//!
//! Sessions are opened and listed through the one session host
//! ([`kimi_core::host::SessionHost`], which knows the model, configuration, permission rules,
//! skills, MCP servers and the session store; this crate never reads the store itself) and
//! driven with the engine's operations; engine events are sent to WebSocket subscribers under the reference's event
//! names, with durable events numbered per session and replayable from a cursor. Every JSON
//! response is wrapped in the reference's `{code, msg, data, request_id}` envelope. All `/api`
//! paths except `GET /api/v1/healthz` need the bearer token kept in `server.token`; request
//! heads and bodies have deadlines and open connections are bounded ([`Limits`]).

mod auth;
mod error;
mod events;
#[doc(hidden)]
pub mod fuzzing;
pub mod instances;
mod listen;
mod live;
mod mcp;
mod messages;
mod openapi;
mod page;
mod questions;
pub mod reach;
mod rest;
mod rewind;
mod server;
mod terminals;
mod ws;

pub use auth::{ServerToken, load_or_create_token, token_path};
pub use listen::{BODY_TIMEOUT, HEADER_TIMEOUT, Limits, MAX_CONNECTIONS, Notices};
pub use server::{Bound, DEFAULT_PORT, FlagsSource, ServerOptions, WebError, bind};
