//! The `kimi-rs` binary on a pseudo-terminal, read back through a vt100 emulator (the harness
//! of `tui_e2e.rs`, shared by the newer terminal tests), keeping the raw output as well.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{LocalModes, Winsize, tcgetattr, tcsetwinsize};

/// The trampoline test's variable (see `exec_in_new_session` in the including test file).
pub const EXEC_ENV: &str = "KIMI_TUI_PTY_EXEC";
pub const ROWS: u16 = 30;
pub const COLS: u16 = 100;
/// How long one wait on the screen may take before the test fails with the screen shown.
pub const WAIT: Duration = Duration::from_secs(20);

/// The binary on a fresh pseudo-terminal, and the emulator that reads its screen.
pub struct Session {
    pub child: Child,
    parser: vt100::Parser,
    cols: u16,
    master: File,
    /// The terminal side, kept to read its modes after the child exits.
    slave: File,
    output: mpsc::Receiver<Vec<u8>>,
    /// Every byte the child wrote, for escapes the emulator does not keep (OSC 9 / 777).
    pub raw: Vec<u8>,
}

impl Session {
    pub fn spawn(work: &Path, home: &Path, base_url: &str, args: &[&str]) -> Self {
        Self::spawn_sized(work, home, base_url, args, ROWS, COLS)
    }

    pub fn spawn_sized(
        work: &Path,
        home: &Path,
        base_url: &str,
        args: &[&str],
        rows: u16,
        cols: u16,
    ) -> Self {
        Self::spawn_env(work, home, base_url, args, rows, cols, &[])
    }

    /// Like `spawn_sized`, with extra variables in the child's environment.
    pub fn spawn_env(
        work: &Path,
        home: &Path,
        base_url: &str,
        args: &[&str],
        rows: u16,
        cols: u16,
        env: &[(&str, &str)],
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
        tcsetwinsize(
            &master,
            Winsize {
                ws_row: rows,
                ws_col: cols,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )
        .unwrap();
        // The child is this test binary re-run as a trampoline (see `exec_in_new_session`),
        // which leaves the test's controlling terminal and then becomes `kimi-rs`.
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "exec_in_new_session",
            "--exact",
            "--nocapture",
            "--quiet",
            "--test-threads=1",
        ])
        .env(EXEC_ENV, serde_json::to_string(args).unwrap())
        .current_dir(work)
        .env("KIMI_RS_HOME", home)
        .env("HOME", home)
        .env("KIMI_MODEL_NAME", "m")
        .env("KIMI_MODEL_API_KEY", "k")
        .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
        .env("KIMI_MODEL_BASE_URL", format!("{base_url}/v1"))
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("KIMI_RS_TUI_FULL_SCREEN")
        .env_remove("KIMI_CODE_TUI_FULL_SCREEN")
        .envs(env.iter().copied())
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave.try_clone().unwrap()));
        let child = cmd.spawn().unwrap();
        let master = File::from(master);
        let mut reader = master.try_clone().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            // Ends with EIO once the child and every other holder of the terminal side are gone.
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
                1000,
            ),
            cols,
            master,
            slave,
            output: rx,
            raw: Vec::new(),
        }
    }

    /// Everything in scrollback and on screen, oldest first.
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

    /// Feeds output to the emulator and answers the cursor-position and device-attribute
    /// queries crossterm and ratatui make.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.raw.extend_from_slice(chunk);
        let mut rest = chunk;
        while let Some(i) = find(rest, b"\x1b[6n") {
            self.parser.process(&rest[..i]);
            let (r, c) = self.parser.screen().cursor_position();
            self.send(format!("\x1b[{};{}R", r + 1, c + 1).as_bytes());
            rest = &rest[i + 4..];
        }
        self.parser.process(rest);
        if find(chunk, b"\x1b[c").is_some() {
            // Primary device attributes: no keyboard-enhancement support.
            self.send(b"\x1b[?1;2c");
        }
    }

    /// Pumps output until `done` holds for the screen text; fails with the screen after
    /// [`WAIT`] or when the child exits first.
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
                        self.drain();
                        panic!(
                            "kimi-rs exited ({status}) while waiting for {what}; screen:\n{}",
                            self.text()
                        );
                    }
                }
                Err(_) => panic!("timed out waiting for {what}; screen:\n{}", self.text()),
            }
        }
    }

    /// Pumps output until `done` holds for the raw bytes written so far.
    pub fn wait_raw(&mut self, what: &str, done: impl Fn(&[u8]) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done(&self.raw) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}; output:\n{}",
                String::from_utf8_lossy(&self.raw)
            );
            if let Ok(chunk) = self
                .output
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                self.feed(&chunk);
            }
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        if let Err(err) = self.master.write_all(bytes) {
            panic!("cannot write to the pty: {err}");
        }
    }

    /// Waits for the child to exit (pumping its output meanwhile) and returns its status and
    /// the final screen text.
    pub fn wait_exit(&mut self, what: &str) -> (ExitStatus, String) {
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("kimi-rs did not exit on {what}; screen:\n{}", self.text());
            }
            if let Ok(chunk) = self.output.recv_timeout(Duration::from_millis(50)) {
                self.feed(&chunk);
            }
        };
        self.drain();
        (status, self.text())
    }

    /// Reads what the child wrote before it exited. The reader thread only stops at EIO,
    /// which needs our own copy of the terminal side closed, so drain until output stops.
    pub fn drain(&mut self) {
        while let Ok(chunk) = self.output.recv_timeout(Duration::from_millis(200)) {
            self.feed(&chunk);
        }
    }

    /// The terminal is back in cooked mode: line editing and echo on.
    pub fn assert_restored(&self, text: &str) {
        let modes = tcgetattr(&self.slave).unwrap().local_modes;
        assert!(
            modes.contains(LocalModes::ICANON | LocalModes::ECHO),
            "raw mode still on after exit: {modes:?}\n{text}"
        );
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

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The body of each including file's `exec_in_new_session` test: with [`EXEC_ENV`] set (by
/// [`Session::spawn`]), start a new session so the pseudo-terminal on stdin/stdout is the only
/// terminal the UI can find (crossterm asks `/dev/tty` for the size), then become `bin` with
/// the JSON-listed arguments. In a normal test run it does nothing.
pub fn trampoline(bin: &str) {
    let Some(args) = std::env::var_os(EXEC_ENV) else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(args.to_str().unwrap()).unwrap();
    rustix::process::setsid().unwrap();
    let err = Command::new(bin).args(args).env_remove(EXEC_ENV).exec();
    panic!("cannot run kimi-rs: {err}");
}
