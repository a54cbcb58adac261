//! The slash commands of surface.md §1.4 this UI implements: names, aliases, whether they may
//! run while a turn is busy, and parsing of a typed `/command args` line.

/// When a command may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    Always,
    /// Blocked while a turn streams or compaction runs.
    Idle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Help,
    New,
    Sessions,
    Model,
    Effort,
    Btw,
    Yolo,
    Auto,
    Permission,
    Plan,
    Swarm,
    Goal,
    Compact,
    Undo,
    Tasks,
    Mcp,
    Title,
    Fork,
    AddDir,
    Usage,
    Status,
    ExportMd,
    ExportDebugZip,
    Feedback,
    Experiments,
    Copy,
    Init,
    Login,
    Provider,
    Plugins,
    Environment,
    Editor,
    Theme,
    Web,
    Exit,
    Version,
}

pub struct CommandSpec {
    pub command: Command,
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub availability: Availability,
    pub description: &'static str,
}

use Availability::{Always, Idle};

pub const COMMANDS: &[CommandSpec] = &[
    spec(
        Command::Help,
        "help",
        &["h", "?"],
        Always,
        "shortcuts and commands",
    ),
    spec(
        Command::New,
        "new",
        &["clear"],
        Idle,
        "start a new session here",
    ),
    spec(
        Command::Sessions,
        "sessions",
        &["resume"],
        Idle,
        "pick a session to resume",
    ),
    spec(
        Command::Model,
        "model",
        &[],
        Always,
        "switch the model of this session",
    ),
    spec(
        Command::Effort,
        "effort",
        &["thinking"],
        Always,
        "switch the thinking effort [off|on|low|medium|high|xhigh|max]",
    ),
    spec(
        Command::Btw,
        "btw",
        &[],
        Always,
        "ask a side question without tools <question>",
    ),
    spec(
        Command::Yolo,
        "yolo",
        &["yes"],
        Always,
        "toggle yolo permission mode [on|off]",
    ),
    spec(
        Command::Auto,
        "auto",
        &[],
        Always,
        "toggle auto permission mode [on|off]",
    ),
    spec(
        Command::Permission,
        "permission",
        &[],
        Always,
        "choose manual / yolo / auto",
    ),
    spec(
        Command::Plan,
        "plan",
        &[],
        Always,
        "toggle plan mode [on|off], or empty the plan file [clear]",
    ),
    spec(
        Command::Goal,
        "goal",
        &[],
        Always,
        "goal mode: <objective> | status | pause | resume | cancel | replace | next",
    ),
    spec(
        Command::Compact,
        "compact",
        &[],
        Idle,
        "compact the context [instruction]",
    ),
    spec(
        Command::Undo,
        "undo",
        &[],
        Idle,
        "withdraw recent prompts [count]",
    ),
    spec(
        Command::Tasks,
        "tasks",
        &["task"],
        Always,
        "background task browser",
    ),
    spec(Command::Mcp, "mcp", &[], Always, "MCP server status"),
    spec(
        Command::Title,
        "title",
        &["rename"],
        Always,
        "show or set the title [text]",
    ),
    spec(
        Command::Fork,
        "fork",
        &[],
        Idle,
        "copy this session into a new one to resume later",
    ),
    spec(
        Command::AddDir,
        "add-dir",
        &[],
        Idle,
        "add a workspace directory (remembered in .kimi-code/local.toml) [list|path]",
    ),
    spec(
        Command::Usage,
        "usage",
        &[],
        Always,
        "tokens and context window use",
    ),
    spec(
        Command::Status,
        "status",
        &[],
        Always,
        "version, model, directory, modes",
    ),
    spec(
        Command::ExportMd,
        "export-md",
        &["export"],
        Idle,
        "transcript as Markdown [path]",
    ),
    spec(
        Command::ExportDebugZip,
        "export-debug-zip",
        &[],
        Idle,
        "ZIP of this session, logs and redacted settings",
    ),
    spec(
        Command::Feedback,
        "feedback",
        &["bug"],
        Always,
        "report a problem: saves (and, when configured, sends) logs and this session [--code] <message>",
    ),
    spec(
        Command::Experiments,
        "experiments",
        &["experimental"],
        Idle,
        "list experimental flags, or switch one [<flag> on|off]",
    ),
    spec(Command::Copy, "copy", &[], Idle, "copy the last answer"),
    spec(
        Command::Init,
        "init",
        &[],
        Idle,
        "analyse the repo and write AGENTS.md",
    ),
    spec(
        Command::Swarm,
        "swarm",
        &[],
        Idle,
        "swarm mode [on|off], or run <task> in it",
    ),
    spec(
        Command::Login,
        "login",
        &[],
        Idle,
        "log in to a Kimi account with a device code [global]",
    ),
    spec(
        Command::Provider,
        "provider",
        &["providers"],
        Always,
        "list, catalog [id], add <id> <key|$VAR> [models], remove <id>",
    ),
    spec(
        Command::Plugins,
        "plugins",
        &[],
        Always,
        "installed, marketplace, install, info, enable, disable, remove, reload, mcp",
    ),
    spec(
        Command::Environment,
        "environment",
        &["env"],
        Idle,
        "list environments, switch to <id> (or local), reconnect, add",
    ),
    spec(
        Command::Editor,
        "editor",
        &[],
        Always,
        "choose the external editor for Ctrl-G [command]",
    ),
    spec(
        Command::Theme,
        "theme",
        &[],
        Always,
        "choose the colour theme (built-in or themes/<name>.json) [name]",
    ),
    // Idle, not always: the page can only open the session once this UI has let it go.
    spec(
        Command::Web,
        "web",
        &[],
        Idle,
        "continue this session in the web UI (this terminal UI closes)",
    ),
    spec(Command::Exit, "exit", &["quit", "q"], Idle, "quit"),
    spec(Command::Version, "version", &[], Always, "show the version"),
];

const fn spec(
    command: Command,
    name: &'static str,
    aliases: &'static [&'static str],
    availability: Availability,
    description: &'static str,
) -> CommandSpec {
    CommandSpec {
        command,
        name,
        aliases,
        availability,
        description,
    }
}

/// Splits `/name args`; `None` when `name` is no known command (the text then goes to the
/// model as a plain message).
pub fn parse(input: &str) -> Option<(&'static CommandSpec, String)> {
    let rest = input.strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let spec = COMMANDS
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))?;
    Some((spec, args.trim().to_owned()))
}

/// A line that carries a secret and so stays out of the saved prompt history:
/// `/provider add <id> <key>` with a literal key (a `$VAR` names a variable instead).
pub fn carries_secret(input: &str) -> bool {
    match parse(input.trim()) {
        Some((spec, args)) if spec.command == Command::Provider => {
            let mut words = args.split_whitespace();
            words.next() == Some("add") && words.nth(1).is_some_and(|k| !k.starts_with('$'))
        }
        _ => false,
    }
}

/// Commands whose name or alias starts with `prefix` (without the slash).
pub fn complete(prefix: &str) -> Vec<&'static CommandSpec> {
    COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(prefix) || c.aliases.iter().any(|a| a.starts_with(prefix)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_provider_keys_are_secret_and_variables_are_not() {
        assert!(carries_secret("/provider add openai sk-1 gpt-4o"));
        assert!(carries_secret("/providers add openai sk-1"));
        assert!(!carries_secret("/provider add openai $OPENAI_API_KEY"));
        assert!(!carries_secret("/provider add openai"));
        assert!(!carries_secret("/provider remove openai"));
        assert!(!carries_secret("add openai sk-1"));
    }

    #[test]
    fn aliases_resolve_and_unknown_is_none() {
        let (spec, args) = parse("/quit").unwrap();
        assert_eq!(spec.command, Command::Exit);
        assert!(args.is_empty());
        let (spec, args) = parse("/compact keep the API notes").unwrap();
        assert_eq!(spec.command, Command::Compact);
        assert_eq!(args, "keep the API notes");
        assert!(parse("/frobnicate now").is_none());
        assert_eq!(
            complete("ex").len(),
            4,
            "exit, export-md, export-debug-zip, experiments"
        );
    }
}
