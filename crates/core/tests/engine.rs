//! End-to-end engine tests: a real session (`open_session`, journal, built-in tools, real
//! child processes) against the loopback scripted server in real wire formats. Every test
//! checks the tool call/result pairing invariant over every request it captured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "engine/harness.rs"]
mod harness;

#[path = "engine/compaction.rs"]
mod compaction;
#[path = "engine/cron.rs"]
mod cron;
#[path = "engine/durable_answers.rs"]
mod durable_answers;
#[path = "engine/durable_steers.rs"]
mod durable_steers;
#[path = "engine/errors.rs"]
mod errors;
#[path = "engine/hook_events.rs"]
mod hook_events;
#[path = "engine/host.rs"]
mod host;
#[path = "engine/instructions.rs"]
mod instructions;
#[path = "engine/interrupts.rs"]
mod interrupts;
#[path = "engine/model_switch.rs"]
mod model_switch;
#[path = "engine/own_records.rs"]
mod own_records;
#[path = "engine/questions.rs"]
mod questions;
#[path = "engine/subagents.rs"]
mod subagents;
#[path = "engine/swarm.rs"]
mod swarm;
#[path = "engine/swarm_mode.rs"]
mod swarm_mode;
#[path = "engine/tasks.rs"]
mod tasks;
#[path = "engine/todos.rs"]
mod todos;
#[path = "engine/tool_diffs.rs"]
mod tool_diffs;
