//! Runs one task's process: streams its output to `output.log` and subscribers, enforces the
//! deadline and the output cap, and handles stop requests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::sync::broadcast;

use crate::environment::{ProcessControl, ProcessEnd, ProcessOutput, ShellSpec};

use super::{
    OUTPUT_CAP_BYTES, OutputChunk, TaskEntry, TaskError, TaskInfo, TaskManager, TaskSpec,
    TaskStatus, new_entry, new_task_id, now_ms,
};

/// How the runner's main loop ended.
enum End {
    Exited(Option<i32>),
    Stop(String),
    Timeout,
    OutputCap,
    /// The environment's connection ended; the executor killed the process with it.
    Lost(String),
}

pub(super) fn spawn(
    manager: &Arc<TaskManager>,
    spec: TaskSpec,
) -> Result<(TaskInfo, broadcast::Receiver<OutputChunk>), TaskError> {
    let id = new_task_id();
    let task_dir = manager.dir().join(&id);
    std::fs::create_dir_all(&task_dir)
        .map_err(|e| TaskError::Spawn(format!("cannot create {}: {e}", task_dir.display())))?;
    let log_path = task_dir.join("output.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| TaskError::Spawn(format!("cannot create {}: {e}", log_path.display())))?;

    let shell = ShellSpec {
        command: spec.command.clone(),
        cwd: spec.cwd.clone(),
        env: spec.env,
        launcher: spec.launcher,
    };
    let spawned = spec
        .environment
        .spawn(&shell)
        .map_err(|e| TaskError::Spawn(e.to_string()))?
        .map_err(TaskError::Spawn)?;
    let pid = spawned.pid;
    let kind = if spec.environment.is_this_machine() {
        "bash"
    } else {
        super::REMOTE_BASH_KIND
    };

    let info = TaskInfo {
        id: id.clone(),
        kind: kind.to_owned(),
        description: spec.description.clone(),
        command: spec.command.clone(),
        cwd: spec.cwd.clone(),
        status: TaskStatus::Running,
        pid,
        exit_code: None,
        started_at_ms: now_ms(),
        ended_at_ms: None,
        timeout_s: spec.timeout.map(|t| t.as_secs()),
        reason: None,
        output_bytes: 0,
        foreground: spec.foreground,
    };
    let entry = Arc::new(new_entry(info.clone()));
    let rx = entry.output.subscribe();
    if !spec.foreground {
        entry
            .deadline
            .send_replace(spec.timeout.map(|t| Instant::now() + t));
    }
    manager.register(&id, entry.clone());
    manager.persist(&info);
    if !spec.foreground {
        manager.started(&info);
    }

    let manager = manager.clone();
    tokio::spawn(async move {
        run(
            manager,
            entry,
            spawned.control,
            spawned.output,
            tokio::fs::File::from_std(log),
        )
        .await;
    });
    Ok((info, rx))
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

async fn run(
    manager: Arc<TaskManager>,
    entry: Arc<TaskEntry>,
    mut child: Box<dyn ProcessControl>,
    mut chunks: ProcessOutput,
    mut log: tokio::fs::File,
) {
    let mut total: u64 = 0;
    let mut deadline_rx = entry.deadline.subscribe();
    let mut chunks_open = true;
    let end = loop {
        let deadline = *deadline_rx.borrow_and_update();
        tokio::select! {
            status = child.wait() => match status {
                ProcessEnd::Exited(code) => break End::Exited(code),
                ProcessEnd::Lost(reason) => break End::Lost(reason),
            },
            chunk = chunks.recv(), if chunks_open => match chunk {
                Some((stderr, bytes)) => {
                    total += bytes.len() as u64;
                    record(&entry, &mut log, stderr, &bytes).await;
                    if total > OUTPUT_CAP_BYTES {
                        break End::OutputCap;
                    }
                }
                None => chunks_open = false,
            },
            () = entry.stop.notified() => {
                let reason = entry
                    .stop_reason
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone()
                    .unwrap_or_else(|| "Stopped".to_owned());
                break End::Stop(reason);
            }
            () = sleep_until(deadline) => break End::Timeout,
            // A new deadline (moved to the background): loop to pick it up.
            _ = deadline_rx.changed() => {}
        }
    };
    let mut end = end;
    let exit_code = match &end {
        End::Exited(code) => *code,
        End::Lost(_) => None,
        End::Stop(_) | End::Timeout | End::OutputCap => {
            match child.kill_group(manager.kill_grace()).await {
                ProcessEnd::Exited(code) => code,
                ProcessEnd::Lost(reason) => {
                    end = End::Lost(reason);
                    None
                }
            }
        }
    };
    // Collect what is still buffered; a grandchild that keeps the pipes open (a daemon started
    // with `&`) must not hold the task hostage: stop after a quiet period or 2 s in total.
    let drain_deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while chunks_open {
        let quiet = tokio::time::Instant::now() + Duration::from_millis(500);
        match tokio::time::timeout_at(quiet.min(drain_deadline), chunks.recv()).await {
            Ok(Some((stderr, bytes))) => {
                total += bytes.len() as u64;
                if total <= OUTPUT_CAP_BYTES {
                    record(&entry, &mut log, stderr, &bytes).await;
                }
            }
            Ok(None) | Err(_) => chunks_open = false,
        }
    }
    let _ = log.flush().await;
    let (status, reason) = match end {
        End::Exited(Some(0)) => (TaskStatus::Completed, None),
        End::Exited(Some(code)) => (
            TaskStatus::Failed,
            Some(format!("Exited with code {code}.")),
        ),
        End::Exited(None) => (
            TaskStatus::Failed,
            Some("Terminated by a signal.".to_owned()),
        ),
        End::Stop(reason) => (TaskStatus::Killed, Some(reason)),
        End::Lost(reason) => (TaskStatus::Lost, Some(reason)),
        End::Timeout => {
            let limit = entry.state.borrow().timeout_s.unwrap_or(0);
            (
                TaskStatus::TimedOut,
                Some(format!("Killed after reaching its {limit} s time limit.")),
            )
        }
        End::OutputCap => (
            TaskStatus::Failed,
            Some("Output exceeded 16 MiB; the task was terminated.".to_owned()),
        ),
    };
    entry.state.send_modify(|info| {
        info.status = status;
        info.reason = reason;
        info.exit_code = exit_code;
        info.ended_at_ms = Some(now_ms());
        info.output_bytes = total;
    });
    let info = entry.state.borrow().clone();
    manager.on_finished(&entry, &info);
}

async fn record(entry: &TaskEntry, log: &mut tokio::fs::File, stderr: bool, bytes: &[u8]) {
    // The log is the task's record; a failed write only loses output, never the task. The
    // loss is logged here and the tool result says how much is missing (`render_output`).
    if let Err(err) = log.write_all(bytes).await {
        let id = entry.state.borrow().id.clone();
        tracing::warn!(task = %id, bytes = bytes.len(), "cannot write the task's output log: {err}");
    }
    let text = String::from_utf8_lossy(bytes).into_owned();
    let _ = entry.output.send(OutputChunk { stderr, text });
    entry
        .state
        .send_modify(|info| info.output_bytes += bytes.len() as u64);
}
