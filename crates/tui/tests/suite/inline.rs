//! Inline mode: finished cells move into the terminal's scrollback (so the terminal's own
//! copy-paste and scrolling work) while live cells stay in the viewport; plus a vt100 check
//! that wide characters land in the right columns of a real terminal emulator.

use crossterm::event::KeyCode;
use kimi_protocol::ops::{Event, TurnEndReason};
use kimi_tui::runtime::draw_frame;
use ratatui::backend::{CrosstermBackend, TestBackend};
use ratatui::{Terminal, TerminalOptions, Viewport};

use super::support::Harness;

fn rows(buf: &ratatui::buffer::Buffer) -> Vec<String> {
    (0..buf.area.height)
        .map(|y| {
            let mut s = String::new();
            let mut skip = 0u16;
            for x in 0..buf.area.width {
                let cell = &buf[(x, y)];
                if skip == 0 {
                    s.push_str(cell.symbol());
                }
                skip = skip
                    .max(
                        u16::try_from(unicode_width::UnicodeWidthStr::width(cell.symbol()))
                            .unwrap_or(1),
                    )
                    .saturating_sub(1);
            }
            s.trim_end().to_owned()
        })
        .collect()
}

#[test]
fn finished_cells_go_to_scrollback_and_live_ones_stay_in_the_viewport() {
    let mut h = Harness::new();
    let backend = TestBackend::new(40, 12);
    let mut term = Terminal::with_options(
        backend,
        TerminalOptions {
            viewport: Viewport::Inline(8),
        },
    )
    .unwrap();
    h.type_str("first question");
    h.key(KeyCode::Enter);
    h.event(Event::TurnStarted { turn_id: 1 });
    h.event(Event::AssistantDelta {
        text: "a long streaming answer that wraps over more than one line of forty".into(),
    });
    draw_frame(&mut term, &mut h.app, true).unwrap();
    let screen = rows(term.backend().buffer());
    // The prompt is finished: it sits above the viewport; the answer is still live inside it.
    assert!(
        screen.iter().any(|r| r == "› first question"),
        "{screen:#?}"
    );
    h.event(Event::TurnEnded {
        turn_id: 1,
        reason: TurnEndReason::Completed,
        error: None,
    });
    for i in 0..6 {
        h.type_str(&format!("prompt {i}"));
        h.key(KeyCode::Enter);
        h.event(Event::TurnStarted { turn_id: 2 + i });
        h.event(Event::TurnEnded {
            turn_id: 2 + i,
            reason: TurnEndReason::Completed,
            error: None,
        });
        draw_frame(&mut term, &mut h.app, true).unwrap();
    }
    // Early content has scrolled off the top into the scrollback, wrapped at 40 columns.
    let mut all = rows(term.backend().scrollback());
    all.extend(rows(term.backend().buffer()));
    let joined = all.join("\n");
    assert!(joined.contains("› first question"), "{joined}");
    assert!(
        joined.contains("● a long streaming answer that wraps\n  over more than one line of forty"),
        "{joined}"
    );
    assert!(joined.contains("› prompt 5"), "{joined}");
    // Nothing is printed twice.
    assert_eq!(joined.matches("› prompt 3").count(), 1, "{joined}");
}

#[test]
fn resize_reflows_the_viewport() {
    let mut h = Harness::new();
    h.event(Event::TurnStarted { turn_id: 1 });
    h.event(Event::AssistantDelta {
        text: "one two three four five six seven eight nine ten".into(),
    });
    let narrow = h.screen(20, 10);
    let wide = h.screen(80, 10);
    assert!(narrow.contains("● one two three four"), "{narrow}");
    assert!(
        wide.contains("● one two three four five six seven eight nine ten"),
        "{wide}"
    );
}

#[test]
fn wide_characters_land_in_the_right_columns_of_a_vt100_screen() {
    let mut h = Harness::new();
    h.event(Event::TurnStarted { turn_id: 1 });
    h.event(Event::AssistantDelta {
        text: "中文字符🙂 end\n\n| 名前 | x |\n|---|---|\n| 東京 | 1 |".into(),
    });
    let (w, hgt) = (30u16, 12u16);
    let out = Shared::default();
    let mut term = Terminal::with_options(
        CrosstermBackend::new(out.clone()),
        TerminalOptions {
            viewport: Viewport::Fixed(ratatui::layout::Rect::new(0, 0, w, hgt)),
        },
    )
    .unwrap();
    draw_frame(&mut term, &mut h.app, false).unwrap();
    let bytes = out.0.borrow().clone();
    let mut parser = vt100::Parser::new(
        std::num::NonZeroU16::new(hgt).unwrap(),
        std::num::NonZeroU16::new(w).unwrap(),
        0,
    );
    parser.process(&bytes);
    let contents = parser.screen().contents();
    assert!(contents.contains("● 中文字符🙂 end"), "{contents}");
    assert!(contents.contains("│ 名前 │ x │"), "{contents}");
    assert!(contents.contains("│ 東京 │ 1 │"), "{contents}");
    // The table's right border is in the same column on every row.
    let col = |needle: &str| {
        contents
            .lines()
            .find(|l| l.contains(needle))
            .map(unicode_width::UnicodeWidthStr::width)
            .unwrap()
    };
    assert_eq!(col("名前"), col("東京"));
    assert_eq!(col("名前"), col("┌"));
}

/// A writer the test can read back after the backend wrote escape sequences into it.
#[derive(Clone, Default)]
struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn ctrl_o_reprints_a_tool_card_that_already_went_to_scrollback() {
    use kimi_protocol::message::ToolCall;
    let mut h = Harness::new();
    let mut term = Terminal::with_options(
        TestBackend::new(50, 30),
        TerminalOptions {
            viewport: Viewport::Inline(6),
        },
    )
    .unwrap();
    h.event(Event::TurnStarted { turn_id: 1 });
    h.event(Event::ToolStarted {
        call: ToolCall::new("c1", "Bash", Some(r#"{"command":"seq 9"}"#.into())),
    });
    h.event(Event::ToolResult {
        tool_call_id: "c1".into(),
        output: super::support::text("1\n2\n3\n4\n5\n6\n7\n8\n9"),
        is_error: false,
    });
    draw_frame(&mut term, &mut h.app, true).unwrap();
    let before = rows(term.backend().buffer()).join("\n");
    assert!(
        before.contains("… 5 more lines (ctrl-o to expand)"),
        "{before}"
    );
    h.ctrl('o');
    draw_frame(&mut term, &mut h.app, true).unwrap();
    let after = rows(term.backend().buffer()).join("\n");
    assert!(after.contains("  │ 9"), "{after}");
    assert_eq!(after.matches("✓ Bash seq 9").count(), 2, "{after}");
}
