//! The process-wide pool: one connection per declared environment, shared by every session and
//! subagent bound to it, that follows live edits of the declarations. Sessions hold a
//! [`PooledEnvironment`], which takes the pool's current connection for each call: a call in
//! flight (a Read, a running Bash or background task) keeps the connection it started on until
//! it ends, so a re-declared environment drains its old connection while new calls use the new
//! one, and a removed environment fails new calls with `environment.not_found`. A dead
//! connection stays dead (calls fail with `environment.unavailable`, nothing runs here) until
//! [`reconnect`], a re-declaration, or a resume in a new process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use kimi_config::environments::{EnvironmentDecl, Environments};
use kimi_tools::environment::{
    FileStat, GlobRequest, ProcessControl, ProcessEnd, ReadError, ShellSpec, SpawnedProcess,
};
use kimi_tools::terminal::{OpenedTerminal, TerminalSpec};
use kimi_tools::{EnvError, Environment, EnvironmentInfo, ToolResult};
use tokio_util::sync::CancellationToken;

use crate::client::RemoteEnvironment;
use crate::launch::{ConnectError, connect};

enum State {
    Live {
        decl: EnvironmentDecl,
        env: Arc<RemoteEnvironment>,
    },
    /// The declaration changed: the next call connects with it.
    Redeclared { decl: EnvironmentDecl },
    /// No longer declared.
    Removed,
}

struct Slot {
    state: Mutex<State>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

static POOL: Mutex<Option<HashMap<String, Arc<Slot>>>> = Mutex::new(None);

fn slot(decl: &EnvironmentDecl) -> Arc<Slot> {
    let mut pool = lock(&POOL);
    pool.get_or_insert_with(HashMap::new)
        .entry(decl.id.clone())
        .or_insert_with(|| {
            Arc::new(Slot {
                state: Mutex::new(State::Redeclared { decl: decl.clone() }),
            })
        })
        .clone()
}

/// What the pool knows about `id`, for `/environment`: `None` when it was never connected.
pub fn status(id: &str) -> Option<String> {
    let slot = lock(&POOL).as_ref()?.get(id)?.clone();
    let state = lock(&slot.state);
    Some(match &*state {
        State::Live { env, .. } => match env.connection().dead() {
            None => "connected".to_owned(),
            Some(reason) => format!("disconnected ({reason})"),
        },
        State::Redeclared { .. } => "re-declared; connects on next use".to_owned(),
        State::Removed => "removed; bound sessions fail with environment.not_found".to_owned(),
    })
}

/// The shared connection to `decl` (connecting when there is none, or when its declaration
/// changed), as an environment that follows the pool.
pub fn shared(
    decl: &EnvironmentDecl,
    exe: Option<&Path>,
) -> Result<Arc<PooledEnvironment>, ConnectError> {
    let slot = slot(decl);
    let info = {
        let mut state = lock(&slot.state);
        let reuse = match &*state {
            State::Live { decl: known, env } if known == decl => Some(env.clone()),
            State::Live { .. } | State::Redeclared { .. } | State::Removed => None,
        };
        match reuse {
            Some(env) => env.info().clone(),
            None => {
                let env = Arc::new(connect(decl, exe)?);
                let info = env.info().clone();
                *state = State::Live {
                    decl: decl.clone(),
                    env,
                };
                info
            }
        }
    };
    Ok(Arc::new(PooledEnvironment {
        info,
        slot,
        exe: exe.map(Path::to_path_buf),
    }))
}

/// A fresh connection to `decl` for every holder from their next call on (the old one drains).
pub fn reconnect(decl: &EnvironmentDecl, exe: Option<&Path>) -> Result<(), ConnectError> {
    let slot = slot(decl);
    let mut state = lock(&slot.state);
    let env = Arc::new(connect(decl, exe)?);
    *state = State::Live {
        decl: decl.clone(),
        env,
    };
    Ok(())
}

/// Applies re-read declarations: a changed entry connects anew on its next call, a removed
/// one fails new calls with `environment.not_found`; calls in flight finish where they are.
/// Returns the ids whose state changed.
pub fn redeclare(envs: &Environments) -> Vec<String> {
    let slots: Vec<(String, Arc<Slot>)> = lock(&POOL)
        .as_ref()
        .map(|pool| pool.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let mut changed = Vec::new();
    for (id, slot) in slots {
        let mut state = lock(&slot.state);
        let next = match (envs.get(&id), &*state) {
            (Some(decl), State::Live { decl: known, .. } | State::Redeclared { decl: known })
                if known == decl =>
            {
                None
            }
            (Some(decl), _) => Some(State::Redeclared { decl: decl.clone() }),
            (None, State::Removed) => None,
            (None, _) => Some(State::Removed),
        };
        if let Some(next) = next {
            tracing::info!("environment `{id}`: declaration re-read, its connection drains");
            *state = next;
            changed.push(id);
        }
    }
    changed
}

/// A pooled environment as a session holds it.
pub struct PooledEnvironment {
    info: EnvironmentInfo,
    slot: Arc<Slot>,
    exe: Option<PathBuf>,
}

impl std::fmt::Debug for PooledEnvironment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledEnvironment")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl PooledEnvironment {
    /// The connection a call starts on (it keeps it until the call ends).
    fn current(&self) -> Result<Arc<RemoteEnvironment>, EnvError> {
        let mut state = lock(&self.slot.state);
        match &*state {
            State::Live { env, .. } => Ok(env.clone()),
            State::Removed => Err(EnvError::NotFound {
                id: self.info.id.clone(),
            }),
            State::Redeclared { decl } => {
                let decl = decl.clone();
                let env = Arc::new(connect(&decl, self.exe.as_deref()).map_err(|e| {
                    EnvError::Unavailable {
                        id: self.info.id.clone(),
                        reason: e.to_string(),
                    }
                })?);
                *state = State::Live {
                    decl,
                    env: env.clone(),
                };
                Ok(env)
            }
        }
    }

    /// Round trips of the connection in use now (the benchmark counts them).
    pub fn round_trips(&self) -> u64 {
        self.current()
            .map(|env| env.connection().round_trips())
            .unwrap_or(0)
    }
}

/// A process started on a connection keeps that connection (and its launcher) alive until
/// it ends, even when the pool moved on.
struct Draining {
    inner: Box<dyn ProcessControl>,
    _env: Arc<RemoteEnvironment>,
}

#[async_trait::async_trait]
impl ProcessControl for Draining {
    async fn wait(&mut self) -> ProcessEnd {
        self.inner.wait().await
    }

    async fn kill_group(&mut self, grace: Duration) -> ProcessEnd {
        self.inner.kill_group(grace).await
    }
}

impl Environment for PooledEnvironment {
    fn info(&self) -> &EnvironmentInfo {
        &self.info
    }

    fn canonicalize_lenient(&self, paths: &[PathBuf]) -> Result<Vec<PathBuf>, EnvError> {
        self.current()?.canonicalize_lenient(paths)
    }

    fn stat(&self, path: &Path) -> Result<Option<FileStat>, EnvError> {
        self.current()?.stat(path)
    }

    fn check_unchanged(&self, planned: &Path) -> Result<Result<(), String>, EnvError> {
        self.current()?.check_unchanged(planned)
    }

    fn read_regular(&self, path: &Path) -> Result<Result<Vec<u8>, ReadError>, EnvError> {
        self.current()?.read_regular(path)
    }

    fn read_text(
        &self,
        path: &Path,
        offset: i64,
        n_lines: Option<usize>,
    ) -> Result<(ToolResult, Option<FileStat>), EnvError> {
        self.current()?.read_text(path, offset, n_lines)
    }

    fn write_file(
        &self,
        path: &Path,
        data: &[u8],
        append: bool,
    ) -> Result<Result<Option<FileStat>, String>, EnvError> {
        self.current()?.write_file(path, data, append)
    }

    fn grep(
        &self,
        request: &kimi_tools::environment::GrepRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        self.current()?.grep(request, cancel)
    }

    fn glob(
        &self,
        request: &GlobRequest,
        cancel: &CancellationToken,
    ) -> Result<ToolResult, EnvError> {
        self.current()?.glob(request, cancel)
    }

    fn spawn(&self, spec: &ShellSpec) -> Result<Result<SpawnedProcess, String>, EnvError> {
        let env = self.current()?;
        Ok(env.spawn(spec)?.map(|process| SpawnedProcess {
            pid: process.pid,
            output: process.output,
            control: Box::new(Draining {
                inner: process.control,
                _env: env.clone(),
            }),
        }))
    }

    fn open_terminal(
        &self,
        spec: &TerminalSpec,
    ) -> Result<Result<OpenedTerminal, String>, EnvError> {
        let env = self.current()?;
        Ok(env.open_terminal(spec)?.map(|term| OpenedTerminal {
            process: SpawnedProcess {
                pid: term.process.pid,
                output: term.process.output,
                control: Box::new(Draining {
                    inner: term.process.control,
                    _env: env.clone(),
                }),
            },
            input: term.input,
        }))
    }
}
