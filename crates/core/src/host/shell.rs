//! The user's `!command`s (surface.md §1.5 shell mode). Each one runs as a task of the session's
//! task manager, with the environment and OS-sandbox launcher the Bash tool uses. The command and
//! its output join the conversation as user messages with the `shell_command` origin, in the
//! reference's shape (`<bash-input>` / `<bash-stdout>…<bash-stderr>`), so the model sees what
//! the user ran. Ctrl-B (`Op::ShellToBackground`) — or running longer than
//! [`FOREGROUND_LIMIT`] — turns the running command into an ordinary background task: `/tasks`
//! lists it, the model is told it was moved (an `shell_command_backgrounded` injection) and,
//! like any background task, when it ends.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kimi_protocol::ops::Event;
use kimi_protocol::origin::KnownOrigin;
use kimi_protocol::{ContentPart, Message, Origin, Role};
use kimi_tools::tasks::{OutputChunk, TaskInfo, TaskSpec, TaskStatus};
use tokio::sync::{broadcast, oneshot};

use crate::engine::records as rec;
use crate::engine::runtime::Runtime;

/// A foreground `!command` still running after this long moves to the background (the
/// reference's limit), unless `[background] bash_auto_background_on_timeout` is off.
pub const FOREGROUND_LIMIT: Duration = Duration::from_secs(120);
/// Each of stdout and stderr is kept up to this many bytes in the conversation; the rest
/// stays in the task's output file.
const STREAM_LIMIT: usize = 64 * 1024;

/// The session's running foreground `!command` (at most one).
#[derive(Default)]
pub(super) struct ShellSlot(Mutex<Option<Running>>);

struct Running {
    task_id: String,
    detach: oneshot::Sender<()>,
}

impl ShellSlot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Running>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Start `command` in `cwd`. A foreground command is watched by a spawned task (ops sent
/// after it are not held up); its end is answered with `Event::ShellOutput`.
pub(super) fn start(
    slot: &Arc<ShellSlot>,
    rt: &Arc<Runtime>,
    cwd: PathBuf,
    command: String,
    background: bool,
) {
    if !background && slot.lock().is_some() {
        rt.emit(Event::Error {
            message: "a `!` command is already running; wait for it, or press Ctrl-B to move it to the background first".to_owned(),
        });
        return;
    }
    let ctx = &rt.config.tool_ctx;
    let spec = TaskSpec {
        command: command.clone(),
        description: format!("! {command}"),
        cwd,
        env: kimi_tools::builtin::bash::child_env(ctx),
        foreground: !background,
        timeout: background_limit(rt),
        launcher: ctx.settings.launcher.clone(),
    };
    rt.commit(vec![rec::message(input_message(&command))]);
    let (info, output) = match ctx.tasks.spawn(spec) {
        Ok(started) => started,
        Err(err) => {
            let text = format!("cannot run the command: {err}");
            finish(rt, &command, "", &text, true);
            return;
        }
    };
    tracing::info!(task = %info.id, background, "user shell command started");
    if background {
        backgrounded(rt, &command, &info, "");
        return;
    }
    let (detach, detached) = oneshot::channel();
    *slot.lock() = Some(Running {
        task_id: info.id.clone(),
        detach,
    });
    rt.emit(Event::ShellStarted {
        command: command.clone(),
        task_id: info.id.clone(),
    });
    let slot = slot.clone();
    let rt = rt.clone();
    tokio::spawn(async move {
        watch(&rt, &command, &info.id, output, detached).await;
        slot.lock().take();
    });
}

/// Ctrl-B: detach the running foreground command.
pub(super) fn to_background(slot: &ShellSlot, rt: &Runtime) {
    match slot.lock().take() {
        Some(running) => {
            // The watcher may have seen the end at this very moment; then it answers instead.
            let _ = running.detach.send(());
            tracing::info!(task = %running.task_id, "user shell command sent to the background");
        }
        None => rt.emit(Event::Error {
            message: "no `!` command is running in the foreground".to_owned(),
        }),
    }
}

/// The time limit a command gets once in the background (`[background] bash_task_timeout_s`).
fn background_limit(rt: &Runtime) -> Option<Duration> {
    let limit = rt.config.tool_ctx.settings.bash_task_timeout_s;
    (limit > 0).then(|| Duration::from_secs(limit))
}

/// What a foreground command printed so far, per stream, bounded.
#[derive(Default)]
struct Collected {
    stdout: String,
    stderr: String,
    /// Some output was missed (a slow reader) or cut: the output file has all of it.
    incomplete: bool,
}

impl Collected {
    fn push(&mut self, chunk: OutputChunk) {
        let buf = if chunk.stderr {
            &mut self.stderr
        } else {
            &mut self.stdout
        };
        if buf.len() + chunk.text.len() > STREAM_LIMIT {
            self.incomplete = true;
            let mut end = STREAM_LIMIT.saturating_sub(buf.len()).min(chunk.text.len());
            while !chunk.text.is_char_boundary(end) {
                end -= 1;
            }
            buf.push_str(&chunk.text[..end]);
        } else {
            buf.push_str(&chunk.text);
        }
    }
}

async fn watch(
    rt: &Arc<Runtime>,
    command: &str,
    task_id: &str,
    mut output: broadcast::Receiver<OutputChunk>,
    mut detached: oneshot::Receiver<()>,
) {
    let tasks = rt.config.tool_ctx.tasks.clone();
    let mut collected = Collected::default();
    let wait = tasks.wait(task_id, FOREGROUND_LIMIT);
    tokio::pin!(wait);
    let mut open = true;
    let ended = loop {
        tokio::select! {
            chunk = output.recv(), if open => match chunk {
                Ok(chunk) => collected.push(chunk),
                Err(broadcast::error::RecvError::Lagged(_)) => collected.incomplete = true,
                Err(broadcast::error::RecvError::Closed) => open = false,
            },
            _ = &mut detached => break None,
            done = &mut wait => match done {
                Ok(Some(info)) => break Some(info),
                Ok(None) => {
                    let settings = &rt.config.tool_ctx.settings;
                    if settings.bash_auto_background_on_timeout && settings.background_enabled {
                        break None;
                    }
                    let reason = format!("Command killed by timeout ({} s)", FOREGROUND_LIMIT.as_secs());
                    break Some(tasks.stop(task_id, &reason).await.unwrap_or_else(|_| lost(task_id)));
                }
                Err(_) => break Some(lost(task_id)),
            },
        }
    };
    // The runner sends every chunk before it marks the task ended: take what is buffered.
    loop {
        match output.try_recv() {
            Ok(chunk) => collected.push(chunk),
            Err(broadcast::error::TryRecvError::Lagged(_)) => collected.incomplete = true,
            Err(_) => break,
        }
    }
    match ended {
        Some(info) => {
            tasks.mark_reported(task_id);
            if collected.incomplete {
                collected.stdout = tasks.tail_output(task_id, STREAM_LIMIT as u64).0;
                collected.stderr = format!(
                    "[output longer than {} KiB: the end is shown above; all of it is in {}]",
                    STREAM_LIMIT / 1024,
                    tasks.output_path(task_id).display()
                );
            }
            let is_error = info.status != TaskStatus::Completed;
            if is_error && collected.stdout.is_empty() && collected.stderr.is_empty() {
                collected.stderr = match (info.exit_code, &info.reason) {
                    (Some(code), _) => format!("Command failed with exit code {code}."),
                    (None, Some(reason)) => format!("Command failed: {reason}"),
                    (None, None) => format!("Command ended with status {}.", info.status.as_str()),
                };
            }
            finish(rt, command, &collected.stdout, &collected.stderr, is_error);
        }
        None => match tasks.move_to_background(task_id, background_limit(rt)) {
            Ok(info) => {
                let mut so_far = collected.stdout;
                so_far.push_str(&collected.stderr);
                backgrounded(rt, command, &info, &so_far);
            }
            Err(err) => rt.emit(Event::Error {
                message: format!("cannot move the command to the background: {err}"),
            }),
        },
    }
}

fn lost(task_id: &str) -> TaskInfo {
    TaskInfo {
        id: task_id.to_owned(),
        kind: "bash".to_owned(),
        description: String::new(),
        command: String::new(),
        cwd: PathBuf::new(),
        status: TaskStatus::Lost,
        pid: None,
        exit_code: None,
        started_at_ms: 0,
        ended_at_ms: None,
        timeout_s: None,
        reason: Some("the task vanished while it was being stopped".to_owned()),
        output_bytes: 0,
        foreground: false,
    }
}

/// Journal the output and tell the front ends.
fn finish(rt: &Runtime, command: &str, stdout: &str, stderr: &str, is_error: bool) {
    rt.commit(vec![rec::message(output_message(stdout, stderr, is_error))]);
    let mut output = stdout.to_owned();
    output.push_str(stderr);
    rt.emit(Event::ShellOutput {
        command: command.to_owned(),
        output,
        is_error,
    });
}

/// The command now runs as a background task: tell the front ends, and the model (a steer
/// into the running turn, else a turn of its own, as the reference does).
fn backgrounded(rt: &Runtime, command: &str, info: &TaskInfo, so_far: &str) {
    rt.emit(Event::ShellBackgrounded {
        command: command.to_owned(),
        task_id: info.id.clone(),
    });
    let pid = info
        .pid
        .map_or_else(|| "unknown".to_owned(), |p| p.to_string());
    let mut text = format!(
        "task_id: {}\npid: {pid}\ndescription: {}\nstatus: {}\ndetached_by_user: true\n\
         automatic_notification: true\n\
         next_step: The user moved this command to the background. You will be notified \
         automatically when it ends; do not wait for it, poll it or call TaskOutput on it, \
         go on with your work.\n\
         human_shell_hint: The task is listed in the background-task panel (/tasks).",
        info.id,
        info.description,
        info.status.as_str()
    );
    if !so_far.is_empty() {
        text.push_str("\n\nforeground_output:\n");
        text.push_str(so_far);
    }
    let origin = Origin::injection("shell_command_backgrounded");
    if !rt.inject(vec![ContentPart::text(text)], origin) {
        tracing::warn!(task = %info.id, "the session is shutting down; the model was not told about the backgrounded command");
    }
}

/// `&`, `<`, `>` and `"` as entities, so a command cannot close the tags around it.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn shell_message(text: String, phase: &str, is_error: bool) -> Message {
    let mut message = Message::new(Role::User, vec![ContentPart::text(text)]);
    message.origin = Some(Origin::Known(KnownOrigin::ShellCommand {
        phase: phase.to_owned(),
        is_error: is_error.then_some(true),
    }));
    message
}

/// The user's command as the model sees it.
pub fn input_message(command: &str) -> Message {
    shell_message(
        format!("<bash-input>\n{}\n</bash-input>", escape(command)),
        "input",
        false,
    )
}

/// Its output as the model sees it.
pub fn output_message(stdout: &str, stderr: &str, is_error: bool) -> Message {
    shell_message(
        format!(
            "<bash-stdout>{}</bash-stdout><bash-stderr>{}</bash-stderr>",
            escape(stdout),
            escape(stderr)
        ),
        "output",
        is_error,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn messages_have_the_reference_shape() {
        let input = input_message("echo \"<a>\" && ls");
        assert_eq!(
            serde_json::to_value(&input).unwrap()["content"][0]["text"],
            "<bash-input>\necho &quot;&lt;a&gt;&quot; &amp;&amp; ls\n</bash-input>"
        );
        assert_eq!(
            serde_json::to_value(input.origin.unwrap()).unwrap(),
            serde_json::json!({"kind": "shell_command", "phase": "input"})
        );
        let output = output_message("a\n", "b\n", true);
        assert_eq!(
            serde_json::to_value(&output).unwrap()["content"][0]["text"],
            "<bash-stdout>a\n</bash-stdout><bash-stderr>b\n</bash-stderr>"
        );
        assert_eq!(
            serde_json::to_value(output.origin.unwrap()).unwrap(),
            serde_json::json!({"kind": "shell_command", "phase": "output", "isError": true})
        );
    }

    #[test]
    fn collected_output_is_bounded_per_stream() {
        let mut c = Collected::default();
        c.push(OutputChunk {
            stderr: false,
            text: "é".repeat(STREAM_LIMIT),
        });
        c.push(OutputChunk {
            stderr: true,
            text: "err".into(),
        });
        assert!(c.incomplete);
        assert!(c.stdout.len() <= STREAM_LIMIT);
        assert_eq!(c.stderr, "err");
    }
}
