//! One integration-test binary for the TUI (keeps link time down).

mod suite;
