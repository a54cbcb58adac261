//! Integration tests of kimi-llm against the loopback scripted server (one test binary).
// Scenario helpers are plain async fns called from the generated #[tokio::test]s, which
// clippy does not treat as test code; unwrapping is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
