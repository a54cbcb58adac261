//! `/web`: continue this session in the web UI. A session's journal is held by one kimi-rs
//! process at a time, so the page can only open it once this UI has let it go: the picker
//! offers the `kimi-rs web` servers running for this home, or starting one, and choosing closes
//! the UI; the binary then opens the page on the session (or serves it in this terminal).

use crate::app::{App, UiAction};
use crate::cells::NoticeLevel;
use crate::dialogs::{Picker, PickerItem, PickerKind};
use crate::host::HostRequest;

/// The picker value that means "start a server here".
const START: &str = "start";

/// Where the binary opens the session once the UI has closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebHandoff {
    /// A running server, by its page URL (`http://127.0.0.1:58627/`).
    Server { page_url: String },
    /// Run `kimi-rs web` in this terminal.
    Start,
}

impl App {
    /// `/web`: ask the host for the running servers; the picker fills when they arrive.
    pub(crate) fn web_command(&mut self) {
        let mut picker = Picker::new(
            PickerKind::Web,
            "Continue this session in the web UI (this terminal UI closes)",
            Vec::new(),
        );
        picker.empty_text = "looking for running kimi-rs web servers…".to_owned();
        self.open_picker(picker);
        self.emit(UiAction::Host(HostRequest::WebServers));
    }

    /// The host's answer: one row per running server, then "start one".
    pub(crate) fn web_servers(&mut self, urls: Vec<String>) {
        let Some(crate::dialogs::Dialog::Picker(p)) = &mut self.dialog else {
            return;
        };
        if p.kind != PickerKind::Web {
            return;
        }
        p.items = urls
            .into_iter()
            .map(|url| PickerItem {
                label: url.clone(),
                detail: "open in this running kimi-rs web".to_owned(),
                value: url,
                this_dir: true,
            })
            .chain(std::iter::once(PickerItem {
                label: "Start kimi-rs web here".to_owned(),
                detail: "serves in this terminal until Ctrl-C".to_owned(),
                value: START.to_owned(),
                this_dir: true,
            }))
            .collect();
        p.selected = 0;
    }

    pub(crate) fn web_chosen(&mut self, value: &str) {
        if self.is_busy() {
            // The picker may have been open when a queued prompt started a turn.
            self.notice(
                NoticeLevel::Warning,
                "A turn is running: /web again once it has ended (or Esc to stop it).",
            );
            return;
        }
        self.web_handoff = Some(if value == START {
            WebHandoff::Start
        } else {
            WebHandoff::Server {
                page_url: value.to_owned(),
            }
        });
        self.emit(UiAction::Exit);
    }

    /// What `/web` chose, once the UI has closed.
    pub fn web_handoff(&self) -> Option<&WebHandoff> {
        self.web_handoff.as_ref()
    }
}
