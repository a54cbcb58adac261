//! Runs hook processes (surface.md §6.2): each hook is `sh -c <command>` in its own process
//! group, gets the payload on stdin, and is killed — the whole group, SIGTERM then SIGKILL
//! 100 ms later — when it outlives its timeout. Matching hooks of one event run in parallel.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::config::{HookDef, HookSet};
use super::event::{CommonPayload, HookEventData};
use super::outcome::{EventResult, HookRun, RunStatus, combine, interpret};

/// Grace between SIGTERM and SIGKILL on timeout (the reference's value).
const KILL_GRACE: Duration = Duration::from_millis(100);
/// How long to wait for the pipes to close after the group was killed. Processes that escaped
/// the group (`setsid`) may keep them open; we stop listening rather than hang the turn.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// Output kept per stream; hooks that print more are cut (their meaning is in the first part).
const OUTPUT_CAP: usize = 1 << 20;

/// How hooks are started; passed explicitly so tests never touch the process environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRunner {
    /// The shell (`sh`).
    pub shell: PathBuf,
    /// Where hooks without their own cwd run: the session working directory.
    pub default_cwd: PathBuf,
    /// Extra environment for every hook (on top of the inherited one).
    pub env: Vec<(String, String)>,
}

impl HookRunner {
    pub fn new(default_cwd: impl Into<PathBuf>) -> HookRunner {
        HookRunner {
            shell: PathBuf::from("sh"),
            default_cwd: default_cwd.into(),
            env: Vec::new(),
        }
    }

    /// Runs every matching hook (duplicates once, in parallel) and combines their outcomes.
    pub async fn run_event(
        &self,
        hooks: &HookSet,
        data: &HookEventData,
        common: &CommonPayload,
    ) -> EventResult {
        let matching = hooks.matching(data);
        if matching.is_empty() {
            return EventResult::default();
        }
        let payload = data.payload(common).to_string();
        let runs = matching.iter().map(|hook| self.run_logged(hook, &payload));
        let runs: Vec<HookRun> = futures::future::join_all(runs).await;
        let event = data.event();
        combine(event, runs.iter().map(|run| interpret(event, run)))
    }

    /// [`HookRunner::run_one`], logging the event, command, outcome and duration.
    async fn run_logged(&self, hook: &HookDef, payload: &str) -> HookRun {
        let began = std::time::Instant::now();
        let run = self.run_one(hook, payload).await;
        let duration_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (event, command, status) = (hook.event, &hook.command, &run.status);
        tracing::info!(?event, command, ?status, duration_ms, "hook ran");
        run
    }

    /// Runs one hook to completion or timeout.
    pub async fn run_one(&self, hook: &HookDef, payload: &str) -> HookRun {
        let mut cmd = Command::new(&self.shell);
        cmd.arg("-c")
            .arg(&hook.command)
            .current_dir(hook.cwd.as_ref().unwrap_or(&self.default_cwd))
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(hook.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so a timeout can kill everything it started.
            .process_group(0)
            .kill_on_drop(true);
        let mut run = HookRun {
            command: hook.command.clone(),
            status: RunStatus::Signalled,
            stdout: String::new(),
            stderr: String::new(),
            pid: None,
        };
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                run.status = RunStatus::SpawnFailed(e.to_string());
                return run;
            }
        };
        run.pid = child.id();
        // If the caller abandons this future (turn cancelled), the whole group goes with it.
        let mut guard = GroupGuard(group_of(run.pid));
        let stdout = spawn_reader(child.stdout.take());
        let stderr = spawn_reader(child.stderr.take());
        let stdin = child.stdin.take();
        let payload = payload.as_bytes().to_vec();
        let writer = tokio::spawn(async move {
            if let Some(mut stdin) = stdin {
                // A hook that never reads stdin closes the pipe early; that is its choice.
                let _ignored = stdin.write_all(&payload).await;
            }
        });

        let deadline = Instant::now() + Duration::from_secs(hook.timeout_secs);
        let timed_out = RunStatus::TimedOut {
            after_secs: hook.timeout_secs,
        };
        let waited = tokio::time::timeout_at(deadline, child.wait()).await;
        let drain_deadline = match waited {
            Ok(Ok(status)) => {
                run.status = status
                    .code()
                    .map_or(RunStatus::Signalled, RunStatus::Exited);
                // Children the hook left behind may still hold the pipes; the hook's time
                // budget covers them too.
                deadline
            }
            Ok(Err(e)) => {
                run.status = RunStatus::SpawnFailed(e.to_string());
                deadline
            }
            Err(_elapsed) => {
                kill_group(&mut child, run.pid).await;
                run.status = timed_out.clone();
                Instant::now() + DRAIN_LIMIT
            }
        };
        writer.abort();
        let aborts = [&stdout, &stderr].map(|r| r.as_ref().map(JoinHandle::abort_handle));
        let (out, err) = match tokio::time::timeout_at(drain_deadline, drain(stdout, stderr)).await
        {
            Ok(pair) => pair,
            Err(_elapsed) => {
                kill_group(&mut child, run.pid).await;
                for handle in aborts.into_iter().flatten() {
                    handle.abort();
                }
                run.status = timed_out;
                (Vec::new(), Vec::new())
            }
        };
        // Finished normally (or already killed): leave anything it deliberately left running.
        guard.0 = None;
        run.stdout = String::from_utf8_lossy(&out).into_owned();
        run.stderr = String::from_utf8_lossy(&err).into_owned();
        run
    }
}

/// Kills a hook's process group when dropped while armed.
struct GroupGuard(Option<Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            let _ignored = kill_process_group(group, Signal::KILL);
        }
    }
}

fn group_of(pid: Option<u32>) -> Option<Pid> {
    pid.and_then(|p| i32::try_from(p).ok())
        .and_then(Pid::from_raw)
}

type Reader = Option<JoinHandle<Vec<u8>>>;

fn spawn_reader<R: AsyncRead + Unpin + Send + 'static>(stream: Option<R>) -> Reader {
    stream.map(|s| {
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let _ignored = s.take(OUTPUT_CAP as u64).read_to_end(&mut buf).await;
            buf
        })
    })
}

async fn drain(stdout: Reader, stderr: Reader) -> (Vec<u8>, Vec<u8>) {
    async fn join(r: Reader) -> Vec<u8> {
        match r {
            Some(handle) => handle.await.unwrap_or_default(),
            None => Vec::new(),
        }
    }
    tokio::join!(join(stdout), join(stderr))
}

/// SIGTERM to the group, a short grace, SIGKILL to the group, then reap the leader.
async fn kill_group(child: &mut Child, pid: Option<u32>) {
    if let Some(group) = group_of(pid) {
        // ESRCH (already gone) is fine either time.
        let _ignored = kill_process_group(group, Signal::TERM);
        let _ignored = tokio::time::timeout(KILL_GRACE, child.wait()).await;
        let _ignored = kill_process_group(group, Signal::KILL);
    } else {
        let _ignored = child.start_kill();
    }
    let _ignored = tokio::time::timeout(DRAIN_LIMIT, child.wait()).await;
}
