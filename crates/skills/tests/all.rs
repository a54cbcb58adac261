//! One integration-test binary for the skills crate (keeps link time down).
// Fixture helpers are plain fns that clippy does not treat as test code; unwrapping is how a
// test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
