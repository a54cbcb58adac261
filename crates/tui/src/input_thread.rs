//! Terminal input on a dedicated thread that polls with a short timeout. Crossterm's async
//! `EventStream` holds the input lock while it waits, which starves the cursor-position query
//! ratatui makes when an inline viewport is resized; short polls leave room for it. The thread
//! can be paused so an external editor gets the terminal's input to itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{self, Event as TermEvent};
use tokio::sync::mpsc;

const POLL: Duration = Duration::from_millis(30);

#[derive(Default)]
pub struct InputControl {
    pause: AtomicBool,
    /// Set by the thread while it is paused and not touching the terminal.
    parked: AtomicBool,
    stop: AtomicBool,
}

impl InputControl {
    /// Stops reading input and returns once the thread no longer touches the terminal.
    pub fn pause(&self) {
        self.pause.store(true, Ordering::SeqCst);
        while !self.parked.load(Ordering::SeqCst) && !self.stop.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    }

    pub fn resume(&self) {
        self.pause.store(false, Ordering::SeqCst);
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Starts the reader; events arrive on the returned channel until `stop`.
pub fn spawn_input() -> (
    mpsc::Receiver<std::io::Result<TermEvent>>,
    Arc<InputControl>,
) {
    let (tx, rx) = mpsc::channel(256);
    let control = Arc::new(InputControl::default());
    let ctl = Arc::clone(&control);
    std::thread::spawn(move || {
        while !ctl.stop.load(Ordering::SeqCst) {
            if ctl.pause.load(Ordering::SeqCst) {
                ctl.parked.store(true, Ordering::SeqCst);
                std::thread::park_timeout(POLL);
                continue;
            }
            ctl.parked.store(false, Ordering::SeqCst);
            let ready = match event::poll(POLL) {
                Ok(ready) => ready,
                Err(err) => {
                    let _ = tx.blocking_send(Err(err));
                    break;
                }
            };
            if ready {
                let ev = event::read();
                let failed = ev.is_err();
                if tx.blocking_send(ev).is_err() || failed {
                    break;
                }
            }
        }
        ctl.stop.store(true, Ordering::SeqCst);
    });
    (rx, control)
}
