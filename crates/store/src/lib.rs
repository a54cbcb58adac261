//! Session layout on disk, append-only journal with torn-line repair, migrations, replay inputs,
//! undo branches, the turn clock and the session index (core.md §g, core-2.1 §4).
//!
//! Entry points: [`SessionStore`] (create/open sessions under a [`Home`]), [`Journal`] (open
//! with repair + migration, durable appends, undo switches), [`tree`] (which records replay
//! follows), [`TurnClock`].

pub mod envelope;
pub mod error;
mod fast_replay;
mod fork;
pub mod fsutil;
pub mod home;
pub mod index;
pub mod journal;
pub mod lines;
pub mod migrate;
pub mod replay;
pub mod report;
pub mod session;
pub mod tree;
pub mod turn_clock;
pub mod undo;

pub use envelope::{Entry, EnvelopeRead, Reported, read_envelope};
pub use error::{Result, StoreError, WireError};
pub use home::{Home, MAIN_AGENT, home_from_env, workdir_key};
pub use index::{IndexEntry, SessionIndex};
pub use journal::{
    AppendAck, FsyncPolicy, Journal, JournalOptions, JournalRead, Repair, ReplayRead,
};
pub use replay::{
    LineRecord, OwnedReplayInput, ReplayInput, Skipped, replay_input, replay_input_owned,
};
pub use report::{repair_warnings, skip_warnings};
pub use session::{AgentEntry, Session, SessionState, SessionStore, load_state, save_state};
pub use tree::{ChainLine, Tree, active_chain, parse_tree, restorable_chain};
pub use turn_clock::{LastEnded, TurnClock};
pub use undo::UndoSwitch;
