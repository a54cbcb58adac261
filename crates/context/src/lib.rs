//! What the model sees: the loop-event fold that is an agent's only history, the projector that
//! turns history into provider-valid messages, the token estimator, undo cuts, agent-unique
//! tool-call ids, and compaction planning (core.md §a, §b, §c, §d, §g.7, §h.1).
//!
//! Everything here is pure: plain data in, plain data out, no I/O.

pub mod compaction;
pub mod fold;
pub mod history;
pub mod open_exchange;
pub mod projector;
pub mod render;
pub mod tokens;
pub mod tool_call_ids;
pub mod undo;
