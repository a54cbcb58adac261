//! Print mode (`kimi-rs -p`): how a turn's events are written for humans (`text`) and for
//! scripts (`stream-json`, the same line shapes as Kimi Code's).

pub mod goal;
pub mod render;

pub use render::{JsonWriter, TextWriter, TurnWriter, resume_hint_command};
