//! The vocabulary every kimi-rs crate speaks: content parts, history messages, prompt origins,
//! loop events and journal records (core.md §a and §g.3). Serde types only, no I/O.
//!
//! The JSON shapes follow Kimi Code's `wire.jsonl` (camelCase fields, `type` tags) so its journals
//! can be read; deserialisation is deliberately lenient (snake_case aliases, string shorthands)
//! because a journal written by another version must never be lost over a spelling.

pub mod checkpoint;
pub mod flow;
mod goal_record;
pub mod host;
pub mod loop_event;
pub mod message;
pub mod ops;
pub mod origin;
mod own_record;
pub mod question;
pub mod record;
mod record_line;
mod ref_record;
pub mod wildcard;

pub use loop_event::{LoopEvent, ToolResultPayload};
pub use message::{ContentPart, MediaUrl, Message, Role, ToolCall, ToolSchema};
pub use origin::Origin;
pub use record::{Metadata, Record, RecordError, RecordPayload, WIRE_PROTOCOL_VERSION};

/// Text of the tool result the fold synthesizes for a call that never got one (core.md §a.5 rule 7).
pub const INTERRUPTED_TOOL_RESULT: &str = "Tool execution was interrupted before its result was recorded. Do not assume the tool completed successfully.";
