//! The terminal side: raw mode, inline viewport (finished cells go into the terminal's own
//! scrollback through `insert_before`) or the alternate screen, and one tokio loop that pumps
//! key presses, protocol events and host updates into the [`App`]. The terminal is restored on
//! every exit path, including panics.

use std::io::{Stdout, Write, stdout};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange,
    Event as TermEvent, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use kimi_protocol::message::Message;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::{Terminal, TerminalOptions, Viewport};

use crate::app::{App, AppOptions, UiAction};
use crate::error::TuiError;
use crate::files::index_files;
use crate::host::SessionChannels;

/// What the binary passes to [`run`].
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub app: AppOptions,
    /// The resumed session's history, rendered before the first prompt.
    pub transcript: Vec<Message>,
    /// Alternate screen instead of the inline viewport (`KIMI_CODE_TUI_FULL_SCREEN=1`).
    pub full_screen: bool,
    /// Start with the session picker open (`-S` without an id).
    pub open_session_picker: bool,
    /// Where Ctrl-V reads images, videos and text (the OS clipboard by default).
    pub clipboard: crate::clipboard::ClipboardSource,
    /// The terminal, for the notification escape to write.
    pub terminal: crate::notify::TerminalInfo,
}

/// How the UI ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunExit {
    /// `/web` asked to open the session in the web UI now that the UI has let it go.
    pub web: Option<crate::web_handoff::WebHandoff>,
}

type Term = Terminal<CrosstermBackend<Stdout>>;

/// The inline viewport starts small (prompt and footer) and grows while a turn needs room.
const MIN_INLINE_HEIGHT: u16 = 6;
/// Growth happens in steps so a streaming answer does not resize on every line.
const GROW_STEP: u16 = 4;

/// Puts the terminal back; safe to call more than once.
fn restore(full_screen: bool, enhanced: bool) {
    let mut out = stdout();
    if enhanced {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableFocusChange,
        DisableBracketedPaste,
        crossterm::cursor::Show
    );
    if full_screen {
        let _ = execute!(out, LeaveAlternateScreen);
    }
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Restores on drop, so `?` and early returns cannot leave the terminal raw.
struct Guard {
    full_screen: bool,
    enhanced: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore(self.full_screen, self.enhanced);
    }
}

fn term_err(source: std::io::Error) -> TuiError {
    TuiError::Terminal { source }
}

fn setup(full_screen: bool) -> Result<(Term, Guard), TuiError> {
    enable_raw_mode().map_err(term_err)?;
    let enhanced = supports_keyboard_enhancement().unwrap_or(false);
    let guard = Guard {
        full_screen,
        enhanced,
    };
    let mut out = stdout();
    // Focus reports (`ESC[I` / `ESC[O`) tell notifications whether the user is looking.
    execute!(out, EnableBracketedPaste, EnableFocusChange).map_err(term_err)?;
    if enhanced {
        // Lets Shift-Enter arrive as its own key instead of a plain Enter.
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )
        .map_err(term_err)?;
    }
    if full_screen {
        execute!(out, EnterAlternateScreen).map_err(term_err)?;
    }
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore(full_screen, enhanced);
        prev(info);
    }));
    let viewport = if full_screen {
        Viewport::Fullscreen
    } else {
        Viewport::Inline(MIN_INLINE_HEIGHT)
    };
    let term = Terminal::with_options(CrosstermBackend::new(out), TerminalOptions { viewport })
        .map_err(term_err)?;
    Ok((term, guard))
}

/// Moves `lines` into the terminal's scrollback above an inline viewport.
pub fn insert_lines<B: Backend>(
    term: &mut Terminal<B>,
    lines: &[Line<'static>],
) -> Result<(), B::Error> {
    if lines.is_empty() {
        return Ok(());
    }
    let height = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    term.insert_before(height, |buf| {
        let area = buf.area;
        for (i, line) in lines.iter().enumerate() {
            let y = area.y + u16::try_from(i).unwrap_or(u16::MAX);
            if y >= area.bottom() {
                break;
            }
            buf.set_line(area.x, y, line, area.width);
        }
    })
}

/// One frame: in inline mode finished cells first go into scrollback, then the viewport is
/// drawn. Generic over the backend so tests run the real path on a `TestBackend`.
pub fn draw_frame<B: Backend>(
    term: &mut Terminal<B>,
    app: &mut App,
    inline: bool,
) -> Result<(), B::Error> {
    if inline {
        let width = term.size()?.width;
        let lines = app.take_committable(width);
        insert_lines(term, &lines)?;
    }
    term.draw(|f| {
        let area: Rect = f.area();
        if let Some(pos) = app.render(area, f.buffer_mut()) {
            f.set_cursor_position(pos);
        }
    })?;
    Ok(())
}

fn draw(term: &mut Term, app: &mut App, inline: bool) -> Result<(), TuiError> {
    if inline {
        // Commit first so the viewport is sized for what stays live.
        let width = term.size().map_err(term_err)?.width;
        let lines = app.take_committable(width);
        insert_lines(term, &lines).map_err(term_err)?;
        fit_inline_viewport(term, app)?;
    }
    draw_frame(term, app, false).map_err(term_err)
}

/// The inline viewport height that shows the live cells and the prompt: it grows (in steps)
/// as needed, up to the screen height less one row, and shrinks back once idle.
fn wanted_height(app: &App, width: u16, rows: u16, current: u16) -> u16 {
    let max = rows.saturating_sub(1).max(MIN_INLINE_HEIGHT);
    let needed = app
        .live_height(width)
        .saturating_add(app.bottom_height(width))
        .clamp(MIN_INLINE_HEIGHT, max);
    if needed > current {
        needed.saturating_add(GROW_STEP - 1).min(max)
    } else if !app.is_busy() && app.dialog_closed() {
        needed
    } else {
        current
    }
}

/// Ratatui fixes an inline viewport's height at creation, so a new height means a new
/// `Terminal` placed where the old viewport started (the old area is cleared first).
fn fit_inline_viewport(term: &mut Term, app: &App) -> Result<(), TuiError> {
    let size = term.size().map_err(term_err)?;
    let area = term.get_frame().area();
    let want = wanted_height(app, size.width, size.height, area.height);
    if want == area.height {
        return Ok(());
    }
    let backend = term.backend_mut();
    backend
        .set_cursor_position(ratatui::layout::Position::new(0, area.y))
        .map_err(term_err)?;
    backend
        .clear_region(ratatui::backend::ClearType::AfterCursor)
        .map_err(term_err)?;
    Backend::flush(backend).map_err(term_err)?;
    *term = Terminal::with_options(
        CrosstermBackend::new(stdout()),
        TerminalOptions {
            viewport: Viewport::Inline(want),
        },
    )
    .map_err(term_err)?;
    Ok(())
}

/// Suspends the UI, edits `text` in the external editor, and returns the result.
fn external_edit(command: &str, text: &str, full_screen: bool) -> Result<String, TuiError> {
    let path: PathBuf = std::env::temp_dir().join(format!("kimi-prompt-{}.md", std::process::id()));
    let io = |what: &str| {
        let what = what.to_owned();
        move |source| TuiError::Io { what, source }
    };
    std::fs::write(&path, text).map_err(io("write the prompt file"))?;
    restore(full_screen, false);
    let mut parts = command.split_whitespace();
    let program = parts.next().unwrap_or("vi");
    let status = std::process::Command::new(program)
        .args(parts)
        .arg(&path)
        .status();
    let _ = enable_raw_mode();
    let _ = execute!(stdout(), EnableBracketedPaste, EnableFocusChange);
    if full_screen {
        let _ = execute!(stdout(), EnterAlternateScreen);
    }
    let status = status.map_err(|e| TuiError::Editor {
        command: command.to_owned(),
        detail: e.to_string(),
    })?;
    if !status.success() {
        return Err(TuiError::Editor {
            command: command.to_owned(),
            detail: format!("exited with {status}"),
        });
    }
    let edited = std::fs::read_to_string(&path).map_err(io("read the prompt file"))?;
    let _ = std::fs::remove_file(&path);
    Ok(edited)
}

/// Stops the input thread however `run` ends.
struct StopOnDrop(std::sync::Arc<crate::input_thread::InputControl>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Runs the interactive UI until the user exits or the engine's event channel closes.
/// Returns after the terminal is restored. The host should shut the session down afterwards.
pub async fn run(opts: RunOptions, channels: SessionChannels) -> Result<RunExit, TuiError> {
    let SessionChannels {
        mut events,
        ops,
        mut host_updates,
        host_requests,
    } = channels;
    crate::highlight::warm_in_background();
    let full_screen = opts.full_screen;
    let inline = !full_screen;
    let mut highlighted = crate::highlight::ready();
    let workdir = opts.app.workdir.clone();
    let mut app = App::new(opts.app, &opts.transcript, Instant::now());
    if opts.open_session_picker {
        // Its ListSessions request goes out after the first (immediate) tick.
        app.open_session_picker();
    }
    let (mut term, _guard) = setup(full_screen)?;
    let (mut input, input_control) = crate::input_thread::spawn_input();
    let _stop_input = StopOnDrop(std::sync::Arc::clone(&input_control));
    let mut index = workdir.map(|root| tokio::task::spawn_blocking(move || index_files(&root)));
    let mut hooks = crate::notify_runner::Hooks::default();
    let mut tick = tokio::time::interval(Duration::from_millis(80));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    draw(&mut term, &mut app, inline)?;
    let mut last_size = term.size().map_err(term_err)?;
    loop {
        let mut redraw = true;
        tokio::select! {
            ev = input.recv() => match ev {
                Some(Ok(TermEvent::Key(key))) => app.handle_key(key, Instant::now()),
                Some(Ok(TermEvent::Paste(text))) => app.handle_paste(&text),
                Some(Ok(TermEvent::Resize(width, _))) => {
                    let old = term.get_frame().area();
                    let old_rows = last_size.height;
                    term.autoresize().map_err(term_err)?;
                    if full_screen {
                        term.clear().map_err(term_err)?;
                    } else if width < old.width {
                        // Ratatui clears the visible screen when an inline terminal narrows;
                        // print the conversation that was visible again, reflowed.
                        let rows = old_rows.saturating_sub(old.height);
                        let lines = app.recent_committed_lines(old.width, width, rows);
                        insert_lines(&mut term, &lines).map_err(term_err)?;
                    }
                    last_size = term.size().map_err(term_err)?;
                }
                Some(Ok(TermEvent::FocusGained)) => {
                    app.set_focused(true);
                    redraw = false;
                }
                Some(Ok(TermEvent::FocusLost)) => {
                    app.set_focused(false);
                    redraw = false;
                }
                Some(Ok(TermEvent::Mouse(_))) => redraw = false,
                Some(Err(source)) => return Err(term_err(source)),
                None => break,
            },
            ev = events.recv() => match ev {
                Some(ev) => {
                    let now = Instant::now();
                    app.handle_event(ev, now);
                    // Take everything already waiting so a fast stream costs one frame.
                    while let Ok(ev) = events.try_recv() {
                        app.handle_event(ev, now);
                    }
                }
                None => break,
            },
            up = host_updates.recv() => match up {
                Some(up) => app.handle_host(up),
                None => redraw = false,
            },
            files = async { match index.as_mut() { Some(h) => h.await.ok(), None => std::future::pending().await } } => {
                index = None;
                if let Some(files) = files {
                    app.handle_host(crate::host::HostUpdate::Files(files));
                }
                redraw = false;
            },
            _ = tick.tick() => {
                app.tick(Instant::now());
                if let Some(failure) = hooks.take_failure() {
                    app.handle_host(crate::host::HostUpdate::Warning(failure));
                }
                // Redraw once when syntax highlighting becomes available.
                let ready = crate::highlight::ready();
                redraw = app.is_busy() || ready != highlighted || app.take_status_change();
                highlighted = ready;
            },
        }
        let notifications = app.take_notifications();
        if !notifications.is_empty() {
            hooks.deliver(
                &opts.terminal,
                app.prefs.notifications.command.as_deref(),
                &notifications,
            );
        }
        for action in app.drain_actions() {
            match action {
                UiAction::Op(op) => {
                    if ops.send(op).await.is_err() {
                        return Ok(RunExit::default());
                    }
                }
                UiAction::Host(req) => {
                    let _ = host_requests.send(req).await;
                }
                UiAction::EditExternally(text) => {
                    let cmd = app.prefs.editor_command();
                    input_control.pause();
                    let edited = external_edit(&cmd, &text, full_screen);
                    input_control.resume();
                    match edited {
                        Ok(edited) => app.set_input(&edited),
                        Err(err) => {
                            app.handle_host(crate::host::HostUpdate::Error(err.to_string()))
                        }
                    }
                    term.clear().map_err(term_err)?;
                }
                UiAction::PasteClipboard => {
                    let board = std::sync::Arc::clone(&opts.clipboard.0);
                    // X11 answers through a round trip to the selection owner: off the loop.
                    let read = tokio::task::spawn_blocking(move || board.read())
                        .await
                        .unwrap_or_else(|err| Err(format!("the clipboard reader stopped: {err}")));
                    app.clipboard_read(read);
                }
                UiAction::Exit => {}
            }
        }
        if app.should_exit() {
            break;
        }
        if redraw {
            draw(&mut term, &mut app, inline)?;
        }
    }
    if inline {
        // Leave the whole conversation in scrollback and the cursor below it.
        let width = term.size().map_err(term_err)?.width;
        let lines = app.take_committable(width);
        insert_lines(&mut term, &lines).map_err(term_err)?;
        let top = term.get_frame().area().y;
        term.clear().map_err(term_err)?;
        // The shell prompt continues right below the conversation.
        term.set_cursor_position(ratatui::layout::Position::new(0, top))
            .map_err(term_err)?;
    }
    Ok(RunExit {
        web: app.web_handoff().cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kimi_protocol::ops::{Event, TurnEndReason};

    #[test]
    fn inline_viewport_grows_in_steps_while_busy_and_shrinks_when_idle() {
        let now = Instant::now();
        let mut app = App::new(AppOptions::default(), &[], now);
        assert_eq!(
            wanted_height(&app, 80, 40, MIN_INLINE_HEIGHT),
            MIN_INLINE_HEIGHT
        );
        app.handle_event(Event::TurnStarted { turn_id: 1 }, now);
        app.handle_event(
            Event::AssistantDelta {
                text: "line\n\n".repeat(6),
            },
            now,
        );
        let grown = wanted_height(&app, 80, 40, MIN_INLINE_HEIGHT);
        assert!(grown > MIN_INLINE_HEIGHT, "{grown}");
        // Never taller than the screen less one row.
        assert_eq!(wanted_height(&app, 80, 10, MIN_INLINE_HEIGHT), 9);
        // Busy: no shrinking even if the content got shorter.
        assert_eq!(wanted_height(&app, 80, 40, 30), 30);
        app.handle_event(
            Event::TurnEnded {
                turn_id: 1,
                reason: TurnEndReason::Completed,
                error: None,
            },
            now,
        );
        let _ = app.take_committable(80);
        assert_eq!(wanted_height(&app, 80, 40, 30), MIN_INLINE_HEIGHT);
    }

    #[test]
    fn narrowing_reprints_the_visible_scrollback_at_the_new_width() {
        let now = Instant::now();
        let transcript = vec![
            Message::user_text("first"),
            Message::user_text("second prompt that is long enough to wrap at twenty"),
        ];
        let mut app = App::new(AppOptions::default(), &transcript, now);
        let _ = app.take_committable(80);
        let lines = app.recent_committed_lines(80, 20, 2);
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        // Only the newest cell filled two rows at 80 columns; at 20 it wraps.
        assert_eq!(text[0], "› second prompt that");
        assert!(text.len() > 2, "{text:?}");
        assert!(!text.iter().any(|l| l.contains("first")));
    }
}
