//! `kimi-rs` on a fresh pseudo-terminal, read back through a vt100 emulator (as in
//! `tui_e2e.rs`), for test files that drive the interactive UI. A test binary that uses it
//! includes it with `#[path = "common/pty.rs"] mod pty;` and has the trampoline test
//! [`exec_in_new_session`]-style function call [`trampoline`].
#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{Winsize, tcsetwinsize};

/// The variable that carries the arguments to the trampoline.
pub const EXEC_ENV: &str = "KIMI_PTY_TEST_EXEC";
const WAIT: Duration = Duration::from_secs(30);

pub struct Session {
    child: Child,
    parser: vt100::Parser,
    cols: u16,
    master: File,
    _slave: File,
    output: mpsc::Receiver<Vec<u8>>,
}

impl Session {
    /// `kimi-rs args` in `work` with the home and the model at `base_url`, on a terminal of
    /// `rows` × `cols`. `trampoline_test` is the name of the test that calls [`trampoline`].
    pub fn spawn(
        trampoline_test: &str,
        work: &Path,
        home: &Path,
        base_url: &str,
        args: &[&str],
        (rows, cols): (u16, u16),
    ) -> Self {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        let size = Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        tcsetwinsize(&master, size).unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([trampoline_test, "--exact", "--nocapture", "--quiet"])
            .env(EXEC_ENV, serde_json::to_string(args).unwrap())
            .current_dir(work)
            .env("KIMI_RS_HOME", home)
            .env("HOME", home)
            .env("KIMI_MODEL_NAME", "m")
            .env("KIMI_MODEL_API_KEY", "k")
            .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
            .env("KIMI_MODEL_BASE_URL", format!("{base_url}/v1"))
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .env("TERM", "xterm-256color")
            .env_remove("KIMI_RS_TUI_FULL_SCREEN")
            .env_remove("KIMI_CODE_TUI_FULL_SCREEN")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave.try_clone().unwrap()))
            .spawn()
            .unwrap();
        let master = File::from(master);
        let mut reader = master.try_clone().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Session {
            child,
            parser: vt100::Parser::new(
                NonZeroU16::new(rows).unwrap(),
                NonZeroU16::new(cols).unwrap(),
                2000,
            ),
            cols,
            master,
            _slave: slave,
            output: rx,
        }
    }

    /// Scrollback and screen, oldest first.
    pub fn text(&mut self) -> String {
        let screen = self.parser.screen().clone();
        let mut depth = 0;
        loop {
            self.parser.screen_mut().set_scrollback(depth + 1);
            if self.parser.screen().scrollback() == depth {
                break;
            }
            depth += 1;
        }
        let mut rows = Vec::new();
        for k in (1..=depth).rev() {
            self.parser.screen_mut().set_scrollback(k);
            rows.push(
                self.parser
                    .screen()
                    .rows(0, self.cols)
                    .next()
                    .unwrap_or_default(),
            );
        }
        self.parser.screen_mut().set_scrollback(0);
        rows.extend(screen.rows(0, self.cols));
        rows.join("\n")
    }

    /// Feeds output to the emulator, answering the cursor-position and device-attribute
    /// queries crossterm makes.
    fn feed(&mut self, chunk: &[u8]) {
        let mut rest = chunk;
        while let Some(i) = find(rest, b"\x1b[6n") {
            self.parser.process(&rest[..i]);
            let (r, c) = self.parser.screen().cursor_position();
            self.send(format!("\x1b[{};{}R", r + 1, c + 1).as_bytes());
            rest = &rest[i + 4..];
        }
        self.parser.process(rest);
        if find(chunk, b"\x1b[c").is_some() {
            self.send(b"\x1b[?1;2c");
        }
    }

    /// Pumps output until `done` holds for the screen text; fails with the screen otherwise.
    pub fn wait_for(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let text = self.text();
            if done(&text) {
                return text;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self
                .output
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(chunk) => self.feed(&chunk),
                Err(mpsc::RecvTimeoutError::Timeout) if !left.is_zero() => {
                    if let Some(status) = self.child.try_wait().unwrap() {
                        panic!(
                            "kimi-rs exited ({status}) waiting for {what}:\n{}",
                            self.text()
                        );
                    }
                }
                Err(_) => panic!("timed out waiting for {what}; screen:\n{}", self.text()),
            }
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The trampoline's body: with [`EXEC_ENV`] set (by [`Session::spawn`]), start a new session
/// so the pseudo-terminal is the only terminal the UI finds, then become `kimi-rs`. Does
/// nothing in a normal test run.
pub fn trampoline(bin: &str) {
    let Some(args) = std::env::var_os(EXEC_ENV) else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(args.to_str().unwrap()).unwrap();
    rustix::process::setsid().unwrap();
    let err = Command::new(bin).args(args).env_remove(EXEC_ENV).exec();
    panic!("cannot run kimi-rs: {err}");
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
