//! The `AgentSwarm` tool (surface.md §2.5): one call fans a prompt template out over a list of
//! items (one new subagent per item) and/or resumes earlier subagents by id, runs them all
//! under the launch ramp of [`super::ramp`], waits for every one and returns one report in
//! launch order (resumed agents first, then the items in the order given). Cancelling the
//! caller's turn cancels every running agent and starts no more.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use kimi_tools::tool::parse_args;
use kimi_tools::{
    Execution, ProgressSink, Resolution, RuleSubject, Tool, ToolContext, ToolDisplay, ToolError,
    ToolPlan, ToolResult,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::SubagentHost;
use super::ramp::{BadConcurrency, MAX_CONCURRENCY_ENV, Ramp, parse_max_concurrency};
use super::run::{Launch, RunOutcome, RunStatus, Target};
use crate::permission::{CallFacts, ListenerVerdict, swarm_exclusive};
use crate::profile::DEFAULT_SUBAGENT;

/// The most subagents one call may start or resume.
pub const MAX_SWARM_AGENTS: usize = 128;
/// What `prompt_template` must contain; each item replaces it.
pub const ITEM_PLACEHOLDER: &str = "{{item}}";
const NAME: &str = "AgentSwarm";

const DESCRIPTION: &str = "Run many subagents at once: one prompt template filled in with each of several items, continuations of existing subagents, or both. Every subagent works independently with an empty history (resumed ones with their own); the call waits for all of them and returns one report listing each agent's id, item, status and final message.

- Use it when the same kind of task applies to many inputs, e.g. `prompt_template` \"Review {{item}} for unchecked errors and report file:line for each.\" with `items` [\"src/auth/login.rs\", \"src/auth/session.rs\", \"src/db/pool.rs\"]. For a few tasks of different shapes, make separate Agent calls in one response instead.
- `{{item}}` in `prompt_template` is replaced by each item. Write every item as a specific, self-contained piece of the task, and the template as a complete brief (goal, constraints, what the final report must contain), since each subagent sees nothing else.
- Rules, checked before anything starts: at least 2 items unless `resume_agent_ids` is given; `prompt_template` is required with `items` and must contain `{{item}}`; the filled-in prompts must all differ; at most 128 agents in total.
- `resume_agent_ids` maps the agent_id of an earlier subagent to the prompt that continues it (\"continue\" is often enough), e.g. to finish agents a previous swarm reported as failed or cancelled. Resumed agents start first. Do not repeat their work in `items`.
- Agents are started a few at a time and queued automatically, so splitting a large task into many focused items is fine.
- AgentSwarm must be the only tool call in its response.";

#[derive(Debug, Deserialize)]
struct Params {
    description: String,
    #[serde(default)]
    subagent_type: Option<String>,
    #[serde(default)]
    prompt_template: Option<String>,
    #[serde(default)]
    items: Option<Vec<String>>,
    #[serde(default)]
    resume_agent_ids: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    isolation: Option<super::run::Isolation>,
    #[serde(default)]
    environments: Option<super::placement::EnvironmentsParam>,
}

/// Why a swarm call was refused before any agent started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwarmError {
    #[error("`description` must not be empty; give the swarm a short label.")]
    NoDescription,
    #[error(
        "AgentSwarm needs at least 2 items unless resume_agent_ids is given; for a single task use Agent."
    )]
    TooFewItems,
    #[error(
        "AgentSwarm can run at most {MAX_SWARM_AGENTS} agents in one call, and this one asks for {0}; split the work into several calls."
    )]
    TooMany(usize),
    #[error("Item {0} is empty; every item must describe one piece of the task.")]
    EmptyItem(usize),
    #[error("`prompt_template` is required when `items` are given.")]
    NoTemplate,
    #[error(
        "`prompt_template` must contain the {ITEM_PLACEHOLDER} placeholder, which each item replaces."
    )]
    NoPlaceholder,
    #[error(
        "Items {0} and {1} give the same prompt; every subagent of a swarm must get a different task."
    )]
    DuplicatePrompt(usize, usize),
    #[error("The resume prompt for `{0}` must be a non-empty string.")]
    BadResumePrompt(String),
    #[error(
        "`{0}` is not a subagent of this session; resume_agent_ids takes agent ids an earlier Agent or AgentSwarm result reported."
    )]
    NoSuchAgent(String),
    #[error("Agent type `{name}` is not available here. Use one of: {allowed}.")]
    UnknownType { name: String, allowed: String },
    #[error(transparent)]
    Concurrency(#[from] BadConcurrency),
}

/// One agent of a swarm, in launch order.
#[derive(Debug, Clone)]
struct Member {
    target: Target,
    /// The item it was started for (none for a resumed agent).
    item: Option<String>,
    prompt: String,
    /// The declared environment it runs on (new members of a call with `environments`).
    environment: Option<String>,
}

/// How one member ended.
#[derive(Debug, Clone)]
enum Fate {
    Ran(Box<RunOutcome>),
    /// It could not be started (the message says why).
    Refused {
        agent_id: Option<String>,
        error: String,
    },
    /// The swarm was cancelled before its turn came.
    NotStarted,
}

pub struct AgentSwarmTool {
    host: Arc<SubagentHost>,
}

impl AgentSwarmTool {
    pub fn new(host: Arc<SubagentHost>) -> AgentSwarmTool {
        AgentSwarmTool { host }
    }

    /// The tool for a registry.
    pub fn shared(host: &Arc<SubagentHost>) -> Arc<dyn Tool> {
        Arc::new(AgentSwarmTool::new(host.clone()))
    }

    /// Check the arguments and build the members, resumed agents first.
    fn members(&self, params: &Params) -> Result<Vec<Member>, SwarmError> {
        if params.description.trim().is_empty() {
            return Err(SwarmError::NoDescription);
        }
        let items = params.items.as_deref().unwrap_or_default();
        let resumes = params.resume_agent_ids.as_ref();
        let resume_count = resumes.map_or(0, serde_json::Map::len);
        let total = items.len() + resume_count;
        if resume_count == 0 && items.len() < 2 {
            return Err(SwarmError::TooFewItems);
        }
        if total > MAX_SWARM_AGENTS {
            return Err(SwarmError::TooMany(total));
        }
        let mut members = Vec::with_capacity(total);
        for (id, prompt) in resumes.into_iter().flatten() {
            let id = id.trim();
            let prompt = prompt
                .as_str()
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .ok_or_else(|| SwarmError::BadResumePrompt(id.to_owned()))?;
            if !super::run::is_subagent_id(id) || !self.host.journal_path(id).exists() {
                return Err(SwarmError::NoSuchAgent(id.to_owned()));
            }
            members.push(Member {
                target: Target::Resume(id.to_owned()),
                item: None,
                prompt: prompt.to_owned(),
                // A resumed agent stays where it ran.
                environment: None,
            });
        }
        if items.is_empty() {
            return Ok(members);
        }
        let template = params
            .prompt_template
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(SwarmError::NoTemplate)?;
        if !template.contains(ITEM_PLACEHOLDER) {
            return Err(SwarmError::NoPlaceholder);
        }
        let profile = self.profile(params.subagent_type.as_deref())?;
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (index, item) in items.iter().enumerate() {
            let item = item.trim();
            if item.is_empty() {
                return Err(SwarmError::EmptyItem(index + 1));
            }
            let prompt = template.replace(ITEM_PLACEHOLDER, item);
            if let Some(&first) = seen.get(&prompt) {
                return Err(SwarmError::DuplicatePrompt(first, index + 1));
            }
            seen.insert(prompt.clone(), index + 1);
            members.push(Member {
                target: Target::New(Box::new(profile.clone())),
                item: Some(item.to_owned()),
                prompt,
                environment: None,
            });
        }
        Ok(members)
    }

    /// The profile new agents get (default `coder`), if the caller may start it.
    fn profile(&self, requested: Option<&str>) -> Result<crate::profile::Profile, SwarmError> {
        let name = requested
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .unwrap_or(DEFAULT_SUBAGENT);
        let allowed = self.host.allowed_types();
        match allowed.iter().find(|p| p.name == name) {
            Some(profile) => Ok((*profile).clone()),
            None => Err(SwarmError::UnknownType {
                name: name.to_owned(),
                allowed: allowed
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

/// The veto text when `tool` is AgentSwarm and the response holding it has other tool calls
/// (`calls_in_response` counts them all). The engine asks this in its permission decision,
/// where the step's calls are known, so the swarm needs no view into its caller.
pub fn swarm_veto(tool: &str, calls_in_response: usize) -> Option<String> {
    if tool != NAME {
        return None;
    }
    match swarm_exclusive(&CallFacts::name_only(NAME), calls_in_response) {
        ListenerVerdict::Veto(text) => Some(format!(
            "{text} No subagent was started; the other calls of that response ran normally."
        )),
        _ => None,
    }
}

/// Start the members under `ramp`, wait for all of them, and return their fates in order.
async fn run_members(
    host: &Arc<SubagentHost>,
    members: &[Member],
    launch: &Launch,
    mut ramp: Ramp,
    cancel: &CancellationToken,
) -> Vec<Fate> {
    let mut fates: Vec<Option<Fate>> = vec![None; members.len()];
    let mut queue: VecDeque<usize> = (0..members.len()).collect();
    let mut running = FuturesUnordered::new();
    loop {
        if !cancel.is_cancelled() {
            let step = ramp.poll(tokio::time::Instant::now(), running.len());
            for _ in 0..step.launch {
                let Some(index) = queue.pop_front() else {
                    break;
                };
                let member = members[index].clone();
                // Ids are handed out here, in launch order, so they follow the item order.
                let agent_id = match &member.target {
                    Target::New(_) => host.new_agent_id(),
                    Target::Resume(id) => id.clone(),
                };
                let host = host.clone();
                let token = cancel.clone();
                let mut launch = launch.clone();
                if let Some(item) = &member.item {
                    launch.label = format!("{} ({item})", launch.label);
                }
                launch.environment.clone_from(&member.environment);
                running.push(async move {
                    let result = host
                        .run_as(
                            agent_id.clone(),
                            member.target,
                            member.prompt,
                            launch,
                            token,
                        )
                        .await;
                    (index, agent_id, result)
                });
            }
            if running.is_empty() && (queue.is_empty() || step.wake_at.is_none()) {
                break;
            }
            let wake = step.wake_at;
            tokio::select! {
                Some((index, agent_id, result)) = running.next(), if !running.is_empty() => {
                    fates[index] = Some(match result {
                        Ok(outcome) => Fate::Ran(Box::new(outcome)),
                        Err(err) => Fate::Refused { agent_id: Some(agent_id), error: err.to_string() },
                    });
                }
                () = sleep_until(wake), if wake.is_some() => {}
                () = cancel.cancelled() => {}
            }
        } else {
            // Cancelled: start nothing more, let the running agents wind down.
            match running.next().await {
                Some((index, agent_id, result)) => {
                    fates[index] = Some(match result {
                        Ok(outcome) => Fate::Ran(Box::new(outcome)),
                        Err(err) => Fate::Refused {
                            agent_id: Some(agent_id),
                            error: err.to_string(),
                        },
                    });
                }
                None => break,
            }
        }
    }
    fates
        .into_iter()
        .map(|f| f.unwrap_or(Fate::NotStarted))
        .collect()
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn escape_attr(value: &str) -> String {
    value
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The aggregated report: a header with counts, then one block per agent in launch order.
fn report(description: &str, members: &[Member], fates: &[Fate]) -> (String, bool) {
    let mut counts: [(&str, usize); 4] = [
        ("completed", 0),
        ("failed", 0),
        ("cancelled", 0),
        ("not_started", 0),
    ];
    let mut blocks = Vec::with_capacity(fates.len());
    for (index, (member, fate)) in members.iter().zip(fates).enumerate() {
        let (agent_id, status, mut body) = match fate {
            Fate::Ran(outcome) => match &outcome.status {
                RunStatus::Completed => (
                    Some(outcome.agent_id.as_str()),
                    "completed",
                    outcome.text.clone(),
                ),
                RunStatus::Cancelled => (
                    Some(outcome.agent_id.as_str()),
                    "cancelled",
                    "Interrupted before it finished; its partial work stays in its history."
                        .to_owned(),
                ),
                RunStatus::Failed(message) => (
                    Some(outcome.agent_id.as_str()),
                    "failed",
                    format!("subagent error: {message}"),
                ),
            },
            Fate::Refused { agent_id, error } => {
                (agent_id.as_deref(), "failed", format!("not run: {error}"))
            }
            Fate::NotStarted => (
                None,
                "not_started",
                "The swarm was cancelled before this agent started.".to_owned(),
            ),
        };
        if let Fate::Ran(outcome) = fate
            && let Some(tree) = &outcome.worktree
        {
            body = format!("{}\n\n{}", body.trim(), tree.describe());
        }
        if let Some(count) = counts.iter_mut().find(|(name, _)| *name == status) {
            count.1 += 1;
        }
        let mut attrs = format!("index=\"{}\"", index + 1);
        if let Some(id) = agent_id {
            attrs.push_str(&format!(" agent_id=\"{}\"", escape_attr(id)));
        }
        if let Target::Resume(_) = member.target {
            attrs.push_str(" mode=\"resume\"");
        }
        if let Some(item) = &member.item {
            attrs.push_str(&format!(" item=\"{}\"", escape_attr(item)));
        }
        if let Some(environment) = &member.environment {
            attrs.push_str(&format!(" environment=\"{}\"", escape_attr(environment)));
        }
        if let Fate::Ran(outcome) = fate {
            attrs.push_str(&format!(" type=\"{}\"", escape_attr(&outcome.profile)));
            if let Some(model) = &outcome.model {
                attrs.push_str(&format!(" model=\"{}\"", escape_attr(model)));
            }
        }
        blocks.push(format!(
            "<agent {attrs} status=\"{status}\">\n{}\n</agent>",
            body.trim()
        ));
    }
    let completed = counts[0].1;
    let summary = counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = format!(
        "<agent_swarm description=\"{}\" agents=\"{}\">\nsummary: {summary}",
        escape_attr(description),
        fates.len()
    );
    if completed < fates.len() {
        text.push_str(
            "\nresume_hint: to finish the agents that did not complete, call AgentSwarm with resume_agent_ids mapping their agent_id to a prompt such as \"continue\"; agents that never started have no id and must be launched again as items.",
        );
    }
    for block in blocks {
        text.push('\n');
        text.push_str(&block);
    }
    text.push_str("\n</agent_swarm>");
    (text, completed == 0)
}

struct SwarmExecution {
    host: Arc<SubagentHost>,
    members: Vec<Member>,
    launch: Launch,
    description: String,
    plan: ToolPlan,
}

#[async_trait]
impl Execution for SwarmExecution {
    fn plan(&self) -> &ToolPlan {
        &self.plan
    }

    async fn execute(
        self: Box<Self>,
        _ctx: &ToolContext,
        cancel: CancellationToken,
        _progress: ProgressSink,
    ) -> ToolResult {
        let cap = match parse_max_concurrency(std::env::var(MAX_CONCURRENCY_ENV).ok().as_deref()) {
            Ok(cap) => cap,
            Err(err) => return ToolResult::error(SwarmError::from(err).to_string()),
        };
        // Calling AgentSwarm enters swarm mode until the turn ends (surface.md §2.5).
        if let Some(caller) = self.host.caller() {
            crate::swarm_mode::enter_for_tool(&caller);
        }
        let ramp = Ramp::new(self.members.len(), cap);
        let fates = run_members(&self.host, &self.members, &self.launch, ramp, &cancel).await;
        match report(&self.description, &self.members, &fates) {
            (text, false) => ToolResult::ok(text),
            (text, true) => ToolResult::error(text),
        }
    }
}

#[async_trait]
impl Tool for AgentSwarmTool {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> String {
        let mut text = DESCRIPTION.to_owned();
        let types: Vec<&str> = self
            .host
            .allowed_types()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        if !types.is_empty() {
            text.push_str(&format!(
                "\n\nAgent types for new subagents (subagent_type; default {DEFAULT_SUBAGENT}): {}. The Agent tool's description says what each is for.",
                types.join(", ")
            ));
        }
        text.push_str(&super::placement::describe(&self.host, "environments"));
        text
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short label for the whole swarm."},
                "subagent_type": {"type": "string", "description": "The agent type of every new subagent started from items (default coder). Resumed agents keep their own type."},
                "prompt_template": {"type": "string", "description": "The task of each new subagent; {{item}} is replaced by its item. Required with items."},
                "items": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": MAX_SWARM_AGENTS,
                    "description": "One new subagent per item, in this order."
                },
                "resume_agent_ids": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Existing subagents to continue: agent_id -> the prompt that continues it. They start before the items."
                },
                "model": {"type": "string", "description": "A subagent model pool alias (listed above) or \"primary\", for every agent."},
                "isolation": super::tool::isolation_schema(),
                "environments": {
                    "anyOf": [
                        {"type": "string"},
                        {"type": "array", "items": {"type": "string"}}
                    ],
                    "description": "Declared execution environments to spread the items over: a list of ids and/or globs over the declared ids (\"pod-*\"); `local` (named, never matched by a glob) is this machine. Item n runs on the n-th environment (round robin), in that environment's default directory; reports come back here. Default: every agent runs where you run. Not with isolation."
                }
            },
            "required": ["description"],
            "additionalProperties": false
        })
    }

    fn resolve(&self, args: Value, _ctx: &ToolContext) -> Result<Resolution, ToolError> {
        let params: Params = parse_args(args)?;
        let mut members = match self.members(&params) {
            Ok(members) => members,
            Err(err) => return Ok(Resolution::Result(ToolResult::error(err.to_string()))),
        };
        let mut placed_on = Vec::new();
        if let Some(param) = &params.environments {
            if params.isolation == Some(super::run::Isolation::Worktree) {
                return Ok(Resolution::Result(ToolResult::error(
                    "`isolation: worktree` needs the workspace on this machine, and `environments` places the agents elsewhere; drop one of them".to_owned(),
                )));
            }
            placed_on = match super::placement::expand(&self.host, param) {
                Ok(ids) => ids,
                Err(text) => return Ok(Resolution::Result(ToolResult::error(text))),
            };
            // Items take the environments in turn; resumed agents stay where they ran.
            let items = members.iter_mut().filter(|m| m.item.is_some());
            for (member, id) in items.zip(placed_on.iter().cycle()) {
                member.environment = Some(id.clone());
            }
        }
        let description = params.description.trim().to_owned();
        let launch = match super::tool::launch_for(
            &self.host,
            params.model.as_deref(),
            false,
            params.isolation,
            &description,
        ) {
            Ok(launch) => launch,
            Err(text) => return Ok(Resolution::Result(ToolResult::error(text))),
        };
        let mut summary = format!("swarm of {} subagents: {description}", members.len());
        if !placed_on.is_empty() {
            // Approvals name the targets.
            summary.push_str(&format!(" @ {}", placed_on.join(", ")));
        }
        let detail = params
            .prompt_template
            .clone()
            .filter(|_| params.items.as_ref().is_some_and(|i| !i.is_empty()));
        let plan = ToolPlan {
            // Runs alone: its agents may touch anything, and each checks its own calls.
            accesses: None,
            approval_rule: NAME.to_owned(),
            subject: RuleSubject::NameOnly,
            display: ToolDisplay {
                kind: "agent".to_owned(),
                summary,
                detail,
                diff: None,
            },
            description: format!("Launching agent swarm: {description}"),
            stop_batch_after_this: false,
        };
        Ok(Resolution::Run(Box::new(SwarmExecution {
            host: self.host.clone(),
            members,
            launch,
            description,
            plan,
        })))
    }
}
