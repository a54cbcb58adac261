//! The editor's view of the files (ACP `fs/read_text_file`, `fs/write_text_file`): when the
//! client advertises them, Read, Edit and Write go through the editor, so they see its unsaved
//! buffers and the editor sees (and can undo) the changes. When it advertises `terminal`, shell
//! commands run in its terminals (see [`crate::terminal`]). Everything else — stat, searches,
//! media files — stays on this machine.
//!
//! The tools call the environment synchronously (from blocking threads, and from `resolve` on
//! a runtime worker), so each editor call is a request sent from a task on the connection's
//! runtime and awaited here with a bounded wait.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use agent_client_protocol::{Client, JsonRpcRequest};
use kimi_tools::environment::{
    FileStat, GlobRequest, GrepRequest, ReadError, ShellSpec, SpawnedProcess,
};
use kimi_tools::{EnvError, Environment, EnvironmentInfo, ToolResult};
use tokio_util::sync::CancellationToken;

/// How long a tool waits for the editor to answer one file request.
const EDITOR_WAIT: Duration = Duration::from_secs(30);

/// What the client said it can do with files (`clientCapabilities.fs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsCapabilities {
    pub read: bool,
    pub write: bool,
    /// `clientCapabilities.terminal`: shell commands run in the editor's terminals.
    pub terminal: bool,
    /// `clientCapabilities.session.notices`: the editor shows `notice` updates (kept here
    /// with the other capabilities the client announced; not a file capability).
    pub notices: bool,
}

impl FsCapabilities {
    pub fn any(self) -> bool {
        self.read || self.write || self.terminal
    }
}

/// This machine's environment with text files read and written through the editor.
pub struct EditorFs {
    inner: Arc<dyn Environment>,
    cx: ConnectionTo<Client>,
    runtime: tokio::runtime::Handle,
    /// Set once the session is open (a new session's id is only known then).
    session: Arc<OnceLock<String>>,
    caps: FsCapabilities,
    /// The session's running Bash calls, for embedding their terminals.
    terminals: Arc<crate::terminal::Terminals>,
}

impl std::fmt::Debug for EditorFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditorFs")
            .field("inner", &self.inner.info().id)
            .field("caps", &self.caps)
            .finish_non_exhaustive()
    }
}

impl EditorFs {
    pub fn new(
        inner: Arc<dyn Environment>,
        cx: ConnectionTo<Client>,
        runtime: tokio::runtime::Handle,
        session: Arc<OnceLock<String>>,
        caps: FsCapabilities,
        terminals: Arc<crate::terminal::Terminals>,
    ) -> EditorFs {
        EditorFs {
            inner,
            cx,
            runtime,
            session,
            caps,
            terminals,
        }
    }

    /// Send `request` to the editor and wait (bounded) for its answer.
    fn round_trip<R>(&self, request: R) -> Result<R::Response, String>
    where
        R: JsonRpcRequest + Send + 'static,
        R::Response: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        let cx = self.cx.clone();
        self.runtime.spawn(async move {
            let answer = cx.send_request(request).block_task().await;
            let _ = tx.send(answer.map_err(|err| err.to_string()));
        });
        let wait = || rx.recv_timeout(EDITOR_WAIT);
        // On a runtime worker (a tool's `resolve`), let the runtime move its other tasks —
        // the connection among them — to another thread while this one waits.
        let answer = match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        };
        answer.unwrap_or_else(|_| {
            Err(format!(
                "the editor did not answer within {} s",
                EDITOR_WAIT.as_secs()
            ))
        })
    }

    /// The file's text as the editor has it, or why not (then the file is read from disk:
    /// a file the editor cannot read — missing, binary — gets the disk's own answer).
    fn editor_text(&self, path: &Path) -> Option<String> {
        if !self.caps.read {
            return None;
        }
        let session = self.session.get()?;
        match self.round_trip(ReadTextFileRequest::new(session.clone(), path.to_owned())) {
            Ok(response) => Some(response.content),
            Err(why) => {
                tracing::info!(
                    "the editor could not read {}: {why}; reading it from disk",
                    path.display()
                );
                None
            }
        }
    }
}

impl Environment for EditorFs {
    fn info(&self) -> &EnvironmentInfo {
        self.inner.info()
    }

    fn is_local(&self) -> bool {
        // Not the in-process fast path: the file tools must call the methods below.
        false
    }

    fn is_this_machine(&self) -> bool {
        self.inner.is_this_machine()
    }

    fn canonicalize_lenient(&self, paths: &[PathBuf]) -> Result<Vec<PathBuf>, EnvError> {
        self.inner.canonicalize_lenient(paths)
    }

    fn stat(&self, path: &Path) -> Result<Option<FileStat>, EnvError> {
        self.inner.stat(path)
    }

    fn check_unchanged(&self, planned: &Path) -> Result<Result<(), String>, EnvError> {
        self.inner.check_unchanged(planned)
    }

    fn read_regular(&self, path: &Path) -> Result<Result<Vec<u8>, ReadError>, EnvError> {
        match self.editor_text(path) {
            Some(text) => Ok(Ok(text.into_bytes())),
            None => self.inner.read_regular(path),
        }
    }

    fn read_text(
        &self,
        path: &Path,
        offset: i64,
        n_lines: Option<usize>,
    ) -> Result<(ToolResult, Option<FileStat>), EnvError> {
        match self.editor_text(path) {
            Some(text) => {
                let result =
                    kimi_tools::builtin::read::read_text_content(path, &text, offset, n_lines);
                Ok((result, self.inner.stat(path)?))
            }
            None => self.inner.read_text(path, offset, n_lines),
        }
    }

    fn write_file(
        &self,
        path: &Path,
        data: &[u8],
        append: bool,
    ) -> Result<Result<Option<FileStat>, String>, EnvError> {
        let Some(session) = self.session.get().filter(|_| self.caps.write) else {
            return self.inner.write_file(path, data, append);
        };
        let shown = path.display();
        let Ok(text) = std::str::from_utf8(data) else {
            // The editor takes text only; bytes that are not UTF-8 go to disk.
            return self.inner.write_file(path, data, append);
        };
        if self
            .inner
            .stat(path)?
            .is_some_and(|s| s.kind == kimi_tools::environment::FileKind::Dir)
        {
            return Ok(Err(format!(
                "`{shown}` is a directory; give the path of a file."
            )));
        }
        let content = if append {
            // The editor has no append: the whole new text is what it already holds plus this.
            let before = match self.read_regular(path)? {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(ReadError::Missing(_)) => String::new(),
                Err(ReadError::Other(why)) => return Ok(Err(why)),
            };
            format!("{before}{text}")
        } else {
            text.to_owned()
        };
        match self.round_trip(WriteTextFileRequest::new(
            session.clone(),
            path.to_owned(),
            content,
        )) {
            Ok(_) => Ok(Ok(self.inner.stat(path)?)),
            Err(why) => Ok(Err(format!(
                "The editor refused to write `{shown}`: {why}. Nothing was written."
            ))),
        }
    }

    fn grep(
        &self,
        request: &GrepRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        self.inner.grep(request, cancel)
    }

    fn glob(
        &self,
        request: &GlobRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        self.inner.glob(request, cancel)
    }

    fn spawn(&self, spec: &ShellSpec) -> Result<Result<SpawnedProcess, String>, EnvError> {
        let Some(session) = self.session.get().filter(|_| self.caps.terminal) else {
            return self.inner.spawn(spec);
        };
        let link = crate::terminal::Link {
            cx: self.cx.clone(),
            runtime: self.runtime.clone(),
            session: session.clone(),
            terminals: self.terminals.clone(),
        };
        Ok(crate::terminal::spawn(link, spec, |request| {
            self.round_trip(request)
                .map(|response| response.terminal_id.0.to_string())
                .map_err(|why| format!("the editor could not start a terminal: {why}"))
        }))
    }

    fn open_terminal(
        &self,
        spec: &kimi_tools::terminal::TerminalSpec,
    ) -> Result<Result<kimi_tools::terminal::OpenedTerminal, String>, EnvError> {
        // A terminal is the target's, like a shell command; the editor only serves files.
        self.inner.open_terminal(spec)
    }
}
