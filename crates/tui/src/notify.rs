//! Desktop notifications (`tui.toml [notifications]`, surface.md §1.5 and §4.3): when a turn
//! ends or an approval or question waits, and the terminal is not focused (or always, with
//! `notification_condition = "always"`), the UI writes a terminal notification escape and runs
//! the optional `command` hook. Focus comes from focus reporting (`CSI ?1004h`, then `ESC[I` /
//! `ESC[O`); a terminal that never reports counts as focused.
//!
//! Which escape: OSC 9 (`ESC]9;body BEL`: iTerm2, WezTerm, Ghostty, kitty's fallback, Windows
//! Terminal) or OSC 777 (`ESC]777;notify;title;body BEL`: VTE terminals such as GNOME Terminal,
//! urxvt, foot, and also WezTerm and Ghostty), chosen by `TERM_PROGRAM`, `VTE_VERSION` and
//! `TERM`; an unknown terminal gets both (terminals ignore OSC numbers they do not know).
//! Inside tmux the escape is wrapped for passthrough.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::app::App;

/// How long the hook may run before its process group is killed.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// `[notifications]` of `tui.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifySettings {
    pub enabled: bool,
    /// `notification_condition = "always"` (the default is `unfocused`).
    pub always: bool,
    /// `command`: run with the title and body as `$1`, `$2` and in the environment.
    pub command: Option<String>,
}

impl Default for NotifySettings {
    fn default() -> Self {
        NotifySettings {
            enabled: true,
            always: false,
            command: None,
        }
    }
}

/// One notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// `turn_ended`, `approval` or `question` (`KIMI_NOTIFICATION_KIND`).
    pub kind: &'static str,
    pub title: String,
    pub body: String,
}

/// Which escape the terminal understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OscStyle {
    Osc9,
    Osc777,
    Both,
}

/// What the host read about the terminal (passed in so tests never touch the environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalInfo {
    pub term_program: Option<String>,
    pub term: Option<String>,
    pub vte_version: Option<String>,
    pub tmux: bool,
}

impl TerminalInfo {
    /// `TERM_PROGRAM`, `TERM`, `VTE_VERSION` and `TMUX` of this process.
    pub fn from_env() -> TerminalInfo {
        let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        TerminalInfo {
            term_program: var("TERM_PROGRAM"),
            term: var("TERM"),
            vte_version: var("VTE_VERSION"),
            tmux: var("TMUX").is_some(),
        }
    }

    pub fn style(&self) -> OscStyle {
        match self.term_program.as_deref() {
            Some("iTerm.app" | "WezTerm" | "ghostty") => {
                return OscStyle::Osc9;
            }
            Some("Apple_Terminal") => return OscStyle::Both,
            _ => {}
        }
        let term = self.term.as_deref().unwrap_or_default();
        if self.vte_version.is_some() || term.starts_with("rxvt") || term.starts_with("foot") {
            OscStyle::Osc777
        } else if term == "xterm-kitty" || term == "xterm-ghostty" {
            OscStyle::Osc9
        } else {
            OscStyle::Both
        }
    }
}

/// Text safe inside an OSC string: no control characters (they would end or break it).
fn clean(text: &str, semicolons: bool) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            ';' if !semicolons => ',',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// The bytes that ask the terminal for `n`.
pub fn escape(info: &TerminalInfo, n: &Notification) -> String {
    let (title, body) = (clean(&n.title, false), clean(&n.body, true));
    let osc9 = format!("\x1b]9;{title}: {body}\x07");
    let osc777 = format!("\x1b]777;notify;{title};{body}\x07");
    let raw = match info.style() {
        OscStyle::Osc9 => osc9,
        OscStyle::Osc777 => osc777,
        OscStyle::Both => format!("{osc9}{osc777}"),
    };
    if info.tmux {
        // tmux passes `ESC P tmux; … ESC \` through (with `allow-passthrough on`), every ESC
        // inside doubled.
        format!("\x1bPtmux;{}\x1b\\", raw.replace('\x1b', "\x1b\x1b"))
    } else {
        raw
    }
}

/// Runs the hook with a time limit: `sh -c <command> kimi-rs <title> <body>`, with
/// `KIMI_NOTIFICATION_TITLE`, `KIMI_NOTIFICATION_BODY` and `KIMI_NOTIFICATION_KIND` set.
pub fn run_hook(command: &str, n: &Notification, timeout: Duration) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .arg("kimi-rs")
        .arg(&n.title)
        .arg(&n.body)
        .env("KIMI_NOTIFICATION_TITLE", &n.title)
        .env("KIMI_NOTIFICATION_BODY", &n.body)
        .env("KIMI_NOTIFICATION_KIND", n.kind)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|err| format!("cannot start it: {err}"))?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("it exited with {status}")),
        Ok(Err(err)) => Err(format!("waiting for it failed: {err}")),
        Err(_) => {
            if let Some(pid) = rustix::process::Pid::from_raw(pid.cast_signed()) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
            Err(format!(
                "it took longer than {} ms and was stopped",
                timeout.as_millis()
            ))
        }
    }
}

/// The first line of `text`, at most 100 characters.
fn short(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    if line.chars().count() <= 100 {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(99).collect();
    cut.push('…');
    cut
}

impl App {
    /// Focus reporting: the terminal gained (`true`) or lost focus.
    pub fn set_focused(&mut self, focused: bool) {
        self.focused = focused;
    }

    /// The notifications due since the last call (the runtime writes and runs them).
    pub fn take_notifications(&mut self) -> Vec<Notification> {
        std::mem::take(&mut self.notifications)
    }

    /// Queues a notification when the settings and the focus say so.
    pub(crate) fn notify(&mut self, kind: &'static str, body: &str) {
        let settings = &self.prefs.notifications;
        if !settings.enabled || (!settings.always && self.focused) {
            return;
        }
        let title = match self.info.title.trim() {
            "" => "kimi-rs".to_owned(),
            t => format!("kimi-rs: {}", short(t)),
        };
        self.notifications.push(Notification {
            kind,
            title,
            body: short(body),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(program: Option<&str>, term: &str, vte: bool, tmux: bool) -> TerminalInfo {
        TerminalInfo {
            term_program: program.map(str::to_owned),
            term: Some(term.to_owned()),
            vte_version: vte.then(|| "7600".to_owned()),
            tmux,
        }
    }

    #[test]
    fn the_escape_follows_the_terminal() {
        let n = Notification {
            kind: "turn_ended",
            title: "kimi-rs; x".to_owned(),
            body: "done;\nok".to_owned(),
        };
        assert_eq!(
            escape(&info(Some("iTerm.app"), "xterm-256color", false, false), &n),
            "\x1b]9;kimi-rs, x: done; ok\x07"
        );
        assert_eq!(
            escape(&info(None, "xterm-256color", true, false), &n),
            "\x1b]777;notify;kimi-rs, x;done; ok\x07"
        );
        let both = escape(&info(None, "xterm-256color", false, false), &n);
        assert!(
            both.contains("\x1b]9;") && both.contains("\x1b]777;notify;"),
            "{both:?}"
        );
        assert_eq!(
            escape(&info(Some("WezTerm"), "xterm", false, true), &n),
            "\x1bPtmux;\x1b\x1b]9;kimi-rs, x: done; ok\x07\x1b\\"
        );
    }

    #[test]
    fn the_hook_gets_title_and_body_and_a_failure_says_why() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let out = dir.path().join("out");
        let n = Notification {
            kind: "approval",
            title: "t".to_owned(),
            body: "b c".to_owned(),
        };
        let cmd = format!(
            "printf '%s|%s|%s|%s' \"$1\" \"$2\" \"$KIMI_NOTIFICATION_KIND\" \"$KIMI_NOTIFICATION_BODY\" > {}",
            out.display()
        );
        assert_eq!(run_hook(&cmd, &n, HOOK_TIMEOUT), Ok(()));
        assert_eq!(
            std::fs::read_to_string(&out).unwrap_or_default(),
            "t|b c|approval|b c"
        );
        let err = run_hook("exit 3", &n, HOOK_TIMEOUT).unwrap_err();
        assert!(err.contains("exit status: 3"), "{err}");
        let err = run_hook("sleep 5", &n, Duration::from_millis(50)).unwrap_err();
        assert!(err.contains("longer than"), "{err}");
    }
}
