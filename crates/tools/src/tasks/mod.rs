//! Background tasks of one agent, persisted under its `tasks/` directory as `<id>.json` plus
//! `<id>/output.log`. A shell task runs in its own process group, so stopping it stops
//! everything it started; an external task (a background subagent) runs in this process and
//! reports its own end.

mod external;
mod process;
mod runner;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, broadcast, watch};

pub use external::ExternalTask;
pub use process::{group_alive, kill_tree};

/// Output beyond this terminates the task.
pub const OUTPUT_CAP_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Running,
    Completed,
    Failed,
    TimedOut,
    Killed,
    /// The process vanished while nobody watched it (across a restart).
    Lost,
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        match self {
            TaskStatus::Running => false,
            TaskStatus::Completed
            | TaskStatus::Failed
            | TaskStatus::TimedOut
            | TaskStatus::Killed
            | TaskStatus::Lost => true,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::TimedOut => "timed_out",
            TaskStatus::Killed => "killed",
            TaskStatus::Lost => "lost",
        }
    }
}

/// The persisted record of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskInfo {
    pub id: String,
    pub kind: String,
    pub description: String,
    pub command: String,
    pub cwd: PathBuf,
    pub status: TaskStatus,
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub started_at_ms: u64,
    pub ended_at_ms: Option<u64>,
    /// Limit once in the background; `None` = no limit.
    pub timeout_s: Option<u64>,
    /// Why the task ended the way it did (stop reason, timeout, output cap).
    pub reason: Option<String>,
    pub output_bytes: u64,
    /// Still attached to a foreground Bash call (hidden from TaskList, never notified).
    #[serde(default)]
    pub foreground: bool,
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A chunk of output as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    pub stderr: bool,
    pub text: String,
}

/// What starts a task.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    pub command: String,
    pub description: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// Attached to a foreground call: no deadline of its own until moved to the background.
    pub foreground: bool,
    pub timeout: Option<Duration>,
    /// A command prefix the shell runs under (the OS sandbox helper), empty for none.
    pub launcher: Vec<String>,
    /// Where the command runs (this machine or the session's remote target).
    pub environment: Arc<dyn crate::environment::Environment>,
}

/// `TaskInfo::kind` of a shell task that runs on a remote target: its pid is the target's, so a
/// later process must never signal that pid here.
pub const REMOTE_BASH_KIND: &str = "remote_bash";

pub(crate) struct TaskEntry {
    pub(crate) state: watch::Sender<TaskInfo>,
    pub(crate) stop: Notify,
    pub(crate) stop_reason: Mutex<Option<String>>,
    pub(crate) deadline: watch::Sender<Option<Instant>>,
    pub(crate) output: broadcast::Sender<OutputChunk>,
    /// Its completion was already reported (by WaitFor or the foreground call).
    pub(crate) reported: std::sync::atomic::AtomicBool,
    /// Found running on disk at start-up: no runner of ours watches its process.
    pub(crate) adopted: bool,
}

/// Told about every task that starts running in the background (started detached, moved
/// there from a foreground call, or an external task): the engine's TaskStarted hook.
pub type TaskStartListener = Arc<dyn Fn(&TaskInfo) + Send + Sync>;

/// All tasks of one agent.
pub struct TaskManager {
    start_listener: Mutex<Option<TaskStartListener>>,
    dir: PathBuf,
    tasks: Mutex<Vec<(String, Arc<TaskEntry>)>>,
    kill_grace: Duration,
    finished: Mutex<Vec<String>>,
    finished_notify: Notify,
    /// Woken whenever any task ends (WaitFor on "any task").
    any_end: Notify,
}

impl std::fmt::Debug for TaskManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskManager")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("Task `{0}` was not found. Use TaskList to see the tasks of this session.")]
    NotFound(String),
    #[error("Could not start the command: {0}")]
    Spawn(String),
}

impl TaskManager {
    /// Open (or create) the task directory; tasks recorded as running whose process group is
    /// gone are marked `lost`.
    pub fn open(dir: impl Into<PathBuf>, kill_grace: Duration) -> Arc<Self> {
        let dir = dir.into();
        let manager = Arc::new(Self {
            start_listener: Mutex::new(None),
            dir,
            tasks: Mutex::new(Vec::new()),
            kill_grace,
            finished: Mutex::new(Vec::new()),
            finished_notify: Notify::new(),
            any_end: Notify::new(),
        });
        manager.load_existing();
        manager
    }

    /// Replace the listener told about tasks starting in the background.
    pub fn set_start_listener(&self, listener: TaskStartListener) {
        *self
            .start_listener
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(listener);
    }

    pub(crate) fn started(&self, info: &TaskInfo) {
        let listener = self
            .start_listener
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(listener) = listener {
            listener(info);
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn output_path(&self, id: &str) -> PathBuf {
        self.dir.join(id).join("output.log")
    }

    fn load_existing(&self) {
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut infos: Vec<TaskInfo> = read
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| std::fs::read(e.path()).ok())
            .filter_map(|b| serde_json::from_slice::<TaskInfo>(&b).ok())
            .collect();
        infos.sort_by_key(|i| i.started_at_ms);
        for mut info in infos {
            if info.status == TaskStatus::Running && info.kind == REMOTE_BASH_KIND {
                // The executor killed it when the connection of the process that started it
                // ended; its pid means nothing on this machine.
                info.status = TaskStatus::Lost;
                info.ended_at_ms = Some(now_ms());
                info.reason = Some(
                    "The remote command ended with the connection of the kimi-rs process that started it.".to_owned(),
                );
                self.persist(&info);
            } else if info.status == TaskStatus::Running {
                // Nobody can collect this process's output or exit code any more.
                let alive = info.pid.is_some_and(group_alive);
                if !alive {
                    info.status = TaskStatus::Lost;
                    info.ended_at_ms = Some(now_ms());
                    info.reason = Some(
                        "The process was no longer running when the session resumed.".to_owned(),
                    );
                    self.persist(&info);
                }
            }
            let adopted = info.status == TaskStatus::Running;
            let entry = Arc::new(TaskEntry {
                adopted,
                ..new_entry(info.clone())
            });
            entry
                .reported
                .store(true, std::sync::atomic::Ordering::SeqCst);
            self.lock().push((info.id.clone(), entry.clone()));
            if adopted {
                self.watch_adopted(&entry);
            }
        }
    }

    /// A process left running by an earlier session has no runner of ours; poll its group so
    /// waiters learn when it is gone (its exit code is unknowable, so it ends as `lost`).
    fn watch_adopted(&self, entry: &Arc<TaskEntry>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Some(pid) = entry.state.borrow().pid else {
            return;
        };
        let entry = entry.clone();
        let dir = self.dir.clone();
        runtime.spawn(async move {
            while group_alive(pid) && !entry.state.borrow().status.is_terminal() {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            if entry.state.borrow().status.is_terminal() {
                return;
            }
            entry.state.send_modify(|info| {
                info.status = TaskStatus::Lost;
                info.ended_at_ms = Some(now_ms());
                info.reason = Some(
                    "The process ended while no session was watching it; its exit code is unknown."
                        .to_owned(),
                );
            });
            let info = entry.state.borrow().clone();
            if let Ok(text) = serde_json::to_vec_pretty(&info) {
                let _ = std::fs::write(dir.join(format!("{}.json", info.id)), text);
            }
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Arc<TaskEntry>)>> {
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn persist(&self, info: &TaskInfo) {
        let path = self.dir.join(format!("{}.json", info.id));
        if let Ok(text) = serde_json::to_vec_pretty(info) {
            let tmp = path.with_extension("json.tmp");
            // Persistence is best effort: a full disk must not kill the running command.
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
    }

    pub(crate) fn entry(&self, id: &str) -> Result<Arc<TaskEntry>, TaskError> {
        self.lock()
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, e)| e.clone())
            .ok_or_else(|| TaskError::NotFound(id.to_owned()))
    }

    /// Start a command; returns its info and a receiver of its output as it arrives.
    pub fn spawn(
        self: &Arc<Self>,
        spec: TaskSpec,
    ) -> Result<(TaskInfo, broadcast::Receiver<OutputChunk>), TaskError> {
        runner::spawn(self, spec)
    }

    pub(crate) fn register(&self, id: &str, entry: Arc<TaskEntry>) {
        self.lock().push((id.to_owned(), entry));
    }

    pub(crate) fn kill_grace(&self) -> Duration {
        self.kill_grace
    }

    /// Called by the runner when a task ends.
    pub(crate) fn on_finished(&self, entry: &TaskEntry, info: &TaskInfo) {
        self.persist(info);
        if !info.foreground && !entry.reported.load(std::sync::atomic::Ordering::SeqCst) {
            self.finished
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(info.id.clone());
            self.finished_notify.notify_waiters();
            self.finished_notify.notify_one();
        }
        self.any_end.notify_waiters();
    }

    pub fn get(&self, id: &str) -> Result<TaskInfo, TaskError> {
        Ok(self.entry(id)?.state.borrow().clone())
    }

    /// Tasks in start order (foreground-attached ones excluded).
    pub fn list(&self) -> Vec<TaskInfo> {
        self.lock()
            .iter()
            .map(|(_, e)| e.state.borrow().clone())
            .filter(|i| !i.foreground)
            .collect()
    }

    /// Ask a task to stop (SIGTERM to its group, SIGKILL after the grace) and wait until it
    /// has ended. Safe on a finished task: returns its info unchanged.
    pub async fn stop(&self, id: &str, reason: &str) -> Result<TaskInfo, TaskError> {
        let entry = self.entry(id)?;
        let current = entry.state.borrow().clone();
        if current.status.is_terminal() {
            return Ok(current);
        }
        *entry
            .stop_reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reason.to_owned());
        if let Some(pid) = current.pid
            && entry.adopted
        {
            // A task adopted from an earlier run has no runner: signal its group directly.
            kill_tree(pid, self.kill_grace).await;
            let mut info = current;
            info.status = TaskStatus::Killed;
            info.reason = Some(reason.to_owned());
            info.ended_at_ms = Some(now_ms());
            entry.state.send_replace(info.clone());
            self.on_finished(&entry, &info);
            return Ok(info);
        }
        entry.stop.notify_one();
        Ok(wait_terminal(&entry).await)
    }

    /// Wait until the task ends or `timeout` passes; `None` on timeout.
    pub async fn wait(&self, id: &str, timeout: Duration) -> Result<Option<TaskInfo>, TaskError> {
        let entry = self.entry(id)?;
        Ok(tokio::time::timeout(timeout, wait_terminal(&entry))
            .await
            .ok())
    }

    /// Mark a task's completion as reported so it is not notified again.
    pub fn mark_reported(&self, id: &str) {
        if let Ok(entry) = self.entry(id) {
            entry
                .reported
                .store(true, std::sync::atomic::Ordering::SeqCst);
            self.finished
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .retain(|x| x != id);
        }
    }

    /// Wait until any of `ids` ends or `timeout` passes; returns those that ended.
    pub async fn wait_any(&self, ids: &[String], timeout: Duration) -> Vec<TaskInfo> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.any_end.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let ended: Vec<TaskInfo> = ids
                .iter()
                .filter_map(|id| self.get(id).ok())
                .filter(|i| i.status.is_terminal())
                .collect();
            if !ended.is_empty() {
                return ended;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Vec::new();
            }
        }
    }

    /// Finished background tasks not yet reported, oldest first; draining marks them reported.
    pub fn drain_notifications(&self) -> Vec<TaskInfo> {
        let ids: Vec<String> = std::mem::take(
            &mut *self
                .finished
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        ids.iter()
            .filter_map(|id| self.entry(id).ok())
            .filter(|e| !e.reported.swap(true, std::sync::atomic::Ordering::SeqCst))
            .map(|e| e.state.borrow().clone())
            .collect()
    }

    /// Whether a finished background task has not been reported yet.
    pub fn has_pending_notifications(&self) -> bool {
        !self
            .finished
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_empty()
    }

    /// Wait until at least one completion notification is pending.
    pub async fn notification_ready(&self) {
        loop {
            let notified = self.finished_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self
                .finished
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .is_empty()
            {
                return;
            }
            notified.await;
        }
    }

    /// Detach a foreground task into the background with a new time limit.
    pub fn move_to_background(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<TaskInfo, TaskError> {
        let entry = self.entry(id)?;
        entry.state.send_modify(|info| {
            info.foreground = false;
            info.timeout_s = timeout.map(|t| t.as_secs());
        });
        entry
            .deadline
            .send_replace(timeout.map(|t| Instant::now() + t));
        let info = entry.state.borrow().clone();
        self.persist(&info);
        self.started(&info);
        Ok(info)
    }

    /// The last `max_bytes` of a task's output (cut at a char boundary) and the total size.
    pub fn tail_output(&self, id: &str, max_bytes: u64) -> (String, u64) {
        use std::io::{Read, Seek, SeekFrom};
        let path = self.output_path(id);
        let Ok(mut file) = std::fs::File::open(&path) else {
            return (String::new(), 0);
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let start = len.saturating_sub(max_bytes);
        let mut buf = Vec::new();
        if file.seek(SeekFrom::Start(start)).is_ok() {
            let _ = file.read_to_end(&mut buf);
        }
        let text = String::from_utf8_lossy(&buf);
        let text = if start > 0 {
            // Drop a partial first character the byte cut may have produced.
            text.trim_start_matches('\u{FFFD}').to_owned()
        } else {
            text.into_owned()
        };
        (text, len)
    }
}

pub(crate) fn new_entry(info: TaskInfo) -> TaskEntry {
    let (state, _) = watch::channel(info);
    let (deadline, _) = watch::channel(None);
    let (output, _) = broadcast::channel(1024);
    TaskEntry {
        state,
        stop: Notify::new(),
        stop_reason: Mutex::new(None),
        deadline,
        output,
        reported: std::sync::atomic::AtomicBool::new(false),
        adopted: false,
    }
}

async fn wait_terminal(entry: &TaskEntry) -> TaskInfo {
    let mut rx = entry.state.subscribe();
    match rx.wait_for(|i| i.status.is_terminal()).await {
        Ok(info) => info.clone(),
        Err(_) => entry.state.borrow().clone(),
    }
}

/// A short id: `bash-` and 8 hex digits.
pub(crate) fn new_task_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("bash-{}", &hex[..8])
}
