//! The kimi-rs engine: sessions, agent/turn/tool state machines, the step gate, the tool
//! executor, permissions and hooks. Front ends talk to it only through `kimi_protocol::ops`,
//! and open, list and drive sessions through the one [`host::SessionHost`].

pub mod checkpoint;
pub mod cron;
pub mod engine;
pub mod flow;
pub mod goal;
pub mod hooks;
pub mod host;
pub mod local_config;
pub mod permission;
pub mod plan;
pub mod profile;
pub mod prompt;
pub mod session;
pub mod subagent;
pub mod swarm_mode;
pub mod tool_select;
