//! Interactive terminals (PTYs) for a user, not for the model: a shell on a pseudo-terminal,
//! opened on whatever environment a session is bound to. [`open_local`] is the in-process
//! implementation; the executor (`kimi-rs exec-server`) calls the same function on the target,
//! so a terminal over SSH is the same code as one here.
//!
//! Built on `portable-pty` (wezterm's): making the shell a session leader with the new
//! terminal as its controlling terminal takes an `unsafe` `pre_exec`, and this workspace denies
//! unsafe code, so that step lives in a well-kept crate rather than here (rustix, already a
//! dependency, has the pty calls but would need exactly that `pre_exec`). The child is still
//! stopped the way Bash's processes are: SIGHUP, then the group's SIGTERM/SIGKILL.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use portable_pty::{CommandBuilder, MasterPty, PtySize};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::environment::{ProcessControl, ProcessEnd, ProcessOutput, SpawnedProcess};

/// Columns and rows of a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalSize {
    pub cols: u16,
    pub rows: u16,
}

impl TerminalSize {
    /// A size a terminal can have (1..=1000 each way), or why not.
    pub fn checked(cols: u64, rows: u64) -> Result<Self, String> {
        let fit = |n: u64, what: &str| {
            u16::try_from(n)
                .ok()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| format!("{what} must be between 1 and 1000, got {n}"))
        };
        Ok(Self {
            cols: fit(cols, "cols")?,
            rows: fit(rows, "rows")?,
        })
    }

    fn pty(self) -> PtySize {
        PtySize {
            rows: self.rows,
            cols: self.cols,
            pixel_width: 0,
            pixel_height: 0,
        }
    }
}

/// A terminal to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalSpec {
    pub cwd: PathBuf,
    /// Variables set on top of the target's own environment (`TERM` defaults to
    /// `xterm-256color`).
    pub env: Vec<(String, String)>,
    pub size: TerminalSize,
    /// The program to run; `None` for the target's shell.
    pub shell: Option<String>,
}

/// Typing into a terminal and resizing it. Writes keep their order.
pub trait TerminalInput: Send + Sync {
    fn write(&self, data: &[u8]) -> Result<(), String>;
    fn resize(&self, size: TerminalSize) -> Result<(), String>;
}

/// An open terminal: the shell's process (output as it arrives, wait, kill of its process
/// group) and its input.
pub struct OpenedTerminal {
    pub process: SpawnedProcess,
    pub input: Arc<dyn TerminalInput>,
}

fn failed(what: &str, e: impl std::fmt::Display) -> String {
    format!("cannot open a terminal: {what}: {e}")
}

/// A shell on a new pseudo-terminal on this machine, as the leader of its own session (and
/// process group), with the terminal as its controlling terminal. Must be called inside a Tokio
/// runtime.
pub fn open_local(spec: &TerminalSpec) -> Result<OpenedTerminal, String> {
    let pair = portable_pty::native_pty_system()
        .openpty(spec.size.pty())
        .map_err(|e| failed("openpty", e))?;
    let shell = spec
        .shell
        .clone()
        .unwrap_or_else(|| crate::environment::shell().to_owned());
    let mut cmd = CommandBuilder::new(&shell);
    cmd.cwd(&spec.cwd);
    cmd.env("TERM", "xterm-256color");
    for (key, value) in &spec.env {
        cmd.env(key, value);
    }
    let mut child = pair
        .slave
        .spawn_command(cmd)
        .map_err(|e| format!("cannot start `{shell}` in {}: {e}", spec.cwd.display()))?;
    // This side's copy of the terminal must close now, or the output would never end when the
    // shell does.
    drop(pair.slave);
    let pid = child.process_id();
    let mut reader = pair
        .master
        .try_clone_reader()
        .map_err(|e| failed("read side", e))?;
    let mut writer = pair
        .master
        .take_writer()
        .map_err(|e| failed("write side", e))?;
    let (out_tx, out_rx) = mpsc::channel::<(bool, Vec<u8>)>(64);
    std::thread::Builder::new()
        .name("kimi-pty-reader".to_owned())
        .spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            // EIO once every process holding the terminal has gone: the output has ended.
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                if out_tx.blocking_send((false, buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        })
        .map_err(|e| failed("start the reader thread", e))?;
    let (in_tx, in_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::Builder::new()
        .name("kimi-pty-writer".to_owned())
        .spawn(move || {
            // A blocking write waits while the program is not reading; on its own thread that
            // holds up nothing but this terminal's later input, which must wait anyway.
            while let Ok(data) = in_rx.recv() {
                if writer
                    .write_all(&data)
                    .and_then(|()| writer.flush())
                    .is_err()
                {
                    return;
                }
            }
        })
        .map_err(|e| failed("start the writer thread", e))?;
    // The child's wait blocks: a thread of its own reaps it and reports the exit.
    let (exit_tx, exit_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("kimi-pty-wait".to_owned())
        .spawn(move || {
            let end = match child.wait() {
                Ok(status) if status.signal().is_some() => ProcessEnd::Exited(None),
                Ok(status) => ProcessEnd::Exited(i32::try_from(status.exit_code()).ok()),
                Err(e) => ProcessEnd::Lost(format!("cannot wait for the terminal's shell: {e}")),
            };
            let _ = exit_tx.send(end);
        })
        .map_err(|e| failed("start the wait thread", e))?;
    Ok(OpenedTerminal {
        process: SpawnedProcess {
            pid,
            output: ProcessOutput::Bounded(out_rx),
            control: Box::new(LocalTerminal {
                pid,
                exit: Some(exit_rx),
                ended: None,
            }),
        },
        input: Arc::new(LocalInput {
            master: Mutex::new(pair.master),
            input: Mutex::new(in_tx),
        }),
    })
}

struct LocalInput {
    master: Mutex<Box<dyn MasterPty + Send>>,
    input: Mutex<std::sync::mpsc::Sender<Vec<u8>>>,
}

impl TerminalInput for LocalInput {
    fn write(&self, data: &[u8]) -> Result<(), String> {
        self.input
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(data.to_vec())
            .map_err(|_| "the terminal has closed".to_owned())
    }

    fn resize(&self, size: TerminalSize) -> Result<(), String> {
        self.master
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .resize(size.pty())
            .map_err(|e| format!("cannot resize the terminal: {e}"))
    }
}

struct LocalTerminal {
    pid: Option<u32>,
    exit: Option<oneshot::Receiver<ProcessEnd>>,
    ended: Option<ProcessEnd>,
}

impl LocalTerminal {
    async fn exited(&mut self) -> ProcessEnd {
        if let Some(end) = &self.ended {
            return end.clone();
        }
        let end = match self.exit.as_mut() {
            Some(rx) => rx.await.unwrap_or_else(|_| {
                ProcessEnd::Lost("the terminal's wait thread ended".to_owned())
            }),
            None => ProcessEnd::Exited(None),
        };
        self.exit = None;
        self.ended = Some(end.clone());
        end
    }
}

#[async_trait::async_trait]
impl ProcessControl for LocalTerminal {
    async fn wait(&mut self) -> ProcessEnd {
        self.exited().await
    }

    async fn kill_group(&mut self, grace: Duration) -> ProcessEnd {
        let Some(pgid) = self.pid else {
            return self.exited().await;
        };
        if self.ended.is_none() {
            // What closing a terminal window does: SIGHUP, which an interactive shell passes
            // on to its jobs (it ignores the SIGTERM that follows; SIGKILL after the grace is
            // the backstop). The shell leads its own session, so its pid is its group's id.
            if let Some(group) = rustix::process::Pid::from_raw(pgid.cast_signed()) {
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::HUP);
            }
            let (_, end) = tokio::join!(crate::tasks::kill_tree(pgid, grace), self.exited());
            return end;
        }
        self.exited().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_until(output: &mut ProcessOutput, seen: &mut Vec<u8>, needle: &str) {
        while !String::from_utf8_lossy(seen).contains(needle) {
            match output.recv().await {
                Some((_, data)) => seen.extend(data),
                None => panic!(
                    "output ended before {needle:?}: {:?}",
                    String::from_utf8_lossy(seen)
                ),
            }
        }
    }

    #[tokio::test]
    async fn a_local_terminal_runs_a_shell_with_its_size_and_ends_with_its_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let spec = TerminalSpec {
            cwd: dir.path().to_owned(),
            env: vec![("KIMI_PTY_TEST".to_owned(), "marked".to_owned())],
            size: TerminalSize { cols: 91, rows: 17 },
            shell: Some("/bin/sh".to_owned()),
        };
        let mut term = open_local(&spec).unwrap();
        let mut seen = Vec::new();
        term.input
            .write(b"echo \"[$KIMI_PTY_TEST $(pwd) $(stty size) $(tty)]\"\n")
            .unwrap();
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        read_until(
            &mut term.process.output,
            &mut seen,
            &format!("[marked {} 17 91 /dev/pts/", cwd.display()),
        )
        .await;
        term.input
            .resize(TerminalSize { cols: 40, rows: 5 })
            .unwrap();
        term.input.write(b"echo \"<$(stty size)>\"\n").unwrap();
        read_until(&mut term.process.output, &mut seen, "<5 40>").await;
        term.input.write(b"exit 7\n").unwrap();
        assert_eq!(
            term.process.control.wait().await,
            ProcessEnd::Exited(Some(7))
        );
    }

    #[tokio::test]
    async fn closing_a_terminal_ends_the_shell_and_the_job_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let spec = TerminalSpec {
            cwd: dir.path().to_owned(),
            env: Vec::new(),
            size: TerminalSize { cols: 80, rows: 24 },
            shell: None,
        };
        let mut term = open_local(&spec).unwrap();
        let pidfile = dir.path().join("job.pid");
        term.input
            .write(format!("sleep 300 & echo $! > {}; wait\n", pidfile.display()).as_bytes())
            .unwrap();
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if std::fs::read_to_string(&pidfile).is_ok_and(|pid| !pid.trim().is_empty()) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the job's pid never reached {}; terminal output: {}",
                pidfile.display(),
                String::from_utf8_lossy(&seen)
            );
            // Reading keeps the shell from blocking on a full terminal. The bound matters: the
            // shell may have created the file but not yet written it when its output stops
            // (it is in `wait`), and an unbounded read would then wait forever.
            if let Ok(Some((_, data))) =
                tokio::time::timeout(Duration::from_millis(50), term.process.output.recv()).await
            {
                seen.extend(data);
            }
        }
        let job: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let end = term
            .process
            .control
            .kill_group(Duration::from_millis(500))
            .await;
        assert!(matches!(end, ProcessEnd::Exited(_)), "{end:?}");
        // The job got the hangup the shell passed on: gone, or a zombie nobody reaped yet.
        let stat = format!("/proc/{job}/stat");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match std::fs::read_to_string(&stat) {
                Err(_) => break,
                Ok(s)
                    if s.rsplit(')')
                        .next()
                        .is_some_and(|rest| rest.trim_start().starts_with('Z')) =>
                {
                    break;
                }
                Ok(_) => {}
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "job {job} still runs after close"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
