//! Widget tests: construct the `App`, feed protocol events and key presses, render into a
//! `TestBackend` and snapshot the screen; plus inline-scrollback tests.

mod dialogs;
mod environment;
mod extensions;
mod goal;
mod inline;
mod prefs;
mod pty;
mod side;
mod support;
mod swarm;
mod turn;
