//! kimi-tui: the interactive terminal UI, an adapter over the protocol's `Op`/`Event` API.
//!
//! Wiring (the binary's side):
//!
//! ```text
//! let (ui, host) = SessionChannels::pair(256);
//! // engine task: forward session events into host.events, apply host.ops to the session;
//! // (host ops such as Op::ListSessions go to the session host like every op)
//! // launch task: serve host.host_requests (HostRequest), answer through host.host_updates.
//! let opts = RunOptions {
//!     app: AppOptions::from_config(&TuiConfig::from_keys(&tui_file.keys), info, Some(data_dir), cwd, no_color),
//!     transcript: resumed_messages,
//!     full_screen: env_full_screen,          // KIMI_CODE_TUI_FULL_SCREEN=1
//!     open_session_picker: dash_s_without_id,
//!     terminal: TerminalInfo::from_env(),   // which notification escape to write
//! };
//! // opts.app.prefs: where tui.toml and themes/ are, $VISUAL/$EDITOR, PATH, COLORTERM.
//! let exit = kimi_tui::run(opts, ui).await?; // returns when the user exits or host.events is dropped
//! // then send Op::Shutdown to the session: the UI does not; `exit.web` asks to open the
//! // session in the web UI now that this process has let it go.
//! ```
//!
//! Everything else is the pure [`App`] state machine, tested by feeding it events and keys
//! and rendering it into a `TestBackend`.

pub mod add_dir;
pub mod agent_card;
pub mod app;
mod app_events;
pub mod btw;
pub mod cells;
pub mod clipboard;
pub mod commands;
pub mod config;
pub mod dialogs;
pub mod editor;
pub mod error;
pub mod extensions;
pub mod files;
pub mod goal;
pub mod highlight;
pub mod history;
pub mod host;
pub mod input;
pub mod input_thread;
pub mod markdown;
pub mod notify;
pub mod notify_runner;
pub mod prefs;
pub mod render;
pub mod rewind;
pub mod runtime;
pub mod settings;
mod slash_run;
pub mod status_command;
pub mod swarm;
pub mod theme;
pub mod theme_file;
pub mod todo_panel;
pub mod tool_card;
mod transcript;
pub mod web_handoff;
pub mod wrap;

pub use app::{App, AppOptions, UiAction};
pub use config::TuiConfig;
pub use error::TuiError;
pub use host::{
    HostChannels, HostRequest, HostUpdate, McpServerEntry, McpServerState, McpStatus, ModelEntry,
    SessionChannels, SessionInfo, SkillEntry, TaskEntry,
};
pub use runtime::{RunExit, RunOptions, run};
pub use theme::{Theme, ThemeChoice};
