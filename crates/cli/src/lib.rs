//! Library half of the `kimi-rs` binary, so integration tests can drive the same code the
//! command line runs.

pub mod accounts;
pub mod acp;
pub mod browser;
pub mod cli;
pub mod config;
pub mod conformance;
pub mod demo;
pub mod doctor;
pub mod environment_command;
pub mod environments;
pub mod experiments;
pub mod export;
pub mod export_debug;
pub mod extensions;
pub mod feedback;
pub mod hosted;
pub mod import;
pub mod interactive;
pub mod logging;
pub mod mcp_login;
pub mod model_catalog;
pub mod model_refresh;
pub mod plugin_panel;
pub mod plugins;
pub mod print;
pub mod providers;
pub mod rewind;
pub mod run;
pub mod sessions;
pub mod trust;
pub mod upgrade;
pub mod vis;
pub mod web;
pub mod web_handoff;
