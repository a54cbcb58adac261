//! The `Agent` tool (surface.md §2.5): hands a task to a subagent. In the foreground the call
//! waits for the subagent's turn to end (cancelling the caller's turn cancels the subagent's)
//! and returns its final message; with `run_in_background` it becomes a background task whose
//! report reaches the caller as a task notice. `model` picks a pooled model, `fork` starts
//! the subagent from a copy of the caller's context, and `isolation: "worktree"` gives it a
//! git worktree of its own.

use std::sync::Arc;

use async_trait::async_trait;
use kimi_tools::tasks::TaskStatus;
use kimi_tools::tool::parse_args;
use kimi_tools::{
    Execution, ProgressSink, Resolution, RuleSubject, Tool, ToolContext, ToolDisplay, ToolError,
    ToolPlan, ToolResult,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::SubagentHost;
use super::pool::ModelPick;
use super::run::{Isolation, Launch, RunOutcome, RunStatus, Target};
use crate::profile::DEFAULT_SUBAGENT;

const DESCRIPTION: &str = "Hand a self-contained task to a subagent. The subagent starts with an empty history, works on its own with the tools of its type, and its final message comes back as this tool's result; nothing else of its work is visible to you or the user.

- Give it everything it needs in `prompt`: the goal, the relevant paths and facts you already know, constraints, and what its final report must contain.
- Several independent tasks can run at once: make several Agent calls in the same response.
- To continue a subagent with its history (follow-up work, a correction, or after an interruption), call Agent again with `resume` set to the agent_id its earlier result reported, and do not set `subagent_type`.
- Verify a subagent's claims when they matter; it can be wrong.
- Do not delegate trivial work you can do with one or two tool calls.";

#[derive(Debug, Deserialize)]
struct Params {
    prompt: String,
    description: String,
    #[serde(default)]
    subagent_type: Option<String>,
    #[serde(default)]
    resume: Option<String>,
    #[serde(default)]
    run_in_background: bool,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    fork: bool,
    #[serde(default)]
    isolation: Option<Isolation>,
    #[serde(default)]
    environment: Option<String>,
}

/// The `isolation` parameter's schema (shared with AgentSwarm).
pub(super) fn isolation_schema() -> Value {
    json!({
        "type": "string",
        "enum": ["none", "worktree"],
        "description": "\"worktree\": work in a git worktree and branch of its own, from your HEAD; its report names the branch and its diff. Git repositories only."
    })
}

/// Check `model` and `isolation` before anything starts; the error text is the tool's result.
pub(super) fn launch_for(
    host: &SubagentHost,
    model: Option<&str>,
    fork: bool,
    isolation: Option<Isolation>,
    label: &str,
) -> Result<Launch, String> {
    // A fork continues the caller's own conversation, so it keeps the caller's model.
    let pick = if fork {
        ModelPick::Primary
    } else {
        host.pool.pick(model).map_err(|e| e.to_string())?
    };
    let model = match pick {
        ModelPick::Primary => None,
        ModelPick::Pooled(model) => Some(model),
    };
    let isolation = isolation.unwrap_or_default();
    if isolation == Isolation::Worktree {
        super::worktree::repository_of(&host.base_ctx.cwd).map_err(|e| e.to_string())?;
        // The OS sandbox keeps kimi-rs's home (where worktrees live) read-only for Bash.
        if !host.base_ctx.settings.launcher.is_empty() {
            return Err(super::worktree::WorktreeError::Sandboxed.to_string());
        }
    }
    Ok(Launch {
        model,
        fork,
        isolation,
        label: label.trim().to_owned(),
        environment: None,
    })
}

pub struct AgentTool {
    host: Arc<SubagentHost>,
}

impl AgentTool {
    pub fn new(host: Arc<SubagentHost>) -> AgentTool {
        AgentTool { host }
    }
}

/// The report of a finished run: its text, and whether it is an error for the caller.
fn describe(outcome: &RunOutcome) -> (String, bool) {
    let usage = &outcome.usage;
    let mut usage_line = format!(
        "usage: input {}, output {}",
        usage.input_other, usage.output
    );
    if usage.input_cache_read > 0 {
        usage_line.push_str(&format!(", cache_read {}", usage.input_cache_read));
    }
    if usage.input_cache_creation > 0 {
        usage_line.push_str(&format!(", cache_write {}", usage.input_cache_creation));
    }
    let mut head = format!(
        "agent_id: {}\nactual_subagent_type: {}",
        outcome.agent_id, outcome.profile
    );
    if let Some(model) = &outcome.model {
        head.push_str(&format!("\nmodel: {model}"));
    }
    if let Some(environment) = &outcome.environment {
        head.push_str(&format!("\nenvironment: {environment}"));
    }
    if let Some(tree) = &outcome.worktree {
        head.push('\n');
        head.push_str(&tree.describe());
    }
    let resume_hint = format!(
        "resume_hint: continue this subagent with its history via Agent(resume=\"{}\", prompt=\"...\") without subagent_type.",
        outcome.agent_id
    );
    match &outcome.status {
        RunStatus::Completed => (
            format!(
                "{head}\nstatus: completed\n{usage_line}\n\n[summary]\n{}",
                outcome.text
            ),
            false,
        ),
        RunStatus::Cancelled => (
            format!(
                "{head}\nstatus: cancelled\n{usage_line}\n\nThe subagent was interrupted before it finished; its partial work stays in its history.\n{resume_hint}"
            ),
            true,
        ),
        RunStatus::Failed(message) => (
            format!(
                "{head}\nstatus: failed\n{usage_line}\n\nsubagent error: {message}\n{resume_hint}"
            ),
            true,
        ),
    }
}

fn format_outcome(outcome: &RunOutcome) -> ToolResult {
    match describe(outcome) {
        (text, false) => ToolResult::ok(text),
        (text, true) => ToolResult::error(text),
    }
}

/// Run a subagent as a background task: the call returns at once, the task ends with the
/// subagent's report (which reaches the caller as a task notice), and TaskStop cancels it.
fn start_in_background(exec: AgentExecution, ctx: &ToolContext) -> ToolResult {
    let task = ctx.tasks.start_external(
        "agent",
        &exec.description,
        &exec.plan.display.summary,
        &ctx.cwd,
    );
    let id = task.id().to_owned();
    let AgentExecution {
        host,
        target,
        prompt,
        launch,
        ..
    } = exec;
    tokio::spawn(async move {
        // Not the caller's token: the subagent outlives the turn that started it.
        let cancel = CancellationToken::new();
        let run = host.run(target, prompt, launch, cancel.clone());
        tokio::pin!(run);
        let (result, stop_reason) = tokio::select! {
            result = &mut run => (result, None),
            reason = task.stop_requested() => {
                cancel.cancel();
                (run.await, Some(reason))
            }
        };
        match result {
            Ok(outcome) => {
                let (text, failed) = describe(&outcome);
                let status = match (&outcome.status, &stop_reason) {
                    (_, Some(_)) | (RunStatus::Cancelled, None) => TaskStatus::Killed,
                    _ if failed => TaskStatus::Failed,
                    _ => TaskStatus::Completed,
                };
                task.finish(status, &text, stop_reason);
            }
            Err(err) => {
                task.finish(
                    TaskStatus::Failed,
                    &format!("subagent error: {err}"),
                    Some(err.to_string()),
                );
            }
        }
    });
    ToolResult::ok(format!(
        "Started the subagent in the background as task {id}. Its report arrives in this conversation when it finishes; until then continue with other work. TaskOutput, WaitFor and TaskStop take the task id."
    ))
}

struct AgentExecution {
    host: Arc<SubagentHost>,
    target: Target,
    prompt: String,
    description: String,
    background: bool,
    launch: Launch,
    plan: ToolPlan,
}

#[async_trait]
impl Execution for AgentExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        if self.background {
            return start_in_background(*self, ctx);
        }
        match self
            .host
            .run(self.target, self.prompt, self.launch, cancel)
            .await
        {
            Ok(outcome) => format_outcome(&outcome),
            Err(err) => ToolResult::error(format!("subagent error: {err}")),
        }
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        "Agent"
    }

    fn description(&self) -> String {
        let mut text = DESCRIPTION.to_owned();
        let types = self.host.allowed_types();
        if !types.is_empty() {
            text.push_str("\n\nAvailable agent types (pass via subagent_type; default ");
            text.push_str(DEFAULT_SUBAGENT);
            text.push_str("):");
            for profile in types {
                text.push_str(&format!("\n- {}: {}", profile.name, profile.description));
                if let Some(when) = &profile.when_to_use {
                    text.push(' ');
                    text.push_str(when);
                }
                let tools = match &profile.tools {
                    None if profile.disallowed_tools.is_empty() => "all".to_owned(),
                    None => format!("all except {}", profile.disallowed_tools.join(", ")),
                    Some(list) if list.is_empty() => "none".to_owned(),
                    Some(list) => list.join(", "),
                };
                text.push_str(&format!("\n  Tools: {tools}"));
            }
        }
        text.push_str(&self.host.pool.describe());
        text.push_str(&super::placement::describe(&self.host, "environment"));
        text
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The complete task for the subagent."},
                "description": {"type": "string", "description": "A short (3-5 word) label for the task."},
                "subagent_type": {"type": "string", "description": "The agent type to start (default coder). Not allowed with resume."},
                "resume": {"type": "string", "description": "The agent_id of an earlier subagent of this session to continue with its history."},
                "run_in_background": {"type": "boolean", "description": "Start the subagent as a background task and return at once; its report arrives as a message when it finishes (TaskOutput, WaitFor and TaskStop take the task id). Default false."},
                "model": {"type": "string", "description": "A subagent model pool alias (listed above) or \"primary\"."},
                "fork": {"type": "boolean", "description": "Start from a copy of your conversation (your type and model). Not with resume, subagent_type or model."},
                "isolation": isolation_schema(),
                "environment": {"type": "string", "description": "A declared execution environment id to run the new subagent on (its tools act on that machine, in its default directory), or `local` for this machine (the directory the session started in) even when you run elsewhere; default: where you run. Not with resume or isolation."}
            },
            "required": ["prompt", "description"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: Params = parse_args(args)?;
        let refuse = |text: String| Ok(Resolution::Result(ToolResult::error(text)));
        let resume = params
            .resume
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty());
        let requested = params
            .subagent_type
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        if params.fork && (resume.is_some() || requested.is_some() || params.model.is_some()) {
            return refuse(
                "`fork` starts a new subagent of your own type and model from a copy of your context; drop `resume`, `subagent_type` and `model`, or drop `fork`.".to_owned(),
            );
        }
        let mut launch = match launch_for(
            &self.host,
            params.model.as_deref(),
            params.fork,
            params.isolation,
            &params.description,
        ) {
            Ok(launch) => launch,
            Err(text) => return refuse(text),
        };
        if let Some(id) = params
            .environment
            .as_deref()
            .map(str::trim)
            .filter(|i| !i.is_empty())
        {
            if resume.is_some() {
                return refuse(
                    "`resume` continues an agent where it already runs; drop `environment`."
                        .to_owned(),
                );
            }
            if launch.isolation == Isolation::Worktree {
                return refuse(super::SubagentError::RemoteWorktree(id.to_owned()).to_string());
            }
            match super::placement::check_id(&self.host, id) {
                Ok(id) => launch.environment = Some(id),
                Err(text) => return refuse(text),
            }
        }
        let (target, shown) = match (resume, requested) {
            (None, None) if params.fork => (
                Target::New(Box::new(self.host.caller.clone())),
                format!("{} (fork)", self.host.caller.name),
            ),
            (Some(_), Some(_)) => {
                return refuse(
                    "`resume` continues an agent with the type it already has; drop `subagent_type` and call again.".to_owned(),
                );
            }
            (Some(id), None) => (Target::Resume(id.to_owned()), id.to_owned()),
            (None, requested) => {
                let name = requested.unwrap_or(DEFAULT_SUBAGENT);
                let allowed = self.host.allowed_types();
                let Some(profile) = allowed.iter().find(|p| p.name == name) else {
                    let names: Vec<&str> = allowed.iter().map(|p| p.name.as_str()).collect();
                    return refuse(format!(
                        "Agent type `{name}` is not available here. Use one of: {}.",
                        names.join(", ")
                    ));
                };
                (Target::New(Box::new((*profile).clone())), name.to_owned())
            }
        };
        // Approvals name the target the subagent will act on.
        let shown = match &launch.environment {
            Some(id) => format!("{shown} @ {id}"),
            None => shown,
        };
        let plan = ToolPlan {
            // A subagent's own tool calls are scheduled and permission-checked by itself.
            accesses: Some(Vec::new()),
            approval_rule: "Agent".to_owned(),
            subject: RuleSubject::Text(shown.clone()),
            display: ToolDisplay {
                kind: "agent".to_owned(),
                summary: format!("{shown}: {}", params.description),
                detail: Some(params.prompt.clone()),
                diff: None,
            },
            description: format!("Launching {shown} agent: {}", params.description),
            stop_batch_after_this: false,
        };
        Ok(Resolution::Run(Box::new(AgentExecution {
            host: self.host.clone(),
            target,
            prompt: params.prompt,
            description: params.description,
            background: params.run_in_background,
            launch,
            plan,
        })))
    }
}
