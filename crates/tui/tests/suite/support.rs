//! Helpers shared by the TUI tests: a fixed clock, an app with known session facts, key
//! presses and rendering to text.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kimi_protocol::message::{ContentPart, Message};
use kimi_protocol::ops::{Event, PermissionMode};
use kimi_tui::{App, AppOptions, ModelEntry, SessionInfo, Theme, UiAction};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

pub struct Harness {
    pub app: App,
    pub t0: Instant,
    pub ms: u64,
}

pub fn info() -> SessionInfo {
    SessionInfo {
        version: "0.1.0".into(),
        session_id: "s-1234".into(),
        title: String::new(),
        cwd: "~/proj".into(),
        model: "k2".into(),
        effort: None,
        models: vec![
            ModelEntry {
                alias: "k2".into(),
                description: "Kimi K2".into(),
                efforts: vec!["low".into(), "high".into()],
            },
            ModelEntry {
                alias: "k2-turbo".into(),
                description: "Kimi K2 Turbo".into(),
                efforts: Vec::new(),
            },
        ],
        context_window: 200_000,
        permission_mode: PermissionMode::Manual,
        plan_mode: false,
        swarm_mode: false,
        additional_dirs: Vec::new(),
        environment: None,
    }
}

impl Harness {
    pub fn new() -> Self {
        Self::with_transcript(&[])
    }

    pub fn with_transcript(transcript: &[Message]) -> Self {
        Self::with_options(transcript, None)
    }

    /// With `tui.toml [status_line] command` set to `command`.
    pub fn with_status_command(command: &str) -> Self {
        Self::with_options(&[], Some(command.to_owned()))
    }

    /// With these `[notifications]` settings.
    pub fn with_notifications(notifications: kimi_tui::notify::NotifySettings) -> Self {
        let mut h = Self::new();
        h.app = App::new(
            AppOptions {
                info: info(),
                prefs: kimi_tui::prefs::Prefs {
                    notifications,
                    ..kimi_tui::prefs::Prefs::default()
                },
                ..AppOptions::default()
            },
            &[],
            h.t0,
        );
        h
    }

    fn with_options(transcript: &[Message], status_command: Option<String>) -> Self {
        let t0 = Instant::now();
        let opts = AppOptions {
            info: info(),
            theme: Theme::default(),
            history: None,
            collapse_pastes: true,
            status_items: vec!["mode".into(), "model".into(), "cwd".into()],
            status_command,
            workdir: None,
            prefs: kimi_tui::prefs::Prefs::default(),
        };
        Harness {
            app: App::new(opts, transcript, t0),
            t0,
            ms: 0,
        }
    }

    pub fn now(&self) -> Instant {
        self.t0 + Duration::from_millis(self.ms)
    }

    /// Moves the fake clock forward.
    pub fn advance(&mut self, ms: u64) {
        self.ms += ms;
        let now = self.now();
        self.app.tick(now);
    }

    pub fn event(&mut self, ev: Event) {
        let now = self.now();
        self.app.handle_event(ev, now);
    }

    pub fn events(&mut self, evs: impl IntoIterator<Item = Event>) {
        for ev in evs {
            self.event(ev);
        }
    }

    pub fn key(&mut self, code: KeyCode) {
        self.key_mod(code, KeyModifiers::NONE);
    }

    pub fn ctrl(&mut self, c: char) {
        self.key_mod(KeyCode::Char(c), KeyModifiers::CONTROL);
    }

    pub fn key_mod(&mut self, code: KeyCode, mods: KeyModifiers) {
        let now = self.now();
        self.app.handle_key(KeyEvent::new(code, mods), now);
    }

    pub fn type_str(&mut self, s: &str) {
        for c in s.chars() {
            self.key(KeyCode::Char(c));
        }
    }

    pub fn actions(&mut self) -> Vec<UiAction> {
        self.app.drain_actions()
    }

    /// The screen as text, one quoted row per line.
    pub fn screen(&self, width: u16, height: u16) -> String {
        let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
        term.draw(|f| {
            let area = f.area();
            if let Some(pos) = self.app.render(area, f.buffer_mut()) {
                f.set_cursor_position(pos);
            }
        })
        .unwrap();
        term.backend().to_string()
    }
}

pub fn text(s: &str) -> Vec<ContentPart> {
    vec![ContentPart::text(s)]
}
