//! Command-line surface of `kimi-rs` (flags as Kimi Code's; surface.md §1).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod dispatch;

pub use dispatch::main;

#[derive(Debug, Parser)]
#[command(
    name = "kimi-rs",
    version,
    about = "A terminal coding agent: reads, edits, runs and tests your code with any LLM."
)]
pub struct Cli {
    #[command(flatten)]
    pub run: RunArgs,
    /// Log level of $KIMI_RS_HOME/logs/ and the session logs (default $KIMI_LOG_LEVEL, else
    /// info).
    #[arg(long = "log-level", value_enum, global = true)]
    pub log_level: Option<crate::logging::LogLevel>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    #[value(name = "stream-json")]
    StreamJson,
}

/// Flags of the main command (interactive or print mode).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Run one prompt non-interactively (print mode) and exit.
    #[arg(short = 'p', long = "prompt")]
    pub prompt: Option<String>,
    /// Output format of print mode (default text, or $KIMI_MODEL_OUTPUT_FORMAT).
    #[arg(long = "output-format", value_enum)]
    pub output_format: Option<OutputFormat>,
    /// Resume a session by id (without an id: pick one).
    #[arg(
        short = 'S',
        long = "session",
        num_args = 0..=1,
        default_missing_value = "",
        short_alias = 'r',
        alias = "resume"
    )]
    pub session: Option<String>,
    /// Continue the most recent session in this directory.
    #[arg(short = 'c', long = "continue", short_alias = 'C')]
    pub continue_session: bool,
    /// Model alias from config.toml.
    #[arg(short = 'm', long = "model")]
    pub model: Option<String>,
    /// Approve every tool call without asking.
    #[arg(short = 'y', long, aliases = ["yes", "auto-approve"])]
    pub yolo: bool,
    /// Auto mode: approve safe actions, ask for the rest.
    #[arg(long)]
    pub auto: bool,
    /// Start in plan mode.
    #[arg(long)]
    pub plan: bool,
    /// Add a directory to the workspace (repeatable).
    #[arg(long = "add-dir")]
    pub add_dir: Vec<PathBuf>,
    /// Agent profile name.
    #[arg(long)]
    pub agent: Option<String>,
    /// Agent profile file.
    #[arg(long = "agent-file")]
    pub agent_file: Option<PathBuf>,
    /// Extra skills directory (repeatable).
    #[arg(long = "skills-dir")]
    pub skills_dir: Vec<PathBuf>,
    /// Run this folder's project commands (project MCP servers) for this run without
    /// recording trust (`kimi-rs trust` records it).
    #[arg(long = "trust-workspace", global = true)]
    pub trust_workspace: bool,
    /// Run the new session's tools on a declared execution environment (`[environments]`;
    /// `local` = this machine).
    #[arg(long)]
    pub environment: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Offline demo: a scripted model fixes a failing test with the real engine and tools.
    Demo {
        /// Directory to create the example project in (default: a new temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Run one command under the opt-in OS sandbox (writable workspace and temp dirs, `.git`
    /// and the kimi-rs home read-only, no sockets but stream socketpairs, no signals to outside
    /// processes) to see what it allows.
    Sandbox {
        /// Print what this kernel lets the sandbox enforce (the Landlock ABI and each
        /// protection: filesystem, network, Unix sockets, signals) and exit.
        #[arg(long, conflicts_with = "command")]
        status: bool,
        /// The command and its arguments (after `--`).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            required_unless_present = "status"
        )]
        command: Vec<std::ffi::OsString>,
    },
    /// Serve the exec protocol on stdin/stdout: the executor an execution environment's
    /// launcher (ssh, docker exec, kubectl exec, …) starts on the target.
    #[command(name = "exec-server")]
    ExecServer,
    /// Internal: the sandbox helper Bash commands run through (`--policy JSON -- CMD…`).
    #[command(name = "__sandbox-exec", hide = true)]
    SandboxExec {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Serve the Agent Client Protocol on stdin/stdout for editors (Zed, JetBrains, …).
    Acp {
        /// Run the Kimi account login (as `kimi-rs login`) and exit: the editor's "terminal
        /// auth".
        #[arg(long)]
        login: bool,
        /// Login region with --login.
        #[arg(long, value_enum, requires = "login")]
        region: Option<RegionArg>,
    },
    /// Log in to a Kimi account (device code: open the printed URL and enter the code); sets up
    /// the managed provider `managed:kimi-code` and its `kimi-code/*` models in config.toml.
    Login {
        /// Login region: mainland-cn (kimi.com, the default) or global (kimi.ai).
        #[arg(long, value_enum)]
        region: Option<RegionArg>,
        /// Log in to Kimi Platform with an API key instead (platform.kimi.com, or
        /// platform.kimi.ai with --region global); `-` reads the key from stdin.
        #[arg(long = "api-key")]
        api_key: Option<String>,
        /// The platform's API instead of the region's (with --api-key).
        #[arg(long = "base-url", requires = "api_key")]
        base_url: Option<String>,
        /// Where the token is kept: `file` ($KIMI_RS_HOME/credentials/, mode 0600) or `keyring`
        /// (the OS keyring). Default: what config.toml's login says, else `file`.
        #[arg(long, value_enum, conflicts_with = "api_key")]
        storage: Option<StorageArg>,
    },
    /// Log out of the Kimi account: delete the stored token and the managed provider.
    Logout,
    /// Install a newer kimi-rs from a release manifest (version, per-target URL and SHA-256):
    /// downloaded, checked and swapped in atomically.
    #[command(alias = "update")]
    Upgrade {
        /// The manifest (http(s) or file:// URL; default $KIMI_RS_UPDATE_URL).
        #[arg(long = "manifest-url")]
        manifest_url: Option<String>,
        /// Only say whether a newer version exists.
        #[arg(long)]
        check: bool,
    },
    /// Manage the providers and models of config.toml (from the models.dev catalog or a
    /// custom registry).
    Provider {
        #[command(subcommand)]
        command: ProviderCommand,
    },
    /// Install and manage plugins (skills, commands, hooks, MCP servers and prompt text from a
    /// folder with kimi.plugin.json); changes apply to new sessions.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// Remote MCP servers: `login <server>` signs in with OAuth, `logout <server>` forgets it.
    Mcp {
        #[command(subcommand)]
        command: crate::mcp_login::McpCommand,
    },
    /// Serve the local REST + WebSocket API and the browser UI (token in server.token).
    Web {
        /// Port to listen on (default 58627; the next free one when busy; 0 = any).
        #[arg(long)]
        port: Option<u16>,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Do not open the browser.
        #[arg(long)]
        no_open: bool,
        /// Serve terminals (a shell on the session's environment) to clients on other
        /// machines too; by default only clients on this machine get them.
        #[arg(long)]
        allow_remote_terminals: bool,
    },
    /// Check config.toml, tui.toml, the mcp.json files, skills and agent files without
    /// changing them: per file "ok", "skipped" or each problem and how to fix it (exit 1 on
    /// problems).
    Doctor {
        #[command(subcommand)]
        target: Option<DoctorTarget>,
    },
    /// Write a ZIP of a session directory (journals, state, tasks, plans, tool results, logs).
    Export {
        /// The session to export (default: the newest session of this directory, after a
        /// confirmation).
        session_id: Option<String>,
        /// Where to write the ZIP (a file, or a directory for the default name).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Export the newest session without asking.
        #[arg(short = 'y', long = "yes")]
        yes: bool,
        /// Also add the global logs and config.toml, tui.toml and mcp.json with secrets
        /// redacted: the ZIP to attach to a bug report.
        #[arg(long = "debug-zip")]
        debug_zip: bool,
    },
    /// Import a Kimi Code home: config.toml (merged), mcp.json, skills, agents, plugin
    /// records and sessions (resumable with `kimi-rs -S <id>`). Safe to run again: what is
    /// already there is skipped.
    Import {
        /// The Kimi Code home (default $KIMI_CODE_HOME, else ~/.kimi-code).
        #[arg(long)]
        from: Option<PathBuf>,
        /// Also copy API keys, OAuth settings, secret env/header entries and stored logins.
        #[arg(long)]
        with_credentials: bool,
    },
    /// Bring in the legacy Python kimi-cli home (~/.kimi): its config (translated and
    /// merged), mcp.json, skills and sessions (tagged [imported], resumable with
    /// `kimi-rs -S <id>`). Logins stay behind. Safe to run again.
    Migrate {
        /// The kimi-cli home (default ~/.kimi).
        #[arg(long)]
        from: Option<PathBuf>,
        /// Also copy API keys and secret headers.
        #[arg(long)]
        with_credentials: bool,
    },
    /// Undo the last turns of a stored session: the files its agent changed (from their
    /// checkpoints) and the conversation, by default both. Files changed outside the agent
    /// since stop it (they are named) unless --force.
    Rewind {
        /// The session id.
        #[arg(long = "session", short = 'S')]
        session: String,
        /// How many turns to undo.
        #[arg(long, default_value_t = 1)]
        turns: u64,
        /// Restore only the files; the conversation stays.
        #[arg(long, conflicts_with = "conversation")]
        files: bool,
        /// Undo only the conversation; the files stay.
        #[arg(long)]
        conversation: bool,
        /// Overwrite files changed outside the agent since the checkpoint.
        #[arg(long)]
        force: bool,
    },
    /// Draw a session (default: the newest of this directory) as a local web page: a
    /// timeline of turns, model steps and tool calls with their durations, tokens and context
    /// use over time, compactions and subagents.
    Vis {
        /// The session id.
        session: Option<String>,
        /// The address to listen on (loopback by default; the page has no login).
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// The port (0: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Print the URL only; do not open a browser.
        #[arg(long = "no-open")]
        no_open: bool,
    },
    /// List stored sessions (this directory's; `--all` for every directory's), or manage
    /// them with a subcommand.
    Sessions {
        /// List the sessions of every directory, with their directories.
        #[arg(long)]
        all: bool,
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        command: Option<SessionsCommand>,
    },
    /// Trust a folder (default: this repository's root, else the current directory) so its
    /// project commands (the servers of `.mcp.json` and `.kimi-code/mcp.json`) run in new
    /// sessions; `--untrust` takes that back, `--list` shows every decision.
    Trust {
        /// The folder (its subfolders are covered too).
        dir: Option<PathBuf>,
        /// Record the folder as not trusted.
        #[arg(long, conflicts_with = "list")]
        untrust: bool,
        /// List the trusted and untrusted folders.
        #[arg(long, conflicts_with = "dir")]
        list: bool,
    },
    /// Developer tools.
    Debug {
        #[command(subcommand)]
        command: DebugCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Install (or reinstall) a plugin from a folder, a zip file or URL, a GitHub URL
    /// (`https://github.com/owner/repo[/tree/REF|/releases/tag/TAG|/commit/SHA]`) or a
    /// marketplace id.
    Install {
        source: String,
        /// The marketplace JSON for ids (http(s) URL, file:// URL or path; default
        /// $KIMI_CODE_PLUGIN_MARKETPLACE_URL).
        #[arg(long)]
        marketplace: Option<String>,
    },
    /// The installed plugins: id, enabled or disabled, version, source.
    List {
        #[arg(long)]
        json: bool,
    },
    /// What a plugin adds: skills, commands, hooks, MCP servers, agents, prompt text, and what
    /// it ignored.
    Info { id: String },
    /// Turn an installed plugin on for new sessions.
    Enable { id: String },
    /// Turn an installed plugin off for new sessions (it stays installed).
    Disable { id: String },
    /// Uninstall a plugin: its record and its managed copy.
    Remove { id: String },
    /// The plugins a marketplace offers.
    Marketplace {
        /// The marketplace JSON (default $KIMI_CODE_PLUGIN_MARKETPLACE_URL).
        source: Option<String>,
    },
    /// Switch one MCP server of a plugin on or off.
    Mcp {
        #[arg(value_parser = ["enable", "disable"])]
        action: String,
        id: String,
        server: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProviderCommand {
    /// Import every provider and model of a custom registry's api.json (models.dev format).
    Add {
        /// The registry's api.json (http(s) URL or file).
        url: String,
        /// The registry's API key (default $KIMI_REGISTRY_API_KEY).
        #[arg(long = "api-key")]
        api_key: Option<String>,
    },
    /// Delete a provider and its model aliases (default_model is unset if it was one).
    Remove { id: String },
    /// One line per provider: type, model count, source.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Browse and import from the models.dev catalog (bundled snapshot unless --url).
    Catalog {
        #[command(subcommand)]
        command: CatalogCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// The catalog's providers, or the models of one.
    List {
        id: Option<String>,
        /// Only names containing this text.
        #[arg(long)]
        filter: Option<String>,
        /// A live or local catalog (e.g. https://models.dev/api.json, or a file).
        #[arg(long)]
        url: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Add a catalog provider and its models to config.toml.
    Add {
        id: String,
        /// The provider's API key (default $KIMI_REGISTRY_API_KEY).
        #[arg(long = "api-key")]
        api_key: Option<String>,
        /// Make `<id>/<model>` the default model.
        #[arg(long = "default-model")]
        default_model: Option<String>,
        /// Use this endpoint instead of the catalog's.
        #[arg(long = "base-url")]
        base_url: Option<String>,
        #[arg(long)]
        url: Option<String>,
    },
}

/// `--region` of `login` and `acp --login`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RegionArg {
    /// kimi.com
    #[value(name = "mainland-cn")]
    MainlandCn,
    /// kimi.ai
    Global,
}

/// `kimi-rs login --storage`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StorageArg {
    /// $KIMI_RS_HOME/credentials/<name>.json, readable only by the user.
    File,
    /// The OS keyring (Linux kernel keyring, macOS Keychain, Windows Credential Manager).
    Keyring,
}

impl From<StorageArg> for kimi_auth::Storage {
    fn from(storage: StorageArg) -> kimi_auth::Storage {
        match storage {
            StorageArg::File => kimi_auth::Storage::File,
            StorageArg::Keyring => kimi_auth::Storage::Keyring,
        }
    }
}

impl From<RegionArg> for kimi_auth::Region {
    fn from(region: RegionArg) -> kimi_auth::Region {
        match region {
            RegionArg::MainlandCn => kimi_auth::Region::MainlandCn,
            RegionArg::Global => kimi_auth::Region::Global,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum DoctorTarget {
    /// Only config.toml (the home's, with the files it points to, or the one at PATH).
    Config {
        /// Check this file as config.toml instead of the home's (it must exist).
        path: Option<PathBuf>,
    },
    /// Only tui.toml (the home's, or the one at PATH).
    Tui {
        /// Check this file as tui.toml instead of the home's (it must exist).
        path: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Rebuild a session's state.json and its session-index entry from its journal (after
    /// state.json was deleted or damaged), so `-S <id>` finds and resumes it again.
    Recover {
        /// The session id (the directory name under $KIMI_RS_HOME/sessions/*/).
        session_id: String,
    },
    /// Remove sessions not updated for a while and/or the oldest ones until the total size
    /// fits. Sessions open in a running kimi-rs are kept.
    Prune {
        /// Remove sessions not updated within this age (`30d`, `12h`, `2w`; a bare number is
        /// days).
        #[arg(long, value_parser = parse_age_arg)]
        older_than: Option<std::time::Duration>,
        /// Then remove the oldest sessions until all together take at most this much
        /// (`500M`, `2G`).
        #[arg(long, value_parser = parse_size_arg)]
        max_total_size: Option<u64>,
        /// Only list what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
}

fn parse_age_arg(text: &str) -> Result<std::time::Duration, String> {
    crate::sessions::parse_age(text)
        .ok_or_else(|| format!("{text:?} is not an age; write e.g. 30d, 12h, 2w or 90m"))
}

fn parse_size_arg(text: &str) -> Result<u64, String> {
    crate::sessions::parse_size(text)
        .ok_or_else(|| format!("{text:?} is not a size; write e.g. 500M, 2G or 100K"))
}

#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Run a directory of conformance cases through the real code.
    Conformance {
        /// Directory holding the case files (*.json).
        dir: PathBuf,
        /// Only run cases of this area.
        #[arg(long)]
        area: Option<String>,
    },
}

impl RunArgs {
    /// The reference's start-up checks (surface.md §1.1); each failure is exit status 1.
    pub fn validate(&self) -> Result<(), String> {
        let print = self.prompt.is_some();
        if self.prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err("the prompt given with -p/--prompt is empty".to_owned());
        }
        if self.model.as_deref().is_some_and(str::is_empty) {
            return Err("-m/--model needs a model alias".to_owned());
        }
        if self.output_format.is_some() && !print {
            return Err("--output-format only applies with -p/--prompt".to_owned());
        }
        if print && (self.yolo || self.auto || self.plan) {
            return Err(
                "-p/--prompt runs in auto permission mode; drop --yolo, --auto and --plan"
                    .to_owned(),
            );
        }
        if self.agent.as_deref().is_some_and(str::is_empty) {
            return Err("--agent needs a profile name".to_owned());
        }
        if self
            .agent_file
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            return Err("--agent-file needs a path".to_owned());
        }
        if self.agent.is_some() && self.agent_file.is_some() {
            return Err("use either --agent or --agent-file, not both".to_owned());
        }
        let resuming = self.session.is_some() || self.continue_session;
        if resuming && self.environment.is_some() {
            return Err(
                "--environment binds a new session; a resumed session (-S/-c) reconnects to the environment it was started on. Drop --environment"
                    .to_owned(),
            );
        }
        if self.environment.as_deref().is_some_and(str::is_empty) {
            return Err("--environment needs an environment id".to_owned());
        }
        if resuming && (self.agent.is_some() || self.agent_file.is_some()) {
            return Err(
                "a resumed session keeps its agent; drop --agent/--agent-file or start a new session"
                    .to_owned(),
            );
        }
        if print && self.session.as_deref() == Some("") {
            return Err("-p/--prompt needs a session id with -S/--session".to_owned());
        }
        if self.continue_session && self.session.is_some() {
            return Err("use either -c/--continue or -S/--session, not both".to_owned());
        }
        if self.yolo && self.auto {
            return Err("use either --yolo or --auto, not both".to_owned());
        }
        Ok(())
    }
}
