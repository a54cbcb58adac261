//! User hooks (surface.md §6): `[[hooks]]` definitions, the 20 events and their stdin payloads,
//! the process runner (own process group, killed at its timeout) and the pure interpretation of
//! exit codes and output.
//!
//! The engine calls [`HookRunner::run_event`] with the session's [`HookSet`] and one
//! [`HookEventData`]; for PreToolUse it turns the [`EventResult`] into a before-execute
//! listener verdict with [`pre_tool_use_verdict`]. On a config change it re-parses with
//! [`load_hooks_from_str`] and calls [`HookSet::reload`].

mod config;
mod event;
mod outcome;
mod runner;

pub use config::{
    DEFAULT_TIMEOUT_SECS, HookDef, HookLoadError, HookProblem, HookSet, LoadedHooks,
    MAX_TIMEOUT_SECS, load_hooks, load_hooks_from_str, load_hooks_from_value,
};
pub use event::{CommonPayload, HookEvent, HookEventData, PermissionRequestInfo, clip_tool_output};
pub use outcome::{
    EventResult, HookOutcome, HookRun, RunStatus, combine, interpret, pre_tool_use_verdict,
};
pub use runner::HookRunner;
