//! Transcript cells: one user prompt, answer, thinking block, tool card or notice each, rendered
//! to wrapped lines for a given width. Finished cells cache their lines so a long transcript
//! costs nothing to redraw.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::markdown::render_markdown;
use crate::theme::Theme;
use crate::tool_card::ToolCard;
use crate::wrap::wrap_line;

/// How a notice looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Warning,
    Error,
}

/// Where a steer typed with Ctrl-S stands. It shows as taken only once the engine accepted it,
/// which it does after journaling it: a steer shown as taken survives a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteerState {
    /// Sent; the engine has not confirmed it yet.
    Sending,
    /// Journaled; it joins the running turn at its next step.
    Joined,
    /// The turn had ended meanwhile; it runs as the next prompt.
    NextPrompt,
}

#[derive(Debug, Clone)]
pub enum CellKind {
    User {
        text: String,
        /// `None` for a prompt, the steer's state for a steer.
        steer: Option<SteerState>,
    },
    Assistant {
        text: String,
        streaming: bool,
    },
    Thinking {
        text: String,
        streaming: bool,
    },
    Tool(Box<ToolCard>),
    Notice {
        level: NoticeLevel,
        text: String,
    },
    /// Live while compaction runs; becomes a notice when it ends.
    Compacting,
    Shell {
        command: String,
        output: String,
        is_error: bool,
    },
    /// The `/mcp` status panel.
    Mcp(crate::host::McpStatus),
}

/// Inputs that change how every cell looks.
#[derive(Debug, Clone, Copy)]
pub struct RenderCtx<'a> {
    pub theme: &'a Theme,
    pub width: usize,
    /// Ctrl-O: tool output, thinking and diffs shown in full.
    pub expanded: bool,
    pub now: Instant,
}

/// The last render and what it depended on.
#[derive(Debug)]
struct CacheEntry {
    width: usize,
    expanded: bool,
    version: u64,
    highlighted: bool,
    lines: Vec<Line<'static>>,
}

#[derive(Debug)]
pub struct Cell {
    pub kind: CellKind,
    cache: RefCell<Option<CacheEntry>>,
    /// Streaming answers: the rendered stable prefix (byte length, width, lines), so each
    /// delta only re-renders the paragraph still being written.
    stream_cache: RefCell<Option<(usize, usize, Vec<Line<'static>>)>>,
    version: u64,
}

impl Cell {
    pub fn new(kind: CellKind) -> Self {
        Cell {
            kind,
            cache: RefCell::new(None),
            stream_cache: RefCell::new(None),
            version: 0,
        }
    }

    /// Drops cached lines (a cell moved to scrollback is rarely drawn again).
    pub fn forget_lines(&self) {
        self.cache.borrow_mut().take();
        self.stream_cache.borrow_mut().take();
    }

    /// Mutable access that invalidates the cache.
    pub fn kind_mut(&mut self) -> &mut CellKind {
        self.version += 1;
        &mut self.kind
    }

    /// The tool card, if this cell is one.
    pub fn tool(&self) -> Option<&ToolCard> {
        match &self.kind {
            CellKind::Tool(card) => Some(card),
            CellKind::User { .. }
            | CellKind::Assistant { .. }
            | CellKind::Thinking { .. }
            | CellKind::Notice { .. }
            | CellKind::Compacting
            | CellKind::Shell { .. }
            | CellKind::Mcp(_) => None,
        }
    }

    /// The tool card for editing (invalidates the cache).
    pub fn tool_mut(&mut self) -> Option<&mut ToolCard> {
        self.tool()?;
        match self.kind_mut() {
            CellKind::Tool(card) => Some(card),
            CellKind::User { .. }
            | CellKind::Assistant { .. }
            | CellKind::Thinking { .. }
            | CellKind::Notice { .. }
            | CellKind::Compacting
            | CellKind::Shell { .. }
            | CellKind::Mcp(_) => None,
        }
    }

    /// For a streaming answer or thinking block: whether it is thinking.
    pub fn streaming_kind(&self) -> Option<bool> {
        match &self.kind {
            CellKind::Assistant {
                streaming: true, ..
            } => Some(false),
            CellKind::Thinking {
                streaming: true, ..
            } => Some(true),
            CellKind::Assistant { .. }
            | CellKind::Thinking { .. }
            | CellKind::User { .. }
            | CellKind::Tool(_)
            | CellKind::Notice { .. }
            | CellKind::Compacting
            | CellKind::Shell { .. }
            | CellKind::Mcp(_) => None,
        }
    }

    /// Text and streaming flag of an answer or thinking block (invalidates the cache).
    pub fn stream_mut(&mut self) -> Option<(&mut String, &mut bool)> {
        match self.kind_mut() {
            CellKind::Assistant { text, streaming } | CellKind::Thinking { text, streaming } => {
                Some((text, streaming))
            }
            CellKind::User { .. }
            | CellKind::Tool(_)
            | CellKind::Notice { .. }
            | CellKind::Compacting
            | CellKind::Shell { .. }
            | CellKind::Mcp(_) => None,
        }
    }

    /// The text of a prompt the user typed (not a steer).
    pub fn user_prompt(&self) -> Option<&str> {
        match &self.kind {
            CellKind::User { text, steer: None } => Some(text),
            CellKind::User { steer: Some(_), .. }
            | CellKind::Assistant { .. }
            | CellKind::Thinking { .. }
            | CellKind::Tool(_)
            | CellKind::Notice { .. }
            | CellKind::Compacting
            | CellKind::Shell { .. }
            | CellKind::Mcp(_) => None,
        }
    }

    /// The text of an answer.
    pub fn answer(&self) -> Option<&str> {
        match &self.kind {
            CellKind::Assistant { text, .. } => Some(text),
            CellKind::User { .. }
            | CellKind::Thinking { .. }
            | CellKind::Tool(_)
            | CellKind::Notice { .. }
            | CellKind::Compacting
            | CellKind::Shell { .. }
            | CellKind::Mcp(_) => None,
        }
    }

    /// Still changing: not yet safe to move into the terminal's scrollback.
    pub fn is_live(&self) -> bool {
        match &self.kind {
            CellKind::Assistant { streaming, .. } | CellKind::Thinking { streaming, .. } => {
                *streaming
            }
            CellKind::Tool(card) => card.is_running(),
            CellKind::Compacting => true,
            CellKind::User { .. }
            | CellKind::Notice { .. }
            | CellKind::Shell { .. }
            | CellKind::Mcp(_) => false,
        }
    }

    /// Rendered lines, without the blank separator line.
    pub fn lines(&self, ctx: &RenderCtx<'_>) -> Vec<Line<'static>> {
        // Running cards show a ticking clock, so they are never cached.
        let cacheable = !matches!(&self.kind, CellKind::Tool(c) if c.is_running())
            && !matches!(self.kind, CellKind::Compacting);
        let highlighted = crate::highlight::ready();
        if cacheable
            && let Some(c) = self.cache.borrow().as_ref()
            && c.width == ctx.width
            && c.expanded == ctx.expanded
            && c.version == self.version
            && c.highlighted == highlighted
        {
            return c.lines.clone();
        }
        let lines = self.render(ctx);
        if cacheable {
            *self.cache.borrow_mut() = Some(CacheEntry {
                width: ctx.width,
                expanded: ctx.expanded,
                version: self.version,
                highlighted,
                lines: lines.clone(),
            });
        }
        lines
    }

    /// Renders the part of a streaming answer before its last block boundary once, and only
    /// the tail on every delta.
    fn streaming_markdown(&self, text: &str, width: usize, t: &Theme) -> Vec<Line<'static>> {
        let split = stable_split(text);
        let mut cache = self.stream_cache.borrow_mut();
        let mut head = match cache.take() {
            Some((len, w, lines)) if len == split && w == width => lines,
            // The split moved forward: only the newly completed blocks need rendering.
            Some((len, w, mut lines)) if len < split && w == width => {
                let more = render_markdown(&text[len..split], width, t);
                if !lines.is_empty() && !more.is_empty() {
                    lines.push(Line::default());
                }
                lines.extend(more);
                lines
            }
            Some(_) | None => render_markdown(&text[..split], width, t),
        };
        *cache = Some((split, width, head.clone()));
        let tail = render_markdown(&text[split..], width, t);
        if !head.is_empty() && !tail.is_empty() {
            head.push(Line::default());
        }
        head.extend(tail);
        head
    }

    fn render(&self, ctx: &RenderCtx<'_>) -> Vec<Line<'static>> {
        let t = ctx.theme;
        let w = ctx.width;
        match &self.kind {
            CellKind::User { text, steer } => {
                let mut out = Vec::new();
                let marker = if steer.is_some() { "↳ " } else { "› " };
                for (i, l) in text.lines().enumerate() {
                    let prefix = if i == 0 { marker } else { "  " };
                    let line = Line::from(vec![
                        Span::styled(prefix, t.role_user),
                        Span::styled(l.to_owned(), t.text_strong),
                    ]);
                    out.extend(wrap_line(&line, w, &[Span::raw("  ")]));
                }
                let note = match steer {
                    None => None,
                    Some(SteerState::Sending) => Some("  (steering…)"),
                    Some(SteerState::Joined) => Some("  (steered into the running turn)"),
                    Some(SteerState::NextPrompt) => {
                        Some("  (the turn had ended: sent as the next prompt)")
                    }
                };
                if let Some(note) = note {
                    out.push(Line::styled(note, t.text_dim));
                }
                out
            }
            CellKind::Assistant { text, streaming } => {
                let body = if *streaming {
                    self.streaming_markdown(text, w.saturating_sub(2), t)
                } else {
                    render_markdown(text, w.saturating_sub(2), t)
                };
                prefix_lines(body, Span::styled("● ", t.primary), Span::raw("  "))
            }
            CellKind::Thinking { text, streaming } => thinking_lines(text, *streaming, ctx),
            CellKind::Tool(card) => card.lines(ctx),
            CellKind::Notice { level, text } => {
                let (mark, style) = match level {
                    NoticeLevel::Info => ("• ", t.text_dim),
                    NoticeLevel::Warning => ("⚠ ", t.warning),
                    NoticeLevel::Error => ("✗ ", t.error),
                };
                let mut out = Vec::new();
                for (i, l) in text.lines().enumerate() {
                    let prefix = if i == 0 { mark } else { "  " };
                    let line = Line::from(vec![
                        Span::styled(prefix, style),
                        Span::styled(l.to_owned(), style),
                    ]);
                    out.extend(wrap_line(&line, w, &[Span::raw("  ")]));
                }
                out
            }
            CellKind::Compacting => vec![Line::styled("⟳ Compacting context…", t.accent)],
            CellKind::Mcp(status) => crate::extensions::mcp_lines(status, ctx),
            CellKind::Shell {
                command,
                output,
                is_error,
            } => {
                let mut out = wrap_line(
                    &Line::from(vec![
                        Span::styled("! ", t.shell_mode),
                        Span::styled(command.clone(), t.text_strong),
                    ]),
                    w,
                    &[Span::raw("  ")],
                );
                let style = if *is_error { t.error } else { t.text_dim };
                let shown = preview(output, ctx.expanded, 8);
                for l in shown {
                    out.extend(wrap_line(
                        &Line::styled(format!("  {l}"), style),
                        w,
                        &[Span::raw("  ")],
                    ));
                }
                out
            }
        }
    }
}

/// Byte offset just after the last blank line that is outside a code fence: everything before
/// it is complete Markdown blocks that later text cannot change (tables and lists split there
/// render the same once the answer is finished and rendered whole).
pub fn stable_split(text: &str) -> usize {
    let mut in_fence = false;
    let mut split = 0;
    let mut offset = 0;
    let mut prev_blank = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        offset += line.len();
        let blank = line.trim().is_empty() && line.ends_with('\n');
        if blank && !in_fence && !prev_blank {
            split = offset;
        }
        prev_blank = blank;
    }
    // The last line may still be growing; never include it.
    split.min(text.rfind('\n').map_or(0, |i| i + 1))
}

/// Puts `first` before the first line and `rest` before the others.
pub fn prefix_lines(
    lines: Vec<Line<'static>>,
    first: Span<'static>,
    rest: Span<'static>,
) -> Vec<Line<'static>> {
    if lines.is_empty() {
        return vec![Line::from(first)];
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let mut spans = vec![if i == 0 { first.clone() } else { rest.clone() }];
            spans.extend(l.spans);
            Line::from(spans).style(l.style)
        })
        .collect()
}

fn thinking_lines(text: &str, streaming: bool, ctx: &RenderCtx<'_>) -> Vec<Line<'static>> {
    let t = ctx.theme;
    let dim = t.text_dim.add_modifier(Modifier::ITALIC);
    let lines: Vec<&str> = text.trim().lines().collect();
    let header = if streaming {
        "✻ Thinking…"
    } else {
        "✻ Thought"
    };
    let mut out = vec![Line::styled(header.to_owned(), t.text_dim)];
    let shown: &[&str] = if ctx.expanded {
        &lines
    } else if streaming {
        // The tail is what is changing; older reasoning scrolls out of the preview.
        &lines[lines.len().saturating_sub(3)..]
    } else {
        &[]
    };
    for l in shown {
        out.extend(wrap_line(
            &Line::styled(format!("  {l}"), dim),
            ctx.width,
            &[Span::raw("  ")],
        ));
    }
    if !ctx.expanded && !streaming && !lines.is_empty() {
        out[0].spans.push(Span::styled(
            format!(
                " ({} line{}, ctrl-o to expand)",
                lines.len(),
                if lines.len() == 1 { "" } else { "s" }
            ),
            t.text_dim,
        ));
    }
    out
}

/// First `max` lines of `text`, with a "more" marker, unless expanded.
pub fn preview(text: &str, expanded: bool, max: usize) -> Vec<String> {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    if expanded || lines.len() <= max {
        return lines.iter().map(|l| (*l).to_owned()).collect();
    }
    let mut out: Vec<String> = lines[..max].iter().map(|l| (*l).to_owned()).collect();
    out.push(format!(
        "… {} more lines (ctrl-o to expand)",
        lines.len() - max
    ));
    out
}

/// "850ms", "12.3s", "2m05s".
pub fn format_elapsed(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        let s = d.as_secs();
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// "1.2k", "3.4M".
pub fn format_tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// Style for a diff line by its first character.
pub fn diff_style(line: &str, t: &Theme) -> Style {
    if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@") {
        t.diff_meta
    } else if line.starts_with('+') {
        t.diff_added
    } else if line.starts_with('-') {
        t.diff_removed
    } else {
        t.text_dim
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_split_stops_before_the_open_block_and_skips_fences() {
        assert_eq!(stable_split("para one\n\npara two"), 10);
        assert_eq!(stable_split("a\n\n```\ncode\n\nmore\n"), 3);
        assert_eq!(stable_split("no boundary yet"), 0);
    }

    #[test]
    fn streamed_answer_renders_like_the_finished_one() {
        let text = "# T\n\nsome text\n\n- a\n- b\n\n```rust\nfn x() {}\n```\n\nend";
        let theme = Theme::monochrome();
        let ctx = RenderCtx {
            theme: &theme,
            width: 40,
            expanded: false,
            now: Instant::now(),
        };
        let streaming = Cell::new(CellKind::Assistant {
            text: text.into(),
            streaming: true,
        });
        let done = Cell::new(CellKind::Assistant {
            text: text.into(),
            streaming: false,
        });
        assert_eq!(streaming.lines(&ctx), done.lines(&ctx));
        // Delta by delta, so the stable prefix is extended piece by piece.
        let mut growing = Cell::new(CellKind::Assistant {
            text: String::new(),
            streaming: true,
        });
        for chunk in text.as_bytes().chunks(3) {
            if let Some((t, _)) = growing.stream_mut() {
                t.push_str(std::str::from_utf8(chunk).unwrap());
            }
            let _ = growing.lines(&ctx);
        }
        assert_eq!(growing.lines(&ctx), done.lines(&ctx));
    }
}
