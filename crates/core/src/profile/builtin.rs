//! The built-in profiles (surface.md §8.1): `agent` for the main agent, and the task profiles
//! `coder`, `explore` and `plan` a main agent delegates to. Tool lists name only tools kimi-rs
//! has; a listed tool missing from the registry is simply absent. The role texts are our own.

use super::{Profile, ProfileSource};

/// The main agent's default profile.
pub const DEFAULT_MAIN: &str = "agent";
/// The profile `Agent` uses when the model names none.
pub const DEFAULT_SUBAGENT: &str = "coder";

/// A final subagent message shorter than this (in characters) is sent back once to be expanded.
pub const SUMMARY_MIN_CHARS: usize = 200;

/// What a too-short hand-off gets back (once).
pub const SUMMARY_CONTINUATION: &str = "Your final message is the only thing the main agent will see from this task, and it is too short to act on. Write the complete hand-off now: what you found or changed and why, the path of every file involved, how you verified it (commands and their results), and anything left open. Do not call more tools unless something essential is missing.";

const AGENT_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Grep",
    "Glob",
    "Bash",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "WaitFor",
    "CronCreate",
    "CronList",
    "CronDelete",
    "ReadMediaFile",
    "TodoList",
    "Skill",
    "WebSearch",
    "FetchURL",
    "AskUserQuestion",
    "Agent",
    "AgentSwarm",
    "EnterPlanMode",
    "ExitPlanMode",
    "CreateGoal",
    "GetGoal",
    "SetGoalBudget",
    "UpdateGoal",
    "mcp__*",
];

const CODER_TOOLS: &[&str] = &[
    "Bash",
    "CronCreate",
    "CronList",
    "CronDelete",
    "Edit",
    "Glob",
    "Grep",
    "Read",
    "ReadMediaFile",
    "Skill",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "TodoList",
    "WaitFor",
    "WebSearch",
    "FetchURL",
    "Write",
    "mcp__*",
];

const EXPLORE_TOOLS: &[&str] = &[
    "Bash",
    "Read",
    "ReadMediaFile",
    "Glob",
    "Grep",
    "WebSearch",
    "FetchURL",
];

const PLAN_TOOLS: &[&str] = &[
    "Read",
    "ReadMediaFile",
    "Glob",
    "Grep",
    "WebSearch",
    "FetchURL",
];

/// Every tool name kimi-rs can have (MCP tools aside); unknown names in agent files are warned
/// about against this list.
pub const KNOWN_TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Grep",
    "Glob",
    "Bash",
    "TaskList",
    "TaskOutput",
    "TaskStop",
    "WaitFor",
    "ReadMediaFile",
    "TodoList",
    "Skill",
    "WebSearch",
    "FetchURL",
    "AskUserQuestion",
    "Agent",
    "AgentSwarm",
    "CronCreate",
    "CronList",
    "CronDelete",
];

/// Opens the role text of every task profile: who the agent answers to and what it must not do.
pub const SUBAGENT_PREAMBLE: &str = "You are running as a subagent. Your caller is the main agent, not the user: it gave you one task and will read only your final message. The user cannot see your work and cannot answer you, so do not ask questions or wait for confirmation; make reasonable assumptions, state them, and finish the task on your own.";

const CODER_ROLE: &str = "You are the delegate that may change files. Do the task completely, then end with a hand-off that stands on its own, because the main agent sees nothing else of your run: what you changed and why, the path of every file you touched, how you verified it (the commands or tests you ran and what they showed), and what is still open. A hand-off of a sentence or two is returned to you to be expanded, which costs a turn.";

const EXPLORE_ROLE: &str = "You explore and report; you never change anything. Do not create, edit, move or delete files, do not install packages, and use the shell only for commands that read (git log, git diff, ls, cat, test listings and the like). Search broadly first, then read what matters. Match your depth to what the caller asked for (quick, medium or thorough). End with a report the caller can act on: the answer, the files and line numbers that support it, and what you could not determine.";

const PLAN_ROLE: &str = "You design, you do not implement. Read the code that matters, then produce a concrete plan: the steps in order, the files and functions each step touches, the risks and how to check each step worked. You have no shell and must not try to change files.";

fn builtin(
    name: &str,
    description: &str,
    when_to_use: Option<&str>,
    role: String,
    tools: &[&str],
) -> Profile {
    Profile {
        name: name.to_owned(),
        description: description.to_owned(),
        when_to_use: when_to_use.map(str::to_owned),
        role,
        template: None,
        tools: Some(tools.iter().map(|t| (*t).to_owned()).collect()),
        disallowed_tools: Vec::new(),
        subagents: None,
        summary_policy: false,
        git_context: false,
        is_override: false,
        source: ProfileSource::Builtin,
    }
}

/// The built-in main agent profile.
pub fn default_main() -> Profile {
    builtin(
        DEFAULT_MAIN,
        "The default main agent.",
        None,
        String::new(),
        AGENT_TOOLS,
    )
}

/// The built-in profiles, main agent first.
pub fn builtin_profiles() -> Vec<Profile> {
    let task_role = |role: &str| format!("{SUBAGENT_PREAMBLE}\n\n{role}");
    vec![
        default_main(),
        Profile {
            summary_policy: true,
            ..builtin(
                "coder",
                "General software engineering; the only built-in type that edits files.",
                Some(
                    "Delegate self-contained engineering work that may read and change code and run commands, when you want back a complete technical hand-off.",
                ),
                task_role(CODER_ROLE),
                CODER_TOOLS,
            )
        },
        Profile {
            summary_policy: true,
            git_context: true,
            ..builtin(
                "explore",
                "Read-only exploration of the codebase.",
                Some(
                    "Finding files, searching code and answering questions about how the project works, when that needs more than a few searches. Say how thorough it should be (quick, medium, thorough). Independent questions can go to several explore agents at once.",
                ),
                task_role(EXPLORE_ROLE),
                EXPLORE_TOOLS,
            )
        },
        builtin(
            "plan",
            "Read-only planning without a shell.",
            Some("Turning a task into a concrete implementation plan before any code changes."),
            task_role(PLAN_ROLE),
            PLAN_TOOLS,
        ),
    ]
}
