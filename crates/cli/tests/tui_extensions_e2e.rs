//! Skills and MCP servers in the interactive UI, end to end: the real `kimi-rs` binary on a
//! pseudo-terminal (read back through a vt100 emulator) with a skill and two MCP servers in
//! `$KIMI_RS_HOME` — the fixture server and one that cannot start. The failed server's warning
//! shows in the transcript, `/` completion offers the skill, and `/mcp` lists both servers.
#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers outside #[test] fns count as tests here

mod common;

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

const EXEC_ENV: &str = "KIMI_TUI_EXT_E2E_EXEC";
const ROWS: u16 = 40;
const COLS: u16 = 110;
/// How long one wait on the screen may take before the test fails with the screen shown.
const WAIT: Duration = Duration::from_secs(20);

/// The binary on a fresh pseudo-terminal, and the emulator that reads its screen.
struct Session {
    child: Child,
    parser: vt100::Parser,
    master: File,
    output: mpsc::Receiver<Vec<u8>>,
}

impl Session {
    fn spawn(work: &Path, home: &Path) -> Self {
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
            ws_row: ROWS,
            ws_col: COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        tcsetwinsize(&master, size).unwrap();
        // This test binary re-run as a trampoline (see `exec_in_new_session`).
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "exec_in_new_session",
            "--exact",
            "--nocapture",
            "--quiet",
            "--test-threads=1",
        ])
        .env(EXEC_ENV, "1")
        .current_dir(work)
        .env("KIMI_RS_HOME", home)
        .env("HOME", home)
        .env("KIMI_MODEL_NAME", "m")
        .env("KIMI_MODEL_API_KEY", "k")
        .env("KIMI_MODEL_PROVIDER_TYPE", "openai")
        // Never asked: the test sends no prompt to the model.
        .env("KIMI_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("KIMI_RS_TUI_FULL_SCREEN")
        .env_remove("KIMI_CODE_TUI_FULL_SCREEN")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
        let child = cmd.spawn().unwrap();
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
                NonZeroU16::new(ROWS).unwrap(),
                NonZeroU16::new(COLS).unwrap(),
                0,
            ),
            master,
            output: rx,
        }
    }

    fn text(&self) -> String {
        self.parser.screen().contents()
    }

    /// Feeds output to the emulator and answers the cursor-position and device-attribute
    /// queries crossterm and ratatui make.
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

    /// Pumps output until `done` holds for the screen; fails with the screen after [`WAIT`].
    fn wait_for(&mut self, what: &str, done: impl Fn(&str) -> bool) -> String {
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
                        panic!("kimi-rs exited ({status}) while waiting for {what}");
                    }
                }
                Err(_) => panic!("timed out waiting for {what}; screen:\n{}", self.text()),
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        if let Err(err) = self.master.write_all(bytes) {
            panic!("cannot write to the pty: {err}");
        }
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "kimi-rs did not exit; screen:\n{}",
                self.text()
            );
            if let Ok(chunk) = self.output.recv_timeout(Duration::from_millis(50)) {
                self.feed(&chunk);
            }
        }
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

/// The trampoline: with [`EXEC_ENV`] set, starts a new session so the pseudo-terminal is the
/// only terminal the UI can find, then becomes `kimi-rs`. In a normal test run it does nothing.
#[test]
fn exec_in_new_session() {
    if std::env::var_os(EXEC_ENV).is_none() {
        return;
    }
    rustix::process::setsid().unwrap();
    let err = Command::new(env!("CARGO_BIN_EXE_kimi-rs"))
        .env_remove(EXEC_ENV)
        .exec();
    panic!("cannot run kimi-rs: {err}");
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn mcp_panel_skill_completion_and_startup_warnings_in_a_real_terminal() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let config = serde_json::json!({"mcpServers": {
        "fixture": {"command": common::mcp_fixture()},
        "gone": {"command": "/nonexistent/mcp-server"},
    }});
    std::fs::write(home.path().join("mcp.json"), config.to_string()).unwrap();
    let skill = home.path().join("skills/review");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: review\ndescription: review the staged change\n---\nReview the change.\n",
    )
    .unwrap();

    let mut s = Session::spawn(work.path(), home.path());
    // The server that cannot start is reported in the transcript.
    let start = s.wait_for("the prompt and the MCP warning", |t| {
        t.contains("ask anything") && t.contains("⚠") && t.contains("gone")
    });
    assert!(!start.contains("MCP servers"), "{start}");

    s.send(b"/rev");
    s.wait_for("the skill in the completion menu", |t| {
        t.contains("/skill:review") && t.contains("review the staged change")
    });
    s.send(b"\x15\x1b"); // Ctrl-U empties the prompt; Esc closes the menu

    s.send(b"/mcp\r");
    let panel = s.wait_for("the /mcp panel", |t| {
        t.contains("MCP servers") && t.contains("tools available")
    });
    let row = |name: &str| {
        panel
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{panel}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let fixture = row("fixture");
    assert!(fixture.starts_with("fixture connected stdio "), "{panel}");
    assert!(
        fixture.ends_with(" tools") || fixture.ends_with(" tool"),
        "{panel}"
    );
    assert!(row("gone").starts_with("gone failed stdio"), "{panel}");
    assert!(panel.contains("error:"), "{panel}");

    s.send(b"\x04");
    let status = s.wait_exit();
    assert!(status.success(), "kimi-rs failed: {status}\n{}", s.text());
}
