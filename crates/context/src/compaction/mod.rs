//! Compaction (core.md §d, core-2.1.md §3): when to compact, what survives, the summary
//! request, applying the result, and the recovery footer that points back at the journal.

pub mod footer;
pub mod handoff;
pub mod service;
pub mod split;
pub mod trigger;
