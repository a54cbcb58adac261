//! Runs one task's process: streams its output to `output.log` and subscribers, enforces the
//! deadline and the output cap, and handles stop requests.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::{broadcast, mpsc};

use super::process::kill_tree;
use super::{
    OUTPUT_CAP_BYTES, OutputChunk, TaskEntry, TaskError, TaskInfo, TaskManager, TaskSpec,
    TaskStatus, new_entry, new_task_id, now_ms,
};

/// The shell commands run in: bash when present (the model writes bash), else sh.
fn shell() -> &'static str {
    if std::path::Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

/// How the runner's main loop ended.
enum End {
    Exited(Option<i32>),
    Stop(String),
    Timeout,
    OutputCap,
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

    let mut cmd = match spec.launcher.split_first() {
        Some((program, args)) => {
            let mut cmd = Command::new(program);
            cmd.args(args).arg(shell());
            cmd
        }
        None => Command::new(shell()),
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
    let mut child = cmd.spawn().map_err(|e| TaskError::Spawn(e.to_string()))?;
    let pid = child.id();

    let info = TaskInfo {
        id: id.clone(),
        kind: "bash".to_owned(),
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

    let (chunk_tx, chunk_rx) = mpsc::channel::<(bool, Vec<u8>)>(64);
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(pump(stdout, false, chunk_tx.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(pump(stderr, true, chunk_tx.clone()));
    }
    drop(chunk_tx);
    let manager = manager.clone();
    tokio::spawn(async move {
        run(
            manager,
            entry,
            child,
            chunk_rx,
            tokio::fs::File::from_std(log),
        )
        .await;
    });
    Ok((info, rx))
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

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

async fn run(
    manager: Arc<TaskManager>,
    entry: Arc<TaskEntry>,
    mut child: tokio::process::Child,
    mut chunks: mpsc::Receiver<(bool, Vec<u8>)>,
    mut log: tokio::fs::File,
) {
    let mut total: u64 = 0;
    let mut deadline_rx = entry.deadline.subscribe();
    let mut chunks_open = true;
    let end = loop {
        let deadline = *deadline_rx.borrow_and_update();
        tokio::select! {
            status = child.wait() => {
                break End::Exited(status.ok().and_then(|s| s.code()));
            }
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
    let pgid = child.id();
    let exit_code = match &end {
        End::Exited(code) => *code,
        End::Stop(_) | End::Timeout | End::OutputCap => {
            if let Some(pgid) = pgid {
                // Reap the leader while the group is being stopped, or it would linger as a
                // zombie and keep the group "alive" for the whole grace period.
                let (_, status) = tokio::join!(kill_tree(pgid, manager.kill_grace()), child.wait());
                status.ok().and_then(|s| s.code())
            } else {
                None
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
    // The log is the task's record; a failed write only loses output, never the task.
    let _ = log.write_all(bytes).await;
    let text = String::from_utf8_lossy(bytes).into_owned();
    let _ = entry.output.send(OutputChunk { stderr, text });
    entry
        .state
        .send_modify(|info| info.output_bytes += bytes.len() as u64);
}
