//! Loopback scripted-LLM server, temp-home harness and fixtures for tests.
