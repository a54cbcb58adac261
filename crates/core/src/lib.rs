//! The kimi-rs engine: sessions, agent/turn/tool state machines, executor, permissions.
