//! The agent engine: state machines, the turn loop and the step gate.

pub mod state;
