//! The one thread that touches log files. Callers hand it finished lines through a bounded
//! channel and never wait: when the disk is slow and the channel is full, lines are dropped and
//! counted (the count is written once the thread catches up), so the engine never blocks on
//! logging. A file that cannot be written is reported once on stderr (unless the front end
//! owns stdio, as ACP's editor does) and the program goes on without it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::time::Duration;

use super::rotate::RotatingFile;

/// Lines queued before new ones are dropped.
const QUEUE: usize = 16 * 1024;
/// Session files held open at once; beyond that the set is closed and reopened on demand.
const OPEN_SESSION_FILES: usize = 64;
/// How long exit waits for queued lines to reach disk.
const FLUSH_ON_EXIT: Duration = Duration::from_secs(2);
/// The file name inside `$KIMI_RS_HOME/logs/` and `<session>/logs/`.
pub const LOG_FILE: &str = "kimi-rs.log";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_bytes: u64,
    pub files: usize,
}

enum Message {
    /// A line for the global log and, when `session` is set, for that session directory's.
    Line {
        session: Option<Arc<PathBuf>>,
        line: String,
    },
    Flush(SyncSender<()>),
}

/// Where failures to write go: once, on stderr, unless stderr must stay quiet.
struct Notices {
    enabled: bool,
    reported: AtomicBool,
}

impl Notices {
    fn report(&self, path: &Path, err: &std::io::Error) {
        if self.enabled && !self.reported.swap(true, Ordering::Relaxed) {
            eprintln!(
                "kimi-rs: cannot write the log file {}: {err}; continuing without it (set KIMI_LOG_LEVEL=off to stop trying)",
                path.display()
            );
        }
    }
}

/// The sending side, shared by the tracing layer.
pub struct LogWriter {
    tx: SyncSender<Message>,
    dropped: Arc<AtomicU64>,
}

impl LogWriter {
    /// Starts the writer thread. The global log is opened here, so an unwritable home is
    /// reported before a front end takes over the terminal.
    pub fn start(
        global_path: &Path,
        global: Limits,
        session: Limits,
        stderr_notices: bool,
    ) -> std::io::Result<(LogWriter, FlushGuard)> {
        let notices = Notices {
            enabled: stderr_notices,
            reported: AtomicBool::new(false),
        };
        let global_file = match RotatingFile::open(global_path, global.max_bytes, global.files) {
            Ok(file) => Some(file),
            Err(err) => {
                notices.report(global_path, &err);
                None
            }
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let worker = Worker {
            global_path: global_path.to_path_buf(),
            global: global_file,
            session_limits: session,
            sessions: HashMap::new(),
            failed: HashSet::new(),
            notices,
            dropped: dropped.clone(),
        };
        std::thread::Builder::new()
            .name("kimi-rs-log".to_owned())
            .spawn(move || worker.run(&rx))?;
        let guard = FlushGuard { tx: tx.clone() };
        Ok((LogWriter { tx, dropped }, guard))
    }

    /// Queues a line (newline included) without waiting.
    pub fn send(&self, session: Option<Arc<PathBuf>>, line: String) {
        match self.tx.try_send(Message::Line { session, line }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            // The thread is gone (exit in progress): nothing left to write to.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// Held by `main`: on drop, waits (briefly) until queued lines are on disk.
pub struct FlushGuard {
    tx: SyncSender<Message>,
}

impl FlushGuard {
    pub fn flush(&self) {
        let (ack_tx, ack_rx) = std::sync::mpsc::sync_channel(1);
        if self.tx.send(Message::Flush(ack_tx)).is_ok() {
            // A disk that hangs must not keep the process from exiting.
            let _ = ack_rx.recv_timeout(FLUSH_ON_EXIT);
        }
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        self.flush();
    }
}

struct Worker {
    global_path: PathBuf,
    global: Option<RotatingFile>,
    session_limits: Limits,
    sessions: HashMap<Arc<PathBuf>, RotatingFile>,
    /// Session directories whose log could not be opened: not retried for every line.
    failed: HashSet<Arc<PathBuf>>,
    notices: Notices,
    dropped: Arc<AtomicU64>,
}

impl Worker {
    fn run(mut self, rx: &Receiver<Message>) {
        loop {
            let message = match rx.try_recv() {
                Ok(message) => message,
                Err(TryRecvError::Empty) => {
                    // Caught up: put what was written on disk, then wait for more.
                    self.flush_all();
                    match rx.recv_timeout(Duration::from_secs(3600)) {
                        Ok(message) => message,
                        Err(RecvTimeoutError::Timeout) => continue,
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                Err(TryRecvError::Disconnected) => break,
            };
            match message {
                Message::Line { session, line } => {
                    self.report_dropped();
                    self.write(session, line.as_bytes());
                }
                Message::Flush(ack) => {
                    self.flush_all();
                    let _ = ack.try_send(());
                }
            }
        }
        self.flush_all();
    }

    fn report_dropped(&mut self) {
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let line = format!(
                "{} WARN  kimi_cli::logging: {dropped} log lines were dropped because the disk was too slow\n",
                super::layer::timestamp()
            );
            self.write(None, line.as_bytes());
        }
    }

    fn write(&mut self, session: Option<Arc<PathBuf>>, line: &[u8]) {
        if let Some(global) = &mut self.global
            && let Err(err) = global.write_line(line)
        {
            self.notices.report(&self.global_path, &err);
        }
        let Some(dir) = session else { return };
        if self.failed.contains(&dir) {
            return;
        }
        if !self.sessions.contains_key(&dir) {
            if self.sessions.len() >= OPEN_SESSION_FILES {
                self.flush_all();
                self.sessions.clear();
            }
            let path = dir.join("logs").join(LOG_FILE);
            let limits = self.session_limits;
            match RotatingFile::open(&path, limits.max_bytes, limits.files) {
                Ok(file) => {
                    self.sessions.insert(dir.clone(), file);
                }
                Err(err) => {
                    self.notices.report(&path, &err);
                    self.failed.insert(dir);
                    return;
                }
            }
        }
        if let Some(file) = self.sessions.get_mut(&dir)
            && let Err(err) = file.write_line(line)
        {
            self.notices.report(&dir.join("logs").join(LOG_FILE), &err);
        }
    }

    fn flush_all(&mut self) {
        if let Some(global) = &mut self.global {
            let _ = global.flush();
        }
        for file in self.sessions.values_mut() {
            let _ = file.flush();
        }
    }
}
