//! `kimi-rs acp`: the Agent Client Protocol server (surface.md §11.2) that lets editors such as
//! Zed drive kimi-rs sessions over JSON-RPC on stdio.
//!
//! Each ACP session is a kimi-rs session opened through the one session host
//! ([`kimi_core::host::SessionHost`], which knows the model, config and permission rules). Prompts become `Op::Submit`; engine events
//! stream back as `session/update` notifications; approvals the permission chain asks for become
//! `session/request_permission` calls to the editor, and so do AskUserQuestion's questions; `session/cancel` cancels the turn;
//! `session/load` replays a stored conversation (`session/resume` does not); `session/list`, `session/fork`,
//! `session/delete` and `logout` manage stored sessions and the login; the model and thinking
//! effort are config options; when the editor offers `fs`, Read, Edit and Write use its buffers;
//! when it offers `terminal`, Bash runs in its terminals;
//! `/rewind` runs `Op::Rewind`; modes map to permission modes. Logs go to
//! stderr only: stdout carries the protocol.

mod config;
mod convert;
mod editor_fs;
mod pump;
mod question;
mod rewind;
mod server;
mod terminal;

pub use server::{LoginCheck, LogoutAction, serve};
