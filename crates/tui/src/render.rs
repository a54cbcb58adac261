//! Drawing the app: transcript (bottom-anchored), queued prompts, live status line, the
//! prompt or an open dialog, completion popup and footer. A pure function of `App` state.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};

use kimi_protocol::ops::AgentStatus;

use crate::app::App;
use crate::cells::{RenderCtx, format_elapsed, format_tokens};
use crate::dialogs::Dialog;
use crate::input::{COMPLETION_ROWS, context_percent, mode_name};
use crate::wrap::{truncate, wrap_line};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// The prompt never takes more rows than this; it scrolls to the cursor instead.
const MAX_INPUT_ROWS: usize = 8;

impl App {
    fn ctx(&self, width: usize) -> RenderCtx<'_> {
        RenderCtx {
            theme: &self.theme,
            width,
            expanded: self.expanded,
            now: self.now,
        }
    }

    /// Lines of finished cells that can move into the terminal's scrollback, oldest first;
    /// marks them committed. Stops at the first live cell so order is kept.
    pub fn take_committable(&mut self, width: u16) -> Vec<Line<'static>> {
        let width = usize::from(width);
        let mut out = Vec::new();
        while let Some(cell) = self.cells.get(self.committed) {
            if cell.is_live() {
                break;
            }
            out.extend(cell.lines(&self.ctx(width)));
            out.push(Line::default());
            // Long sessions would otherwise keep every rendered line twice.
            cell.forget_lines();
            self.committed += 1;
        }
        out
    }

    /// The rows below the transcript: queue pane, status line, prompt or dialog, popup, footer.
    fn bottom_lines(&self, width: usize) -> (Vec<Line<'static>>, Option<(u16, u16)>) {
        let t = &self.theme;
        let mut out: Vec<Line<'static>> = Vec::new();
        if !self.queued.is_empty() {
            out.push(Line::styled(
                format!(
                    "Queued ({}) · sent when the current turn ends",
                    self.queued.len()
                ),
                t.text_dim,
            ));
            for q in self.queued.iter().take(3) {
                let first = q.lines().next().unwrap_or_default();
                out.push(Line::from(vec![
                    Span::styled("  ↳ ", t.text_dim),
                    Span::styled(truncate(first, width.saturating_sub(4)), t.text),
                ]));
            }
            if self.queued.len() > 3 {
                out.push(Line::styled(
                    format!("  … {} more", self.queued.len() - 3),
                    t.text_dim,
                ));
            }
        }
        if let Some(pane) = &self.btw {
            out.extend(pane.lines(t, width));
        }
        out.extend(self.todo_lines(width));
        if let Some(strip) = self.goal_strip() {
            out.push(Line::styled(truncate(&strip, width), t.accent));
        }
        if self.is_busy() {
            out.push(self.status_line(width));
        }
        let mut cursor = None;
        if let Some(dialog) = &self.dialog {
            out.extend(dialog.lines(t, width));
        } else {
            out.push(Line::styled("─".repeat(width), t.border));
            let prompt = if self.shell_mode {
                Span::styled("! ", t.shell_mode)
            } else {
                Span::styled("› ", t.primary)
            };
            let (mut lines, (cx, cy)) = self.editor.layout(width, prompt, t.text);
            let cy = usize::from(cy);
            let first = cy.saturating_sub(MAX_INPUT_ROWS - 1);
            lines = lines.into_iter().skip(first).take(MAX_INPUT_ROWS).collect();
            if self.editor.is_empty() && !self.shell_mode {
                let placeholder = if self.busy {
                    "type to queue a prompt · ctrl-s steers · esc interrupts"
                } else {
                    "ask anything · / commands · @ files · ! shell"
                };
                lines[0].spans.push(Span::styled(placeholder, t.text_dim));
            }
            let row = out.len() + cy - first;
            cursor = Some((cx, u16::try_from(row).unwrap_or(u16::MAX)));
            out.extend(lines);
            if let Some(c) = &self.completion {
                let start = c.selected.saturating_sub(COMPLETION_ROWS - 1);
                for (i, (text, desc)) in
                    c.items.iter().enumerate().skip(start).take(COMPLETION_ROWS)
                {
                    let style = if i == c.selected { t.selected } else { t.text };
                    out.push(Line::from(vec![
                        Span::raw("  "),
                        Span::styled(format!("{text:<20}"), style),
                        Span::styled(format!(" {desc}"), t.text_dim),
                    ]));
                }
            }
        }
        out.push(self.footer(width));
        (out, cursor)
    }

    fn status_line(&self, width: usize) -> Line<'static> {
        let elapsed = self
            .turn_started
            .map(|s| self.now.saturating_duration_since(s))
            .unwrap_or_default();
        let frame = SPINNER[(elapsed.as_millis() / 80) as usize % SPINNER.len()];
        let what = if self.compacting() {
            "Compacting context".to_owned()
        } else if let Some(retry) = &self.retry {
            let left = retry.until.saturating_duration_since(self.now);
            let when = if left.is_zero() {
                "Retrying".to_owned()
            } else {
                format!("Retrying in {}s", left.as_millis().div_ceil(1000))
            };
            format!(
                "{when} (attempt {}/{}) · {}",
                retry.next_attempt, retry.max_attempts, retry.reason
            )
        } else {
            self.status_word()
        };
        self.status_facts(width, frame, what)
    }

    fn status_word(&self) -> String {
        let running_tools = || {
            self.cells[self.committed..]
                .iter()
                .filter(|c| {
                    c.tool()
                        .is_some_and(|t| t.is_running() && !t.is_awaiting_approval())
                })
                .count()
        };
        let tools = |n: usize| match n {
            0 | 1 => "Running a tool".to_owned(),
            n => format!("Running {n} tools"),
        };
        match &self.status {
            AgentStatus::Idle { .. } | AgentStatus::Streaming { .. } => "Working".to_owned(),
            // The engine does not publish every phase change, so a `Gating` status may be
            // stale: what the UI itself shows says more once the turn is under way.
            AgentStatus::Gating if matches!(self.dialog, Some(Dialog::Approval(_))) => {
                "Waiting for your approval".to_owned()
            }
            AgentStatus::Gating if running_tools() > 0 => tools(running_tools()),
            AgentStatus::Gating if self.step > 0 => "Working".to_owned(),
            AgentStatus::Gating => "Starting".to_owned(),
            AgentStatus::RunningTools { pending, .. } => tools(pending.len()),
            AgentStatus::AwaitingApproval { .. } => "Waiting for your approval".to_owned(),
            AgentStatus::Backoff { attempt, delay_ms } => {
                format!(
                    "Retrying (attempt {attempt}, {:.1}s)",
                    *delay_ms as f64 / 1000.0
                )
            }
            AgentStatus::Compacting => "Compacting".to_owned(),
            AgentStatus::Closing => "Closing".to_owned(),
        }
    }

    fn status_facts(&self, width: usize, frame: &str, what: String) -> Line<'static> {
        let t = &self.theme;
        let elapsed = self
            .turn_started
            .map(|s| self.now.saturating_duration_since(s))
            .unwrap_or_default();
        let u = &self.turn_usage;
        let input = u.input_other + u.input_cache_read + u.input_cache_creation;
        let mut facts = vec![format_elapsed(elapsed)];
        if self.step > 0 {
            facts.push(format!("step {}", self.step));
        }
        if u.total() > 0 {
            facts.push(format!(
                "↑{} ↓{}",
                format_tokens(input),
                format_tokens(u.output)
            ));
        }
        if let Some(p) = context_percent(self.context_tokens, self.info.context_window)
            .filter(|_| self.context_tokens > 0)
        {
            facts.push(format!("ctx {p}%"));
        }
        let line = Line::from(vec![
            Span::styled(format!("{frame} "), t.accent),
            Span::styled(what, t.text_strong),
            Span::styled(
                format!(" ({}) · esc to interrupt", facts.join(" · ")),
                t.text_dim,
            ),
        ]);
        wrap_line(&line, width, &[])
            .into_iter()
            .next()
            .unwrap_or_default()
    }

    fn footer(&self, width: usize) -> Line<'static> {
        let t = &self.theme;
        if let Some(hint) = &self.hint {
            return Line::styled(truncate(hint, width), t.warning);
        }
        let mut parts = Vec::new();
        let custom = self
            .status_command
            .as_ref()
            .and_then(crate::status_command::StatusCommand::line);
        let items: &[String] = if custom.is_some() {
            &[]
        } else {
            &self.status_items
        };
        parts.extend(custom);
        for item in items {
            match item.as_str() {
                "mode" => {
                    let mut m = mode_name(self.info.permission_mode).to_owned();
                    if self.info.plan_mode {
                        m.push_str(" · plan");
                    }
                    parts.push(m);
                }
                "model" if !self.info.model.is_empty() => parts.push(match &self.info.effort {
                    Some(effort) => format!("{} ({effort})", self.info.model),
                    None => self.info.model.clone(),
                }),
                "cwd" if !self.info.cwd.is_empty() => parts.push(self.info.cwd.clone()),
                "goal" => {
                    if let Some(goal) = &self.goal {
                        parts.push(format!("goal {}", goal.status.label()));
                    }
                }
                "tasks" => {
                    if let AgentStatus::Idle { background_tasks } = self.status
                        && background_tasks > 0
                    {
                        parts.push(format!("{background_tasks} tasks"));
                    }
                }
                _ => {}
            }
        }
        if self.login_waiting {
            parts.insert(0, "waiting for the Kimi login… (Esc cancels)".to_owned());
        }
        if self.mcp_connecting > 0 {
            let servers = if self.mcp_connecting == 1 {
                "server"
            } else {
                "servers"
            };
            parts.insert(
                0,
                format!("connecting {} MCP {servers}…", self.mcp_connecting),
            );
        }
        if let Some(command) = &self.shell_running {
            parts.insert(0, format!("running `{command}` (ctrl-b: background)"));
        } else if self.shell_mode {
            parts.insert(0, "shell mode (ctrl-b: background)".to_owned());
        }
        if let Some(environment) = &self.info.environment {
            parts.insert(0, environment.clone());
        }
        parts.push("/help".to_owned());
        Line::styled(truncate(&parts.join(" · "), width), t.text_dim)
    }

    /// Draws into `area` of `buf`; returns where the terminal cursor belongs.
    pub fn render(&self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        let width = usize::from(area.width);
        let height = usize::from(area.height);
        if width == 0 || height == 0 {
            return None;
        }
        let (mut bottom, cursor) = self.bottom_lines(width);
        // A tall dialog keeps its last rows (the choices) when space runs out.
        let dropped = bottom.len().saturating_sub(height);
        bottom.drain(..dropped);
        let top_rows = height - bottom.len();
        let ctx = self.ctx(width);
        let want = top_rows + self.scroll;
        let mut lines: Vec<Line<'static>> = Vec::new();
        for cell in self.cells[self.committed..].iter().rev() {
            let mut block = cell.lines(&ctx);
            block.push(Line::default());
            block.append(&mut lines);
            lines = block;
            if lines.len() >= want {
                break;
            }
        }
        let end = lines.len().saturating_sub(self.scroll);
        let start = end.saturating_sub(top_rows);
        let shown = &lines[start..end];
        // Bottom-anchor the transcript right above the prompt.
        let offset = top_rows - shown.len();
        for (i, line) in shown.iter().enumerate() {
            let y = area.y + u16::try_from(offset + i).unwrap_or(0);
            buf.set_line(area.x, y, line, area.width);
        }
        let base = area.y + u16::try_from(top_rows).unwrap_or(0);
        for (i, line) in bottom.iter().enumerate() {
            buf.set_line(
                area.x,
                base + u16::try_from(i).unwrap_or(0),
                line,
                area.width,
            );
        }
        cursor.and_then(|(x, y)| {
            let y = usize::from(y).checked_sub(dropped)?;
            Some(Position::new(
                area.x + x.min(area.width.saturating_sub(1)),
                base + u16::try_from(y).ok()?,
            ))
        })
    }

    /// Rows the bottom part needs; the inline viewport must be at least this tall.
    pub fn bottom_height(&self, width: u16) -> u16 {
        u16::try_from(self.bottom_lines(usize::from(width)).0.len()).unwrap_or(u16::MAX)
    }

    /// The newest scrollback cells that filled `rows` rows at `old_width`, rendered again at
    /// `new_width` (after a narrowing resize wiped the visible screen).
    pub fn recent_committed_lines(
        &self,
        old_width: u16,
        new_width: u16,
        rows: u16,
    ) -> Vec<Line<'static>> {
        let old = self.ctx(usize::from(old_width));
        let mut used = 0usize;
        let mut first = self.committed;
        while first > 0 && used < usize::from(rows) {
            first -= 1;
            used += self.cells[first].lines(&old).len() + 1;
        }
        let new = self.ctx(usize::from(new_width));
        let mut out = Vec::new();
        for cell in &self.cells[first..self.committed] {
            out.extend(cell.lines(&new));
            out.push(Line::default());
        }
        out
    }

    /// Rows the cells not yet in scrollback take (inline viewport sizing).
    pub fn live_height(&self, width: u16) -> u16 {
        let ctx = self.ctx(usize::from(width));
        let rows: usize = self.cells[self.committed..]
            .iter()
            .map(|c| c.lines(&ctx).len() + 1)
            .sum::<usize>()
            + self.scroll;
        u16::try_from(rows).unwrap_or(u16::MAX)
    }

    /// No dialog is open (the viewport keeps its size while one is).
    pub fn dialog_closed(&self) -> bool {
        self.dialog.is_none()
    }

    /// Every transcript line at `width` (tests and full re-renders).
    pub fn transcript_lines(&self, width: u16) -> Vec<Line<'static>> {
        let ctx = self.ctx(usize::from(width));
        let mut out = Vec::new();
        for cell in &self.cells[self.committed..] {
            out.extend(cell.lines(&ctx));
            out.push(Line::default());
        }
        out
    }
}
