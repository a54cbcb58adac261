//! The boundary between the UI and whoever drives it. Protocol `Op`s and `Event`s carry
//! everything a session answers — the conversation and the host ops (session listing,
//! background tasks, `!` shell commands, MCP status), the same for every front end.
//! `HostRequest` (UI → launch) and `HostUpdate` (launch → UI) carry only what is this UI's
//! own business and no other front end has: which session the terminal is attached to (`/new`,
//! resuming from the picker — an op goes *to* a session, switching is not one), the terminal's
//! clipboard (OSC 52), writing the markdown file the UI rendered from its transcript, and what
//! the launch tells this UI once (its skill completions, startup warnings, the `@` file index).

use kimi_protocol::message::Message;
use kimi_protocol::ops::{Event, Op, PermissionMode};
use tokio::sync::mpsc;

/// Things the UI cannot do alone; the host (the binary) performs them and may answer with a
/// [`HostUpdate`].
#[derive(Debug, Clone, PartialEq)]
pub enum HostRequest {
    /// `/new`: start a fresh session in the same directory; answer with `SessionSwitched`.
    NewSession,
    /// A session was picked; answer with `SessionSwitched`.
    ResumeSession { id: String },
    /// `/export-md [path]`: write `markdown` (rendered by the UI from its transcript).
    ExportMarkdown {
        path: Option<String>,
        markdown: String,
    },
    /// `/export-debug-zip`: the session's ZIP with the logs and redacted settings; answered
    /// with a `Notice` naming the file.
    ExportDebugZip,
    /// `/add-dir <path>`: add the directory to this session's workspace — `remember`ed in
    /// `.kimi-code/local.toml`, or for this session only — and reopen the session with it;
    /// answer with `SessionSwitched` (or `Error`).
    AddDir { path: String, remember: bool },
    /// `/feedback [--code] <message>`: build the report bundle, send it when an endpoint is
    /// configured; answered with a `Notice` saying where it went (or `Error`).
    Feedback { args: String },
    /// `/experiments [<flag> on|off]`: list the experimental flags or switch one in
    /// config.toml; answered with a `Notice` (a switch also reopens the session).
    Experiments { args: String },
    /// `/copy`: put `text` on the clipboard (native or OSC 52).
    CopyToClipboard { text: String },
    /// `/usage`, `/status`: the plan quotas of a Kimi account login, answered with a
    /// `Notice` (nothing when no login is configured).
    PlanUsage,
    /// `/login [global]`: the Kimi account device login; answered with `LoginWaiting`, then
    /// `LoginEnded`.
    Login { region: Option<String> },
    /// Esc while a login waits: give it up.
    CancelLogin,
    /// `/provider`: list the providers of `config.toml` (answered with a `Notice`);
    /// `/provider remove <id>` deletes one and its models; `/provider catalog …` and
    /// `/provider add <id> <key|$VAR> [model …]` browse and add from the bundled catalog.
    Providers { args: String },
    /// `/plugins [list|marketplace [src]|install <src>|info <id>|enable <id>|disable <id>|
    /// remove <id>|reload|mcp enable|disable <id> <server>]`: answered with a `Notice`, an
    /// `Error` or a `Choose` (the installed and marketplace tabs); `reload` also reopens the
    /// session with the plugins as they are now.
    Plugins { args: String },
    /// `/environment [list | <id> | local | reconnect | add …]`: list the declared execution
    /// environments with their status, move this session's tools (at a turn boundary;
    /// answered with `SessionSwitched`), reconnect, or declare one (answered with a `Notice`).
    Environment { args: String },
    /// `/web`: the page URLs of the `kimi-rs web` servers running for this home; answered
    /// with `WebServers`.
    WebServers,
}

/// One row of the task browser (`Event::TaskList`).
pub use kimi_protocol::host::TaskSummary as TaskEntry;
/// The `/mcp` panel (`Event::McpStatus`).
pub use kimi_protocol::host::{McpServerEntry, McpServerState, McpStatus};

/// One row of the model picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelEntry {
    pub alias: String,
    pub description: String,
    /// Thinking efforts the model accepts (empty: any); `/effort` offers these.
    pub efforts: Vec<String>,
}

/// A skill the user can start with a slash command (completion menu row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillEntry {
    /// The command without its slash: `skill:<name>`, or `<parent>.<child>` for a sub-skill.
    pub command: String,
    pub description: String,
}

/// Facts about the session that the protocol does not carry as events.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub version: String,
    pub session_id: String,
    pub title: String,
    pub cwd: String,
    /// The model in use: its `[models]` alias (or the environment model's name).
    pub model: String,
    /// The thinking effort requests carry (`None`: not mentioned).
    pub effort: Option<String>,
    pub models: Vec<ModelEntry>,
    pub context_window: u64,
    pub permission_mode: PermissionMode,
    pub plan_mode: bool,
    /// Swarm mode (a resumed session may come back in it).
    pub swarm_mode: bool,
    /// The workspace directories besides the working directory (`--add-dir`, `local.toml`).
    pub additional_dirs: Vec<String>,
    /// Where the tools run when not on this machine (`ssh:dev-box`, or the id), for the footer.
    pub environment: Option<String>,
}

impl Default for SessionInfo {
    fn default() -> Self {
        SessionInfo {
            version: String::new(),
            session_id: String::new(),
            title: String::new(),
            cwd: String::new(),
            model: String::new(),
            effort: None,
            models: Vec::new(),
            context_window: 0,
            permission_mode: PermissionMode::Manual,
            plan_mode: false,
            swarm_mode: false,
            additional_dirs: Vec::new(),
            environment: None,
        }
    }
}

/// Host → UI.
#[derive(Debug, Clone, PartialEq)]
pub enum HostUpdate {
    /// A different session is now attached (after `/new` or a resume): replace the transcript.
    SessionSwitched {
        info: SessionInfo,
        transcript: Vec<Message>,
    },
    /// New facts (model changed …).
    Info(SessionInfo),
    Notice(String),
    Error(String),
    /// The session refused the prompt just sent (e.g. media its model cannot take): the
    /// reason; the UI puts the prompt back into the editor.
    Refused(String),
    /// The file index for `@` completion (built off the UI thread).
    Files(Vec<String>),
    /// Skills for the `/` completion menu (sent once the UI runs; replaces the list).
    Skills(Vec<SkillEntry>),
    /// Something the user should know that is not an error (e.g. a skill file that could not
    /// be loaded at startup, an MCP server that failed to start).
    Warning(String),
    /// How many MCP servers are still connecting (the footer says so while non-zero).
    McpConnecting(usize),
    /// A login waits for the user to approve `code` at `url` (Esc cancels).
    LoginWaiting {
        url: String,
        code: String,
    },
    /// The login finished: logged in (`ok`) or not, and what to tell the user.
    LoginEnded {
        ok: bool,
        message: String,
    },
    /// The host offers choices (`/provider add` with no vendor); the chosen item's `value` is
    /// put into the prompt for the user to complete and send.
    Choose {
        title: String,
        items: Vec<crate::dialogs::PickerItem>,
    },
    /// The page URLs of the running `kimi-rs web` servers (answer to `WebServers`).
    WebServers(Vec<String>),
}

/// The UI's ends of the channels to the engine and the host.
pub struct SessionChannels {
    pub events: mpsc::Receiver<Event>,
    pub ops: mpsc::Sender<Op>,
    pub host_updates: mpsc::Receiver<HostUpdate>,
    pub host_requests: mpsc::Sender<HostRequest>,
}

/// The host's ends, returned by [`SessionChannels::pair`].
pub struct HostChannels {
    pub events: mpsc::Sender<Event>,
    pub ops: mpsc::Receiver<Op>,
    pub host_updates: mpsc::Sender<HostUpdate>,
    pub host_requests: mpsc::Receiver<HostRequest>,
}

impl SessionChannels {
    /// Creates connected UI and host ends with `capacity` slots each.
    pub fn pair(capacity: usize) -> (SessionChannels, HostChannels) {
        let (ev_tx, ev_rx) = mpsc::channel(capacity);
        let (op_tx, op_rx) = mpsc::channel(capacity);
        let (up_tx, up_rx) = mpsc::channel(capacity);
        let (rq_tx, rq_rx) = mpsc::channel(capacity);
        (
            SessionChannels {
                events: ev_rx,
                ops: op_tx,
                host_updates: up_rx,
                host_requests: rq_tx,
            },
            HostChannels {
                events: ev_tx,
                ops: op_rx,
                host_updates: up_tx,
                host_requests: rq_rx,
            },
        )
    }
}
