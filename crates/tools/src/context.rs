//! Everything a tool needs from its surroundings: directories, the stale-write guard, the
//! environment for child processes, progress reporting and the background-task manager.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::mpsc::UnboundedSender;

use crate::tasks::TaskManager;

/// Remembers the mtime of every file this agent read or wrote, so Write/Edit can refuse to
/// clobber a file the agent never saw or that changed behind its back.
#[derive(Debug, Clone, Default)]
pub struct StaleGuard {
    seen: Arc<Mutex<HashMap<PathBuf, Option<SystemTime>>>>,
}

/// Why a write was refused by the stale-write guard.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum StaleError {
    #[error(
        "File `{0}` already exists but has not been read in this session. Read it first, then retry the change."
    )]
    NotRead(String),
    #[error(
        "File `{0}` has been modified since it was last read. Read it again, then retry the change."
    )]
    Modified(String),
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl StaleGuard {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record the file's current mtime (after a read or a write by this agent).
    pub fn record(&self, path: &Path) {
        let stamp = mtime(path);
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.insert(path.to_path_buf(), stamp);
    }

    /// Record a stamp taken on the environment the file lives on (a remote target).
    pub fn record_stat(&self, path: &Path, stat: Option<crate::environment::FileStat>) {
        let stamp = stat.and_then(|s| s.mtime());
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.insert(path.to_path_buf(), stamp);
    }

    /// [`StaleGuard::check`] against a stat taken on the file's environment (`None` = missing).
    pub fn check_stat(
        &self,
        path: &Path,
        current: Option<crate::environment::FileStat>,
    ) -> Result<(), StaleError> {
        let Some(current) = current else {
            return Ok(());
        };
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let shown = path.display().to_string();
        match seen.get(path) {
            None => Err(StaleError::NotRead(shown)),
            Some(recorded) if *recorded != current.mtime() => Err(StaleError::Modified(shown)),
            Some(_) => Ok(()),
        }
    }

    /// A missing file may always be written; an existing one only if recorded and unchanged.
    pub fn check(&self, path: &Path) -> Result<(), StaleError> {
        if !path.exists() {
            return Ok(());
        }
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let shown = path.display().to_string();
        match seen.get(path) {
            None => Err(StaleError::NotRead(shown)),
            Some(recorded) if *recorded != mtime(path) => Err(StaleError::Modified(shown)),
            Some(_) => Ok(()),
        }
    }
}

/// A line of progress a running tool reports (Bash output as it arrives).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolProgress {
    Stdout(String),
    Stderr(String),
    Status(String),
}

/// Where a tool sends progress; dropping updates is fine when nobody listens.
#[derive(Debug, Clone, Default)]
pub struct ProgressSink(Option<UnboundedSender<ToolProgress>>);

impl ProgressSink {
    pub fn new(sender: UnboundedSender<ToolProgress>) -> Self {
        Self(Some(sender))
    }

    pub fn none() -> Self {
        Self(None)
    }

    pub fn send(&self, update: ToolProgress) {
        if let Some(tx) = &self.0 {
            // The receiver going away only means nobody watches any more.
            let _ = tx.send(update);
        }
    }
}

/// Knobs from `config.toml` that change tool behaviour.
#[derive(Debug, Clone)]
pub struct ToolSettings {
    /// `[background] bash_auto_background_on_timeout`.
    pub bash_auto_background_on_timeout: bool,
    /// `bash_task_timeout_s` for a command moved to the background (0 = none).
    pub bash_task_timeout_s: u64,
    /// Grace between SIGTERM and SIGKILL when stopping a process tree.
    pub kill_grace: std::time::Duration,
    /// Background mode is only offered when the task tools are enabled.
    pub background_enabled: bool,
    /// FetchURL may reach private, loopback and link-local addresses (off by default: SSRF guard).
    pub fetch_allow_private: bool,
    /// Prefix for every shell command (`[sandbox] mode = "workspace-write"` puts the sandbox
    /// helper here); empty = run the shell directly.
    pub launcher: Vec<String>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            bash_auto_background_on_timeout: true,
            bash_task_timeout_s: 600,
            kill_grace: std::time::Duration::from_secs(5),
            background_enabled: true,
            fetch_allow_private: false,
            launcher: Vec::new(),
        }
    }
}

/// The per-agent context every tool call receives.
#[derive(Clone)]
pub struct ToolContext {
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// Directories added with `--add-dir` / `/add-dir`.
    pub additional_dirs: Vec<PathBuf>,
    /// Skill roots: part of the workspace for reads only.
    pub skill_roots: Vec<PathBuf>,
    /// The user's home, for `~` expansion.
    pub home: Option<PathBuf>,
    /// The agent's `tool-results/` directory (spilled outputs).
    pub tool_results_dir: PathBuf,
    pub stale: StaleGuard,
    /// Environment for child processes (already filtered by the host).
    pub env: Vec<(String, String)>,
    pub settings: ToolSettings,
    /// Background tasks of this agent (Bash `run_in_background`, TaskList…).
    pub tasks: Arc<TaskManager>,
    /// This agent's todo list (the host persists it and shows it in its todo panel).
    pub todos: crate::builtin::todo::TodoStore,
    /// The front end that can put questions to the user; `None` = it cannot.
    pub questions: Option<Arc<dyn crate::builtin::ask::QuestionHost>>,
    /// Where the file tools, the search tools and shell commands act: this machine, or the
    /// remote target the session is bound to (then `cwd` and every path are the target's).
    pub environment: Arc<dyn crate::environment::Environment>,
}

impl ToolContext {
    /// A context rooted at `cwd` with the agent's data under `agent_dir` (`tool-results/`,
    /// `tasks/`).
    pub fn new(cwd: impl Into<PathBuf>, agent_dir: &Path) -> Self {
        let settings = ToolSettings::default();
        Self {
            cwd: cwd.into(),
            additional_dirs: Vec::new(),
            skill_roots: Vec::new(),
            home: std::env::home_dir(),
            tool_results_dir: agent_dir.join("tool-results"),
            stale: StaleGuard::new(),
            env: std::env::vars().collect(),
            tasks: TaskManager::open(agent_dir.join("tasks"), settings.kill_grace),
            settings,
            todos: crate::builtin::todo::TodoStore::default(),
            questions: None,
            environment: crate::environment::Local::shared(),
        }
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cwd", &self.cwd)
            .field("additional_dirs", &self.additional_dirs)
            .field("skill_roots", &self.skill_roots)
            .field("tool_results_dir", &self.tool_results_dir)
            .field("tasks", &self.tasks)
            .field("questions", &self.questions.is_some())
            .field("environment", &self.environment.info().id)
            .finish_non_exhaustive()
    }
}
