//! Background tasks that are not processes (a background subagent): the owner does the work,
//! listens for TaskStop, and reports how the task ended. They share the task list, TaskOutput,
//! TaskStop, WaitFor and the completion notices with shell tasks; their output file holds the
//! result. A task still running when the process stops is found `lost` on the next start, like a
//! shell task whose process vanished.

use std::path::Path;
use std::sync::Arc;

use super::{TaskEntry, TaskInfo, TaskManager, TaskStatus, new_entry, now_ms};

/// A running external task. Dropping it without [`ExternalTask::finish`] ends it as failed.
pub struct ExternalTask {
    manager: Arc<TaskManager>,
    entry: Arc<TaskEntry>,
    id: String,
    finished: bool,
}

impl std::fmt::Debug for ExternalTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalTask")
            .field("id", &self.id)
            .finish()
    }
}

impl TaskManager {
    /// Register a task of `kind` (e.g. `agent`) whose work runs in this process. `label`
    /// stands where a shell task shows its command.
    pub fn start_external(
        self: &Arc<Self>,
        kind: &str,
        description: &str,
        label: &str,
        cwd: &Path,
    ) -> ExternalTask {
        let hex = uuid::Uuid::new_v4().simple().to_string();
        let id = format!("{kind}-{}", &hex[..8]);
        let info = TaskInfo {
            id: id.clone(),
            kind: kind.to_owned(),
            description: description.to_owned(),
            command: label.to_owned(),
            cwd: cwd.to_owned(),
            status: TaskStatus::Running,
            pid: None,
            exit_code: None,
            started_at_ms: now_ms(),
            ended_at_ms: None,
            timeout_s: None,
            reason: None,
            output_bytes: 0,
            foreground: false,
        };
        let entry = Arc::new(new_entry(info.clone()));
        self.persist(&info);
        self.register(&id, entry.clone());
        self.started(&info);
        ExternalTask {
            manager: self.clone(),
            entry,
            id,
            finished: false,
        }
    }
}

impl ExternalTask {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Resolves when TaskStop asks this task to stop; returns the reason it gave.
    pub async fn stop_requested(&self) -> String {
        self.entry.stop.notified().await;
        self.entry
            .stop_reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| "stopped".to_owned())
    }

    /// Record how the task ended: its output (kept in the task's output file for TaskOutput)
    /// and status. Waiters and the completion notice see it at once.
    pub fn finish(mut self, status: TaskStatus, output: &str, reason: Option<String>) -> TaskInfo {
        self.finished = true;
        self.end(status, output, reason)
    }

    fn end(&self, status: TaskStatus, output: &str, reason: Option<String>) -> TaskInfo {
        let path = self.manager.output_path(&self.id);
        // Best effort like shell output: the status still ends the task when the disk is full.
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(&path, output);
        self.entry.state.send_modify(|info| {
            info.status = status;
            info.reason = reason;
            info.ended_at_ms = Some(now_ms());
            info.output_bytes = output.len() as u64;
        });
        let info = self.entry.state.borrow().clone();
        self.manager.on_finished(&self.entry, &info);
        info
    }
}

impl Drop for ExternalTask {
    fn drop(&mut self) {
        if !self.finished {
            self.end(
                TaskStatus::Failed,
                "",
                Some("The task's owner stopped before it finished.".to_owned()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn an_external_task_is_listed_stopped_and_notified_like_a_shell_task() {
        let dir = tempfile::tempdir().unwrap();
        let manager = TaskManager::open(dir.path(), Duration::from_millis(50));
        let task =
            manager.start_external("agent", "review the diff", "agent-0 (explore)", dir.path());
        let id = task.id().to_owned();
        assert!(id.starts_with("agent-"));
        let listed = manager.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].status, TaskStatus::Running);
        assert_eq!(listed[0].command, "agent-0 (explore)");

        let stopper = {
            let manager = manager.clone();
            let id = id.clone();
            tokio::spawn(async move { manager.stop(&id, "no longer needed").await })
        };
        let reason = task.stop_requested().await;
        assert_eq!(reason, "no longer needed");
        let info = task.finish(TaskStatus::Killed, "partial findings", Some(reason));
        assert_eq!(info.status, TaskStatus::Killed);
        assert_eq!(stopper.await.unwrap().unwrap().status, TaskStatus::Killed);
        assert_eq!(manager.tail_output(&id, 1024).0, "partial findings");
        let notices = manager.drain_notifications();
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].id, id);
    }

    #[tokio::test]
    async fn a_dropped_task_fails_and_a_running_one_is_lost_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let manager = TaskManager::open(dir.path(), Duration::from_millis(50));
        let dropped = manager.start_external("agent", "a", "agent-0", dir.path());
        let dropped_id = dropped.id().to_owned();
        drop(dropped);
        assert_eq!(manager.get(&dropped_id).unwrap().status, TaskStatus::Failed);
        let running = manager.start_external("agent", "b", "agent-1", dir.path());
        let running_id = running.id().to_owned();
        std::mem::forget(running);
        let reopened = TaskManager::open(dir.path(), Duration::from_millis(50));
        assert_eq!(reopened.get(&running_id).unwrap().status, TaskStatus::Lost);
    }
}
