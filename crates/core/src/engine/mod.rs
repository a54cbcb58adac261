//! The agent engine: state machines, the journal-backed history, the tool executor, the turn
//! loop and the step gate.

pub mod agent;
mod btw;
pub mod compact;
pub mod executor;
mod gate;
pub mod hooks;
pub mod log;
pub mod model;
pub mod permissions;
pub mod questions;
pub mod records;
pub mod repeat;
pub mod rewind;
pub mod runtime;
mod settle;
pub mod state;
mod stream;
pub mod title;
pub mod turn;
mod turn_host;
