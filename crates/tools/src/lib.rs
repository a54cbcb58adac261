//! Tool trait, the tool-call framework (accesses, scheduler, argument preflight, output budgets)
//! and the built-in tools.
//!
//! How an executor drives a call:
//! 1. [`args::parse_tool_call_arguments`] / [`ToolRegistry::preflight`]: decode the provider's
//!    argument string, reject unknown/disabled tools and schema violations (Ajv-style messages).
//! 2. [`Tool::resolve`] turns the arguments into a [`Resolution`]: either a synthetic result or an
//!    [`Execution`] whose [`ToolPlan`] carries the accesses, approval rule, rule subject and UI
//!    display. A [`ToolError`] from `resolve` (path security, bad arguments) is the call's error
//!    result.
//! 3. [`Scheduler`] decides when each execution may start from its accesses
//!    ([`ToolPlan::effective_accesses`]; `None` means exclusive).
//! 4. [`Execution::execute`] runs with the [`ToolContext`], a cancellation token and a
//!    [`ProgressSink`].
//! 5. [`result::truncate_for_model`] applies the 50,000-character model budget, spilling the full
//!    text to the agent's `tool-results/` directory.

pub mod access;
pub mod args;
pub mod builtin;
pub mod context;
pub mod environment;
pub mod error;
pub mod late;
pub mod path;
pub mod registry;
pub mod result;
pub mod scheduler;
pub mod tasks;
pub mod terminal;
pub mod tool;
pub use kimi_protocol::wildcard;

pub use access::{Access, FileOperation, conflict};
pub use context::{ProgressSink, StaleGuard, ToolContext, ToolProgress, ToolSettings};
pub use environment::{EnvError, Environment, EnvironmentInfo};
pub use error::ToolError;
pub use late::{LateTools, PendingSource};
pub use registry::ToolRegistry;
pub use result::ToolResult;
pub use scheduler::Scheduler;
pub use tool::{Execution, Resolution, RuleSubject, Tool, ToolDisplay, ToolPlan};
