//! End to end: [`kimi_tui::run`] in a child process on a pseudo-terminal, typed at like a user
//! and read back through a vt100 emulator (which also answers the terminal queries that
//! crossterm and ratatui make). The child is this test binary re-run with an environment
//! variable, so no extra binary is needed.

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kimi_protocol::message::{ContentPart, ToolCall};
use kimi_protocol::ops::{ApprovalRequest, Event, Op, TurnEndReason};
use kimi_tui::{AppOptions, RunOptions, SessionChannels};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{LocalModes, Winsize, tcgetattr, tcsetwinsize};

const CHILD_ENV: &str = "KIMI_TUI_PTY_CHILD";
const ROWS: u16 = 24;
const COLS: u16 = 80;

/// The child side: a scripted engine behind the real `run`. Without the environment variable
/// (a normal test run) it has nothing to do.
#[test]
fn pty_child_process_entry() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    // Leave the parent's controlling terminal so crossterm uses the pty on stdin/stdout.
    let _ = rustix::process::setsid();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (ui, mut host) = SessionChannels::pair(64);
        let events = host.events.clone();
        tokio::spawn(async move {
            while let Some(op) = host.ops.recv().await {
                let batch = match op {
                    Op::Submit { .. } => vec![
                        Event::TurnStarted { turn_id: 1 },
                        Event::AssistantDelta {
                            text: "Hello from the **engine**. 完成 🎉 全部通过".into(),
                        },
                        Event::ToolStarted {
                            call: ToolCall::new(
                                "c1",
                                "Edit",
                                Some(r#"{"file_path":"src/lib.rs","old_string":"a","new_string":"b"}"#.into()),
                            ),
                        },
                        Event::ApprovalRequested(ApprovalRequest {
                            request_id: "r1".into(),
                            tool_call_id: "c1".into(),
                            tool_name: "Edit".into(),
                            action: "edit file".into(),
                            summary: "src/lib.rs".into(),
                            detail: None,
                            diff: Some("-a\n+b".into()),
                            danger: None,
                            policy: "manual-mode".into(),
                            options: Vec::new(),
                        }),
                    ],
                    Op::Approve { .. } => vec![
                        Event::ToolResult {
                            tool_call_id: "c1".into(),
                            output: vec![ContentPart::text("ok")],
                            is_error: false,
                        },
                        Event::TurnEnded {
                            turn_id: 1,
                            reason: TurnEndReason::Completed,
                            error: None,
                        },
                    ],
                    _ => Vec::new(),
                };
                for ev in batch {
                    let _ = events.send(ev).await;
                }
            }
        });
        let opts = RunOptions {
            app: AppOptions {
                status_items: vec!["mode".into()],
                ..AppOptions::default()
            },
            ..RunOptions::default()
        };
        kimi_tui::run(opts, ui).await.unwrap();
        drop(host.host_requests);
    });
}

struct Screen {
    parser: vt100::Parser,
    master: File,
    output: mpsc::Receiver<Vec<u8>>,
}

impl Screen {
    /// Everything on screen and in scrollback, oldest first.
    fn text(&mut self) -> String {
        let screen = self.parser.screen().clone();
        let mut rows = Vec::new();
        let mut depth = 0;
        loop {
            self.parser.screen_mut().set_scrollback(depth + 1);
            if self.parser.screen().scrollback() == depth {
                break;
            }
            depth += 1;
        }
        for k in (1..=depth).rev() {
            self.parser.screen_mut().set_scrollback(k);
            rows.push(
                self.parser
                    .screen()
                    .rows(0, COLS)
                    .next()
                    .unwrap_or_default(),
            );
        }
        self.parser.screen_mut().set_scrollback(0);
        rows.extend(screen.rows(0, COLS));
        rows.join("\n")
    }

    /// Feeds output to the emulator, answering cursor-position and device-attribute queries.
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
            // Primary device attributes: no keyboard-enhancement support.
            self.send(b"\x1b[?1;2c");
        }
    }

    /// Pumps output until `done` holds for the screen text, or fails after a generous timeout.
    fn wait_for(&mut self, what: &str, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if done(&self.text()) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(chunk) => self.feed(&chunk),
                Err(_) => panic!("timed out waiting for {what}; screen:\n{}", self.text()),
            }
        }
    }

    fn type_keys(&mut self, keys: &[u8]) {
        self.send(keys);
    }

    fn send(&mut self, bytes: &[u8]) {
        if let Err(err) = self.master.write_all(bytes) {
            panic!("cannot write to the pty: {err}");
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn run_drives_a_turn_in_a_real_pseudo_terminal_and_restores_it() {
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
            ws_row: ROWS,
            ws_col: COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )
    .unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "suite::pty::pty_child_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
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
    let mut screen = Screen {
        parser: vt100::Parser::new(
            std::num::NonZeroU16::new(ROWS).unwrap(),
            std::num::NonZeroU16::new(COLS).unwrap(),
            500,
        ),
        master,
        output: rx,
    };
    screen.wait_for("the prompt", |t| t.contains("ask anything"));
    screen.type_keys("hello engine 你好\r".as_bytes());
    screen.wait_for("the approval panel under the unspaced answer", |t| {
        t.contains("Allow Edit to edit file?") && t.contains("完成 🎉 全部通过")
    });
    screen.type_keys(b"1");
    screen.wait_for("the finished tool card", |t| {
        t.contains("✓ Edit src/lib.rs · done") && t.contains("ask anything")
    });
    screen.type_keys(b"\x04");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the UI did not exit on Ctrl-D");
        if let Ok(chunk) = screen.output.recv_timeout(Duration::from_millis(100)) {
            screen.feed(&chunk);
        }
    };
    while let Ok(chunk) = screen.output.try_recv() {
        screen.feed(&chunk);
    }
    let text = screen.text();
    assert!(status.success(), "child failed: {status}\n{text}");
    // The conversation stays in the terminal, in order, once.
    let prompt = text.find("› hello engine 你好").expect(&text);
    // Wide characters (CJK, emoji) take two columns each and nothing between them, in the
    // viewport and after moving into scrollback (ratatui issue #1332).
    let answer = text
        .find("● Hello from the engine. 完成 🎉 全部通过")
        .expect(&text);
    let card = text.find("✓ Edit src/lib.rs · done").expect(&text);
    assert!(prompt < answer && answer < card, "{text}");
    assert_eq!(
        text.matches("● Hello from the engine.").count(),
        1,
        "{text}"
    );
    // Raw mode is off again.
    let modes = tcgetattr(&slave).unwrap().local_modes;
    assert!(
        modes.contains(LocalModes::ICANON | LocalModes::ECHO),
        "{modes:?}"
    );
}
