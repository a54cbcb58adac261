//! The execution environment the file tools, the search tools, shell commands and a user's
//! terminals act on:
//! [`Local`] in-process, or a remote target reached through an executor (the `kimi-exec`
//! crate implements [`Environment`] over its connection). Tools call these primitives and never
//! know which one they got; hooks, MCP servers and the web tools stay local and never use it.
//!
//! The filesystem primitives are synchronous, like `std::fs`: `Tool::resolve` is synchronous
//! and the executions already run their file work on blocking threads. A remote implementation
//! blocks the calling thread for one round trip; its I/O runs on threads of its own, so that
//! never starves an async runtime.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::result::ToolResult;

/// What the handshake (or the local machine) says about a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentInfo {
    /// The declared id (`local` for this machine).
    pub id: String,
    /// `local`, `ssh`, `docker` or `command`.
    pub kind: String,
    pub os: String,
    pub arch: String,
    /// The shell commands run in.
    pub shell: String,
    pub home: Option<PathBuf>,
}

impl EnvironmentInfo {
    /// The short label front ends show (`ssh:dev-box`; `local` for this machine).
    pub fn label(&self) -> String {
        if self.kind == "local" {
            "local".to_owned()
        } else {
            format!("{}:{}", self.kind, self.id)
        }
    }
}

/// Why an environment could not do what was asked (as opposed to the operation's own failure,
/// such as a missing file, which the operation reports in its result).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    #[error(
        "environment.unavailable: environment `{id}` is not connected ({reason}). Nothing was run on this machine. \
         Resume the session (`kimi-rs -S <session-id>`) to reconnect."
    )]
    Unavailable { id: String, reason: String },
    #[error(
        "environment.not_found: environment `{id}` is no longer declared (it was removed from config.toml or .kimi-code/environments.toml). \
         Nothing was run on this machine. Declare it again, or move the session with /environment."
    )]
    NotFound { id: String },
    #[error("environment `{id}` refused the request ({code}): {message}")]
    Remote {
        id: String,
        code: String,
        message: String,
    },
}

/// What a path is, following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    File,
    Dir,
    Fifo,
    Socket,
    CharDevice,
    BlockDevice,
    Other,
}

/// `stat` of a path that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    pub kind: FileKind,
    pub len: u64,
    /// Nanoseconds since the Unix epoch (the stale-write guard compares these).
    pub mtime_ns: Option<u64>,
}

impl FileStat {
    pub fn from_metadata(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let kind = if t.is_file() {
            FileKind::File
        } else if t.is_dir() {
            FileKind::Dir
        } else if t.is_fifo() {
            FileKind::Fifo
        } else if t.is_socket() {
            FileKind::Socket
        } else if t.is_char_device() {
            FileKind::CharDevice
        } else if t.is_block_device() {
            FileKind::BlockDevice
        } else {
            FileKind::Other
        };
        Self {
            kind,
            len: meta.len(),
            mtime_ns: meta.modified().ok().and_then(to_ns),
        }
    }

    pub fn mtime(&self) -> Option<SystemTime> {
        self.mtime_ns.and_then(from_ns)
    }
}

pub fn to_ns(t: SystemTime) -> Option<u64> {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok())
}

pub fn from_ns(ns: u64) -> Option<SystemTime> {
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_nanos(ns))
}

/// Why a file could not be read whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum ReadError {
    #[error("{0}")]
    Missing(String),
    #[error("{0}")]
    Other(String),
}

/// A Grep over a directory on the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrepRequest {
    pub root: PathBuf,
    /// The Grep tool's arguments (validated by the caller).
    pub params: serde_json::Value,
    pub budget_ms: u64,
}

/// A Glob over a directory on the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobRequest {
    pub root: PathBuf,
    pub pattern: String,
    pub include_ignored: bool,
}

/// A shell command to start on the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellSpec {
    pub command: String,
    pub cwd: PathBuf,
    /// The whole environment of the command locally; on a remote target, variables set on top
    /// of the executor's own environment (the local one never crosses the wire).
    pub env: Vec<(String, String)>,
    /// A command prefix the shell runs under (the OS sandbox helper), empty for none.
    pub launcher: Vec<String>,
}

/// A started process: its output as it arrives and the handle to wait for or stop it.
pub struct SpawnedProcess {
    pub pid: Option<u32>,
    pub output: ProcessOutput,
    pub control: Box<dyn ProcessControl>,
}

/// Output chunks `(is_stderr, bytes)`. Local pipes apply back-pressure; a remote connection
/// must never block its reader on one slow consumer, so its channel is unbounded.
pub enum ProcessOutput {
    Bounded(mpsc::Receiver<(bool, Vec<u8>)>),
    Unbounded(mpsc::UnboundedReceiver<(bool, Vec<u8>)>),
}

impl ProcessOutput {
    pub async fn recv(&mut self) -> Option<(bool, Vec<u8>)> {
        match self {
            ProcessOutput::Bounded(rx) => rx.recv().await,
            ProcessOutput::Unbounded(rx) => rx.recv().await,
        }
    }
}

/// How a started process ended, seen from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessEnd {
    /// Exit code, `None` when ended by a signal.
    Exited(Option<i32>),
    /// The environment went away; the process was killed with it.
    Lost(String),
}

#[async_trait::async_trait]
pub trait ProcessControl: Send {
    /// Waits until the process has exited.
    async fn wait(&mut self) -> ProcessEnd;
    /// SIGTERM to the whole process group, SIGKILL after `grace`; returns once it has ended.
    async fn kill_group(&mut self, grace: Duration) -> ProcessEnd;
}

/// The primitives tools need from the machine they act on.
pub trait Environment: Send + Sync + std::fmt::Debug {
    fn info(&self) -> &EnvironmentInfo;

    /// This machine, in-process (tools may use their direct local code paths).
    fn is_local(&self) -> bool {
        false
    }

    /// The files and processes are this machine's, even when some operations go elsewhere
    /// (an editor's view of the files over ACP): Bash gets this machine's environment
    /// variables and media files are read here.
    fn is_this_machine(&self) -> bool {
        self.is_local()
    }

    /// [`crate::path::canonicalize_lenient`] of each path, in one round trip.
    fn canonicalize_lenient(&self, paths: &[PathBuf]) -> Result<Vec<PathBuf>, EnvError>;

    /// `None` when the path does not exist.
    fn stat(&self, path: &Path) -> Result<Option<FileStat>, EnvError>;

    /// [`crate::path::check_unchanged_since_approval`] on the target.
    fn check_unchanged(&self, planned: &Path) -> Result<Result<(), String>, EnvError>;

    /// A whole regular file (FIFOs, devices and sockets refused).
    fn read_regular(&self, path: &Path) -> Result<Result<Vec<u8>, ReadError>, EnvError>;

    /// The Read tool's rendering of a file, and the file's stat afterwards (for the stale guard).
    fn read_text(
        &self,
        path: &Path,
        offset: i64,
        n_lines: Option<usize>,
    ) -> Result<(ToolResult, Option<FileStat>), EnvError>;

    /// Write (or append) `data`, creating missing parents; refuses directories and special
    /// files. Returns the file's stat afterwards.
    fn write_file(
        &self,
        path: &Path,
        data: &[u8],
        append: bool,
    ) -> Result<Result<Option<FileStat>, String>, EnvError>;

    /// The Grep tool's search, run where the files are.
    fn grep(
        &self,
        request: &GrepRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError>;

    /// The Glob tool's search, run where the files are.
    fn glob(
        &self,
        request: &GlobRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError>;

    /// Start a shell command in its own process group. Must be called inside a Tokio runtime.
    fn spawn(&self, spec: &ShellSpec) -> Result<Result<SpawnedProcess, String>, EnvError>;

    /// Open an interactive terminal (a shell on a PTY) for a user. Must be called inside a
    /// Tokio runtime.
    fn open_terminal(
        &self,
        spec: &crate::terminal::TerminalSpec,
    ) -> Result<Result<crate::terminal::OpenedTerminal, String>, EnvError>;
}

/// This machine.
#[derive(Debug)]
pub struct Local {
    info: EnvironmentInfo,
}

impl Local {
    pub fn new() -> Self {
        Self {
            info: EnvironmentInfo {
                id: "local".to_owned(),
                kind: "local".to_owned(),
                os: std::env::consts::OS.to_owned(),
                arch: std::env::consts::ARCH.to_owned(),
                shell: shell().to_owned(),
                home: std::env::home_dir(),
            },
        }
    }

    /// The process-wide local environment (one allocation for every context).
    pub fn shared() -> Arc<dyn Environment> {
        static LOCAL: std::sync::OnceLock<Arc<Local>> = std::sync::OnceLock::new();
        LOCAL.get_or_init(|| Arc::new(Local::new())).clone()
    }
}

impl Default for Local {
    fn default() -> Self {
        Self::new()
    }
}

/// The shell commands run in: bash when present (the model writes bash), else sh.
pub fn shell() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

impl Environment for Local {
    fn info(&self) -> &EnvironmentInfo {
        &self.info
    }

    fn is_local(&self) -> bool {
        true
    }

    fn canonicalize_lenient(&self, paths: &[PathBuf]) -> Result<Vec<PathBuf>, EnvError> {
        Ok(paths
            .iter()
            .map(|p| crate::path::canonicalize_lenient(p))
            .collect())
    }

    fn stat(&self, path: &Path) -> Result<Option<FileStat>, EnvError> {
        Ok(local::stat(path))
    }

    fn check_unchanged(&self, planned: &Path) -> Result<Result<(), String>, EnvError> {
        Ok(crate::path::check_unchanged_since_approval(planned))
    }

    fn read_regular(&self, path: &Path) -> Result<Result<Vec<u8>, ReadError>, EnvError> {
        Ok(local::read_regular(path))
    }

    fn read_text(
        &self,
        path: &Path,
        offset: i64,
        n_lines: Option<usize>,
    ) -> Result<(ToolResult, Option<FileStat>), EnvError> {
        Ok(local::read_text(path, offset, n_lines))
    }

    fn write_file(
        &self,
        path: &Path,
        data: &[u8],
        append: bool,
    ) -> Result<Result<Option<FileStat>, String>, EnvError> {
        Ok(local::write_file(path, data, append))
    }

    fn grep(
        &self,
        request: &GrepRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        Ok(local::grep(request, cancel))
    }

    fn glob(
        &self,
        request: &GlobRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        Ok(local::glob(request, cancel))
    }

    fn spawn(&self, spec: &ShellSpec) -> Result<Result<SpawnedProcess, String>, EnvError> {
        Ok(local::spawn(spec))
    }

    fn open_terminal(
        &self,
        spec: &crate::terminal::TerminalSpec,
    ) -> Result<Result<crate::terminal::OpenedTerminal, String>, EnvError> {
        Ok(crate::terminal::open_local(spec))
    }
}

/// The in-process implementations: [`Local`] calls them directly and the executor
/// (`kimi-rs exec-server`) calls them on the target, so both run the same code.
pub mod local {
    use std::io::Write as _;
    use std::path::Path;
    use std::process::Stdio;
    use std::time::Duration;

    use tokio::io::AsyncReadExt;
    use tokio::process::Command;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::{
        FileStat, GlobRequest, GrepRequest, ProcessControl, ProcessEnd, ProcessOutput, ReadError,
        ShellSpec, SpawnedProcess,
    };
    use crate::builtin::regular::{NotRegular, check_writable_target};
    use crate::result::ToolResult;

    pub fn stat(path: &Path) -> Option<FileStat> {
        std::fs::metadata(path)
            .ok()
            .map(|m| FileStat::from_metadata(&m))
    }

    pub fn read_regular(path: &Path) -> Result<Vec<u8>, ReadError> {
        crate::builtin::regular::read_regular(path).map_err(|e| match e {
            NotRegular::Missing(_) => ReadError::Missing(e.to_string()),
            NotRegular::Directory(_) | NotRegular::Special { .. } | NotRegular::Io { .. } => {
                ReadError::Other(e.to_string())
            }
        })
    }

    pub fn read_text(
        path: &Path,
        offset: i64,
        n_lines: Option<usize>,
    ) -> (ToolResult, Option<FileStat>) {
        let result = crate::builtin::read::read_file(path, offset, n_lines);
        let stamp = if result.is_error { None } else { stat(path) };
        (result, stamp)
    }

    pub fn write_file(path: &Path, data: &[u8], append: bool) -> Result<Option<FileStat>, String> {
        let shown = path.display();
        if path.is_dir() {
            return Err(format!(
                "`{shown}` is a directory; give the path of a file."
            ));
        }
        // Opening a FIFO for writing blocks until a reader appears: refuse non-regular files.
        check_writable_target(path).map_err(|e| e.to_string())?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("Cannot create the parent directories of `{shown}`: {e}"))?;
        }
        let written = if append {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(data))
        } else {
            std::fs::write(path, data)
        };
        written.map_err(|e| format!("Cannot write `{shown}`: {e}"))?;
        Ok(stat(path))
    }

    pub fn grep(request: &GrepRequest, cancel: &CancellationToken) -> ToolResult {
        crate::builtin::grep::search(
            &request.root,
            request.params.clone(),
            cancel,
            Duration::from_millis(request.budget_ms),
        )
    }

    pub fn glob(request: &GlobRequest, cancel: &CancellationToken) -> ToolResult {
        crate::builtin::glob::search(
            &request.root,
            &request.pattern,
            request.include_ignored,
            cancel,
        )
    }

    /// Start `spec` in its own process group with piped output.
    pub fn spawn(spec: &ShellSpec) -> Result<SpawnedProcess, String> {
        let shell = super::shell();
        let mut cmd = match spec.launcher.split_first() {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(shell);
                cmd
            }
            None => Command::new(shell),
        };
        cmd.arg("-c")
            .arg(&spec.command)
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a stop reaches everything the command starts.
            .process_group(0)
            .kill_on_drop(false);
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        let pid = child.id();
        let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>(64);
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(pump(stdout, false, tx.clone()));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(pump(stderr, true, tx.clone()));
        }
        drop(tx);
        Ok(SpawnedProcess {
            pid,
            output: ProcessOutput::Bounded(rx),
            control: Box::new(LocalChild { child, pid }),
        })
    }

    async fn pump(
        mut reader: impl tokio::io::AsyncRead + Unpin,
        stderr: bool,
        tx: mpsc::Sender<(bool, Vec<u8>)>,
    ) {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx.send((stderr, buf[..n].to_vec())).await.is_err() {
                        return;
                    }
                }
            }
        }
    }

    struct LocalChild {
        child: tokio::process::Child,
        pid: Option<u32>,
    }

    #[async_trait::async_trait]
    impl ProcessControl for LocalChild {
        async fn wait(&mut self) -> ProcessEnd {
            ProcessEnd::Exited(self.child.wait().await.ok().and_then(|s| s.code()))
        }

        async fn kill_group(&mut self, grace: Duration) -> ProcessEnd {
            let Some(pgid) = self.pid else {
                return ProcessEnd::Exited(None);
            };
            // Reap the leader while the group is being stopped, or it would linger as a
            // zombie and keep the group "alive" for the whole grace period.
            let (_, status) = tokio::join!(crate::tasks::kill_tree(pgid, grace), self.child.wait());
            ProcessEnd::Exited(status.ok().and_then(|s| s.code()))
        }
    }
}
