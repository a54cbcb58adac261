//! Running one step's tool calls (core.md §e.4–§e.8): preflight, resolve, same-step dedupe,
//! the permission decision, the scheduler (reads together, overlapping writes in order, no
//! overtaking), cancellation with a grace period, output normalisation and the model budget.
//! Every call that was announced gets exactly one result — never a silent success.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use kimi_context::render::{executor_text, normalize_tool_output, normalize_tool_text};
use kimi_protocol::ToolCall;
use kimi_protocol::loop_event::ToolOutput;
use kimi_tools::args::{ArgsValidator, Preflight, RawArgs};
use kimi_tools::result::truncate_for_model;
use kimi_tools::scheduler::Scheduler;
use kimi_tools::{
    Execution, ProgressSink, Resolution, ToolContext, ToolPlan, ToolProgress, ToolRegistry,
    ToolResult,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::repeat::{RepeatGuard, call_key};

/// How long tools get to settle after a cancel before their results are synthesized.
pub const ABORT_GRACE: Duration = Duration::from_millis(2_000);

/// What the permission chain decided for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    Approve,
    /// Refused; the text goes to the model as the call's error result.
    Deny(String),
    /// The user must decide. `policy` names the deciding policy, `danger` labels risky commands.
    Ask {
        action: String,
        policy: String,
        danger: Option<String>,
    },
}

/// The user's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserAnswer {
    Approve,
    /// Approve, and remember the call's approval rule for the rest of the session.
    ApproveForSession,
    /// Approve with one of the request's options chosen (a plan review's approach).
    ApproveOption(String),
    Reject(Option<String>),
}

/// Where the executor's decisions and side effects go: the permission chain, the user, the
/// journal and the front ends. The engine implements it; tests use a recording double.
#[async_trait::async_trait]
pub trait BatchHost: Send + Sync {
    fn decide(&self, call: &ToolCall, args: &Value, plan: &ToolPlan) -> GateDecision;
    /// Ask the user; `None` when the turn was cancelled while waiting.
    async fn ask(
        &self,
        call: &ToolCall,
        plan: &ToolPlan,
        action: &str,
        policy: &str,
        danger: Option<&str>,
    ) -> Option<UserAnswer>;
    /// A call whose review itself decides the result (ExitPlanMode): `Some` replaces running
    /// the tool with this result.
    fn settle(
        &self,
        _call: &ToolCall,
        _plan: &ToolPlan,
        _answer: &UserAnswer,
    ) -> Option<ToolResult> {
        None
    }
    /// PreToolUse hooks: `Some(reason)` vetoes the call.
    async fn pre_tool_use(&self, call: &ToolCall, args: &Value) -> Option<String>;
    /// The call is about to run (or has an immediate result): journal `tool.call`.
    fn started(&self, call: &ToolCall, args: &Value, plan: Option<&ToolPlan>);
    /// The call's final result: journal `tool.result` and tell the front ends.
    fn finished(&self, call: &ToolCall, result: &ToolResult);
    /// The call is about to run: take the file checkpoint a rewind needs (`None` = nothing
    /// to take, or checkpoints are off).
    async fn before_run(
        &self,
        _call: &ToolCall,
        _plan: &ToolPlan,
    ) -> Option<crate::checkpoint::Ticket> {
        None
    }
    /// The call ran: journal what it changed (`checkpoint.step`).
    async fn after_run(&self, _call: &ToolCall, _ticket: Option<crate::checkpoint::Ticket>) {}
    /// A status line the running call reported (an MCP sign-in's URL): tell the front ends.
    fn progress(&self, _call: &ToolCall, _text: &str) {}
}

pub struct BatchEnv<'a> {
    pub registry: &'a ToolRegistry,
    pub validator: &'a ArgsValidator,
    pub ctx: &'a ToolContext,
    pub host: &'a dyn BatchHost,
    /// The turn's cancel token; tools get a child of it.
    pub cancel: CancellationToken,
    /// Whether a cancel comes from the user (it changes the aborted text).
    pub user_cancel: bool,
    /// Disclosure: deferred tools must be loaded with `select_tools` before they are called.
    pub tool_select: Option<&'a crate::tool_select::ToolSelect>,
}

#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// Results in completion order, by call id.
    pub results: Vec<(String, ToolResult)>,
    /// A result (or the repeat guard) asked to end the turn after this batch.
    pub stop_turn: bool,
    /// The repeat guard stopped the turn: the tool whose identical call kept coming back and
    /// how many times in a row. The turn fails with this reason rather than ending quietly.
    pub repeat_stop: Option<(String, u32)>,
}

enum Prepared {
    Done(ToolResult),
    Duplicate(usize),
    Run(Box<dyn Execution>),
}

type Running<'a> = Pin<Box<dyn Future<Output = (usize, ToolResult)> + Send + 'a>>;

fn raw_args(call: &ToolCall) -> RawArgs<'_> {
    match call.arguments.as_deref() {
        None => RawArgs::Missing,
        Some(text) => RawArgs::Text(text),
    }
}

/// Empty outputs become "Tool output is empty.", text-only part lists are joined (§e.5). Every
/// other field of the result is kept. Public for the `tool_result` conformance adapter.
pub fn normalize(mut result: ToolResult) -> ToolResult {
    result.output = match result.output {
        ToolOutput::Text(text) => ToolOutput::Parts(normalize_tool_text(text).into_parts()),
        ToolOutput::Parts(parts) => ToolOutput::Parts(normalize_tool_output(parts).into_parts()),
    };
    if let ToolOutput::Parts(parts) = &result.output
        && let [kimi_protocol::ContentPart::Text { text }] = parts.as_slice()
    {
        result.output = ToolOutput::Text(text.clone());
    }
    result
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the tool panicked".to_owned())
}

fn append_reminder(result: &mut ToolResult, reminder: &str) {
    match &mut result.output {
        ToolOutput::Text(text) => {
            text.push_str("\n\n");
            text.push_str(reminder);
        }
        ToolOutput::Parts(parts) => {
            if let Some(kimi_protocol::ContentPart::Text { text }) = parts
                .iter_mut()
                .rev()
                .find(|p| matches!(p, kimi_protocol::ContentPart::Text { .. }))
            {
                text.push_str("\n\n");
                text.push_str(reminder);
            } else {
                parts.push(kimi_protocol::ContentPart::text(reminder));
            }
        }
    }
}

async fn prepare_one(
    env: &BatchEnv<'_>,
    call: &ToolCall,
    stop_batch: &mut bool,
) -> (Value, Option<ToolPlan>, Prepared) {
    let no_args = Value::Object(serde_json::Map::new());
    if *stop_batch {
        return (
            no_args,
            None,
            Prepared::Done(ToolResult::error(executor_text::skipped())),
        );
    }
    let args = match env
        .registry
        .preflight(env.validator, &call.name, raw_args(call), |name| {
            env.tool_select.and_then(|state| state.veto(name))
        }) {
        Preflight::Rejected { output, args } => {
            return (args, None, Prepared::Done(ToolResult::error(output)));
        }
        Preflight::Runnable { args } => args,
    };
    let Some(tool) = env.registry.get(&call.name) else {
        let text = format!("Tool \"{}\" not found", call.name);
        return (args, None, Prepared::Done(ToolResult::error(text)));
    };
    if env.cancel.is_cancelled() {
        let text = executor_text::aborted(&call.name, env.user_cancel);
        return (args, None, Prepared::Done(ToolResult::error(text)));
    }
    let exec = match tool.resolve(args.clone(), env.ctx) {
        Err(err) => {
            return (
                args,
                None,
                Prepared::Done(ToolResult::error(err.to_string())),
            );
        }
        Ok(Resolution::Result(result)) => {
            *stop_batch |= result.stop_turn;
            return (args, None, Prepared::Done(result));
        }
        Ok(Resolution::Run(exec)) => exec,
    };
    let plan = exec.plan().clone();
    // Announced before any decision, so front ends show the call while its approval is asked.
    env.host.started(call, &args, Some(&plan));
    if env.cancel.is_cancelled() {
        // Cancelled meanwhile — by the user, or because the call could not be journaled:
        // a call the journal does not have never runs.
        let text = executor_text::aborted(&call.name, env.user_cancel);
        return (args, Some(plan), Prepared::Done(ToolResult::error(text)));
    }
    let verdict = match env.host.decide(call, &args, &plan) {
        GateDecision::Approve => None,
        GateDecision::Deny(text) => Some(ToolResult::error(text)),
        GateDecision::Ask {
            action,
            policy,
            danger,
        } => match env
            .host
            .ask(call, &plan, &action, &policy, danger.as_deref())
            .await
            .inspect(|answer| {
                let (tool, id) = (&call.name, &call.id);
                tracing::info!(
                    tool,
                    call_id = id,
                    policy,
                    ?answer,
                    "permission asked; the user answered"
                );
            }) {
            Some(answer) => match env.host.settle(call, &plan, &answer) {
                Some(result) => Some(result),
                None => match answer {
                    UserAnswer::Approve
                    | UserAnswer::ApproveForSession
                    | UserAnswer::ApproveOption(_) => None,
                    UserAnswer::Reject(feedback) => Some(ToolResult::error(rejection_text(
                        &call.name,
                        feedback.as_deref(),
                    ))),
                },
            },
            None => Some(ToolResult::error(executor_text::aborted(
                &call.name,
                env.user_cancel,
            ))),
        },
    };
    if let Some(result) = verdict {
        *stop_batch |= result.stop_turn;
        return (args, Some(plan), Prepared::Done(result));
    }
    if let Some(reason) = env.host.pre_tool_use(call, &args).await {
        return (args, Some(plan), Prepared::Done(ToolResult::error(reason)));
    }
    *stop_batch |= plan.stop_batch_after_this;
    (args, Some(plan), Prepared::Run(exec))
}

/// Runs one execution, logging the tool's name, how long it took and whether it failed.
async fn logged(
    i: usize,
    call: &ToolCall,
    run: impl Future<Output = ToolResult>,
) -> (usize, ToolResult) {
    let began = std::time::Instant::now();
    let result = run.await;
    let duration_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
    let is_error = result.is_error;
    tracing::info!(tool = %call.name, call_id = %call.id, duration_ms, is_error, "tool call finished");
    (i, result)
}

pub(crate) fn rejection_text(name: &str, feedback: Option<&str>) -> String {
    match feedback.map(str::trim).filter(|f| !f.is_empty()) {
        Some(feedback) => format!(
            "The user rejected the \"{name}\" call and said: {feedback}\nFollow the user's feedback; do not retry the same call unchanged."
        ),
        None => format!(
            "The user rejected the \"{name}\" call. Do not retry it unchanged; ask the user how to proceed if the task needs it."
        ),
    }
}

/// Run one step's calls; results come back in completion order, one per call.
pub async fn run_batch(
    env: &BatchEnv<'_>,
    calls: &[ToolCall],
    repeat: &mut RepeatGuard,
) -> BatchOutcome {
    let mut outcome = BatchOutcome::default();
    let mut prepared: Vec<Option<Prepared>> = Vec::with_capacity(calls.len());
    let mut first_of_key: HashMap<String, usize> = HashMap::new();
    let mut reminders: Vec<Option<String>> = vec![None; calls.len()];
    let mut stop_batch = false;
    for (i, call) in calls.iter().enumerate() {
        let (args, plan, mut prep) = prepare_one(env, call, &mut stop_batch).await;
        let key = call_key(&call.name, &args);
        match first_of_key.get(&key) {
            Some(&original) if matches!(prep, Prepared::Run(_)) => {
                prep = Prepared::Duplicate(original)
            }
            Some(_) => {}
            None => {
                first_of_key.insert(key.clone(), i);
                let verdict = repeat.observe(&key);
                reminders[i] = verdict.reminder;
                outcome.stop_turn |= verdict.stop_turn;
                if verdict.stop_turn {
                    outcome.repeat_stop = Some((call.name.clone(), verdict.streak));
                }
            }
        }
        // Calls that reached planning were announced inside `prepare_one`.
        if plan.is_none() {
            env.host.started(call, &args, None);
        }
        prepared.push(Some(prep));
    }

    let tool_cancel = env.cancel.child_token();
    let mut scheduler = Scheduler::new();
    let mut executions: HashMap<usize, Box<dyn Execution>> = HashMap::new();
    let mut ready: Vec<(usize, ToolResult)> = Vec::new();
    let mut duplicates: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut to_start: Vec<usize> = Vec::new();
    for (i, slot) in prepared.iter_mut().enumerate() {
        match slot.take() {
            Some(Prepared::Done(result)) => ready.push((i, result)),
            Some(Prepared::Duplicate(original)) => duplicates.entry(original).or_default().push(i),
            Some(Prepared::Run(exec)) => {
                let accesses = exec.plan().accesses.clone();
                executions.insert(i, exec);
                to_start.extend(scheduler.add(i, accesses));
            }
            None => {}
        }
    }

    let mut running: FuturesUnordered<Running<'_>> = FuturesUnordered::new();
    let start =
        |i: usize, executions: &mut HashMap<usize, Box<dyn Execution>>| -> Option<Running<'_>> {
            let exec = executions.remove(&i)?;
            // A journal write that failed after this call was planned cancelled the turn:
            // the call gets its aborted result below instead of running.
            if env.cancel.is_cancelled() {
                return None;
            }
            let token = tool_cancel.child_token();
            let ctx = env.ctx;
            let host = env.host;
            let call = &calls[i];
            let name = call.name.clone();
            let plan = exec.plan().clone();
            // A tool that panics fails its call (core.md §e.5 "execute threw") instead of
            // taking the whole agent down. The checkpoint brackets the run, panic or not.
            let run = async move {
                let ticket = host.before_run(call, &plan).await;
                // Status lines reach the front ends while the call runs (Bash's output
                // stream is not forwarded: its result carries it).
                let (tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
                let forward = |update: ToolProgress| {
                    if let ToolProgress::Status(text) = update {
                        host.progress(call, &text);
                    }
                };
                let execution =
                    std::panic::AssertUnwindSafe(exec.execute(ctx, token, ProgressSink::new(tx)))
                        .catch_unwind();
                tokio::pin!(execution);
                let outcome = loop {
                    tokio::select! {
                        Some(update) = updates.recv() => forward(update),
                        outcome = &mut execution => break outcome,
                    }
                };
                while let Ok(update) = updates.try_recv() {
                    forward(update);
                }
                let result = outcome.unwrap_or_else(|payload| {
                    let message = panic_message(payload.as_ref());
                    tracing::error!(tool = %name, %message, "tool panicked");
                    ToolResult::error(executor_text::failed(&name, &message))
                });
                host.after_run(call, ticket).await;
                result
            };
            let fut: Running<'_> = Box::pin(logged(i, &calls[i], run));
            Some(fut)
        };
    for i in to_start.drain(..) {
        if let Some(fut) = start(i, &mut executions) {
            running.push(fut);
        }
    }

    let mut finish = |i: usize, result: ToolResult, outcome: &mut BatchOutcome| {
        let call = &calls[i];
        let mut result = normalize(result);
        if let Some(reminder) = &reminders[i] {
            append_reminder(&mut result, reminder);
        }
        let spilled = truncate_for_model(
            result,
            &call.name,
            &call.id,
            &env.ctx.tool_results_dir,
            None,
        );
        let result = spilled.result;
        outcome.stop_turn |= result.stop_turn;
        env.host.finished(call, &result);
        let dups = duplicates.remove(&i).unwrap_or_default();
        if !dups.is_empty() {
            // A duplicate shares the result, not the state change: that is journaled once.
            let mut copy = result.clone();
            copy.records.clear();
            for dup in dups {
                env.host.finished(&calls[dup], &copy);
                outcome.results.push((calls[dup].id.clone(), copy.clone()));
            }
        }
        outcome.results.push((call.id.clone(), result));
    };
    for (i, result) in ready {
        let call = &calls[i];
        let is_error = result.is_error;
        tracing::info!(tool = %call.name, call_id = %call.id, is_error, "tool call settled without running");
        finish(i, result, &mut outcome);
    }

    let mut deadline: Option<tokio::time::Instant> = None;
    while !running.is_empty() {
        let next = match deadline {
            None => tokio::select! {
                next = running.next() => next,
                () = env.cancel.cancelled() => {
                    tool_cancel.cancel();
                    deadline = Some(tokio::time::Instant::now() + ABORT_GRACE);
                    continue;
                }
            },
            Some(at) => tokio::select! {
                next = running.next() => next,
                () = tokio::time::sleep_until(at) => break,
            },
        };
        let Some((i, result)) = next else { break };
        finish(i, result, &mut outcome);
        for j in scheduler.finish(i) {
            if env.cancel.is_cancelled() {
                // Queued behind a conflict when the cancel came: never started.
                executions.remove(&j);
                let text = executor_text::aborted(&calls[j].name, env.user_cancel);
                finish(j, ToolResult::error(text), &mut outcome);
                continue;
            }
            if let Some(fut) = start(j, &mut executions) {
                running.push(fut);
            }
        }
    }
    drop(running);
    // Whatever did not settle within the grace period (or never started) gets an explicit
    // aborted result, so the model never mistakes it for a success.
    let answered: std::collections::HashSet<String> =
        outcome.results.iter().map(|(id, _)| id.clone()).collect();
    for (i, call) in calls.iter().enumerate() {
        if !answered.contains(&call.id) {
            let text = executor_text::aborted(&call.name, env.user_cancel);
            let result = ToolResult::error(text);
            env.host.finished(call, &result);
            outcome.results.push((call.id.clone(), result));
            let _ = i;
        }
    }
    outcome
}
