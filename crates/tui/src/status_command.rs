//! The footer's status-line command (`tui.toml [status_line] command`, surface.md §4.3): run
//! through `sh -c` with a JSON snapshot of the session on stdin and `KIMI_CODE_STATUS_LINE=1`
//! (and `KIMI_RS_STATUS_LINE=1`) in its environment; the first line it prints replaces the
//! footer's items. Each run may take at most 300 ms (then its process group is killed) and
//! runs start at most once per second, on their own thread, so drawing never waits for one.
//! A failed run keeps the last good line (or the built-in items) and is logged.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long one run may take.
pub const TIMEOUT: Duration = Duration::from_millis(300);
/// The shortest time between two runs.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// Output beyond this is not read (only the first line counts).
const MAX_CAPTURE: usize = 64 * 1024;

/// Run `command` once with `payload` on stdin: its first output line, or why there is none.
pub fn run_once(command: &str, payload: &str, timeout: Duration) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .env("KIMI_CODE_STATUS_LINE", "1")
        .env("KIMI_RS_STATUS_LINE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Its own process group, so a timeout stops everything it started.
        .process_group(0)
        .spawn()
        .map_err(|err| format!("cannot start it: {err}"))?;
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its input (`echo …`) closes the pipe: not an error.
        let _ = stdin.write_all(payload.as_bytes());
    }
    let Some(stdout) = child.stdout.take() else {
        return Err("its output could not be read".to_owned());
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = stdout.take(MAX_CAPTURE as u64).read_to_end(&mut out);
        let _ = tx.send(read.map(|_| out));
    });
    let kill = || {
        if let Some(pid) = rustix::process::Pid::from_raw(pid.cast_signed()) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    };
    let out = match rx.recv_timeout(timeout) {
        Ok(Ok(out)) => out,
        Ok(Err(err)) => {
            kill();
            let _ = child.wait();
            return Err(format!("reading its output failed: {err}"));
        }
        Err(_) => {
            kill();
            let _ = child.wait();
            return Err(format!("it took longer than {} ms", timeout.as_millis()));
        }
    };
    // Its output is closed, so it is ending; one that lingers (it closed stdout but keeps
    // running) is stopped at the deadline like a slow one.
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                kill();
                let _ = child.wait();
                return Err(format!("it took longer than {} ms", timeout.as_millis()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(err) => break Err(err),
        }
    }
    .map_err(|err| format!("waiting for it failed: {err}"))?;
    if !status.success() {
        return Err(format!("it exited with {status}"));
    }
    let text = String::from_utf8_lossy(&out);
    let first = text.lines().next().unwrap_or_default().trim_end();
    if first.is_empty() {
        return Err("it printed nothing".to_owned());
    }
    Ok(first.to_owned())
}

#[derive(Default)]
struct State {
    line: Option<String>,
    /// Bumped whenever `line` changes, so the UI knows to draw again.
    generation: u64,
    running: bool,
    last_start: Option<Instant>,
    /// The last failure, logged once until the command succeeds again.
    last_error: Option<String>,
}

/// The configured command with its last good line; cheap to clone.
#[derive(Clone)]
pub struct StatusCommand {
    command: Arc<str>,
    state: Arc<Mutex<State>>,
    /// Signalled when a run ends.
    ended: Arc<Condvar>,
}

impl std::fmt::Debug for StatusCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusCommand")
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

impl StatusCommand {
    pub fn new(command: &str) -> StatusCommand {
        StatusCommand {
            command: command.into(),
            state: Arc::default(),
            ended: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The last line the command printed (`None` before its first good run).
    pub fn line(&self) -> Option<String> {
        self.state().line.clone()
    }

    /// Wait until no run is in progress, at most `limit`; whether it is idle.
    pub fn wait_idle(&self, limit: Duration) -> bool {
        let state = self.state();
        let (state, _) = self
            .ended
            .wait_timeout_while(state, limit, |s| s.running)
            .unwrap_or_else(PoisonError::into_inner);
        !state.running
    }

    /// Changes whenever the line does.
    pub fn generation(&self) -> u64 {
        self.state().generation
    }

    /// Whether a run may start at `now`: none is running and the last started at least
    /// [`INTERVAL`] ago.
    pub fn due(&self, now: Instant) -> bool {
        let state = self.state();
        !state.running
            && state
                .last_start
                .is_none_or(|t| now.saturating_duration_since(t) >= INTERVAL)
    }

    /// Run with `payload` (the session snapshot as JSON) unless a run is not [`due`]: the
    /// UI asks on every tick with the state as it is then, so a skipped snapshot is never
    /// the last word.
    ///
    /// [`due`]: StatusCommand::due
    pub fn refresh(&self, payload: String, now: Instant) {
        let mut state = self.state();
        let due = !state.running
            && state
                .last_start
                .is_none_or(|t| now.saturating_duration_since(t) >= INTERVAL);
        if !due {
            return;
        }
        state.running = true;
        state.last_start = Some(now);
        drop(state);
        let this = self.clone();
        std::thread::spawn(move || {
            let result = run_once(&this.command, &payload, TIMEOUT);
            let mut state = this.state();
            state.running = false;
            match result {
                Ok(line) => {
                    if state.line.as_deref() != Some(&line) {
                        state.generation += 1;
                    }
                    state.line = Some(line);
                    state.last_error = None;
                }
                Err(why) => {
                    if state.last_error.as_deref() != Some(&why) {
                        tracing::warn!(
                            "tui.toml [status_line] command `{}` gave no line: {why}",
                            this.command
                        );
                    }
                    state.last_error = Some(why);
                }
            }
            drop(state);
            this.ended.notify_all();
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_first_line_is_the_status_and_the_snapshot_arrives_on_stdin() {
        assert_eq!(
            run_once("echo one; echo two", "{}", Duration::from_secs(5)),
            Ok("one".to_owned())
        );
        assert_eq!(
            run_once(
                "read -r line; echo \"got $line $KIMI_CODE_STATUS_LINE\"",
                "{\"model\":\"m\"}\n",
                Duration::from_secs(5)
            ),
            Ok("got {\"model\":\"m\"} 1".to_owned())
        );
    }

    #[test]
    fn failures_give_no_line_and_say_why() {
        let failed = run_once("echo partial; exit 3", "", Duration::from_secs(5)).unwrap_err();
        assert!(failed.contains("exit"), "{failed}");
        let empty = run_once("true", "", Duration::from_secs(5)).unwrap_err();
        assert!(empty.contains("nothing"), "{empty}");
    }

    #[test]
    fn a_slow_command_is_stopped_at_the_deadline() {
        let started = Instant::now();
        let slow = run_once("sleep 30; echo late", "", TIMEOUT).unwrap_err();
        assert!(slow.contains("300 ms"), "{slow}");
        // Killed with its process group, not waited for.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn runs_are_at_most_once_per_interval() {
        let cmd = StatusCommand::new("read -r n; echo \"run $n\"");
        let t0 = Instant::now();
        cmd.refresh("1\n".to_owned(), t0);
        assert!(
            cmd.wait_idle(Duration::from_secs(10)),
            "the first run never finished"
        );
        assert_eq!(cmd.line().as_deref(), Some("run 1"));
        // Within the interval nothing runs; after it the next snapshot does.
        assert!(!cmd.due(t0 + Duration::from_millis(500)));
        cmd.refresh("2\n".to_owned(), t0 + Duration::from_millis(500));
        assert!(cmd.due(t0 + INTERVAL));
        cmd.refresh("3\n".to_owned(), t0 + INTERVAL);
        assert!(
            cmd.wait_idle(Duration::from_secs(10)),
            "the second run never finished"
        );
        assert_eq!(cmd.line().as_deref(), Some("run 3"));
    }
}
