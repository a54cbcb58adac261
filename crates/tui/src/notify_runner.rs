//! Delivers the UI's notifications: the escape goes to the terminal at once, the `command`
//! hook runs on its own thread (bounded by [`crate::notify::HOOK_TIMEOUT`]) so the UI never
//! waits for it. A failing hook is logged every time and shown in the transcript once.

use std::io::Write;
use std::sync::mpsc;

use crate::notify::{HOOK_TIMEOUT, Notification, TerminalInfo, escape, run_hook};

pub struct Hooks {
    failures_tx: mpsc::Sender<String>,
    failures: mpsc::Receiver<String>,
    shown: bool,
}

impl Default for Hooks {
    fn default() -> Self {
        let (failures_tx, failures) = mpsc::channel();
        Hooks {
            failures_tx,
            failures,
            shown: false,
        }
    }
}

impl Hooks {
    pub fn deliver(&self, terminal: &TerminalInfo, command: Option<&str>, all: &[Notification]) {
        let mut out = std::io::stdout();
        for n in all {
            if let Err(err) = out
                .write_all(escape(terminal, n).as_bytes())
                .and_then(|()| out.flush())
            {
                tracing::warn!("cannot write the notification escape: {err}");
            }
            if let Some(command) = command {
                let (command, n, tx) = (command.to_owned(), n.clone(), self.failures_tx.clone());
                std::thread::spawn(move || {
                    if let Err(why) = run_hook(&command, &n, HOOK_TIMEOUT) {
                        tracing::warn!("notification command `{command}` failed: {why}");
                        let _ = tx.send(format!(
                            "The notification command `{command}` failed: {why}. Fix [notifications] command in tui.toml (this is shown once; later failures go to the log)."
                        ));
                    }
                });
            }
        }
    }

    /// The first hook failure, once per run.
    pub fn take_failure(&mut self) -> Option<String> {
        let first = self.failures.try_recv().ok()?;
        while self.failures.try_recv().is_ok() {}
        if std::mem::replace(&mut self.shown, true) {
            return None;
        }
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_hook_is_shown_once() {
        let mut hooks = Hooks::default();
        assert_eq!(hooks.take_failure(), None);
        let _ = hooks.failures_tx.send("first".to_owned());
        let _ = hooks.failures_tx.send("second".to_owned());
        assert_eq!(hooks.take_failure().as_deref(), Some("first"));
        let _ = hooks.failures_tx.send("third".to_owned());
        assert_eq!(hooks.take_failure(), None);
    }
}
